"""A course's own assignment, as another instructor makes it and as students get it (#24).

The assignment is declared outside the package, the way docs/authoring.md says:
a master notebook, `grade assign --out DIR`, the skeleton completed by hand (hidden cases and
catalogued misconceptions), `grade assign` again, `grade release` into a students' folder.
Then, with none of the grader's environment variables, as a student has it:
- `check()` and `grade check` name each catalogued mistake as `grade run` does on the public
  cases (the same id and sentence, for the same wrong function);
- the commands the released files tell students to run work, from the folder and from
  elsewhere, and a module's check() finds its check data beside its own file;
- the check data holds no hidden value and no line of the misconceptions' code.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from grader.course import checkfile, registry
from tests import leakscan
from tests.conftest import ROOT
from tests.helpers import course as made
from tests.helpers.command import run as grade
from tests.helpers.course import (
    CHECKS,
    COMPLETED,
    EXERCISES,
    MISTAKES,
    NAME,
    PAIRED,
    label_of,
    student,
    student_of,
)
from tests.helpers.scanning import MARKERS, secrets


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> dict[str, Path]:
    """The course made as docs/authoring.md says (`tests.helpers.course`)."""
    registry.assignments.cache_clear()
    yield made.make(tmp_path_factory.mktemp("course"))
    registry.assignments.cache_clear()


def _clean_env() -> dict[str, str]:
    """A student's environment: none of the grader's variables; this tree's grader."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
    env["PYTHONPATH"] = str(ROOT)
    return env


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=_clean_env(), capture_output=True, text=True,
                          timeout=300)


def _grade_command(line: str) -> list[str]:
    """A `grade ...` line as students are told it, run with this tree's grader."""
    words = shlex.split(line)
    assert words[0] == "grade"
    return [sys.executable, "-m", "grader", *words[1:]]


def _copy(course: dict[str, Path], where: Path) -> Path:
    """A student's copy of the released folder."""
    shutil.copytree(course["release"], where)
    return where


def _public_diagnoses(result: dict) -> dict[str, list[tuple[str, str, str]]]:
    """Each exercise's public checks, with their diagnosis, from a result's JSON."""
    return {e["name"]: [(c["name"], c["diagnosis"]["id"], c["diagnosis"]["message"])
                        for c in e["checks"] if c["visibility"] == "public" and c["diagnosis"]]
            for e in result["exercises"]}


HEADER = re.compile(r"^(\w+) \(in this notebook\) · " + NAME + ": ", re.M)
# the example's label, or the practice case's ("public, no points")
DIAGNOSED = re.compile(r"^ +(\S+) \(public(?: example)?, no points\): \[([\w-]+)\] (.+)$", re.M)


def _shown(printed: str) -> dict[str, list[tuple[str, str, str]]]:
    """What check() printed, as (case, id, message) for each exercise it checked."""
    parts = HEADER.split(printed)[1:]
    return {name: [m.groups() for m in DIAGNOSED.finditer(text)]
            for name, text in zip(parts[::2], parts[1::2], strict=True)}


def _once(graded: dict[str, list[tuple[str, str, str]]]) -> dict[str, list[tuple[str, str, str]]]:
    """What a terminal report shows of `graded`: each mistake once, on the first check that
    has it (the practice case that fails as the example does is not said again)."""
    found: dict[str, list[tuple[str, str, str]]] = {}
    for name, checks in graded.items():
        found[name] = []
        for check in checks:
            if check[1:] not in [said[1:] for said in found[name]]:
                found[name].append(check)
    return found


@pytest.mark.parametrize("mistakes", PAIRED, ids=label_of)
def test_check_names_each_mistake_as_grade_run_does(course, tmp_path, monkeypatch, mistakes):
    """The same wrong module through `grade run` (the instructor's, with the declaration),
    `grade check` and check() (the student's: the release alone, no GRADER_* variables, run
    from another folder): the same public checks, named the same."""
    folder = _copy(course, tmp_path / "student")
    path = folder / f"{NAME}_mine.py"
    path.write_text(student_of(mistakes) + CHECKS)

    for key, value in course["env"].items():
        monkeypatch.setenv(key, value)
    registry.assignments.cache_clear()
    code, out, err = grade("run", str(path), "--json", str(tmp_path / "run.json"))
    assert (code, err) == (0, ""), err
    graded = _public_diagnoses(json.loads((tmp_path / "run.json").read_text()))
    made_in = dict(mistakes)  # grade run names each exercise's own mistake, or none
    assert {name: {d[1] for d in found} for name, found in graded.items()} == {
        name: {made_in[name]} if name in made_in else set() for name in EXERCISES}

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = _run([sys.executable, str(path)], elsewhere)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert _shown(done.stdout) == _once(graded)

    done = _run([sys.executable, "-m", "grader", "check", str(path), "--json",
                 str(tmp_path / "check.json")], elsewhere)
    assert (done.returncode, done.stderr) == (1, ""), done.stderr
    assert _public_diagnoses(json.loads((tmp_path / "check.json").read_text())) == graded


