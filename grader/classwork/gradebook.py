"""The gradebook: a SQLite file that records every result the moment it is graded.

One row per (student, assignment, submission file). A batch commits the results that finish
together in one transaction as soon as they are written, so a batch killed at any point loses
at most the submissions in flight, and a rerun can skip every file whose hash is already
recorded. Exports pick each student's best submission.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from grader import result_json, text
from grader.errors import UsageError
from grader.results import Result

FILENAME = "gradebook.sqlite"
FORMATS = ("csv", "canvas", "moodle")
ROW_COLUMNS = "student, assignment, submission, sha256, status, score, max_score, graded_at"
STORED = ("student, assignment, submission, sha256, status, score, max_score, result, "
          "graded_at, submitted_at")
Recorded = tuple[str, str, Result, datetime | None]
"""What a batch records: (student, submission, result, when it was handed in)."""
SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    student     TEXT NOT NULL,
    assignment  TEXT NOT NULL,
    submission  TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    status      TEXT NOT NULL,
    score       REAL NOT NULL,
    max_score   REAL NOT NULL,
    result      TEXT NOT NULL,
    graded_at   TEXT NOT NULL,
    submitted_at TEXT,
    PRIMARY KEY (student, assignment, submission)
)
"""
IDENTITIES = """
CREATE TABLE IF NOT EXISTS identities (
    student      TEXT NOT NULL,
    assignment   TEXT NOT NULL,
    display_name TEXT NOT NULL,
    ids          TEXT NOT NULL,
    PRIMARY KEY (student, assignment)
)
"""


@dataclass(frozen=True)
class Row:
    """One recorded result."""

    student: str
    """Who handed it in, as read from the file or folder name."""
    assignment: str
    """The assignment's name."""
    submission: str
    """The file, relative to the submissions folder."""
    sha256: str
    """Hash of the file's bytes when it was graded."""
    status: str
    """"graded" or "error"."""
    score: float
    """Points earned."""
    max_score: float
    """Points available."""
    graded_at: str
    """When it was recorded (UTC, ISO 8601)."""


class Gradebook:
    """A gradebook file in an output folder."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / FILENAME
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute(SCHEMA)
            db.execute(IDENTITIES)
            columns = {row[1] for row in db.execute("PRAGMA table_info(results)")}
            if "submitted_at" not in columns:  # a gradebook from before submission times
                db.execute("ALTER TABLE results ADD COLUMN submitted_at TEXT")

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        try:
            db = sqlite3.connect(self.path, timeout=30)
        except sqlite3.Error as exc:
            raise UsageError(f"{self.path}: cannot open the gradebook ({exc})") from None
        try:
            db.execute("PRAGMA journal_mode=WAL")
            with db:
                yield db
        except sqlite3.DatabaseError as exc:
            raise UsageError(f"{self.path}: the gradebook is damaged ({exc}); move it away "
                             "and grade again") from None
        finally:
            db.close()

    @contextmanager
    def recorder(self) -> Iterator[Callable[[Sequence[Recorded]], None]]:
        """For a batch: one connection, and a function that stores the (student, submission,
        result, submitted_at) it is given in one transaction, committed before it returns. WAL with
        synchronous=NORMAL: a commit survives the batch being killed in any way (only a
        power cut may lose the last ones), without an fsync per result."""
        with self._connect() as db:
            db.execute("PRAGMA synchronous=NORMAL")

            def record(graded: Sequence[Recorded]) -> None:
                with db:
                    db.executemany(f"INSERT OR REPLACE INTO results ({STORED}) VALUES "
                                   "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                   [_row(*item) for item in graded])

            yield record

    def record(self, student: str, submission: str, result: Result,
               submitted_at: datetime | None = None) -> None:
        """Store one result, replacing an earlier grading of the same file."""
        with self.recorder() as record:
            record([(student, submission, result, submitted_at)])

    def known_hashes(self, assignment: str) -> dict[tuple[str, str], str]:
        """(student, submission) -> the hash recorded for it; results where the grader, not
        the submission, failed are left out, so that they are graded again."""
        with self._connect() as db:
            rows = db.execute("SELECT student, submission, sha256, status, result FROM results "
                              "WHERE assignment = ?", (assignment,)).fetchall()
        return {(student, submission): sha for student, submission, sha, status, result in rows
                if status != "error" or not json.loads(result).get("grader_failed")}

    def rows(self, assignment: str | None = None) -> list[Row]:
        """Every recorded result, ordered by student and file."""
        return [Row(*row) for row in self._select(ROW_COLUMNS, assignment)]

    def recorded(self, assignment: str | None = None) -> list[tuple[Row, dict[str, Any]]]:
        """Every recorded result with its stored JSON result, ordered by student and file."""
        return [(Row(*row[:-1]), json.loads(row[-1]))
                for row in self._select(ROW_COLUMNS + ", result", assignment)]

    def _select(self, columns: str, assignment: str | None) -> list[tuple[Any, ...]]:
        query = f"SELECT {columns} FROM results"
        args: tuple[str, ...] = ()
        if assignment:
            query += " WHERE assignment = ?"
            args = (assignment,)
        with self._connect() as db:
            return db.execute(query + " ORDER BY student, assignment, submission",
                              args).fetchall()

    def results(self) -> list[dict[str, object]]:
        """The stored JSON results."""
        with self._connect() as db:
            found = db.execute("SELECT result FROM results ORDER BY student, assignment, "
                               "submission").fetchall()
        return [json.loads(stored) for (stored,) in found]


def _row(student: str, submission: str, result: Result,
         submitted_at: datetime | None = None) -> tuple[object, ...]:
    """A result as a row of the table; the names and the result's text are stored `clean`,
    as every reader of the file will show them."""
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    handed = None if submitted_at is None else \
        submitted_at.astimezone(timezone.utc).isoformat(timespec="seconds")
    return (text.one_line(student), result.assignment, text.one_line(submission),
            result.sha256, result.status.value, result.score, result.max_score,
            json.dumps(result_json.to_dict(result, instructor=True), sort_keys=True), stamp,
            handed)


def existing(folder: Path) -> Gradebook:
    """The gradebook `grade batch --out folder` wrote; a UsageError says how to make one."""
    if not (Path(folder) / FILENAME).is_file():
        raise UsageError(f"{Path(folder) / FILENAME}: no gradebook here; run "
                         f"`grade batch SUBMISSIONS_DIR --assignment NAME --out {folder}` first, "
                         "or pass the --out folder that batch wrote to")
    return Gradebook(folder)


def best(rows: Sequence[Row]) -> dict[tuple[str, str], Row]:
    """Each student's best submission per assignment (a helper .py scores no less than 0)."""
    chosen: dict[tuple[str, str], Row] = {}
    for row in rows:
        key = (row.student, row.assignment)
        if key not in chosen or row.score > chosen[key].score:
            chosen[key] = row
    return chosen


