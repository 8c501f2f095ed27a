"""What ingestion adds to the gradebook: the submission time (`submitted_at`, UTC) and each
student's name and platform ids, in a new gradebook and in one from before them."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from grader import gradebook
from grader.gradebook import identities
from grader.results import Result, ResultStatus
from tests.helpers.sqlite_file import opened

OLD_SCHEMA = """CREATE TABLE results (student TEXT NOT NULL, assignment TEXT NOT NULL,
submission TEXT NOT NULL, sha256 TEXT NOT NULL, status TEXT NOT NULL, score REAL NOT NULL,
max_score REAL NOT NULL, result TEXT NOT NULL, graded_at TEXT NOT NULL,
PRIMARY KEY (student, assignment, submission))"""


def result() -> Result:
    return Result("udl_attention", "hw.py", ResultStatus.GRADED, 7.0, 10.0, (), sha256="ab")


def test_an_older_gradebook_gets_the_column_and_keeps_its_rows(tmp_path):
    with opened(tmp_path / gradebook.FILENAME) as db:
        db.execute(OLD_SCHEMA)
        db.execute("INSERT INTO results VALUES ('bob', 'udl_attention', 'hw.py', 'cd', "
                   "'graded', 4, 10, '{}', '2024-01-01T00:00:00+00:00')")
    book = gradebook.Gradebook(tmp_path)
    handed = datetime(2024, 3, 31, 1, 30, tzinfo=timezone(timedelta(hours=2)))
    book.record("alice", "hw.py", result(), handed)
    assert identities.submitted(book, "udl_attention") == {
        ("alice", "hw.py"): "2024-03-30T23:30:00+00:00", ("bob", "hw.py"): None}
    assert [(row.student, row.score) for row in book.rows()] == [("alice", 7.0), ("bob", 4.0)]


def test_names_and_ids_are_replaced_by_the_next_download(tmp_path):
    book = gradebook.Gradebook(tmp_path)
    identities.identify(book, "udl_attention", [("1001", "lovelaceada",
                                                {"canvas_submission_id": "5001"})])
    identities.identify(book, "udl_attention", [("1001", "lovelace\x1b[2Jada",
                                                {"canvas_submission_id": "5009"})])
    assert identities.identities(book, "udl_attention") == {
        "1001": ("lovelace[2Jada", {"canvas_submission_id": "5009"})}
    assert identities.identities(book, "other") == {}
