"""What the platforms' dialects share: one row per student, each assignment's final grade in
its column, and the comment. Light to import, as the dialects are."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from grader import text

if TYPE_CHECKING:
    from grader.term.grades import Grade, Sheet


def by_student(sheet: Sheet) -> dict[str, list[Grade]]:
    """Each student's grades, in the sheet's order: one row each in a platform's dialect."""
    people: dict[str, list[Grade]] = {}
    for grade in sheet.grades:
        people.setdefault(grade.student, []).append(grade)
    return people


def cells(mine: Sequence[Grade], assignments: Sequence[str], comments: bool) -> list[str]:
    """One student's final grades under the assignments' columns (and the comment)."""
    by = {grade.assignment: grade for grade in mine}
    found = [text.points(by[a].final) if a in by else "" for a in assignments]
    if comments:
        found.append(" | ".join(f"{g.assignment}: {g.summary}" if len(assignments) > 1
                                else g.summary for g in mine))
    return found
