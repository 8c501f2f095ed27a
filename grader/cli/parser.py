"""`grade`'s one argument parser, and how it ends: usage errors, `--help` and `--version`.

It imports nothing of the grading machinery (numpy, the sandbox, the assignments), so that
the entry point can read what a command asks for, and start the fork server for it, before
the grader imports itself. Every limit's flag comes from the fields of `Limits`; `--engine`
and `--on-error` become their enums here, at the edge.
"""

from __future__ import annotations

import argparse
import enum
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from grader import __version__
from grader.cli import class_arguments
from grader.errors import UsageError

if TYPE_CHECKING:
    import dataclasses

    from grader.sandbox.limits import Limits

BATCH_SOURCES = ("canvas", "moodle", "gradescope", "git", "folder")
"""`grade batch --from`: `grader.ingest.recognise.PLATFORMS` (a test holds them equal)."""


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
    import dataclasses

    from grader.sandbox.limits import Limits

    return {field.metadata["flag"]: field for field in dataclasses.fields(Limits)}


def limits(args: argparse.Namespace) -> Limits:
    """The limits that a parsed command line asks for."""
    import dataclasses

    from grader.sandbox.limits import Limits

    return Limits(**{field.name: getattr(args, field.name)
                     for field in dataclasses.fields(Limits)})


def _add_limits(parser: argparse.ArgumentParser) -> None:
    # Imported here: the limits (and `dataclasses`) cost `grade --version` a third of its time.
    from grader.sandbox.limits import Engine, OnError

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


