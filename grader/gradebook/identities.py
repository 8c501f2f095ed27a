"""Who each student of a platform's download is: their name and platform ids, kept in the
gradebook beside the key they are graded under (`grader.ingest`).

The key is the platform's stable id (a Canvas user id, a Moodle participant id, a Gradescope
SID or email, a GitHub user), so that the same student keeps one row across downloads; the
name and ids are what the last download said.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from grader import text
from grader.gradebook.store import Gradebook
from grader.ingest.handed import PERSON_IDS

SCHEMA = """
CREATE TABLE IF NOT EXISTS identities (
    student      TEXT NOT NULL,
    assignment   TEXT NOT NULL,
    display_name TEXT NOT NULL,
    ids          TEXT NOT NULL,
    PRIMARY KEY (student, assignment)
)
"""



@dataclass(frozen=True)
class Known:
    """What a platform's download says a student is, besides the key they are graded under."""

    ids: tuple[str, ...] = ()
    """The platform's ids that name a person (an email, a Gradescope SID, a GitHub user, a
    Canvas user id): compared with the roster's id columns only."""
    names: tuple[str, ...] = ()
    """The names it shows, which a student may choose: compared with the roster's names
    only."""


def identify(book: Gradebook, assignment: str,
             people: Sequence[tuple[str, str, Mapping[str, str]]]) -> None:
    """Keep each student's name and platform ids as the download gave them, beside their key
    (student, display name, ids), replacing what an earlier download said."""
    with book.connect() as db:
        db.execute(SCHEMA)
        db.executemany("INSERT OR REPLACE INTO identities VALUES (?, ?, ?, ?)",
                       [(text.one_line(student), assignment, text.one_line(name),
                         json.dumps({text.one_line(k): text.one_line(v) for k, v in ids.items()},
                                    sort_keys=True))
                        for student, name, ids in people])


def identities(book: Gradebook, assignment: str) -> dict[str, tuple[str, dict[str, str]]]:
    """student -> (display name, platform ids), as the last download gave them."""
    with book.connect() as db:
        db.execute(SCHEMA)
        found = db.execute("SELECT student, display_name, ids FROM identities "
                           "WHERE assignment = ?", (assignment,)).fetchall()
    return {student: (name, json.loads(ids)) for student, name, ids in found}


def submitted(book: Gradebook, assignment: str) -> dict[tuple[str, str], str | None]:
    """(student, submission) -> when it was handed in (UTC, ISO 8601), or None."""
    with book.connect() as db:
        found = db.execute("SELECT student, submission, submitted_at FROM results "
                           "WHERE assignment = ?", (assignment,)).fetchall()
    return {(student, submission): when for student, submission, when in found}


def aliases(book: Gradebook, assignment: str | None = None) -> dict[str, Known]:
    """student -> what else the downloads call them, for matching a roster: the ids of
    `PERSON_IDS` apart from the names shown, which the student may have chosen; over every
    assignment when `assignment` is None."""
    with book.connect() as db:
        db.execute(SCHEMA)
        found = db.execute("SELECT student, display_name, ids FROM identities" + (
            " WHERE assignment = ?" if assignment else ""),
            (assignment,) if assignment else ()).fetchall()
    ids: dict[str, list[str]] = {}
    names: dict[str, list[str]] = {}
    for student, name, person in found:
        person = json.loads(person)
        mine, shown = ids.setdefault(student, []), names.setdefault(student, [])
        for value, into in (*((person.get(key, ""), mine) for key in PERSON_IDS),
                            (name, shown)):
            if value and value not in into:
                into.append(value)
    return {student: Known(tuple(ids[student]), tuple(names[student])) for student in ids}


def marked_late(book: Gradebook, assignment: str | None = None) -> set[tuple[str, str]]:
    """(student, assignment)s that Canvas's download marked `_LATE`."""
    with book.connect() as db:
        db.execute(SCHEMA)
        found = db.execute("SELECT student, assignment, ids FROM identities").fetchall()
    return {(student, name) for student, name, ids in found
            if json.loads(ids).get("canvas_late") and name == (assignment or name)}
