"""What runs inside the sandbox: the worker, the fork server's loop, the confinement, and the
wire protocol the grader shares with them. Only the standard library, numpy and this package."""
