"""The `grade` command's one exit point: parse, run the command, and turn whatever ends it
(a result, `--help`, a usage error, any error of the `GraderError` tree, Ctrl-C) into what
is printed and the exit code. Errors are caught here, and only here."""

from __future__ import annotations

import argparse
import importlib
import os
from collections.abc import Callable, Sequence
from typing import TextIO

from grader.cli import parser
from grader.errors import GraderError

Before = Callable[[argparse.Namespace], None]
"""What to do once the command line is parsed, before the command's modules are imported
(the entry point starts the fork server there)."""


def handler(args: argparse.Namespace) -> Callable[[argparse.Namespace, TextIO], int]:
    """The function that runs the parsed command (its modules are imported now)."""
    module, _, name = str(args.handler).partition(":")
    function: Callable[[argparse.Namespace, TextIO], int] = getattr(
        importlib.import_module(f"grader.cli.{module}"), name)
    return function


def run(argv: Sequence[str], out: TextIO, err: TextIO, before: Before | None = None) -> int:
    """Run `grade` with arguments; return the exit code. Testable without a subprocess."""
    # Under GitHub Actions, a line such as "::error::" printed by student code (echoed in a
    # message) would be read as a workflow command: stop command processing around our output.
    token = ""
    if os.environ.get("GITHUB_ACTIONS") == "true":
        import secrets

        token = secrets.token_hex(16)
    if token:
        out.write(f"::stop-commands::{token}\n")
    try:
        args = parser.parse(argv)
        if before is not None:
            before(args)
        return int(handler(args)(args, out))
    except parser.Shown as shown:
        out.write(shown.text)
        return 0
    except GraderError as exc:
        if isinstance(exc, parser.CommandLineError):
            err.write(f"{exc.usage}{exc.hint}\n\n")
        err.write(f"grade: error: {exc.message}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        err.write("grade: interrupted\n")
        return 130
    finally:
        if token:
            out.write(f"::{token}::\n")
