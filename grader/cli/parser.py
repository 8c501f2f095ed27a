"""`grade`'s one argument parser, and how it ends: usage errors, `--help` and `--version`.

It imports nothing of the grading machinery (numpy, the sandbox, the assignments), so that
the entry point can read what a command asks for, and start the fork server for it, before
the grader imports itself. Every limit's flag comes from the fields of `Limits`; `--engine`
and `--on-error` become their enums here, at the edge.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import os
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TypeVar

from grader import __version__
from grader.errors import UsageError
from grader.sandbox.limits import Engine, Limits, OnError

EXPORT_FORMATS = ("csv", "canvas", "moodle")
"""`grade gradebook export --format`: those of `gradebook.FORMATS` (a test keeps them equal),
named here so that parsing imports no gradebook."""
BATCH_SOURCES = ("canvas", "moodle", "gradescope", "git", "folder")
"""`grade batch --from`: `grader.classwork.ingest.recognise.PLATFORMS` (a test holds them equal)."""

SIMILAR_THRESHOLD = 0.5
"""`grade gradebook similar --threshold`'s default: `similarity.THRESHOLD` (a test keeps them
equal), named here so that parsing imports no comparison."""

E = TypeVar("E", bound=enum.Enum)


class CommandLineError(UsageError):
    """The command line does not parse: the message, the usage line of the command it is
    about, and a hint to ask for its help."""

    def __init__(self, message: str, usage: str, prog: str) -> None:
        super().__init__(message)
        self.usage = usage
        self.hint = f"Try '{prog} --help' for help."


class Shown(Exception):  # not an error: what --help or --version prints
    """The parser's whole answer (`--help`, `--version`): print `text`, exit 0."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class _Parser(argparse.ArgumentParser):
    """A parser that raises instead of printing and exiting, so that `grade` ends in one
    place whatever happens."""

    def error(self, message: str) -> NoReturn:
        raise CommandLineError(f"{self.prog}: {message}", self.format_usage(), self.prog)

    def print_help(self, file: Any = None) -> NoReturn:  # type: ignore[override]
        raise Shown(self.format_help())

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if status:
            self.error(message or "")
        raise Shown(message or "")


class _Version(argparse.Action):
    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0,
                         help="show program's version number and exit")

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise Shown(f"grade {__version__}\n")



ASSIGN_EPILOG = """\
The declaration skeleton keeps what the master passes: a public case per call (integer and
boolean arrays keep their dtype; None, numbers, strings, tuples and lists stay as passed), and
a hidden case per pattern of arguments drawn from the same domain. A case's make_inputs is any
function of a numpy Generator that returns the argument tuple; the makers of
grader.assignments.inputs write one:
  integers(("batch",), 1, "keys")      integer array, both ends included; a bound may name a size
  booleans((4, 4))                     boolean array
  None, 3, "text"                      kept as they are, inside combined(...)
  combined(floats(("batch", "q", "d")), floats(("batch", "keys", "d")),
           integers(("batch",), 1, "keys"), sizes={"batch": (1, 4), "q": 3, "keys": (2, 6),
           "d": (2, 5)})               sizes named once, drawn once per case, shared
Exercise(..., alternatives=("my_unit_loops.py",)) declares other correct solutions (paths
under solutions/, or source): grade validate requires full marks of each. Outside this
project, the command ends with `export NAME=value` lines to paste into your shell."""

def choice(kind: type[E]) -> Callable[[str], E]:
    """An argparse `type=` that turns a value into a member of the enum `kind`, or says which
    values there are."""
    def convert(value: str) -> E:
        try:
            return kind(value)
        except ValueError:
            names = ", ".join(repr(member.value) for member in kind)
            raise argparse.ArgumentTypeError(
                f"invalid choice: {value!r} (choose from {names})") from None

    convert.__name__ = kind.__name__
    return convert


def _metavar(kind: type[enum.Enum]) -> str:
    return "{" + ",".join(str(member.value) for member in kind) + "}"


def limit_flags() -> dict[str, dataclasses.Field[Any]]:
    """Every limit's flag, with the field of `Limits` it sets."""
    return {field.metadata["flag"]: field for field in dataclasses.fields(Limits)}


def limits(args: argparse.Namespace) -> Limits:
    """The limits that a parsed command line asks for."""
    return Limits(**{field.name: getattr(args, field.name)
                     for field in dataclasses.fields(Limits)})


