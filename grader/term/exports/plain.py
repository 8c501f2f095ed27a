"""Plain CSV: one row per student and assignment, with the parts of each grade apart (raw
score, submission time, deadline, lateness, penalty, final grade, notes). A student on the
roster is named by the roster's own key (`Student.key`) whatever key their submission was
graded under, so that one column never mixes a platform's ids with the roster's; a student
the roster does not know keeps the submission's key. The columns only ever grow at the end."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from grader import text
from grader.term.exports import columns

if TYPE_CHECKING:
    from grader.term.grades import Sheet

NAME = "csv"
FOR = "one row per student and assignment"
COLUMNS = ("student", "assignment", "score", "max_score", "status", "submission",
           "sha256", "graded_at", "submitted_at", "deadline", "late_by_s",
           "penalty_percent", "penalty", "final", "on_roster", "explanation", "note", "name")
"""`score` is the score as graded (an exercise's override shows in `final` and `note`);
`name` is the roster's name, or the name the platform's download showed, or empty."""


def rows(sheet: Sheet, titles: Mapping[str, str], comments: bool,
         hashes: Mapping[tuple[str, str], tuple[str, str]]) -> Iterator[list[str]]:
    """The header, then each grade; `hashes` gives (sha256, graded_at) of each (student,
    assignment). Plain CSV has no assignment columns to title."""
    yield [*COLUMNS, *(["comment"] if comments else [])]
    for grade in sheet.grades:
        sha, graded_at = hashes.get((grade.student, grade.assignment), ("", ""))
        late = grade.lateness
        graded = grade.raw if grade.graded is None else grade.graded
        yield [sheet.key(grade), grade.assignment, text.points(graded),
               text.points(grade.max_score), grade.status, grade.submission, sha, graded_at,
               grade.submitted_at.isoformat() if grade.submitted_at else "",
               late.deadline.isoformat() if late.deadline else "",
               text.points(late.late_by.total_seconds()), text.points(late.percent),
               text.points(grade.penalty), columns.final(grade),
               "" if not sheet.platform else ("no" if grade.roster is None else "yes"),
               late.explanation, "; ".join(grade.notes), sheet.name(grade),
               *([grade.summary] if comments else [])]
