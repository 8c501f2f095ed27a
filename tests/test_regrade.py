"""A regrade never changes a grade silently: `grade batch --force` compares each new result
with the recorded one, prints what changed and saves it as OUT/regrade-<timestamp>.json."""

from __future__ import annotations

import json

from grader import result_json
from grader.batch import regrade
from grader.gradebook import FILENAME
from tests.helpers.classes import small_class
from tests.helpers.command import run
from tests.helpers.sqlite_file import opened
from tests.helpers.term import result


def stored(first: float, second: float) -> dict:
    return result_json.to_dict(result(first, second), instructor=True)


def compare(student: str, submission: str, old: dict, new: dict) -> regrade.Change | None:
    return regrade.compare(student, submission, result_json.from_dict(old),
                           result_json.from_dict(new))


def test_compare_names_the_score_and_each_check_that_changed():
    change = compare("bob", "bob/hw.py", stored(5, 3), stored(5, 4))
    assert change is not None
    assert (change.old_score, change.new_score, change.max_score) == (8.0, 9.0, 10.0)
    assert change.checks == ("attention: failed (3 pts) -> failed (4 pts)",
                             "attention/case3: failed (0 pts) -> passed (1 pts)")
    assert change.line() == ("bob: 8 -> 9/10 (attention: failed (3 pts) -> failed (4 pts), "
                             "attention/case3: failed (0 pts) -> passed (1 pts))")
    assert compare("bob", "bob/hw.py", stored(5, 3), stored(5, 3)) is None


def test_a_check_that_changes_without_changing_the_score_is_still_reported():
    old, new = stored(5, 3), stored(5, 3)
    new["exercises"][0]["checks"][0]["status"] = "timeout"
    change = compare("amy", "amy.py", old, new)
    assert change is not None and change.old_score == change.new_score == 8.0
    assert change.checks == ("softmax/case0: passed (1 pts) -> timeout (1 pts)",)


def test_batch_force_prints_and_saves_which_grades_changed(tmp_path):
    folder, out = small_class(tmp_path), tmp_path / "graded"
    code, first, _ = run("batch", str(folder), "--assignment", "udl_attention", "--out",
                         str(out), "--jobs", "1")
    assert code == 0 and "regrade" not in first
    # The grade alice had before a fix to the assignment: 2 points and one case less.
    with opened(out / FILENAME) as db:
        (text,) = db.execute("SELECT result FROM results WHERE student = 'alice'").fetchone()
        before = json.loads(text)
        exercise = before["exercises"][0]
        check = exercise["checks"][0]
        check["status"], check["passed"], taken = "failed", False, check["score"]
        check["score"] = 0.0
        exercise["score"] -= taken
        before["score"] -= taken
        db.execute("UPDATE results SET result = ?, score = ? WHERE student = 'alice'",
                   (json.dumps(before), before["score"]))
    code, output, _ = run("batch", str(folder), "--assignment", "udl_attention", "--out",
                          str(out), "--jobs", "1", "--force")
    assert code == 0 and "graded 2, skipped 0 already in the gradebook" in output
    (saved,) = out.glob("regrade-*.json")
    lines = output.splitlines()
    assert f"regrade: 1 of 2 recorded submissions changed; saved in {saved}" in lines
    name = f"{exercise['name']}/{check['name']}"
    shown = f"{before['score']:.15g}"
    assert any(line.startswith(f"  alice: {shown} -> 10/10 (") and
               f"{name}: failed (0 pts) -> passed ({taken:.15g} pts)" in line
               for line in lines), output
    document = json.loads(saved.read_text())
    assert (document["assignment"], document["compared"]) == ("udl_attention", 2)
    (change,) = document["changed"]
    assert (change["student"], change["old_score"], change["new_score"]) == \
        ("alice", before["score"], 10.0)
    # Grading again what did not change says so, and saves that too.
    code, output, _ = run("batch", str(folder), "--assignment", "udl_attention", "--out",
                          str(out), "--jobs", "1", "--force")
    assert code == 0 and "regrade: none of 2 recorded submissions changed; saved in " in output
