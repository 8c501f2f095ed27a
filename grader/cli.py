"""The `grade` command. Errors from the GraderError tree are caught here, and only here."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO

from grader import registry
from grader.errors import GraderError, UsageError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def _cmd_list(args: argparse.Namespace, out: TextIO) -> int:
    for assignment in registry.assignments().values():
        out.write(f"{assignment.name}  ({assignment.max_score:g} points)  {assignment.title}\n")
        for exercise in assignment.exercises:
            public = sum(case.visibility.value == "public" for case in exercise.cases)
            unit = "pt" if exercise.points == 1 else "pts"
            out.write(f"  {exercise.name}{exercise.signature}  {exercise.points:g} {unit}, "
                      f"{len(exercise.cases)} cases ({public} public)\n")
    return 0


def _cmd_references(args: argparse.Namespace, out: TextIO) -> int:
    from grader import references

    names = args.assignments or list(registry.assignments())
    failed = 0
    for name in names:
        assignment = registry.get(name)
        if args.action == "build":
            hidden, public = references.build(assignment)
            out.write(f"{name}: wrote {hidden} and {public}\n")
            continue
        problems = references.verify(assignment)
        for problem in problems:
            out.write(f"{name}: {problem}\n")
        if not problems:
            out.write(f"{name}: references match solutions/{name}.py\n")
        failed += bool(problems)
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `grade`."""
    parser = _Parser(prog="grade", description="Grade attention-mechanism exercises.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    listing = commands.add_parser("list", help="show the assignments, their functions and points")
    listing.set_defaults(handler=_cmd_list)

    refs = commands.add_parser("references", help="rebuild or verify the stored reference outputs")
    refs.add_argument("action", choices=["build", "verify"])
    refs.add_argument("assignments", nargs="*", metavar="ASSIGNMENT")
    refs.set_defaults(handler=_cmd_references)
    return parser


def run(argv: Sequence[str], out: TextIO, err: TextIO) -> int:
    """Run `grade` with arguments; return the exit code. Testable without a subprocess."""
    try:
        args = build_parser().parse_args(argv)
        return int(args.handler(args, out))
    except GraderError as exc:
        err.write(f"grade: error: {exc.message}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        err.write("grade: interrupted\n")
        return 130


def main() -> None:
    """Console-script entry point."""
    sys.exit(run(sys.argv[1:], sys.stdout, sys.stderr))