def _add_limits(parser: argparse.ArgumentParser) -> None:
    for flag, field in limit_flags().items():
        parser.add_argument(flag, dest=field.name, type=type(field.default),
                            default=field.default, metavar=field.metadata["unit"],
                            help=f"{field.metadata['help']} (default %(default)s)")
    parser.add_argument("--on-error", type=choice(OnError), default=OnError.STATEMENT,
                        metavar=_metavar(OnError),
                        help="after a failing statement: go on with the next statement "
                        "(default), skip the rest of the cell, or stop like Jupyter's Run All")
    parser.add_argument("--engine", type=choice(Engine), default=Engine.FAST,
                        metavar=_metavar(Engine),
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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `grade`. Each command's `handler` names the function that runs
    it, as "module:function" in `grader.cli`."""
    parser = _Parser(prog="grade", description="Grade attention-mechanism exercises.")
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    listing = commands.add_parser("list", help="show the assignments, their functions and points")
    listing.set_defaults(handler="author_commands:cmd_list")

    run = commands.add_parser("run", help="grade submissions against the hidden references")
    _add_grading_options(run)
    run.add_argument("--fail-under", type=float, metavar="SCORE",
                     help="exit 1 when a submission scores below SCORE")
    run.add_argument("--junit", metavar="PATH", help="write JUnit XML, one testcase per check")
    run.add_argument("--feedback", metavar="FILE.html|FILE.ipynb|DIR",
                     help="write the student's own notebook with a feedback cell after each "
                     "exercise's cell: as a page (.html) or a notebook (.ipynb); with several "
                     "notebooks, a folder that gets <notebook>.feedback.html for each "
                     "(notebooks only: a module's feedback is --html)")
    run.add_argument("--instructor", action="store_true",
                     help="also show what the hidden checks' calls printed, in the terminal "
                     "and in --json (never in a report for students)")
    run.set_defaults(handler="grade_commands:cmd_run")

    grade_class = commands.add_parser("batch", help="grade a folder of submissions in "
                                      "parallel into a gradebook")
    grade_class.add_argument("folder", metavar="SOURCE",
                             help="a folder of submissions, or the .zip of a platform's "
                             "bulk download (unpacked under OUT_DIR/submissions/)")
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
    grade_class.add_argument("--feedback", action="store_true",
                             help="also write each notebook with a feedback cell after each "
                             "exercise's cell, as results/<student>/<notebook>.feedback.html")
    grade_class.add_argument("--from", dest="platform", choices=BATCH_SOURCES,
                             help="the layout of SOURCE: a Canvas, Moodle or Gradescope "
                             "download, a folder of Git repositories, or a plain folder "
                             "(default: recognised)")
    _add_limits(grade_class)
    _add_roster(grade_class)
    grade_class.set_defaults(handler="grade_commands:cmd_batch")

    book = commands.add_parser("gradebook", help="export the grades of a batch, or report on "
                               "the class")
    book_commands = book.add_subparsers(dest="action", required=True, parser_class=_Parser)
    export = book_commands.add_parser("export", help="write the grade table as CSV")
    export.add_argument("--out", default=".", metavar="OUT_DIR",
                        help="the folder given to grade batch --out (default: here)")
    export.add_argument("--format", choices=EXPORT_FORMATS, default="csv",
                        help="csv (one row per student and assignment), canvas (Canvas's "
                        "gradebook import) or moodle (Moodle's CSV import)")
    export.add_argument("--assignment", help="only this assignment")
    export.add_argument("--column", action="append", default=[], metavar="ASSIGNMENT=TITLE",
                        help="column title in the LMS, e.g. 'udl_attention=Attention (1234)' "
                        "(Canvas matches its id in parentheses)")
    export.add_argument("--output", metavar="FILE", help="write here instead of stdout")
    export.add_argument("--comments", action="store_true",
                        help="add a column with each student's one-line summary")
    export.add_argument("--dry-run", action="store_true",
                        help="write nothing: say which grades would change against the "
                        "last export in this format")
    _add_term(export)
    export.set_defaults(handler="term_commands:cmd_export")
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
    _add_similarity(report)
    _add_term(report)
    report.set_defaults(handler="class_commands:cmd_class_report")
    _add_override_commands(book_commands)
    similar = book_commands.add_parser("similar", help="rank pairs of students by the rare "
                                       "code they share (the template subtracted): a lead for "
                                       "a human look, never a verdict")
    similar.add_argument("--out", default=".", metavar="OUT_DIR",
                         help="the folder given to grade batch --out (default: here)")
    similar.add_argument("--assignment", help="the assignment, when the gradebook holds several")
    similar.add_argument("--json", metavar="FILE", help="also write the ranking as JSON here")
    similar.add_argument("--top", type=int, default=20, metavar="N",
                         help="pairs printed (default: 20)")
    _add_similarity(similar)
    similar.set_defaults(handler="class_commands:cmd_similar")

    scope = commands.add_parser("gradescope", help="build a Gradescope autograder bundle, or "
                                "grade inside one")
    scope_commands = scope.add_subparsers(dest="action", required=True, parser_class=_Parser)
    build = scope_commands.add_parser("build", help="write the autograder zip")
    build.add_argument("bundle", metavar="OUT.zip")
    run_inside = scope_commands.add_parser("run", help="grade /autograder/submission (this is "
                                           "what the bundle's run_autograder calls)")
    for command in (build, run_inside):
        command.add_argument("--assignment", required=True)
        command.set_defaults(handler="class_commands:cmd_gradescope")

    check = commands.add_parser("check", help="run the public cases only, as a student would "
                                "before handing in (exit 1 unless all pass)")
    _add_grading_options(check)
    check.set_defaults(handler="grade_commands:cmd_check")

    doctor = commands.add_parser("doctor", help="say how this machine isolates student code, "
                                 "why, and what to change (exit 1 when it is not confined)")
    doctor.set_defaults(handler="author_commands:cmd_doctor")

    author = commands.add_parser("assign", help="build every file of an assignment from a "
                                 "master notebook with # BEGIN/END SOLUTION markers",
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=ASSIGN_EPILOG)
    author.add_argument("master", metavar="MASTER.ipynb")
    author.add_argument("--out", required=True, metavar="DIR", help="the course folder: "
                        "exercises/, solutions/ and the declaration go under it (this "
                        "project's root puts them where the built-in assignments are)")
    author.set_defaults(handler="author_commands:cmd_assign")

    give = commands.add_parser("release", help="write what students receive: the stubs and "
                               "the public cases for check(), nothing else")
    give.add_argument("assignment", metavar="ASSIGNMENT")
    give.add_argument("--out", required=True, metavar="DIR", help="a new or empty folder")
    give.set_defaults(handler="author_commands:cmd_release")

    lint = commands.add_parser("validate", help="report an assignment's authoring mistakes "
                               "(exit 1 when there is one)")
    lint.add_argument("assignment", metavar="ASSIGNMENT")
    lint.set_defaults(handler="author_commands:cmd_validate")

    refs = commands.add_parser("references", help="rebuild or verify the stored reference outputs")
    refs.add_argument("action", choices=["build", "verify"])
    refs.add_argument("assignments", nargs="*", metavar="ASSIGNMENT")
    refs.set_defaults(handler="author_commands:cmd_references")
    return parser


def _add_similarity(command: argparse.ArgumentParser) -> None:
    """The options that compare the code of a batch's students (`grade gradebook similar`,
    and `report` for its similar-submissions section)."""
    command.add_argument("--submissions", metavar="SUBMISSIONS_DIR",
                         help="the folder (or zip) that grade batch graded (default: the one "
                         "it recorded in the gradebook)")
    command.add_argument("--stubs", metavar="DIR", help="the folder of what students received, "
                         "subtracted first (default: the course's exercises/)")
    command.add_argument("--threshold", type=float, default=SIMILAR_THRESHOLD, metavar="X",
                         help="the score, 0 to 1, that flags a pair "
                         f"(default: {SIMILAR_THRESHOLD:g})")


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """What `argv` asks for. Raises `CommandLineError` when it does not parse, and `Shown`
    for `--help` and `--version`."""
    return build_parser().parse_args(list(argv))


def _add_roster(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--roster", metavar="CSV",
                        help="the class roster as Canvas or Moodle exports it: students "
                        "without a submission are listed as missing, submissions of "
                        "students not on it are named")


def _add_term(parser: argparse.ArgumentParser) -> None:
    """The roster and the time policy, applied at every export and report."""
    _add_roster(parser)
    parser.add_argument("--due", metavar="WHEN", help="the deadline, ISO 8601 with its "
                        "offset (2026-03-01T23:59:00-05:00), or local to --timezone")
    parser.add_argument("--timezone", metavar="ZONE", help="IANA time zone of dates written "
                        "without an offset (America/New_York)")
    parser.add_argument("--late", metavar="POLICY", help="late penalty, a percentage of the "
                        "points earned per hour or day started: '10%%/day,cap=50%%,grace=15m'")
    parser.add_argument("--hard-deadline", metavar="WHEN", help="no credit after this")
    parser.add_argument("--extensions", metavar="CSV", help="per-student deadlines, lines "
                        "of student,due (a roster's extension column does the same)")


def _add_override_commands(book_commands: Any) -> None:
    """`grade gradebook override` and `grade gradebook log`."""
    override = book_commands.add_parser("override", help="set a student's grade (or one "
                                        "exercise's points) by hand, with a reason")
    override.add_argument("target", nargs="+", metavar="STUDENT [EXERCISE] POINTS",
                          help="with --clear, STUDENT [EXERCISE]")
    override.add_argument("--reason", help="why (required; kept in the log)")
    override.add_argument("--clear", action="store_true", help="remove the override")
    override.add_argument("--by", help="who (default: the user running grade)")
    override.add_argument("--out", default=".", metavar="OUT_DIR",
                          help="the folder given to grade batch --out (default: here)")
    override.add_argument("--assignment", help="the assignment, when the gradebook holds "
                          "several")
    _add_roster(override)
    override.set_defaults(handler="term_commands:cmd_override")
    log = book_commands.add_parser("log", help="every override and clear, in order")
    log.add_argument("--out", default=".", metavar="OUT_DIR",
                     help="the folder given to grade batch --out (default: here)")
    log.set_defaults(handler="term_commands:cmd_log")
