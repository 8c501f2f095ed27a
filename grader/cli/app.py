"""The `grade` command's one exit point: parse, run the command, and turn whatever ends it
(a result, `--help`, a usage error, any error of the `GraderError` tree, Ctrl-C) into what
is printed and the exit code. Errors are caught here, and only here."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TextIO

from grader.cli import parser
from grader.errors import GraderError

if TYPE_CHECKING:
    from grader.sandbox.zygote import Zygotes

COMMANDS = ("run", "check")
"""The commands that grade in this process, with the engine of `--engine` (a batch grades in
job processes, each with zygotes of its own: `grader.batch.processes`)."""


def wants_zygote(args: argparse.Namespace) -> bool:
    """Whether the parsed command grades in this process with the fork server (`--engine
    fast`, the default)."""
    if args.command not in COMMANDS:
        return False
    from grader.sandbox.limits import Engine  # imported by the parse of such a command

    return bool(args.engine is Engine.FAST)


def own_zygotes(args: argparse.Namespace, stack: contextlib.ExitStack,
                given: Zygotes | None = None) -> None:
    """Give a command that grades here the zygotes it forks from (`args.zygotes`): `given`
    (a `grade serve`'s, warm), else zygotes started in the background now, so that the zygote
    boots while the command's modules are imported, and stopped when the command is done;
    None for any other command."""
    args.zygotes = None
    if wants_zygote(args) and given is not None:
        args.zygotes = given
    elif wants_zygote(args):
        args.zygotes = _started(stack)


def _started(stack: contextlib.ExitStack) -> Zygotes:
    """Zygotes booting in the background, stopped when `stack` closes."""
    from grader.sandbox.zygote import Zygotes

    zygotes = stack.enter_context(Zygotes())
    zygotes.prestart(())  # the assignments of the book need no preload but numpy
    return zygotes


def surely_forks(argv: Sequence[str]) -> bool:
    """Whether a command line, before it is parsed, can only be `grade run` or `grade check`
    with the fork server: no option that may be `--engine` (argparse takes any prefix of a
    long option) and no `--help`. Its zygote then boots during the parse; a command line the
    parse refuses stops it."""
    return bool(argv) and argv[0] in COMMANDS and not any(
        arg.startswith(("--e", "-h", "--h")) for arg in argv[1:])


def handler(args: argparse.Namespace) -> Callable[[argparse.Namespace, TextIO], int]:
    """The function that runs the parsed command (its modules are imported now)."""
    module, _, name = str(args.handler).partition(":")
    function: Callable[[argparse.Namespace, TextIO], int] = getattr(
        importlib.import_module(f"grader.cli.{module}"), name)
    return function


def run(argv: Sequence[str], out: TextIO, err: TextIO, zygotes: Zygotes | None = None) -> int:
    """Run `grade` with arguments; return the exit code. Testable without a subprocess.
    `zygotes`: warm ones to fork from (a `grade serve`'s) instead of the command's own."""
    # Under GitHub Actions, a line such as "::error::" printed by student code (echoed in a
    # message) would be read as a workflow command: stop command processing around our output.
    token = ""
    if os.environ.get("GITHUB_ACTIONS") == "true":
        import secrets

        token = secrets.token_hex(16)
    if token:
        out.write(f"::stop-commands::{token}\n")
    try:
        with contextlib.ExitStack() as stack:
            if zygotes is None and surely_forks(argv):
                zygotes = _started(stack)
            args = parser.parse(argv)
            args.err = err  # for warnings that must not mix with a command's output on stdout
            own_zygotes(args, stack, zygotes)
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
