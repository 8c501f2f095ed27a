"""The commands about a class's grades: `grade gradebook report` and `similar` (export,
override and log are in `term_commands`), and `grade gradescope build` and `run` (the
Gradescope autograder bundle)."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from grader import gradebook, text
from grader.cli.output import write
from grader.errors import UsageError
from grader.gradebook import origins
from grader.pipeline import grading
from grader.report import terminal
from grader.spec import registry

if TYPE_CHECKING:
    from grader import similarity


def cmd_class_report(args: argparse.Namespace, out: TextIO) -> int:
    """`grade gradebook report`: what the class got wrong, for the instructor."""
    from grader.classreport import page as classpage
    from grader.classreport import stats as classreport

    recorded = gradebook.existing(Path(args.out)).recorded(args.assignment)
    names = sorted({row.assignment for row, _ in recorded})
    if len(names) > 1:
        raise UsageError(f"{Path(args.out) / gradebook.FILENAME} holds {', '.join(names)}: "
                         "pass --assignment NAME for one of them")
    report = classreport.build(args.assignment or (names[0] if names else ""), recorded)
    if args.submissions:
        report = dataclasses.replace(report, similarity=_similarity(args))
    elif names:
        try:  # where the batch read them; a report without it is still a report
            report = dataclasses.replace(report, similarity=_similarity(args))
        except UsageError as exc:
            args.err.write(f"grade: the report has no side-by-side comparison of similar "
                           f"submissions: {text.one_line(str(exc))}\n")
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
    from grader.gradescope import autograder

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


def cmd_similar(args: argparse.Namespace, out: TextIO) -> int:
    """`grade gradebook similar`: pairs of students ranked by the rare code they share."""
    import json

    from grader.similarity import shown

    ranking = _similarity(args)
    if args.json:
        write(args.json, json.dumps(shown.to_dict(ranking), indent=2))
    out.write(shown.terminal(ranking, args.top))
    return 0


def _similarity(args: argparse.Namespace) -> similarity.Ranking:
    """The ranking that `--submissions` (or where the batch recorded it read them),
    `--stubs` and `--threshold` ask for."""
    from grader import similarity
    from grader.spec.layout import Layout

    if not 0 < args.threshold <= 1:
        raise UsageError(f"--threshold {args.threshold:g}: give a score between 0 and 1, "
                         f"for example {similarity.THRESHOLD:g}")
    book = gradebook.existing(Path(args.out))
    rows = book.rows(args.assignment)
    names = sorted({row.assignment for row in rows})
    if len(names) > 1:
        raise UsageError(f"{book.path} holds {', '.join(names)}: pass --assignment NAME for "
                         "one of them")
    if not names:
        raise UsageError(f"{book.path}: no result to compare; run `grade batch` first")
    stubs = Path(args.stubs) if args.stubs else Layout.current().exercises
    return similarity.of_batch(names[0], rows, _origin(args, book, names[0]), stubs,
                               args.threshold)


def _origin(args: argparse.Namespace, book: gradebook.Gradebook, assignment: str
            ) -> origins.Origin:
    """Where to find the students' files: `--submissions` (a folder, or a zip unpacked as
    the batch unpacks it), read in the layout the batch recorded; else the folder the batch
    recorded."""
    from grader.batch import finding

    recorded = origins.recalled(book, assignment)
    if args.submissions:
        folder, _ = finding.source_folder(Path(args.submissions), Path(args.out))
        if recorded is None:
            return origins.Origin(folder, None)
        return dataclasses.replace(recorded, folder=folder)
    if recorded is None:
        raise UsageError(f"{book.path}: no batch recorded where the submissions of "
                         f"{assignment} are (it was graded before grade batch kept that); "
                         "pass --submissions with the folder that grade batch graded")
    return recorded
