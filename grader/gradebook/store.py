"""The gradebook: a SQLite file that records every result the moment it is graded.

One row per (student, assignment, submission file). A batch commits the results that finish
together in one transaction as soon as they are written, so a batch killed at any point loses
at most the submissions in flight, and a rerun can skip every file whose hash is already
recorded. Exports pick each student's best submission.

The raw score is all it keeps of grading: the submission time is kept beside it, and the
time policy, the roster and the overrides (`grader.term.grades`) are applied on top at
every export, never stored in it. A result is stored as the instructor's JSON
(`grader.result_json`) and read back here as the same `Result`: nothing above the gradebook
reads that JSON.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from grader import result_json, text
from grader.errors import UsageError
from grader.results import Result

FILENAME = "gradebook.sqlite"
ROW_COLUMNS = ("student, assignment, submission, sha256, status, score, max_score, graded_at, "
               "submitted_at")
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
    submitted_at: datetime | None = None
    """When the student handed it in (aware, UTC), as the platform's download says; None
    when nothing says (a plain folder)."""

    @classmethod
    def stored(cls, *fields: Any) -> Row:
        """A row as the table holds it: the submission time is ISO 8601 text there."""
        student, assignment, submission, sha256, status, score, maximum, graded, when = fields
        return cls(student, assignment, submission, sha256, status, score, maximum, graded,
                   datetime.fromisoformat(when) if when else None)


Recorded = tuple[Row, Result]
"""A recorded result: its row, and the `Result` itself, read back from its JSON."""
Graded = tuple[str, str, Result, "datetime | None"]
"""What a batch records: (student, submission, result, submission time or None)."""


class Gradebook:
    """A gradebook file in an output folder."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / FILENAME
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute(SCHEMA)
            columns = {name for _, name, *_ in db.execute("PRAGMA table_info(results)")}
            if "submitted_at" not in columns:  # a gradebook from before submission times
                db.execute("ALTER TABLE results ADD COLUMN submitted_at TEXT")

    @contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        """A connection in one transaction, for the modules that keep tables of their own
        here (`overrides`); errors become UsageErrors that name the file."""
        with self._connect() as db:
            yield db

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
    def recorder(self) -> Iterator[Callable[[Sequence[Graded]], None]]:
        """For a batch: one connection, and a function that stores the (student, submission,
        result, submission time) it is given in one transaction, committed before it
        returns. WAL with synchronous=NORMAL: a commit survives the batch being killed in any
        way (only a power cut may lose the last ones), without an fsync per result."""
        with self._connect() as db:
            db.execute("PRAGMA synchronous=NORMAL")

            def record(graded: Sequence[Graded]) -> None:
                with db:
                    db.executemany(f"INSERT OR REPLACE INTO results ({ROW_COLUMNS}, result) "
                                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                   [_row(*item) for item in graded])

            yield record

    def record(self, student: str, submission: str, result: Result,
               submitted_at: datetime | None = None) -> None:
        """Store one result, replacing an earlier grading of the same file."""
        with self.recorder() as record:
            record([(student, submission, result, submitted_at)])

    def retime(self, assignment: str,
               times: Sequence[tuple[str, str, datetime]]) -> None:
        """Set the submission time of recorded (student, submission)s: a time given after
        grading (`grade batch --times`) needs no regrade."""
        with self._connect() as db:
            db.executemany("UPDATE results SET submitted_at = ? WHERE student = ? AND "
                           "assignment = ? AND submission = ?",
                           [(when.astimezone(UTC).isoformat(), text.one_line(student),
                             assignment, text.one_line(submission))
                            for student, submission, when in times])

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
        return [Row.stored(*row) for row in self._select(ROW_COLUMNS, assignment)]

    def recorded(self, assignment: str | None = None) -> list[Recorded]:
        """Every recorded result with its whole `Result`, ordered by student and file."""
        found = []
        for row in self._select(ROW_COLUMNS + ", result", assignment):
            recorded = Row.stored(*row[:-1])
            found.append((recorded, self._result(recorded.student, recorded.submission,
                                                 row[-1])))
        return found

    def _select(self, columns: str, assignment: str | None) -> list[tuple[Any, ...]]:
        query = f"SELECT {columns} FROM results"
        args: tuple[str, ...] = ()
        if assignment:
            query += " WHERE assignment = ?"
            args = (assignment,)
        with self._connect() as db:
            return db.execute(query + " ORDER BY student, assignment, submission",
                              args).fetchall()

    def results(self) -> list[Result]:
        """The recorded results, ordered by student, assignment and file."""
        return [result for _, result in self.recorded()]

    def _result(self, student: str, submission: str, stored: str) -> Result:
        """A stored result read back as the `Result` that was recorded: the one place the
        class's side reads a result's JSON."""
        try:
            return result_json.parse(stored)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise UsageError(f"{self.path}: the result of {student}'s {submission} cannot be "
                             f"read ({type(exc).__name__}: {exc}); grade it again with `grade "
                             "batch ... --force`") from None


def _row(student: str, submission: str, result: Result,
         submitted_at: datetime | None = None) -> tuple[object, ...]:
    """A result as a row of the table (`ROW_COLUMNS`, then the result); the names and the
    result's text are stored `clean`, as every reader of the file will show them."""
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    if submitted_at is not None and submitted_at.utcoffset() is None:
        raise ValueError(f"{submission}: a submission time needs its time zone")
    submitted = None if submitted_at is None else \
        submitted_at.astimezone(UTC).isoformat()
    return (text.one_line(student), result.assignment, text.one_line(submission),
            result.sha256, result.status.value, result.score, result.max_score, stamp,
            submitted, json.dumps(result_json.to_dict(result, instructor=True), sort_keys=True))


def existing(folder: Path) -> Gradebook:
    """The gradebook `grade batch --out folder` wrote; a UsageError says how to make one."""
    if not (Path(folder) / FILENAME).is_file():
        raise UsageError(f"{Path(folder) / FILENAME}: no gradebook here; run "
                         f"`grade batch SUBMISSIONS_DIR --assignment NAME --out {folder}` first, "
                         "or pass the --out folder that batch wrote to")
    return Gradebook(folder)


def best_of(rows: Iterable[Row]) -> Row | None:
    """The submission that counts of one student's on one assignment, in exports, overrides and
    the class report alike: the highest score, the first recorded on a tie (a helper .py
    scores no less than 0); None for no row."""
    chosen: Row | None = None
    for row in rows:
        if chosen is None or row.score > chosen.score:
            chosen = row
    return chosen


def best(rows: Sequence[Row]) -> dict[tuple[str, str], Row]:
    """Each student's best submission per assignment (`best_of`)."""
    mine: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        mine.setdefault((row.student, row.assignment), []).append(row)
    return {key: chosen for key, own in mine.items() if (chosen := best_of(own)) is not None}
