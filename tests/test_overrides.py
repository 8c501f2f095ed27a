"""`grade gradebook override` and `log`: grades fixed by hand, with who, when, what and why,
applied on top of the latest raw score at every export."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from grader.gradebook import Gradebook
from tests.helpers.command import run
from tests.helpers.term import book, canvas_roster, result, table

DUE = "2026-03-01T23:59:00-05:00"
LATE = datetime.fromisoformat(DUE) + timedelta(hours=2)


@pytest.fixture
def graded(tmp_path):
    book(tmp_path / "graded", {"1001": (5, 5, None), "1002": (4, 4, LATE),
                               "mallory": (3, 3, None)})
    return tmp_path / "graded"


def override(graded, *argv: str) -> tuple[int, str, str]:
    return run("gradebook", "override", *argv, "--out", str(graded), "--by", "ta-kim")


def grades(graded) -> dict[str, dict[str, str]]:
    code, out, _ = run("gradebook", "export", "--out", str(graded), "--due", DUE,
                       "--late", "10%/day")
    assert code == 0
    return {row["student"]: row for row in table(out)}


def test_an_exercise_override_replaces_its_points_and_the_penalty_applies_to_the_sum(graded):
    code, out, _ = override(graded, "1002", "attention", "5", "--reason", "case 3 accepted")
    assert code == 0
    assert out.startswith("recorded: 20") and out.endswith(
        "  ta-kim: 1002 udl_attention/attention: 4 -> 5 (case 3 accepted)\n")
    alan = grades(graded)["1002"]
    assert (alan["score"], alan["penalty"], alan["final"]) == ("8", "0.9", "8.1")
    assert alan["note"].startswith("override attention 4 -> 5 by ta-kim on 20")
    assert alan["note"].endswith(": case 3 accepted")


def test_an_assignment_override_is_the_final_grade_and_survives_a_regrade(graded):
    assert override(graded, "1002", "9.5", "--reason", "medical note")[0] == 0
    assert grades(graded)["1002"]["final"] == "9.5"
    assert override(graded, "1001", "softmax", "3", "--reason", "copied softmax")[0] == 0
    # A regrade records new raw scores: the overrides apply on top of them.
    regraded = Gradebook(graded)
    regraded.record("1002", "1002/hw.py", result(1, 1), LATE)
    regraded.record("1001", "1001/hw.py", result(4, 2), None)
    after = grades(graded)
    assert (after["1002"]["score"], after["1002"]["final"]) == ("2", "9.5")
    assert (after["1001"]["score"], after["1001"]["final"]) == ("6", "5")


def test_clear_removes_it_and_the_log_lists_everything_in_order(graded):
    override(graded, "1002", "9", "--reason", "first look")
    override(graded, "1002", "9.5", "--reason", "second look")
    code, out, _ = override(graded, "1002", "--clear", "--reason", "back to the grader")
    assert code == 0 and out.endswith("1002 udl_attention: 9.5 (override) -> cleared "
                                      "(back to the grader)\n")
    assert grades(graded)["1002"]["final"] == "7.2"
    code, out, _ = run("gradebook", "log", "--out", str(graded))
    lines = out.splitlines()
    assert code == 0 and [line.split("  ", 1)[1] for line in lines] == [
        "ta-kim: 1002 udl_attention: 8 -> 9 (first look)",
        "ta-kim: 1002 udl_attention: 9 (override) -> 9.5 (second look)",
        "ta-kim: 1002 udl_attention: 9.5 (override) -> cleared (back to the grader)"]
    assert all(datetime.fromisoformat(line.split("  ")[0]).utcoffset() == timedelta(0)
               for line in lines)


def test_a_roster_id_names_the_student_and_a_missing_student_can_be_given_a_grade(graded):
    roster = canvas_roster(graded.parent / "roster.csv", [
        ["Turing, Alan", "1002", "S-2", "alan@uni.edu", "B"],
        ["Hopper, Grace", "1003", "", "grace@uni.edu", "A"]])
    code, out, _ = override(graded, "alan@uni.edu", "7", "--reason", "r", "--roster",
                            str(roster))
    assert code == 0 and ": 1002 udl_attention: 8 -> 7 (r)" in out
    code, out, _ = override(graded, "grace@uni.edu", "6", "--reason", "oral exam",
                            "--roster", str(roster))
    assert code == 0 and ": 1003 udl_attention: missing -> 6 (oral exam)" in out
    code, out, _ = run("gradebook", "export", "--out", str(graded), "--roster", str(roster),
                       "--format", "canvas")
    assert '"Hopper, Grace",1003,,grace@uni.edu,A,6' in out.splitlines()


@pytest.mark.parametrize(("argv", "message"), [
    (("1002", "9"), "--reason is required"),
    (("malory", "9", "--reason", "x"), "no student 'malory'; did you mean mallory?"),
    (("1002", "atention", "3", "--reason", "x"),
     "udl_attention has no exercise 'atention'; its exercises: attention, softmax "
     "(did you mean attention?)"),
    (("1002", "softmax", "6", "--reason", "x"),
     "6 points is more than the 5 exercise softmax is worth; give at most 5"),
    (("1002", "-1", "--reason", "x"), "points '-1': give a number of points, 0 or more"),
    (("1002", "--clear", "--reason", "x"), "1002 has no override of udl_attention to clear"),
    (("1002", "a", "b", "c", "--reason", "x"), "write STUDENT [EXERCISE] POINTS"),
])
def test_bad_overrides_are_clear_errors_and_record_nothing(graded, argv, message):
    code, out, err = override(graded, *argv)
    assert (code, out) == (2, "")
    assert message in err and "Traceback" not in err
    assert run("gradebook", "log", "--out", str(graded))[1].startswith("no overrides in ")
