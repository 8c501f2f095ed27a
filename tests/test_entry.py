"""The `grade` command boots the fork server early only for commands that use it, from the
one parser's reading of the command line, and the command owns it: it is stopped when the
command is done."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys

import pytest

from grader.cli import app, parse, run
from tests.conftest import ROOT

BATCH = ["batch", "subs", "--assignment", "udl_attention", "--out", "graded"]


@pytest.mark.parametrize("argv, wanted", [
    (["run", "a.ipynb"], True),
    ([*BATCH, "--engine", "fast"], False),  # each job process has zygotes of its own
    (["check", "a.ipynb", "--engine=fast"], True),
    (["run", "a.ipynb", "--engine", "kernel"], False),
    (["run", "a.ipynb", "--engine=fresh"], False),
    ([*BATCH, "--dask", "local:2"], False),
    ([*BATCH, "--dask=tcp://10.0.0.1:8786"], False),
    (["gradebook", "export"], False),
    (["doctor"], False),
])
@pytest.mark.own_zygotes
def test_only_commands_that_fork_from_the_zygote_start_it(argv, wanted, monkeypatch):
    from grader.sandbox import zygote

    started: list[tuple[str, ...]] = []
    monkeypatch.setattr(zygote.Zygotes, "prestart", lambda self, preload: started.append(preload))
    args = parse(argv)
    assert app.wants_zygote(args) is wanted
    with contextlib.ExitStack() as stack:
        app.own_zygotes(args, stack)
        assert isinstance(args.zygotes, zygote.Zygotes) is wanted
        zygotes = args.zygotes
    assert started == ([()] if wanted else [])
    if wanted:  # the command is done: its zygotes are stopped, and none starts again
        assert zygotes.running() == {}
        with pytest.raises(zygote.ZygoteLost, match="its command has finished"):
            zygotes.client(None, ())


@pytest.mark.parametrize("argv, early", [
    (["run", "a.ipynb"], True),
    (["check", "a.ipynb", "--timeout", "3", "--json", "r.json"], True),
    (["run", "a.ipynb", "--engine", "fast"], False),  # the parse decides
    (["run", "a.ipynb", "--eng=kernel"], False),  # a prefix of --engine
    (["run", "a.ipynb", "--each"], False),
    (["run", "--help"], False),
    (["run", "-h"], False),
    (["batch", "subs", "--assignment", "udl_attention", "--out", "graded"], False),
    (["doctor"], False),
    ([], False),
])
def test_a_command_line_boots_its_zygote_before_the_parse_only_when_it_surely_forks(argv,
                                                                                    early):
    assert app.surely_forks(argv) is early
    if early:  # what the parse then says agrees
        assert app.wants_zygote(parse(argv))


@pytest.mark.parametrize("argv, code, printed", [
    (["run", "a.ipynb", "--engine"], 2, "argument --engine: expected one argument"),
    (["run", "a.ipynb", "--engine", "warp"], 2,
     "argument --engine: invalid choice: 'warp' (choose from 'fast', 'fresh', 'kernel')"),
    (["--version"], 0, "grade 0.1.0"),
    (["run", "--help"], 0, "usage: grade run"),
    ([], 2, "the following arguments are required: command"),
])
def test_a_command_line_that_does_not_grade_starts_nothing(argv, code, printed, monkeypatch):
    from grader.sandbox import zygote

    started: list[tuple[str, ...]] = []
    monkeypatch.setattr(zygote.Zygotes, "prestart", lambda self, preload: started.append(preload))
    out, err = io.StringIO(), io.StringIO()
    assert run(argv, out, err) == code
    assert printed in out.getvalue() + err.getvalue()
    assert started == []


def test_a_command_that_stops_early_leaves_no_zygote_behind(tmp_path, own_processes):
    done = subprocess.run([sys.executable, "-m", "grader", "run", str(tmp_path / "none.ipynb"),
                           "--assignment", "udl_attention"], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "none.ipynb" in done.stdout + done.stderr
    assert own_processes.survivors() == []


def test_the_entry_point_parses_before_it_imports_the_grading_machinery():
    code = ("import sys; import grader.cli.entry; "
            "from grader.cli import parse; parse(['run', 'a.ipynb', '--timeout', '3']); "
            "print(sorted(m for m in sys.modules if m == 'numpy' or m.startswith('grader.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, check=True)
    assert done.stdout.strip() == str(['grader.cli', 'grader.cli.app',
                                       'grader.cli.class_arguments', 'grader.cli.entry',
                                       'grader.cli.parser', 'grader.errors', 'grader.sandbox',
                                       'grader.sandbox.limits', 'grader.text'])


def _imported_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running `code` in the project."""
    done = subprocess.run([sys.executable, "-c", f"import sys; {code}; print(*sys.modules)"],
                          capture_output=True, text=True, cwd=ROOT, timeout=60, check=True)
    return set(done.stdout.split())


def test_version_imports_neither_the_limits_nor_dataclasses():
    imported = _imported_after(
        "from grader.cli import app, parser\n"
        "try: parser.parse(['--version'])\n"
        "except parser.Shown: pass")
    assert "grader.cli.parser" in imported
    assert {"dataclasses", "inspect", "grader.sandbox.limits", "numpy"}.isdisjoint(imported)


def test_a_parse_builds_the_arguments_of_its_command_only():
    from grader.cli import parser

    built = parser.build_parser(complete=False)
    commands = built._subparsers._group_actions[0]
    chosen = built.parse_args(["release", "udl_attention", "--out", "x"])
    assert (chosen.command, chosen.assignment, chosen.out) == ("release", "udl_attention", "x")
    assert sorted(commands.unbuilt) == sorted(set(commands.choices) - {"release"})
    commands.complete()
    assert commands.unbuilt == {}
    assert "--fail-under" in {flag for action in commands.choices["run"]._actions
                              for flag in action.option_strings}


def test_grade_runs_module_imports_no_report_renderer_or_authoring():
    heavy = {"jinja2", "nbconvert", "nbformat", "nbclient", "distributed", "dask", "sqlite3",
             "matplotlib", "torch", "bleach", "IPython"}
    imported = _imported_after("import grader.cli.grade_commands, grader.cli.parser")
    assert "grader.pipeline.grading" in imported
    assert {m.split(".")[0] for m in imported} & heavy == set()
    assert [m for m in imported if m.startswith((
        "grader.authoring", "grader.report.html", "grader.report.markdown",
        "grader.gradebook", "grader.term", "grader.batch", "grader.classreport",
        "grader.gradescope", "grader.ingest", "grader.similarity"))] == []


def test_grade_run_imports_what_it_needs_when_it_needs_it():
    notebook = ROOT / "tests" / "corpus" / "udl_attention" / "loops.ipynb"
    imported = _imported_after(
        "import io; from grader.cli import app; "
        f"assert app.run(['run', {str(notebook)!r}], io.StringIO(), io.StringIO()) == 0")
    assert "grader.pipeline.grading" in imported and "numpy" in imported
    # A terminal's colours, plugins' entry points, the JSON of --json, a release's check data,
    # the report templates: none of them was asked for.
    assert {"rich", "importlib.metadata", "concurrent.futures", "logging", "jinja2",
            "nbformat", "grader.result_json", "grader.course.checkfile",
            "grader.report.html"}.isdisjoint(imported)
