"""The `grade` command. Errors from the GraderError tree are caught here, and only here."""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from grader import __version__, result_json, text
from grader.classwork import gradebook
from grader.errors import GraderError, UsageError
from grader.pipeline import grading, submissions
from grader.pipeline.grading import Options
from grader.report import terminal
from grader.results import CheckStatus, Result, ResultStatus
from grader.sandbox import zygote
from grader.sandbox.limits import Limits
from grader.sandbox.session import Engine, OnError
from grader.spec import registry

MAX_SUMMARY = 1 << 20


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def _cmd_list(args: argparse.Namespace, out: TextIO) -> int:
    for assignment in registry.assignments().values():
        out.write(f"{assignment.name}  ({assignment.max_score:g} points)  {assignment.title}\n")
        for exercise in assignment.exercises:
            public = sum(case.visibility.value == "public" for case in exercise.cases)
            earning = sum(case.earns_points for case in exercise.cases)
            unit = "pt" if exercise.points == 1 else "pts"
            worth = ("provided by the notebook, not scored" if exercise.provided
                     else f"{exercise.points:g} {unit}")
            split = f", {earning} hidden worth points" if not exercise.provided else ""
            out.write(f"  {exercise.name}{exercise.signature}  {worth}, "
                      f"{len(exercise.cases)} cases ({public} public{split})\n")
    return 0


def _cmd_references(args: argparse.Namespace, out: TextIO) -> int:
    from grader.spec import references

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


def _cmd_assign(args: argparse.Namespace, out: TextIO) -> int:
    from grader.authoring import assign
    from grader.authoring.layout import Layout

    for written in assign.assign(Path(args.master), Path(args.out)):
        out.write(f"{written.path}: {written.what}\n")
    for name, value in Layout(Path(args.out)).environment().items():
        out.write(f"to grade it, set {name}={value}\n")
    return 0


def _cmd_release(args: argparse.Namespace, out: TextIO) -> int:
    from grader.authoring import release

    for path in release.release(registry.get(args.assignment), Path(args.out)):
        out.write(f"{path}\n")
    return 0


def _cmd_validate(args: argparse.Namespace, out: TextIO) -> int:
    from grader.authoring import validate

    assignment = registry.get(args.assignment)
    found = validate.problems(assignment)
    for problem in found:
        out.write(f"{assignment.name}: {problem}\n")
    if not found:
        out.write(validate.summary(assignment) + "\n")
    return 1 if found else 0


def expand(paths: Sequence[str], out: TextIO | None = None) -> list[Path]:
    """Submission files named on the command line; a folder stands for the files inside it."""
    found = submissions.named(paths)
    for path, why in found.refused:
        if out is not None:
            out.write(f"ignored {text.one_line(str(path))}: {why}\n")
    return list(found.files)


def _options(args: argparse.Namespace, public_only: bool) -> Options:
    limits = Limits(cell_timeout=args.timeout, call_timeout=args.call_timeout,
                    memory_mb=args.memory_mb, submission_mb=args.max_submission_mb)
    return Options(limits=limits, on_error=args.on_error, engine=args.engine,
                   public_only=public_only, require_namespaces=args.require_namespaces)


def _grade_all(args: argparse.Namespace, out: TextIO, public_only: bool) -> list[Result]:
    paths = expand(args.submissions, out)
    plan = [(path, grading.infer_assignment(path, args.assignment)) for path in paths]
    unknown = [str(path) for path, name in plan if name is None]
    if unknown:
        raise UsageError(f"cannot tell the assignment of {', '.join(unknown)}: the notebook "
                         "metadata does not name one and neither does the file name; "
                         "pass --assignment NAME")
    options = _options(args, public_only)
    color = out.isatty() if hasattr(out, "isatty") else False
    results: list[Result] = []
    with zygote.kept():  # one zygote for the whole run
        _grade_each(args, plan, options, out, color, results)
    _write_outputs(args, results)
    return results


def _grade_each(args: argparse.Namespace, plan: list[tuple[Path, str | None]],
                options: Options, out: TextIO, color: bool, results: list[Result]) -> None:
    for name, group in _students(plan, args.each):
        assignment = registry.get(name)
        result = (grading.grade(group[0], assignment, options) if len(group) == 1
                  else grading.grade_files(group, assignment, options))
        results.append(result)
        out.write(terminal.render(result, color=color, verbose=args.verbose))
        if getattr(args, "instructor", False) and result.hidden_output:
            out.write("What the hidden checks' calls printed (for the instructor only):\n"
                      f"{text.clean(result.hidden_output)}\n")


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