class _Commands(argparse._SubParsersAction):  # type: ignore[type-arg]
    """`grade`'s commands, each with the function that adds its arguments. A parse calls it
    for the command it runs only: every command's options cost `grade --version` and `grade
    run` milliseconds that they never use."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.unbuilt: dict[str, Callable[[], None]] = {}

    def add_command(self, name: str, build: Callable[[argparse.ArgumentParser], None],
                    **kwargs: Any) -> None:
        """Declare the command `name` (`kwargs` as for `add_parser`), built by `build`."""
        command = self.add_parser(name, **kwargs)
        self.unbuilt[name] = lambda: build(command)

    def complete(self) -> None:
        """Add the arguments of every command not built yet."""
        while self.unbuilt:
            self.unbuilt.pop(next(iter(self.unbuilt)))()

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        build = self.unbuilt.pop(values[0], None) if values else None
        if build is not None:
            build()
        super().__call__(parser, namespace, values, option_string)


def _list(listing: argparse.ArgumentParser) -> None:
    listing.set_defaults(handler="author_commands:cmd_list")


def _run(run: argparse.ArgumentParser) -> None:
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


def _batch(grade_class: argparse.ArgumentParser) -> None:
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
    class_arguments.add_roster(grade_class)
    class_arguments.add_times(grade_class)
    grade_class.set_defaults(handler="batch_command:cmd_batch")


def _gradebook(book: argparse.ArgumentParser) -> None:
    book_commands = book.add_subparsers(dest="action", required=True, parser_class=_Parser)
    export = book_commands.add_parser("export", help="write the grade table as CSV")
    class_arguments.add_gradebook(export, assignment=False)
    from grader.term.exports import formats  # the dialects' own list (light: no gradebook)

    export.add_argument("--format", choices=formats.FORMATS, default=formats.FORMATS[0],
                        help=formats.described())
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
    class_arguments.add_term(export)
    export.set_defaults(handler="gradebook_commands:cmd_export")
    report = book_commands.add_parser("report", help="what the class got wrong: scores, "
                                      "exercises, cases, misconceptions, cell errors and "
                                      "similar submissions, for the instructor")
    class_arguments.add_gradebook(report)
    report.add_argument("--html", metavar="FILE", help="write the page here")
    report.add_argument("--md", metavar="FILE", help="write it in Markdown here")
    report.add_argument("--json", metavar="FILE", help="write the numbers as JSON here "
                        "(with none of the three, the Markdown goes to stdout)")
    class_arguments.add_similarity(report)
    class_arguments.add_term(report)
    report.set_defaults(handler="gradebook_commands:cmd_class_report")
    class_arguments.add_override_commands(book_commands)
    similar = book_commands.add_parser("similar", help="rank pairs of students by the rare "
                                       "code they share (the template subtracted): a lead for "
                                       "a human look, never a verdict")
    class_arguments.add_gradebook(similar)
    similar.add_argument("--json", metavar="FILE", help="also write the ranking as JSON here")
    similar.add_argument("--top", type=int, default=20, metavar="N",
                         help="pairs printed (default: 20)")
    class_arguments.add_similarity(similar)
    similar.set_defaults(handler="gradebook_commands:cmd_similar")


def _gradescope(scope: argparse.ArgumentParser) -> None:
    scope_commands = scope.add_subparsers(dest="action", required=True, parser_class=_Parser)
    build = scope_commands.add_parser("build", help="write the autograder zip")
    build.add_argument("bundle", metavar="OUT.zip")
    run_inside = scope_commands.add_parser("run", help="grade /autograder/submission (this is "
                                           "what the bundle's run_autograder calls)")
    for command in (build, run_inside):
        command.add_argument("--assignment", required=True)
        command.set_defaults(handler="gradescope_commands:cmd_gradescope")


def _check(check: argparse.ArgumentParser) -> None:
    _add_grading_options(check)
    check.set_defaults(handler="grade_commands:cmd_check")


def _doctor(doctor: argparse.ArgumentParser) -> None:
    doctor.set_defaults(handler="author_commands:cmd_doctor")


def _assign(author: argparse.ArgumentParser) -> None:
    author.add_argument("master", metavar="MASTER.ipynb")
    author.add_argument("--out", required=True, metavar="DIR", help="the course folder: "
                        "exercises/, solutions/ and the declaration go under it (this "
                        "project's root puts them where the built-in assignments are)")
    author.set_defaults(handler="author_commands:cmd_assign")


def _release(give: argparse.ArgumentParser) -> None:
    give.add_argument("assignment", metavar="ASSIGNMENT")
    give.add_argument("--out", required=True, metavar="DIR", help="a new or empty folder")
    give.set_defaults(handler="author_commands:cmd_release")


def _validate(lint: argparse.ArgumentParser) -> None:
    lint.add_argument("assignment", metavar="ASSIGNMENT")
    lint.set_defaults(handler="author_commands:cmd_validate")


def _references(refs: argparse.ArgumentParser) -> None:
    refs.add_argument("action", choices=["build", "verify"])
    refs.add_argument("assignments", nargs="*", metavar="ASSIGNMENT")
    refs.set_defaults(handler="author_commands:cmd_references")


def _serve(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--idle-timeout", type=float, default=0.0, metavar="S",
                       help="stop after S seconds without a request (default 0: never)")
    serve.set_defaults(handler="serve_command:cmd_serve")


def build_parser(complete: bool = True) -> argparse.ArgumentParser:
    """The argument parser of `grade`. Each command's `handler` names the function that runs
    it, as "module:function" in `grader.cli`. Unless `complete`, a command's arguments are
    added only when a parse reaches it."""
    parser = _Parser(prog="grade", description="Grade attention-mechanism exercises.")
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser,
                                     action=_Commands)
    assert isinstance(commands, _Commands)
    commands.add_command("list", _list, help="show the assignments, their functions and points")
    commands.add_command("run", _run, help="grade submissions against the hidden references")
    commands.add_command("batch", _batch, help="grade a folder of submissions in parallel into "
                         "a gradebook")
    commands.add_command("gradebook", _gradebook, help="export the grades of a batch, or "
                         "report on the class")
    commands.add_command("gradescope", _gradescope, help="build a Gradescope autograder "
                         "bundle, or grade inside one")
    commands.add_command("check", _check, help="run the public cases only, as a student would "
                         "before handing in (exit 1 unless all pass)")
    commands.add_command("doctor", _doctor, help="say how this machine isolates student code, "
                         "why, and what to change (exit 1 when it is not confined)")
    commands.add_command("assign", _assign, help="build every file of an assignment from a "
                         "master notebook with # BEGIN/END SOLUTION markers",
                         formatter_class=argparse.RawDescriptionHelpFormatter,
                         epilog=ASSIGN_EPILOG)
    commands.add_command("release", _release, help="write what students receive: the stubs "
                         "and the public cases for check(), nothing else")
    commands.add_command("validate", _validate, help="report an assignment's authoring "
                         "mistakes (exit 1 when there is one)")
    commands.add_command("references", _references, help="rebuild or verify the stored "
                         "reference outputs")
    commands.add_command("serve", _serve, help="keep a warm grader that `grade run` and `grade "
                         "check` of this grader use on this machine, through a socket only "
                         "you can open; without it they grade on their own")
    if complete:
        commands.complete()
    return parser


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """What `argv` asks for. Raises `CommandLineError` when it does not parse, and `Shown`
    for `--help` and `--version`."""
    return build_parser(complete=False).parse_args(list(argv))
