"""The command line as a function: `grade` run in this process, its output as strings."""

from __future__ import annotations

import io

from grader import cli


def run(*argv: str) -> tuple[int, str, str]:
    """Run `grade *argv` in this process: (exit code, standard output, standard error)."""
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()
