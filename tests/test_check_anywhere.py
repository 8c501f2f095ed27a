"""A released notebook checks itself anywhere: the same verdicts four ways.

Completed copies of a released notebook (right, each catalogued mistake (`PAIRED`), unattempted,
a crash), of a course declared outside the package (`tests/test_released_course.py` makes it),
are checked:
- by check() with the package installed, the notebook alone in an empty folder (its carried
  check data, since the installed registry does not know the course);
- by check() in a fresh venv that holds numpy, ipykernel and nbclient only, the notebook alone in
  an empty folder: the grader's code and the check data come from the notebook;
- by `grade check` beside the released files;
- by `grade run` (the instructor's, with the hidden references), on the public checks;
and every public check has the same verdict and diagnosis id in all four. The released module
checks itself in the venv too (`python3 module.py`), and an old numpy or a missing torch is said
in one sentence.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

from grader.course import registry
from tests.conftest import ROOT
from tests.helpers import course as made
from tests.helpers.carried import carried_bundle, with_bundle
from tests.helpers.command import run as grade
from tests.helpers.course import (
    EXERCISES,
    MISTAKES,
    NAME,
    PAIRED,
    RIGHT,
    STUDENT,
    label_of,
    student_of,
)
from tests.helpers.environments import venv_of

# The four ways run 6 notebooks in two kernels each and grade them twice: minutes on a busy
# machine, which the first test waits for.
pytestmark = pytest.mark.timeout(900)
VERDICTS = '''import json, pathlib
from grader import selfcheck
found = pathlib.Path(__grader_check__).parent if __grader_check__ else None
print("VERDICTS", json.dumps({name: [
    [c.name, c.verdict.value, c.diagnosis.id if c.diagnosis else None]
    for c in selfcheck.run(name, globals().get(name), folders=[found] if found else []
                           ).exercises[0].checks] for name in ("scaled_scores", "attend")}))
print("FROM", selfcheck.__file__)
'''
RUNNER = '''import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

for path in map(Path, sys.argv[1:]):  # each alone in its own folder
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=180, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    nbformat.write(notebook, path)
'''


def _completions() -> dict[str, str | None]:
    """Each completed notebook's module source (None: the stubs as released), by label: "right",
    "unattempted", "crash", or its mistakes as `exercise.id`, joined by "+"."""
    done: dict[str, str | None] = {"right": STUDENT.format(**RIGHT), "unattempted": None}
    for mistakes in PAIRED:
        done[label_of(mistakes)] = student_of(mistakes)
    crash = STUDENT.format(**{**RIGHT, "scores": " @ keys @ keys"})  # shapes that do not fit
    done["crash"] = crash.replace("return weights @ values", "return (weights @ values)[99]")
    return done


def _completed(release: Path, source: str | None) -> nbformat.NotebookNode:
    """The released notebook with its stub cells replaced by `source`'s functions, each still
    followed by its check(), and a last cell that prints what the self-check found."""
    notebook = nbformat.read(release / f"{NAME}.ipynb", as_version=4)
    for cell in notebook.cells:
        for name in EXERCISES if source is not None else ():
            if cell.cell_type == "code" and cell.source.startswith(f"def {name}("):
                start = source.index(f"def {name}(")
                end = source.find("\n\n\ndef ", start)
                cell.source = (source[start:] if end < 0 else source[start:end]) + \
                    f'\n\n\ncheck("{name}")\n'
    notebook.cells.append(nbformat.v4.new_code_cell(VERDICTS))
    return notebook


def _student_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GRADER_", "PYTHONPATH", "VIRTUAL_ENV"))}
    return {**env, **(extra or {})}


def _printed(notebook: nbformat.NotebookNode) -> tuple[dict, str, list[str]]:
    """(the last cell's verdicts, where selfcheck came from, what each check() showed)."""
    text = "".join(o.get("text", "") for o in notebook.cells[-1].outputs)
    verdicts = json.loads(re.search(r"^VERDICTS (.*)$", text, re.M).group(1))
    origin = re.search(r"^FROM (.*)$", text, re.M).group(1)
    shown = [o.data.get("text/html", "") if o.output_type == "display_data" else o.get("text", "")
             for cell in notebook.cells[:-1] if "check(" in cell.source
             and "unpack_self_check" not in cell.source for o in cell.get("outputs", [])]
    return verdicts, origin, shown


def _ids(shown: str) -> set[str]:
    """The diagnosis ids a check() display names (HTML or text; the full report's lines, or
    the compact view's line that starts with the id)."""
    return set(re.findall(r'data-diagnosis="([\w-]+)"', shown)) | set(
        re.findall(r"\): \[([\w-]+)\]", shown)) | set(
        re.findall(r"^\s*\[([\w-]+)\] ", shown, re.M))


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> dict[str, Path]:
    """The course made and released as docs/authoring.md says (`tests.helpers.course`)."""
    registry.assignments.cache_clear()
    yield made.make(tmp_path_factory.mktemp("course"))
    registry.assignments.cache_clear()


@pytest.fixture(scope="session")
def venv(tmp_path_factory) -> Path:
    """A fresh venv with numpy, ipykernel and nbclient (and what they need), as installed
    here, and nothing of the grader (`tests.helpers.environments.venv_of`)."""
    where = tmp_path_factory.mktemp("venv") / "student"
    python = venv_of(where, ["numpy", "ipykernel", "nbclient"])
    probe = subprocess.run([str(python), "-c", "import importlib.util as u; print("
                            "[u.find_spec(n) is None for n in ('grader', 'rich', 'jinja2')])"],
                           capture_output=True, text=True, env=_student_env(), timeout=60,
                           cwd=where)
    assert probe.stdout.strip() == "[True, True, True]", probe.stderr
    return python


def _in_venv(python: Path, notebooks: dict[str, nbformat.NotebookNode],
             top: Path) -> dict[str, nbformat.NotebookNode]:
    """The notebooks run in the venv's kernel, each alone in an empty folder."""
    paths = {}
    for label, notebook in notebooks.items():
        (top / label).mkdir(parents=True)
        paths[label] = top / label / f"{NAME}.ipynb"
        nbformat.write(notebook, paths[label])
    runner = top / "runner.py"
    runner.write_text(RUNNER)
    temporary = top / "tmp"
    temporary.mkdir()
    done = subprocess.run([str(python), str(runner), *map(str, paths.values())], cwd=top,
                          env=_student_env({"PATH": f"{python.parent}:{os.environ['PATH']}",
                                            "TMPDIR": str(temporary)}),
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    for path in paths.values():  # alone, then and after
        assert [p.name for p in path.parent.iterdir()] == [path.name]
    assert list(temporary.iterdir()) == []  # the unpacked self-check left with its kernel
    return {label: nbformat.read(path, as_version=4) for label, path in paths.items()}


def _with_package(notebooks: dict[str, nbformat.NotebookNode],
                  top: Path) -> dict[str, nbformat.NotebookNode]:
    """The notebooks run in a kernel of this Python, with this tree's grader, each alone in an
    empty folder and with none of the grader's variables."""
    from nbclient import NotebookClient

    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(_student_env({"PYTHONPATH": str(ROOT)}))
        for label, notebook in notebooks.items():
            (top / label).mkdir(parents=True)
            NotebookClient(notebook, timeout=180, kernel_name="python3", allow_errors=True,
                           resources={"metadata": {"path": str(top / label)}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return notebooks


def _graded(path: Path) -> dict[str, dict[str, list[list]]]:
    """For each notebook, each exercise's public checks as [name, verdict, diagnosis id], from
    the JSON of `grade check --each` or `grade run --each`."""
    results = json.loads(path.read_text())["results"]
    return {Path(r["submission"]).stem.removeprefix("mine_"): {
        e["name"]: [[c["name"], c["verdict"], (c["diagnosis"] or {}).get("id")]
                    for c in e["checks"] if c["visibility"] == "public"]
        for e in r["exercises"]} for r in results}


@pytest.fixture(scope="module")
def four_ways(course, venv, tmp_path_factory):
    """Each completed notebook checked four ways: {label: (check() with the package, check()
    in the venv, `grade check`, `grade run`, what check() showed with the package and in the
    venv)}."""
    top = tmp_path_factory.mktemp("four-ways")
    notebooks = {label: _completed(course["release"], source)
                 for label, source in _completions().items()}
    packaged = _with_package({k: nbformat.from_dict(json.loads(json.dumps(v)))
                              for k, v in notebooks.items()}, top / "package")
    alone = _in_venv(venv, notebooks, top / "venv")
    beside = shutil.copytree(course["release"], top / "beside")
    files = []
    for label, notebook in notebooks.items():
        files.append(beside / f"mine_{label}.ipynb")
        nbformat.write(notebook, files[-1])
    code, out, err = grade("check", "--each", "--assignment", NAME, *map(str, files),
                           "--json", str(top / "check.json"))
    assert err == "" and code == 1, err
    with pytest.MonkeyPatch.context() as patch:
        for key, value in course["env"].items():
            patch.setenv(key, value)
        registry.assignments.cache_clear()
        code, out, err = grade("run", "--each", "--assignment", NAME, *map(str, files),
                               "--json", str(top / "run.json"))
        registry.assignments.cache_clear()
    assert (code, err) == (0, ""), err
    checked, graded = _graded(top / "check.json"), _graded(top / "run.json")
    found = {}
    for label in notebooks:
        with_package, from_package, shown_package = _printed(packaged[label])
        assert from_package == str(ROOT / "grader" / "selfcheck.py")
        in_venv, from_venv, shown_venv = _printed(alone[label])
        assert from_venv.endswith("self-check.zip/grader/selfcheck.py"), from_venv
        found[label] = (with_package, in_venv, checked[label], graded[label], shown_package,
                        shown_venv)
    return found


def test_the_completions_make_each_catalogued_mistake_once_and_alone_in_its_exercise():
    assert sorted(made for mistakes in PAIRED for made in mistakes) == sorted(MISTAKES)
    for mistakes in PAIRED:
        assert len({exercise for exercise, _ in mistakes}) == len(mistakes), mistakes
        changed = [key for made in mistakes for key in MISTAKES[made]]
        assert len(set(changed)) == len(changed), mistakes  # no mistake undoes another


@pytest.mark.parametrize("completion", list(_completions()))
def test_the_same_verdicts_four_ways(four_ways, completion):
    packaged, alone, checked, graded, shown_packaged, shown_alone = four_ways[completion]
    assert packaged == alone == checked == graded, (packaged, alone, checked, graded)
    named = {"right": set(), "unattempted": {"unattempted"}, "crash": set()}
    mistaken = {label_of(mistakes): dict(mistakes) for mistakes in PAIRED}.get(completion, {})
    for exercise in EXERCISES:  # each exercise's own mistake, or none
        expected = named[completion] if completion in named else \
            {mistaken[exercise]} if exercise in mistaken else set()
        assert {d for _, _, d in graded[exercise] if d} == expected, (exercise, graded)
    verdicts = {v for checks in graded.values() for _, v, _ in checks}
    assert verdicts == {"right": {"passed"}, "unattempted": {"raised"},
                        "crash": {"raised"}}.get(completion, verdicts)
    # What check() showed, in the student's kernel, names the same diagnoses.
    for shown in (shown_packaged, shown_alone):
        assert len(shown) == 2, shown
        for name, display in zip(EXERCISES, shown, strict=True):
            assert _ids(display) == {d for _, _, d in graded[name] if d}, display


def _module_in_venv(python: Path, text: str, folder: Path) -> subprocess.CompletedProcess[str]:
    """`text` run as a module alone in `folder` by the venv's Python, which leaves nothing in
    its temporary folder (the unpacked self-check goes when the module ends)."""
    temporary = folder / "tmp"
    temporary.mkdir(parents=True)
    (folder / f"{NAME}.py").write_text(text)
    done = subprocess.run([str(python), f"{NAME}.py"], cwd=folder, capture_output=True,
                          env=_student_env({"TMPDIR": str(temporary)}), text=True, timeout=300)
    assert list(temporary.iterdir()) == [], done.stdout
    return done


def test_the_released_module_checks_itself_alone(course, venv, tmp_path):
    released = (course["release"] / f"{NAME}.py").read_text()
    done = _module_in_venv(venv, released, tmp_path / "stubs")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout.count("[unattempted]") == 2
    wrong = STUDENT.format(**{**RIGHT, **MISTAKES[("attend", "softmax-wrong-axis")]})
    completed = wrong + released[released.index("\n\n\n# attention-grader's self-check"):]
    done = _module_in_venv(venv, completed, tmp_path / "mistake")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert "✓ scaled_scores: all 2 public checks pass; hidden cases give the points." \
        in done.stdout
    assert "[softmax-wrong-axis]" in done.stdout


@pytest.mark.parametrize("call, said", [
    ("numpy=(99, 0)", "attention-grader's self-check needs numpy 99.0 or newer (this is numpy "),
    ("requires=('torch',)", "attention-grader's self-check needs torch: install it "
                            "(`%pip install` in a notebook, then restart the kernel) and run it "
                            "again."),
])
def test_what_is_missing_is_one_sentence(course, venv, tmp_path, call, said):
    released = (course["release"] / f"{NAME}.py").read_text()
    text = re.sub(r'""", \(\)\)', f'""", {call})', released)
    assert text != released
    done = _module_in_venv(venv, text, tmp_path / "old")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3 and all(line.startswith(said) for line in lines), done.stdout
    assert "Traceback" not in done.stdout


def test_the_carried_check_is_the_students_own(course, venv, tmp_path):
    """A student who edits the carried check data changes what their own check() says:
    here every expected output replaced by what a wrong function returns."""
    wrong = STUDENT.format(**{**RIGHT, **MISTAKES[("scaled_scores", "missing-scale")]})
    released = (course["release"] / f"{NAME}.py").read_text()
    completed = wrong + released[released.index("\n\n\n# attention-grader's self-check"):]
    data = carried_bundle(completed)
    edited = _edit_expected(data, tmp_path, wrong)
    done = _module_in_venv(venv, with_bundle(completed, edited), tmp_path / "edited")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert "✓ scaled_scores: all 2 public checks pass; hidden cases give the points." \
        in done.stdout, done.stdout


def _edit_expected(data: bytes, tmp_path: Path, wrong: str) -> bytes:
    """The bundle with the check data's expected outputs of scaled_scores replaced by what
    `wrong`'s scaled_scores returns."""
    import io
    import zipfile

    import numpy as np

    from grader.course import checkfile

    namespace: dict = {}
    exec(compile(wrong, "wrong", "exec"), namespace)
    target, arrays = io.BytesIO(), {}
    with zipfile.ZipFile(io.BytesIO(data)) as original, zipfile.ZipFile(target, "w") as out:
        for name in original.namelist():
            member = original.read(name)
            if name.endswith(".check.npz"):
                path = tmp_path / name
                path.write_bytes(member)
                assignment, _ = checkfile.read(path)
                with np.load(path) as stored:
                    arrays = {key: stored[key] for key in stored.files}
                (exercise,) = [e for e in assignment.exercises if e.name == "scaled_scores"]
                for case in exercise.cases:
                    arrays[f"expected/scaled_scores/{case.name}/0"] = np.asarray(
                        namespace["scaled_scores"](*case.inputs()))
                np.savez_compressed(path, **arrays)
                member = path.read_bytes()
            out.writestr(name, member)
    return target.getvalue()


