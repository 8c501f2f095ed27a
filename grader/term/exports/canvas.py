"""Canvas's gradebook import: `Student,ID,SIS User ID,SIS Login ID,Section`, a `Points
Possible` row, then one row per student with each assignment's final grade under its column
title. The roster's ids go in their columns; without a roster, the student's key goes where
Canvas matches it last (SIS Login ID). A roster row that submissions fit ambiguously gets an
empty cell, and those submissions are left out."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from grader import text
from grader.term.exports import columns

if TYPE_CHECKING:
    from grader.term.grades import Sheet

NAME = "canvas"
FOR = "Canvas's gradebook import"


def rows(sheet: Sheet, titles: Mapping[str, str], comments: bool,
         hashes: Mapping[tuple[str, str], tuple[str, str]]) -> Iterator[list[str]]:
    """The header, the points possible, then each student's row."""
    assignments = sorted(sheet.maxima)
    yield ["Student", "ID", "SIS User ID", "SIS Login ID", "Section",
           *(titles.get(a, a) for a in assignments), *(["Comments"] if comments else [])]
    yield ["Points Possible", "", "", "", "",
           *(text.points(sheet.maxima[a]) for a in assignments), *([""] if comments else [])]
    for key, mine in columns.by_student(sheet):
        who = mine[0].roster
        ids = [who.name, who.canvas_id, who.sis_user_id, who.sis_login_id, who.section] \
            if who else [key, "", "", key, ""]
        yield [*ids, *columns.cells(mine, assignments, comments)]
