"""Grading a class: a folder of submissions locally (`batch`) or on Dask (`distributed`), the
gradebook and its exports (`gradebook`), the class report (`classreport` and `cellerrors`
compute it, `classpage` and `charts` render it), and the Gradescope autograder bundle
(`autograder`)."""
