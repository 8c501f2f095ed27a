"""Grading a class: a folder of submissions locally (`batch`) or on Dask (`distributed`), the
gradebook and its exports (`gradebook`), the class report (`classreport`, `cellerrors`), and
the Gradescope autograder bundle (`autograder`)."""
