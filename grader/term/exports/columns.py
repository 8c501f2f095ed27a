"""What the platforms' dialects share: one row per student, each assignment's final grade in
its column, and the comment. Light to import, as the dialects are."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from grader import text

if TYPE_CHECKING:
    from grader.term.grades import Grade, Sheet


def by_student(sheet: Sheet) -> list[tuple[str, list[Grade]]]:
    """Each student's key and grades, in the sheet's order: one row each in a platform's
    dialect, grouped by roster row (a key of the roster's), or by key for a student the
    roster does not know. A submission the roster could not pair is left out: under its
    key it could be taken for another student's id."""
    in_doubt = {key for found in sheet.ambiguous for key in found.keys}
    people: dict[tuple[int, str], list[Grade]] = {}
    for grade in sheet.grades:
        if grade.roster is None and grade.student in in_doubt:
            continue
        group = (grade.roster.line, "") if grade.roster else (0, grade.student)
        people.setdefault(group, []).append(grade)
    return [(mine[0].student, mine) for mine in people.values()]


def final(grade: Grade) -> str:
    """The grade to export: none for a row that could not be paired with a submission."""
    return "" if grade.status == "ambiguous" else text.points(grade.final)  # grades.AMBIGUOUS


def cells(mine: Sequence[Grade], assignments: Sequence[str], comments: bool) -> list[str]:
    """One student's final grades under the assignments' columns (and the comment)."""
    by = {grade.assignment: grade for grade in mine}
    found = [final(by[a]) if a in by else "" for a in assignments]
    if comments:
        found.append(" | ".join(f"{g.assignment}: {g.summary}" if len(assignments) > 1
                                else g.summary for g in mine))
    return found
