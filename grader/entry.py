"""The `grade` command's entry point: the fork server boots while the grader imports itself.

A warm zygote takes about as long to start (an interpreter that imports numpy) as the
`grade` command takes to import its own modules; started first, in the background, the two
overlap, and a `grade run` on one notebook finishes that much sooner. Nothing else happens
here: `grader.cli` parses the command line and does the work.
"""

from __future__ import annotations

import sys

COMMANDS = ("run", "check", "batch")
"""The commands that grade with the default engine unless told otherwise."""


def wants_zygote(argv: list[str]) -> bool:
    """Whether this command line grades here with the fork server (`--engine fast`, the
    default); a batch on a Dask cluster grades on the cluster's workers, not here."""
    if not argv or argv[0] not in COMMANDS:
        return False
    for index, arg in enumerate(argv):
        if arg == "--dask" or arg.startswith("--dask="):
            return False
        if arg == "--engine":
            return argv[index + 1:index + 2] == ["fast"]
        if arg.startswith("--engine="):
            return arg == "--engine=fast"
    return True


def main() -> None:
    """Run the `grade` command."""
    if wants_zygote(sys.argv[1:]):
        from grader.sandbox import zygote

        zygote.prestart(())  # the assignments of the book need no preload but numpy
    from grader.cli import main as run_command

    run_command()