def export(rows: Sequence[Row], fmt: str, columns: dict[str, str] | None = None) -> str:
    """The grade table as CSV: plain, Canvas's import layout, or Moodle's."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    chosen = best(rows)
    assignments = sorted({row.assignment for row in rows})
    students = sorted({row.student for row in rows})
    columns = columns or {}
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")

    def write(cells: Sequence[str]) -> None:
        # Student names and paths come from submissions: no spreadsheet may run one.
        writer.writerow([text.csv_cell(cell) for cell in cells])

    if fmt == "csv":
        write(["student", "assignment", "score", "max_score", "status", "submission",
               "sha256", "graded_at"])
        for (student, assignment), row in sorted(chosen.items()):
            write([student, assignment, _num(row.score), _num(row.max_score), row.status,
                   row.submission, row.sha256, row.graded_at])
        return out.getvalue()
    maxima = {a: max(r.max_score for r in rows if r.assignment == a) for a in assignments}
    titles = [columns.get(a, a) for a in assignments]
    if fmt == "canvas":
        # Canvas matches students by Canvas ID, then SIS User ID, then SIS Login ID: the name
        # read from the submission goes into SIS Login ID.
        write(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *titles])
        write(["Points Possible", "", "", "", "", *(_num(maxima[a]) for a in assignments)])
        for student in students:
            scores = [_num(chosen[(student, a)].score) if (student, a) in chosen else ""
                      for a in assignments]
            write([student, "", "", student, "", *scores])
        return out.getvalue()
    write(["ID number", *titles])  # Moodle: map "ID number" to the user field
    for student in students:
        write([student, *(_num(chosen[(student, a)].score) if (student, a) in chosen
                          else "" for a in assignments)])
    return out.getvalue()


def _num(value: float) -> str:
    """Points as the result JSON has them (`scoring.shown` rounded them already): 12.333333,
    never 12.3333, and 2 for 2.0."""
    return f"{value:.15g}"


def identify(book: Gradebook, assignment: str,
             people: Sequence[tuple[str, str, Mapping[str, str]]]) -> None:
    """Keep each student's name and platform ids as the download gave them, beside their key
    (student, display name, ids), replacing what an earlier download said."""
    with book._connect() as db:
        db.executemany("INSERT OR REPLACE INTO identities VALUES (?, ?, ?, ?)",
                       [(text.one_line(student), assignment, text.one_line(name),
                         json.dumps({text.one_line(k): text.one_line(v) for k, v in ids.items()},
                                    sort_keys=True))
                        for student, name, ids in people])


def identities(book: Gradebook, assignment: str) -> dict[str, tuple[str, dict[str, str]]]:
    """student -> (display name, platform ids), as the last download gave them."""
    with book._connect() as db:
        found = db.execute("SELECT student, display_name, ids FROM identities "
                           "WHERE assignment = ?", (assignment,)).fetchall()
    return {student: (name, json.loads(ids)) for student, name, ids in found}


def submitted(book: Gradebook, assignment: str) -> dict[tuple[str, str], str | None]:
    """(student, submission) -> when it was handed in (UTC, ISO 8601), or None."""
    with book._connect() as db:
        found = db.execute("SELECT student, submission, submitted_at FROM results "
                           "WHERE assignment = ?", (assignment,)).fetchall()
    return {(student, submission): when for student, submission, when in found}
