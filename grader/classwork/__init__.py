"""Grading a class: a folder or a platform's download (`finding`, `ingest`, `identities`,
`times`) graded locally (`batch`) or on Dask (`distributed`), the gradebook (`gradebook`,
`origins`), the term (`roster`, `policy`, `overrides`, `grades`, `exports`, `regrade`), the
class report (`classreport` and `cellerrors` compute it, `classpage` and `charts` render it),
similar submissions (`similarity`), and the Gradescope autograder bundle (`autograder`)."""