def _report_name(result: Result) -> str:
    """A report's file name among several: the submission's, or the assignment's when it
    combines several files."""
    return result.assignment if result.files else Path(result.submission).stem


def _write_outputs(args: argparse.Namespace, results: list[Result]) -> None:
    if args.json:
        instructor = getattr(args, "instructor", False)
        data = (result_json.to_dict(results[0], instructor) if len(results) == 1 else
                {"schema": "grader.results/1",
                 "results": [result_json.to_dict(r, instructor) for r in results]})
        _write(args.json, json.dumps(data, indent=2))
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
            _write(target, render(results[0]))
            continue
        for result in results:  # several submissions: the path is a folder
            _write(str(Path(target) / (_report_name(result) + suffix)), render(result))


def _write(path: str, text: str) -> None:
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{path}: cannot be written ({exc.strerror}); "
                         "choose another path") from None


def _cmd_run(args: argparse.Namespace, out: TextIO) -> int:
    results = _grade_all(args, out, public_only=False)
    if args.junit:
        from grader.report import junit as junit_report

        _write(args.junit, junit_report.render(results))
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:  # GitHub Actions: append to the job summary (at most 1 MiB per step)
        from grader.report import markdown as markdown_report

        text = "\n".join(markdown_report.render(r) for r in results)
        with open(summary, "a", encoding="utf-8") as stream:
            stream.write(text[:MAX_SUMMARY])
    failed = [r for r in results if r.status is ResultStatus.ERROR
              or (args.fail_under is not None and r.score < args.fail_under)]
    return 1 if failed else 0


def _cmd_check(args: argparse.Namespace, out: TextIO) -> int:
    results = _grade_all(args, out, public_only=True)
    ok = all(r.status is ResultStatus.GRADED
             and all(e.status is CheckStatus.PASSED for e in r.exercises) for r in results)
    return 0 if ok else 1


def _cmd_batch(args: argparse.Namespace, out: TextIO) -> int:
    from grader.classwork import batch

    assignment = registry.get(args.assignment)
    summary = batch.run(Path(args.folder), assignment, Path(args.out), args.jobs,
                        _options(args, public_only=False), force=args.force,
                        pattern=batch.compile_pattern(args.student_pattern), dask=args.dask)
    for line in summary.ignored:
        out.write(f"ignored {text.one_line(line)}\n")
    out.write(f"graded {summary.graded}, skipped {summary.skipped} already in the gradebook, "
              f"{summary.errors} could not be graded, in {summary.seconds:.1f} s; "
              f"gradebook: {Path(args.out) / gradebook.FILENAME}\n")
    return 1 if summary.errors else 0


def _cmd_export(args: argparse.Namespace, out: TextIO) -> int:
    book = gradebook.existing(Path(args.out))
    columns = {}
    for item in args.column:
        name, _, title = item.partition("=")
        if not title:
            raise UsageError(f"--column {item!r}: write ASSIGNMENT=TITLE, for example "
                             "'udl_attention=Self-attention (1234)'")
        columns[name] = title
    rows = book.rows(args.assignment)
    text = gradebook.export(rows, args.format, columns)
    if args.output:
        _write(args.output, text)
    else:
        out.write(text)
    return 0


def _cmd_class_report(args: argparse.Namespace, out: TextIO) -> int:
    from grader.classwork import classreport
    from grader.report import classpage

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
            _write(target, render(report))
    if not any(target for target, _ in targets):
        out.write(classpage.markdown(report))
    return 0


def _cmd_gradescope(args: argparse.Namespace, out: TextIO) -> int:
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


def _cmd_doctor(args: argparse.Namespace, out: TextIO) -> int:
    from grader.sandbox import doctor

    found = doctor.findings()
    out.write(doctor.render(found))
    return 0 if doctor.confined(found) else 1


def _add_limits(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--timeout", type=float, default=Limits.cell_timeout, metavar="S",
                        help="seconds per top-level statement of a cell (default %(default)s)")
    parser.add_argument("--call-timeout", type=float, default=Limits.call_timeout,
                        metavar="S", help="seconds per call of an exercise "
                        "(default %(default)s)")
    parser.add_argument("--memory-mb", type=int, default=Limits.memory_mb, metavar="MB",
                        help="address space of the student's processes (default %(default)s)")
    parser.add_argument("--max-submission-mb", type=float, default=Limits.submission_mb,
                        metavar="MB", help="largest submission file; a larger one is refused "
                        "unread (default %(default)s)")
    _add_engine_options(parser)