def test_the_released_instructions_work_as_written(course, tmp_path):
    """The stub module's docstring tells students a command: it runs, with no GRADER_*
    variables, in the released folder and (its file named by a path) from elsewhere; on the
    stubs it says what is not written yet, on a solution that every public check passes."""
    folder = _copy(course, tmp_path / "student")
    module = (folder / f"{NAME}.py").read_text()
    told = re.findall(r"`(grade [^`]+)`", module)
    assert told == [f"grade check {NAME}.py"]
    # each exercise's example and practice case
    expected = f"{NAME}.py · {NAME}: 0 / 4 public checks pass (public cases only)"
    for cwd, prefix in ((folder, ""), (tmp_path, "student/")):
        command = _grade_command(told[0].replace(f"{NAME}.py", f"{prefix}{NAME}.py"))
        done = _run(command, cwd)
        assert (done.returncode, done.stderr) == (1, ""), done.stderr
        assert done.stdout.startswith(f"{prefix}{expected}"), done.stdout
        assert done.stdout.count("[unattempted]") == 2
    (folder / f"{NAME}.py").write_text(student({}))
    done = _run(_grade_command(told[0]), folder)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout.startswith(f"{NAME}.py · {NAME}: 4 / 4 public checks pass")
    # The notebook's metadata names the assignment: `grade check` on it, and --assignment.
    for extra in ([], ["--assignment", NAME]):
        done = _run([sys.executable, "-m", "grader", "check", *extra, f"{NAME}.ipynb"], folder)
        assert (done.returncode, done.stderr) == (1, ""), done.stderr
        assert done.stdout.startswith(f"{NAME}.ipynb · {NAME}: 0 / 4 public checks pass")
    done = _run([sys.executable, "-m", "grader", "check", "--assignment", "scoring_cours",
                 f"{NAME}.py"], folder)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert ("unknown assignment 'scoring_cours': this grader declares attention_basics"
            in done.stderr)
    assert (f"there is no scoring_cours.check.npz beside {NAME}.py (`grade release` puts it "
            "beside the notebook)") in done.stderr


def test_the_released_notebooks_checks_explain_what_is_wrong(course, tmp_path, monkeypatch):
    """The released notebook, run in a real kernel in the student's folder with no GRADER_*
    variables: its `check(...)  # runs the public cases and explains what is wrong` lines
    show the stub unwritten and name a mistake that the course catalogues."""
    folder = _copy(course, tmp_path / "student")
    notebook = nbformat.read(folder / f"{NAME}.ipynb", as_version=4)
    sources = [cell.source for cell in notebook.cells if cell.cell_type == "code"
               and "grader-self-check" not in cell.metadata.get("tags", [])]
    told = [line for source in sources for line in source.splitlines() if "check(" in line
            and not line.startswith("from")]
    assert told == [f'check("{name}")  # runs the public cases and explains what is wrong'
                    for name in EXERCISES]
    cell = next(c for c in notebook.cells if "def attend" in c.source)
    wrong = student(MISTAKES[("attend", "missing-scale")])
    cell.source = wrong[wrong.index("def attend"):] + '\n\ncheck("attend")\n'
    for key in [k for k in os.environ if k.startswith("GRADER_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    NotebookClient(notebook, timeout=120, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(folder)}}).execute()
    shown = [o.data["text/html"] for c in notebook.cells for o in c.get("outputs", [])
             if o.output_type == "display_data"]
    assert len(shown) == 2, [o for c in notebook.cells for o in c.get("outputs", [])]
    assert "not implemented yet" in shown[0] and "data-diagnosis" not in shown[0].replace(
        'data-diagnosis="unattempted"', "")
    assert 'data-diagnosis="missing-scale"' in shown[1]


def test_the_check_data_holds_nothing_hidden_and_no_code(course, monkeypatch, capsys):
    """The release, scanned as every release is (hidden inputs and outputs, solution lines,
    markers), and for every line of the misconceptions' code."""
    for key, value in course["env"].items():
        monkeypatch.setenv(key, value)
    registry.assignments.cache_clear()
    assignment = registry.get(NAME)
    needles, lines, texts = secrets(assignment)
    code = {line.strip() for e in assignment.exercises for m in e.misconceptions
            for line in inspect.getsource(m.variant).splitlines()}
    code |= {line.strip() for line in COMPLETED.splitlines()}
    code = {line for line in code if len(line) >= 10 and not line.startswith(("import ",
                                                                             "from "))}
    assert needles and texts and len(code) > 10
    scan = leakscan.main(needles, sorted(set(lines) | code), top=str(course["release"]),
                         texts=texts, markers=MARKERS, deep=True)
    assert scan.found == [] and scan.files == 3
    # The names it carries, for the diagnosis: the ids and sentences, nothing else.
    public, _ = checkfile.read(course["release"] / f"{NAME}.check.npz")
    assert [[m.id for m in e.misconceptions] for e in public.exercises] == [
        ["missing-scale", "wrong-scale"], ["missing-scale", "wrong-scale", "softmax-wrong-axis"]]
