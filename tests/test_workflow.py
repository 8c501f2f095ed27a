"""The instructor's whole workflow on the fourth assignment's master, as docs/authoring.md tells it:
`grade assign`, complete the declaration, `grade assign` again, `grade validate`,
`grade release` (which leaks nothing), then `grade batch` on a small class.

The master is `solutions/positional_encoding_master.ipynb`, renamed `pe_course` so that it
does not collide with the built-in assignment it made."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader.course import registry
from grader.course.layout import Layout
from tests.conftest import ROOT
from tests.helpers.command import run as grade
from tests.helpers.scanning import scan

pytestmark = pytest.mark.usefixtures("fresh_registry")

NAME = "pe_course"



def test_assign_validate_release_and_batch(tmp_path, monkeypatch):
    master = tmp_path / "pe_course_master.ipynb"
    master.write_text((ROOT / "solutions" / "positional_encoding_master.ipynb").read_text()
                      .replace('assignment = \\"positional_encoding\\"',
                               f'assignment = \\"{NAME}\\"'))
    course = tmp_path / "course"

    # 1. The master becomes every file; the declaration is a skeleton.
    code, out, err = grade("assign", str(master), "--out", str(course))
    assert (code, err) == (0, "")
    layout = Layout(course)
    assert f"{layout.declaration(NAME)}: the declaration skeleton" in out
    for name, value in layout.environment().items():
        assert f"export {name}={value}" in out
        monkeypatch.setenv(name, value)

    # 2. The instructor completes it (hidden cases, misconceptions), and assigns again.
    completed = (ROOT / "grader" / "assignments" / "positional_encoding.py").read_text()
    layout.declaration(NAME).write_text(completed.replace('name="positional_encoding"',
                                                          f'name="{NAME}"'))
    code, out, err = grade("assign", str(master), "--out", str(course))
    assert (code, err) == (0, "")
    assert "the declaration, kept: you have edited it" in out
    registry.assignments.cache_clear()
    assignment = registry.get(NAME)
    assert len(assignment.exercises[2].misconceptions) == 13

    # 3. Nothing to fix.
    code, out, err = grade("validate", NAME)
    # 16: each exercise's practice case among them
    assert (code, out, err) == (0, f"{NAME}: 3 exercises, 16 cases: no problem found\n", "")

    # 4. The release: stubs and public cases, and none of what is hidden.
    release = tmp_path / "release"
    code, out, err = grade("release", NAME, "--out", str(release))
    assert (code, err) == (0, "")
    assert sorted(Path(line).name for line in out.splitlines()) == [
        f"{NAME}.check.npz", f"{NAME}.ipynb", f"{NAME}.py"]
    assert scan(release, assignment).found == []

    # 5. A small class: one right, one with positions from 1, one untouched notebook.
    solution = layout.solution(NAME).read_text()
    submissions = tmp_path / "submissions"
    for student, text, suffix in (
            ("alice", solution, ".py"),
            ("bob", solution.replace("np.arange(seq_len)", "np.arange(1, seq_len + 1)"), ".py"),
            ("carol", (release / f"{NAME}.ipynb").read_text(), ".ipynb")):
        (submissions / student).mkdir(parents=True)
        (submissions / student / f"{NAME}{suffix}").write_text(text)
    graded = tmp_path / "graded"
    code, out, err = grade("batch", str(submissions), "--assignment", NAME, "--out",
                           str(graded), "--jobs", "2")
    assert code == 0, err
    assert out.startswith("graded 3, skipped 0 already in the gradebook, 0 could not be graded")
    results = {student: json.loads(next((graded / "results" / student).glob("*.json"))
                                   .read_text())
               for student in ("alice", "bob", "carol")}
    assert [(s, r["score"], r["max_score"]) for s, r in results.items()] == [
        ("alice", 6.0, 6.0), ("bob", 0.0, 6.0), ("carol", 0.0, 6.0)]
    diagnoses = {c["diagnosis"]["id"] for e in results["bob"]["exercises"]
                 for c in e["checks"] if c["diagnosis"]}
    # The encoding's mistake, named there; the exercises that call it fail through it.
    assert diagnoses == {"positions-from-one", "callee-fails"}
    untouched = {c["diagnosis"]["id"] for e in results["carol"]["exercises"]
                 for c in e["checks"] if not c["passed"]}
    assert untouched == {"unattempted"}
