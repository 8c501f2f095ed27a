"""The `grade` command's console script.

A warm zygote takes about as long to start (an interpreter that imports numpy) as the
`grade` command takes to import its own modules; started first, in the background, the two
overlap, and a `grade run` on one notebook finishes that much sooner. So `grader.cli.app`
starts the zygotes of a command line that can only be `grade run` or `grade check` on the
fork server before it even parses it (`app.surely_forks`), those of any other command that
grades here right after the parse (`grader.cli.parser` imports nothing heavy), and only then
imports and runs the command's modules; the command stops them when it is done. Before all
that, `grade run` and `grade check` are handed to a running `grade serve` of this grader
(`served`), when there is one.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> None:
    """Run the `grade` command and exit with its code."""
    from grader.cli.served import served

    arguments = list(sys.argv[1:] if argv is None else argv)
    code = served(arguments, sys.stdout, sys.stderr)
    if code is None:  # not a command `grade serve` runs, or none is running: run it here
        from grader.cli.app import run

        code = run(arguments, sys.stdout, sys.stderr)
    sys.exit(code)
