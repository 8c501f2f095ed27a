"""Gradebooks of a term without grading anything: results made by hand, recorded with the
submission times a platform's download gives, and rosters as Canvas and Moodle export them."""

from __future__ import annotations

import csv
import io
from datetime import datetime
from pathlib import Path

from grader import result_json
from grader.gradebook import Gradebook
from grader.model import Visibility
from grader.results import CheckResult, CheckStatus, ExerciseResult, Result, ResultStatus

ASSIGNMENT = "udl_attention"


def result(first: float, second: float, assignment: str = ASSIGNMENT) -> Result:
    """A graded result of two exercises worth 5 each, `softmax` and `attention`, each of one
    case per point earned or lost (so that the checks say which changed)."""

    def exercise(name: str, score: float) -> ExerciseResult:
        checks = tuple(CheckResult(f"case{i}", Visibility.HIDDEN, i < score, float(i < score),
                                   1.0, CheckStatus.PASSED if i < score else CheckStatus.FAILED)
                       for i in range(5))
        status = CheckStatus.PASSED if score == 5 else CheckStatus.FAILED
        return ExerciseResult(name, status, score, 5.0, checks)

    return Result(assignment, "hw.py", ResultStatus.GRADED, first + second, 10.0, 0.1,
                  exercises=(exercise("softmax", first), exercise("attention", second)),
                  sha256=f"{first}-{second}")


def stored(data: dict) -> Result:
    """A `Result` from a part of its JSON, written by hand: what the test does not say is a
    graded submission of assignment "a" worth nothing."""
    return result_json.from_dict({"assignment": "a", "submission": "hw.py", "status": "graded",
                                  "score": 0.0, "max_score": 0.0, "duration_s": 0.0, **data})


def book(out: Path, students: dict[str, tuple[float, float, datetime | None]]) -> Gradebook:
    """A gradebook in `out` with each student's two exercise scores and submission time."""
    found = Gradebook(out)
    for student, (first, second, when) in students.items():
        found.record(student, f"{student}/hw.py", result(first, second), when)
    return found


def canvas_roster(path: Path, rows: list[list[str]], extra: tuple[str, ...] = ()) -> Path:
    """A Canvas gradebook export: `Student,ID,SIS User ID,SIS Login ID,Section` and a
    Points Possible row, then `rows`."""
    return _write(path, ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *extra],
                  [["    Points Possible", "", "", "", "", *("" for _ in extra)], *rows])


def moodle_roster(path: Path, rows: list[list[str]]) -> Path:
    """A Moodle grades export: names, ID number, institution, department, email."""
    return _write(path, ["First name", "Last name", "ID number", "Institution", "Department",
                         "Email address"], rows)


def _write(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerows([header, *rows])
    path.write_text("\ufeff" + out.getvalue(), encoding="utf-8")
    return path


def table(content: str) -> list[dict[str, str]]:
    """CSV text as dictionaries."""
    return list(csv.DictReader(io.StringIO(content)))
