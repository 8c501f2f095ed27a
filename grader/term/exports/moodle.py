"""Moodle's grade import: `ID number` (and, with a roster, `Email address`), then each
assignment's final grade under its column title. Without a roster, the student's key goes in
the ID number."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from grader.term.exports import columns

if TYPE_CHECKING:
    from grader.term.grades import Sheet

NAME = "moodle"
FOR = "Moodle's CSV import"


def rows(sheet: Sheet, titles: Mapping[str, str], comments: bool,
         hashes: Mapping[tuple[str, str], tuple[str, str]]) -> Iterator[list[str]]:
    """The header, then each student's row."""
    assignments = sorted(sheet.maxima)
    email = ["Email address"] if sheet.platform else []
    yield ["ID number", *email, *(titles.get(a, a) for a in assignments),
           *(["Comments"] if comments else [])]
    for key, mine in columns.by_student(sheet):
        who = mine[0].roster
        ids = [who.id_number or (key if not who.email else ""), who.email] if who else \
            [key, *([""] if email else [])]
        yield [*ids, *columns.cells(mine, assignments, comments)]
