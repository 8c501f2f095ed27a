"""Grades fixed by hand, with an audit trail, kept in the gradebook beside the results.

Each override or clear is one row, never updated or deleted: who, when (UTC), the student,
the assignment, the exercise (empty for the whole assignment), the new points (none for a
clear), what the grade was before, and why. The latest row of each (student, assignment,
exercise) is in force. It is applied at export time on top of the latest raw score, so it
survives every regrade. An exercise's override replaces that exercise's points in the raw
score (the late penalty then applies to the sum); an assignment's override is the final
grade, with no penalty.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from grader import text
from grader.gradebook import Gradebook

SCHEMA = """
CREATE TABLE IF NOT EXISTS overrides (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    at         TEXT NOT NULL,
    by         TEXT NOT NULL,
    student    TEXT NOT NULL,
    assignment TEXT NOT NULL,
    exercise   TEXT NOT NULL,
    points     REAL,
    old        TEXT NOT NULL,
    reason     TEXT NOT NULL
)
"""
COLUMNS = "at, by, student, assignment, exercise, points, old, reason"


@dataclass(frozen=True)
class Entry:
    """One override, or one clear, as recorded."""

    at: str
    """When (UTC, ISO 8601)."""
    by: str
    """Who."""
    student: str
    """The student, as the gradebook (or, without a submission, the roster) names them."""
    assignment: str
    """The assignment."""
    exercise: str
    """The exercise, or "" for the whole assignment."""
    points: float | None
    """The points given; None for a clear."""
    old: str
    """What it was before, as shown ("6", "8 (override)")."""
    reason: str
    """Why."""

    @property
    def target(self) -> tuple[str, str, str]:
        """(student, assignment, exercise), lower-cased student."""
        return (self.student.lower(), self.assignment, self.exercise)

    def line(self) -> str:
        """One line of `grade gradebook log`."""
        what = f"{self.assignment}/{self.exercise}" if self.exercise else self.assignment
        new = "cleared" if self.points is None else text.points(self.points)
        return f"{self.at}  {self.by}: {self.student} {what}: {self.old} -> {new} ({self.reason})"


def add(book: Gradebook, entry: Entry) -> None:
    """Record it."""
    with book.connect() as db:
        db.execute(SCHEMA)
        db.execute(f"INSERT INTO overrides ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                   (entry.at, entry.by, entry.student, entry.assignment, entry.exercise,
                    entry.points, entry.old, entry.reason))


def log(book: Gradebook) -> list[Entry]:
    """Every override and clear, in the order they were made."""
    with book.connect() as db:
        db.execute(SCHEMA)
        rows = db.execute(f"SELECT {COLUMNS} FROM overrides ORDER BY seq").fetchall()
    return [Entry(*row) for row in rows]


def in_force(entries: Sequence[Entry]) -> dict[tuple[str, str, str], Entry]:
    """The latest override of each (student, assignment, exercise); clears remove it."""
    found: dict[tuple[str, str, str], Entry] = {}
    for entry in entries:
        if entry.points is None:
            found.pop(entry.target, None)
        else:
            found[entry.target] = entry
    return found


def now() -> str:
    """The time of an entry."""
    return datetime.now(UTC).isoformat(timespec="seconds")
