"""The commands that grade one submission: `grade run` and `grade check`, with the files they
write (JSON, HTML, Markdown, JUnit, the GitHub job summary). `grade batch` builds on their
grading options (`options`)."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from grader import text
from grader.cli import parser
from grader.cli.output import write
from grader.course import registry
from grader.course.layout import CHECK_SUFFIX
from grader.errors import UsageError
from grader.model import Assignment
from grader.pipeline import grading, submissions
from grader.pipeline.grading import Options
from grader.report import terminal
from grader.report.files import report_path
from grader.results import CheckStatus, Result, ResultStatus

if TYPE_CHECKING:
    from grader.course import references

MAX_SUMMARY = 1 << 20


def expand(paths: Sequence[str], out: TextIO | None = None) -> list[Path]:
    """Submission files named on the command line; a folder stands for the files inside it."""
    found = submissions.named(paths)
    for path, why in found.refused:
        if out is not None:
            out.write(f"ignored {text.visible(str(path))}: {why}\n")
    return list(found.files)


def options(args: argparse.Namespace, public_only: bool) -> Options:
    """How to grade, as the parsed command line says."""
    return Options(limits=parser.limits(args), on_error=args.on_error, engine=args.engine,
                   public_only=public_only, require_namespaces=args.require_namespaces,
                   zygotes=getattr(args, "zygotes", None))


def _released(path: Path) -> list[str]:
    """The assignments whose check data `grade release` put beside `path`."""
    return [p.name.removesuffix(CHECK_SUFFIX)
            for p in sorted(path.parent.glob(f"*{CHECK_SUFFIX}"))]


def _known(path: Path, public_only: bool) -> list[str] | None:
    """The assignments `path` may be of: the registry's, and for `grade check` those released
    beside it (a student's copy of the grader declares none of a course's own)."""
    if not public_only:
        return None
    return [*registry.assignments(), *_released(path)]


def _assignment(name: str, group: list[Path], how: Options
                ) -> tuple[Assignment, references.References | None]:
    """The declared assignment `name`; for `grade check`, when the registry does not declare
    it, the one in the check data `grade release` put beside the files (its public cases and
    expected outputs)."""
    if not how.public_only or name in registry.assignments():
        return registry.get(name), None
    beside = [path.parent / f"{name}{CHECK_SUFFIX}" for path in group]
    data = next((found for found in beside if found.is_file()), None)
    if data is None:
        known = ", ".join(sorted(registry.assignments()))
        raise UsageError(f"unknown assignment {name!r}: this grader declares {known}, and "
                         f"there is no {beside[0].name} beside {group[0]} (`grade release` "
                         "puts it beside the notebook); check the spelling, or ask for the "
                         "assignment's files again")
    from grader.course import checkfile  # a release's check data: `grade check` only

    assignment, stored = checkfile.read(data)
    return assignment, grading.ready(assignment, how, stored)


def _grade_all(args: argparse.Namespace, out: TextIO, public_only: bool) -> list[Result]:
    paths = expand(args.submissions, out)
    plan = [(path, grading.infer_assignment(path, args.assignment,
                                            known=_known(path, public_only)))
            for path in paths]
    unknown = [str(path) for path, name in plan if name is None]
    if unknown:
        raise UsageError(f"cannot tell the assignment of {', '.join(unknown)}: the notebook "
                         "metadata does not name one and neither does the file name; "
                         "pass --assignment NAME")
    how = options(args, public_only)
    color = out.isatty() if hasattr(out, "isatty") else False
    results: list[Result] = []
    _grade_each(args, plan, how, out, color, results)
    _write_outputs(args, results)
    return results


def _grade_each(args: argparse.Namespace, plan: list[tuple[Path, str | None]],
                how: Options, out: TextIO, color: bool, results: list[Result]) -> None:
    for name, group in _students(plan, args.each):
        assignment, stored = _assignment(name, group, how)
        result = grading.grade_files(group, assignment, how, stored)
        results.append(result)
        out.write(terminal.render(result, color=color, verbose=args.verbose))
        if getattr(args, "instructor", False) and result.hidden_output:
            out.write("What the hidden checks' calls printed (for the instructor only):\n"
                      f"{text.visible(result.hidden_output, lines=True)}\n")


def _students(plan: list[tuple[Path, str | None]], each: bool
              ) -> list[tuple[str, list[Path]]]:
    """What to grade as one result: every file of an assignment together (one student's
    parts, such as the book's two notebooks), or with `each`, every file on its own."""
    if each:
        return [(str(name), [path]) for path, name in plan]
    groups: dict[str, list[Path]] = {}
    for path, name in plan:
        groups.setdefault(str(name), []).append(path)
    return list(groups.items())


def _write_outputs(args: argparse.Namespace, results: list[Result]) -> None:
    if args.json:
        from grader import result_json

        instructor = getattr(args, "instructor", False)
        data = (result_json.to_dict(results[0], instructor) if len(results) == 1 else
                {"schema": "grader.results/1",
                 "results": [result_json.to_dict(r, instructor) for r in results]})
        write(args.json, json.dumps(data, indent=2))
    if not (args.html or args.md):
        return
    # Imported here: Jinja2 and the templates cost a `grade run` without reports ~40 ms.
    from grader.report import html as html_report
    from grader.report import markdown as markdown_report

    for target, render, suffix in ((args.html, html_report.render, ".html"),
                                   (args.md, markdown_report.render, ".md")):
        if not target:
            continue
        if len(results) == 1:
            write(target, render(results[0]))
            continue
        for result in results:  # several submissions: the path is a folder
            write(str(report_path(Path(target), result, suffix)), render(result))


FEEDBACK_FILES = (".html", ".ipynb")


def _check_feedback(args: argparse.Namespace) -> None:
    """Refuse, before grading, a `--feedback` that cannot be written: a module (no
    notebook to annotate), or one file named for several notebooks."""
    paths = expand(args.submissions)
    modules = [path for path in paths if path.suffix == ".py"]
    if modules:
        raise UsageError(f"--feedback: {modules[0]} is a module, not a notebook: feedback "
                         "beside the code needs a .ipynb notebook; use --html for a "
                         "module's report")
    if Path(args.feedback).suffix in FEEDBACK_FILES and len(paths) > 1:
        raise UsageError(f"--feedback {args.feedback} names one file, but {len(paths)} "
                         "notebooks are graded: name a folder, where each notebook gets "
                         "<notebook>.feedback.html")


def _write_feedback(args: argparse.Namespace, results: list[Result], out: TextIO) -> None:
    """Each graded notebook with its feedback cells, where `--feedback` says."""
    from grader.batch import feedback_files

    target = Path(args.feedback)
    for result in results:
        for name in result.files or (result.submission,):
            path = (target if target.suffix in FEEDBACK_FILES
                    else target / f"{Path(name).stem}{feedback_files.SUFFIX}")
            written, why = feedback_files.content(result, Path(name),
                                                  name if result.files else "", path,
                                                  parser.limits(args))
            if written is None:
                out.write(f"no feedback notebook for {text.visible(name)}: "
                          f"{text.visible(why)}\n")
                continue
            write(str(path), written)


def cmd_run(args: argparse.Namespace, out: TextIO) -> int:
    """`grade run`: exit 1 when a submission could not be graded or scores under
    `--fail-under`."""
    if args.feedback:
        _check_feedback(args)
    results = _grade_all(args, out, public_only=False)
    if args.feedback:
        _write_feedback(args, results, out)
    if args.junit:
        from grader.report import junit as junit_report

        write(args.junit, junit_report.render(results))
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:  # GitHub Actions: append to the job summary (at most 1 MiB per step)
        from grader.report import markdown as markdown_report

        written = "\n".join(markdown_report.render(r) for r in results)
        with open(summary, "a", encoding="utf-8") as stream:
            stream.write(written[:MAX_SUMMARY])
    failed = [r for r in results if r.status is ResultStatus.ERROR
              or (args.fail_under is not None and r.score < args.fail_under)]
    return 1 if failed else 0


def cmd_check(args: argparse.Namespace, out: TextIO) -> int:
    """`grade check`: the public cases only; exit 1 unless they all pass."""
    results = _grade_all(args, out, public_only=True)
    ok = all(r.status is ResultStatus.GRADED  # a part not handed in is said, not failed
             and all(e.status is CheckStatus.PASSED for e in r.exercises if e.handed_in)
             for r in results)
    return 0 if ok else 1
