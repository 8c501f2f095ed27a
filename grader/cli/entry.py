"""The `grade` command's entry point: the fork server boots while the grader imports itself.

A warm zygote takes about as long to start (an interpreter that imports numpy) as the
`grade` command takes to import its own modules; started first, in the background, the two
overlap, and a `grade run` on one notebook finishes that much sooner. So the command line is
parsed first (`grader.cli.parser` imports nothing heavy), the zygote started when the parsed
command needs it, and only then the command's modules imported and run (`grader.cli.app`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from grader.sandbox.limits import Engine

COMMANDS = ("run", "check", "batch")
"""The commands that grade here, with the engine of `--engine`."""


def wants_zygote(args: argparse.Namespace) -> bool:
    """Whether the parsed command grades here with the fork server (`--engine fast`, the
    default); a batch on a Dask cluster grades on the cluster's workers, not here."""
    return (args.command in COMMANDS and not getattr(args, "dask", None)
            and args.engine is Engine.FAST)


def prestart(args: argparse.Namespace) -> None:
    """Start the fork server in the background when the parsed command will use it."""
    if wants_zygote(args):
        from grader.sandbox import zygote

        zygote.prestart(())  # the assignments of the book need no preload but numpy


def main(argv: Sequence[str] | None = None) -> None:
    """Run the `grade` command and exit with its code."""
    from grader.cli.app import run

    sys.exit(run(sys.argv[1:] if argv is None else argv, sys.stdout, sys.stderr,
                 before=prestart))
