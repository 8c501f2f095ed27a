"""Grading a whole class at once: `grade batch`.

The submissions of a folder or a platform's download are found (`finding`), one `Job` per
student (`jobs`), given the submission times of a file (`times`), graded in threads here or
on a Dask cluster (`distributed`) by `batch`, and recorded in the gradebook; what a regrade
changed is said (`regrade`), and each notebook may get its feedback page (`feedback_files`).
"""
