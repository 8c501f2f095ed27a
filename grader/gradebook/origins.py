"""Where a batch read each assignment's submissions, kept in the gradebook beside its results.

`grade batch` records, per assignment, the folder it graded (for a zip, the folder it unpacked
it into under OUT/submissions/), the layout it read it in (`grader.ingest`) and the
`--student-pattern` and repository roster it named students with. `grade gradebook similar`
and `report` find each student's files again from it, the way the batch found them, when
they are not given `--submissions`. A later batch of the same assignment replaces the record.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType

from grader.gradebook.store import Gradebook

SCHEMA = """
CREATE TABLE IF NOT EXISTS origins (
    assignment  TEXT PRIMARY KEY,
    folder      TEXT NOT NULL,
    platform    TEXT NOT NULL,
    pattern     TEXT,
    roster      TEXT NOT NULL,
    recorded_at TEXT NOT NULL
)
"""


@dataclass(frozen=True)
class Origin:
    """Where one assignment's submissions were read from."""

    folder: Path
    """The folder graded, absolute: the submissions folder, or the one a zip was unpacked
    into."""
    platform: str | None
    """The layout it was read in: "folder", "canvas", "moodle", "gradescope" or "git"; None
    for a folder named without a record, recognised as the batch recognises one."""
    pattern: str | None = None
    """The `--student-pattern` that named the students of a plain folder, if any."""
    roster: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """A folder of Git repositories: repository name -> student, as the batch was given."""


def remember(book: Gradebook, assignment: str, origin: Origin) -> None:
    """Record where `assignment`'s submissions were read from, replacing an earlier record."""
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    with book.connect() as db:
        db.execute(SCHEMA)
        db.execute("INSERT OR REPLACE INTO origins VALUES (?, ?, ?, ?, ?, ?)",
                   (assignment, str(origin.folder), origin.platform or "folder", origin.pattern,
                    json.dumps(dict(origin.roster), sort_keys=True), stamp))


def recalled(book: Gradebook, assignment: str) -> Origin | None:
    """Where the last batch of `assignment` read its submissions, or None when no batch
    recorded it (a gradebook from before this record)."""
    with book.connect() as db:
        db.execute(SCHEMA)
        found = db.execute("SELECT folder, platform, pattern, roster FROM origins "
                           "WHERE assignment = ?", (assignment,)).fetchone()
    if found is None:
        return None
    folder, platform, pattern, roster = found
    return Origin(Path(folder), platform, pattern, MappingProxyType(json.loads(roster)))
