"""The commands about a class's grades: `grade gradebook report` (export, override and log
are in `term_commands`), and `grade gradescope build` and `run` (the Gradescope autograder
bundle)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from grader import text
from grader.classwork import gradebook
from grader.cli.output import write
from grader.errors import UsageError
from grader.pipeline import grading
from grader.report import terminal
from grader.spec import registry


def cmd_class_report(args: argparse.Namespace, out: TextIO) -> int:
    """`grade gradebook report`: what the class got wrong, for the instructor."""
    from grader.classwork import classpage, classreport

    recorded = gradebook.existing(Path(args.out)).recorded(args.assignment)
    names = sorted({row.assignment for row, _ in recorded})
    if len(names) > 1:
        raise UsageError(f"{Path(args.out) / gradebook.FILENAME} holds {', '.join(names)}: "
                         "pass --assignment NAME for one of them")
    report = classreport.build(args.assignment or (names[0] if names else ""), recorded)
    targets = ((args.html, classpage.html), (args.md, classpage.markdown),
               (args.json, classpage.render_json))
    for target, render in targets:
        if target:
            write(target, render(report))
    if not any(target for target, _ in targets):
        out.write(classpage.markdown(report))
    if any(getattr(args, flag) for flag in ("roster", "due", "late", "extensions")):
        from grader.cli import term_commands

        found = term_commands.sheet(args, gradebook.existing(Path(args.out)), args.assignment)
        table = term_commands.grades_markdown(found)
        if args.md:
            with open(args.md, "a", encoding="utf-8") as stream:
                stream.write(table)
        if not any(target for target, _ in targets):
            out.write(table)
    return 0


def cmd_gradescope(args: argparse.Namespace, out: TextIO) -> int:
    """`grade gradescope build` writes the bundle; `grade gradescope run` grades inside it."""
    from grader.classwork import autograder

    assignment = registry.get(args.assignment)
    if args.action == "build":
        names = autograder.build(assignment, Path(args.bundle))
        out.write(f"wrote {args.bundle} ({len(names)} files): upload it as the autograder\n")
        return 0
    result = autograder.run(assignment, grading.Options())
    out.write(terminal.render(result))
    # For the instructor (Gradescope hides stdout from students): how student code was held.
    out.write(f"Isolation: {text.one_line(result.isolation or 'none: nothing was run')}\n")
    return 0