def _add_grading_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("submissions", nargs="+", metavar="SUBMISSION",
                        help="a .ipynb or .py file, or a folder of them; the files of one "
                        "assignment are one student's work, each exercise taken from the file "
                        "where it scores best")
    parser.add_argument("--each", action="store_true",
                        help="grade every file on its own (files of several students)")
    parser.add_argument("--assignment", help="assignment name (default: from the notebook's "
                        "metadata or the file name)")
    parser.add_argument("--json", metavar="PATH", help="write the JSON result here")
    parser.add_argument("--html", metavar="PATH", help="write the HTML feedback report here "
                        "(a folder when grading several submissions)")
    parser.add_argument("--md", metavar="PATH", help="write the Markdown report here "
                        "(a folder when grading several submissions)")
    _add_limits(parser)
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="show every failing check, not one line per distinct problem")


def _add_engine_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--on-error", choices=[o.value for o in OnError], default="statement",
                        help="after a failing statement: go on with the next statement "
                        "(default), skip the rest of the cell, or stop like Jupyter's Run All")
    parser.add_argument("--engine", choices=[e.value for e in Engine], default="fast",
                        help="fast (default): each submission's worker is a fork of a warm "
                        "zygote interpreter that has numpy imported (and matplotlib.pyplot for "
                        "submissions that import matplotlib; a fresh interpreter where Linux "
                        "namespaces are not available or the zygote fails), and each call of "
                        "an exercise a fork of that worker; fresh: a fresh interpreter per "
                        "submission; kernel: a real Jupyter kernel. All three are confined "
                        "alike")
    parser.add_argument("--require-namespaces", action="store_true",
                        help="refuse to grade (exit 3) where Linux namespaces are not "
                        "available; without them, student code runs as a user of its own as "
                        "root, or as the grader's own user otherwise (see SECURITY.md)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `grade`."""
    parser = _Parser(prog="grade", description="Grade attention-mechanism exercises.")
    parser.add_argument("--version", action="version", version=f"grade {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    listing = commands.add_parser("list", help="show the assignments, their functions and points")
    listing.set_defaults(handler=_cmd_list)

    run = commands.add_parser("run", help="grade submissions against the hidden references")
    _add_grading_options(run)
    run.add_argument("--fail-under", type=float, metavar="SCORE",
                     help="exit 1 when a submission scores below SCORE")
    run.add_argument("--junit", metavar="PATH", help="write JUnit XML, one testcase per check")
    run.add_argument("--instructor", action="store_true",
                     help="also show what the hidden checks' calls printed, in the terminal "
                     "and in --json (never in a report for students)")
    run.set_defaults(handler=_cmd_run)

    grade_class = commands.add_parser("batch", help="grade a folder of submissions in "
                                      "parallel into a gradebook")
    grade_class.add_argument("folder", metavar="SUBMISSIONS_DIR")
    grade_class.add_argument("--assignment", required=True)
    grade_class.add_argument("--out", required=True, metavar="OUT_DIR",
                             help="gradebook.sqlite and results/<student>/ go here")
    grade_class.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                             help="submissions graded at once (default: the number of cores)")
    grade_class.add_argument("--force", action="store_true",
                             help="grade again what the gradebook already has")
    grade_class.add_argument("--student-pattern", metavar="REGEX",
                             help="a regular expression with a group (?P<student>...), "
                             "searched in each file's path under SUBMISSIONS_DIR")
    grade_class.add_argument("--dask", metavar="ADDRESS",
                             help="grade on the Dask cluster whose scheduler is at ADDRESS "
                             "(tcp://HOST:8786), or on local:N, N Dask worker processes here; "
                             "--jobs is then ignored (needs attention-grader[dask])")
    _add_limits(grade_class)
    grade_class.set_defaults(handler=_cmd_batch)

    book = commands.add_parser("gradebook", help="export the grades of a batch, or report on "
                               "the class")
    book_commands = book.add_subparsers(dest="action", required=True, parser_class=_Parser)
    export = book_commands.add_parser("export", help="write the grade table as CSV")
    export.add_argument("--out", default=".", metavar="OUT_DIR",
                        help="the folder given to grade batch --out (default: here)")
    export.add_argument("--format", choices=gradebook.FORMATS, default="csv",
                        help="csv (one row per student and assignment), canvas (Canvas's "
                        "gradebook import) or moodle (Moodle's CSV import)")
    export.add_argument("--assignment", help="only this assignment")
    export.add_argument("--column", action="append", default=[], metavar="ASSIGNMENT=TITLE",
                        help="column title in the LMS, e.g. 'udl_attention=Attention (1234)' "
                        "(Canvas matches its id in parentheses)")
    export.add_argument("--output", metavar="FILE", help="write here instead of stdout")
    export.set_defaults(handler=_cmd_export)
    report = book_commands.add_parser("report", help="what the class got wrong: scores, "
                                      "exercises, cases, misconceptions, cell errors and "
                                      "similar submissions, for the instructor")
    report.add_argument("--out", default=".", metavar="OUT_DIR",
                        help="the folder given to grade batch --out (default: here)")
    report.add_argument("--assignment", help="the assignment, when the gradebook holds several")
    report.add_argument("--html", metavar="FILE", help="write the page here")
    report.add_argument("--md", metavar="FILE", help="write it in Markdown here")
    report.add_argument("--json", metavar="FILE", help="write the numbers as JSON here "
                        "(with none of the three, the Markdown goes to stdout)")
    report.set_defaults(handler=_cmd_class_report)

    scope = commands.add_parser("gradescope", help="build a Gradescope autograder bundle, or "
                                "grade inside one")
    scope_commands = scope.add_subparsers(dest="action", required=True, parser_class=_Parser)
    build = scope_commands.add_parser("build", help="write the autograder zip")
    build.add_argument("bundle", metavar="OUT.zip")
    run_inside = scope_commands.add_parser("run", help="grade /autograder/submission (this is "
                                           "what the bundle's run_autograder calls)")
    for command in (build, run_inside):
        command.add_argument("--assignment", required=True)
        command.set_defaults(handler=_cmd_gradescope)

    check = commands.add_parser("check", help="run the public cases only, as a student would "
                                "before handing in (exit 1 unless all pass)")
    _add_grading_options(check)
    check.set_defaults(handler=_cmd_check)

    doctor = commands.add_parser("doctor", help="say how this machine isolates student code, "
                                 "why, and what to change (exit 1 when it is not confined)")
    doctor.set_defaults(handler=_cmd_doctor)

    author = commands.add_parser("assign", help="build every file of an assignment from a "
                                 "master notebook with # BEGIN/END SOLUTION markers")
    author.add_argument("master", metavar="MASTER.ipynb")
    author.add_argument("--out", required=True, metavar="DIR", help="the course folder: "
                        "exercises/, solutions/ and the declaration go under it (this "
                        "project's root puts them where the built-in assignments are)")
    author.set_defaults(handler=_cmd_assign)

    give = commands.add_parser("release", help="write what students receive: the stubs and "
                               "the public cases for check(), nothing else")
    give.add_argument("assignment", metavar="ASSIGNMENT")
    give.add_argument("--out", required=True, metavar="DIR", help="a new or empty folder")
    give.set_defaults(handler=_cmd_release)

    lint = commands.add_parser("validate", help="report an assignment's authoring mistakes "
                               "(exit 1 when there is one)")
    lint.add_argument("assignment", metavar="ASSIGNMENT")
    lint.set_defaults(handler=_cmd_validate)

    refs = commands.add_parser("references", help="rebuild or verify the stored reference outputs")
    refs.add_argument("action", choices=["build", "verify"])
    refs.add_argument("assignments", nargs="*", metavar="ASSIGNMENT")
    refs.set_defaults(handler=_cmd_references)
    return parser


def run(argv: Sequence[str], out: TextIO, err: TextIO) -> int:
    """Run `grade` with arguments; return the exit code. Testable without a subprocess."""
    # Under GitHub Actions, a line such as "::error::" printed by student code (echoed in a
    # message) would be read as a workflow command: stop command processing around our output.
    token = secrets.token_hex(16) if os.environ.get("GITHUB_ACTIONS") == "true" else ""
    if token:
        out.write(f"::stop-commands::{token}\n")
    try:
        args = build_parser().parse_args(argv)
        return int(args.handler(args, out))
    except GraderError as exc:
        err.write(f"grade: error: {exc.message}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        err.write("grade: interrupted\n")
        return 130
    finally:
        if token:
            out.write(f"::{token}::\n")


def main() -> None:
    """Console-script entry point."""
    sys.exit(run(sys.argv[1:], sys.stdout, sys.stderr))
