"""Running untrusted code: the worker that executes it and the session that supervises it.

`protocol` and `calling` are imported by both sides; `worker` runs only in the child;
`session` and `isolation` run only in the grader.
"""
