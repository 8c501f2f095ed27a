"""`grade batch --times`: Moodle's grading worksheet or a CSV of student,submitted_at give the
downloads that carry no time (Canvas, Moodle) their submission times; what cannot say one
moment is refused with the file, the line and the fix."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from grader.batch import times
from grader.errors import UsageError
from grader.term import grades
from tests.helpers.command import run
from tests.helpers.platforms import canvas_zip, moodle_worksheet

NEW_YORK = ZoneInfo("America/New_York")


@pytest.mark.parametrize(("written", "utc"), [
    ("Monday, 2 March 2026, 11:05 PM", "2026-03-03T04:05:00+00:00"),
    ("Monday, 2 March 2026, 12:05 AM", "2026-03-02T05:05:00+00:00"),
    ("Monday, 2 March 2026, 12:05 PM", "2026-03-02T17:05:00+00:00"),
    ("Tuesday, 14 July 2026, 9:00 am", "2026-07-14T13:00:00+00:00"),  # summer: -04:00
])
def test_moodle_times_in_the_zone_given(written, utc):
    found = times.moodle_time(written, NEW_YORK, "w.csv: line 2")
    assert found.astimezone(UTC).isoformat() == utc


@pytest.mark.parametrize(("written", "message"), [
    ("Sunday, 1 November 2026, 1:30 AM",
     "w.csv: line 2: 'Sunday, 1 November 2026, 1:30 AM' is ambiguous in America/New_York: "
     "a daylight-saving change skips or repeats that hour"),
    ("Sunday, 8 March 2026, 2:30 AM", "is ambiguous in America/New_York"),
    ("Tuesday, 2 March 2026, 11:05 PM",
     "w.csv: line 2: 'Tuesday, 2 March 2026, 11:05 PM': 02 March 2026 is a Monday; "
     "download the worksheet again"),
    ("lundi 2 mars 2026, 23:05", "is not a time as Moodle writes it in English"),
    ("Monday, 2 Mars 2026, 11:05 PM", "is not a time as Moodle writes it in English"),
    ("Monday, 31 February 2026, 11:05 PM", "is not a date"),
])
def test_moodle_times_that_say_no_one_moment_are_refused(written, message):
    with pytest.raises(UsageError) as caught:
        times.moodle_time(written, NEW_YORK, "w.csv: line 2")
    assert str(caught.value).startswith("w.csv: line 2: ") and message in str(caught.value)


def test_a_worksheet_names_participants_and_skips_those_who_handed_nothing(tmp_path):
    path = moodle_worksheet(tmp_path / "w.csv", {"301": "Monday, 2 March 2026, 11:05 PM",
                                                  "302": "-"})
    found = times.read(path, NEW_YORK)
    assert found.kind == "moodle"
    assert found.at == {"301": datetime(2026, 3, 2, 23, 5, tzinfo=NEW_YORK)}
    with pytest.raises(UsageError) as caught:
        times.read(path, None)
    assert str(caught.value) == (f"{path}: Moodle's worksheet gives times without a time "
                                 "zone; pass --timezone, the zone of the Moodle account that "
                                 "downloaded it (for example --timezone Europe/London)")


def test_a_plain_file_with_or_without_a_header(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("student,submitted_at\n1001,2026-03-02T23:05:00-05:00\n\n"
                    "Alan@Example.edu,2026-03-02T22:00:00Z\n")
    found = times.read(path, None)
    assert (found.kind, sorted(found.at)) == ("plain", ["1001", "alan@example.edu"])
    assert found.match("20002", ["alan@example.edu", "Alan Turing"]) == "alan@example.edu"
    assert found.match("1003", ["hopperg"]) is None


@pytest.mark.parametrize(("content", "message"), [
    ("1001,2026-03-02T23:05:00\n", "line 1: '2026-03-02T23:05:00' has no offset; add one"),
    ("1001,yesterday\n", "line 1: 'yesterday' is not a date and time"),
    ("1001,2026-03-02T23:05:00Z\n1001,2026-03-03T23:05:00Z\n",
     "line 2: 1001 has a time above already; keep one line per student"),
    ("student,submitted_at\n1001\n", "line 2: write two cells, student,submitted_at"),
    ("a,b,c\n", "line 1: neither Moodle's grading worksheet"),
    ("", "line 1: neither Moodle's grading worksheet"),
])
def test_a_plain_file_that_is_wrong_is_refused_with_its_line(tmp_path, content, message):
    path = tmp_path / "t.csv"
    path.write_text(content)
    with pytest.raises(UsageError) as caught:
        times.read(path, None)
    assert str(caught.value).startswith(f"{path}: {message}")


def test_a_missing_or_bad_times_file_stops_the_batch_before_grading(tmp_path):
    out = tmp_path / "out"
    zipped = canvas_zip(tmp_path / "c.zip")
    code, _, err = run("batch", str(zipped), "--assignment", "udl_attention", "--out", str(out),
                       "--times", str(tmp_path / "nowhere.csv"))
    assert code == 2 and f"{tmp_path / 'nowhere.csv'}: no such file" in err
    worksheet = moodle_worksheet(tmp_path / "w.csv", {"301": "Monday, 2 March 2026, 11:05 PM"})
    code, _, err = run("batch", str(zipped), "--assignment", "udl_attention", "--out", str(out),
                       "--times", str(worksheet))
    assert code == 2 and "pass --timezone" in err
    assert not out.exists()


def explanations(out, *policy: str) -> dict[str, dict[str, str]]:
    code, exported, err = run("gradebook", "export", "--out", str(out), *policy)
    assert code == 0, err
    return {row["student"]: row for row in csv.DictReader(io.StringIO(exported))}


def test_canvas_late_shows_until_times_are_given_then_times_set_without_regrading(tmp_path):
    out = tmp_path / "out"
    zipped = canvas_zip(tmp_path / "c.zip")  # 1002 (turingalan) is marked _LATE
    code, printed, _ = run("batch", str(zipped), "--assignment", "udl_attention", "--out",
                           str(out), "--jobs", "2")
    assert code == 0 and "times:" not in printed
    due = ("--due", "2026-03-01T23:59:00-05:00", "--late", "10%/day")
    rows = explanations(out, *due)
    assert rows["1002"]["explanation"] == (grades.CANVAS_LATE +
                                           " (the deadline of 2026-03-01 23:59 -05:00)")
    assert (rows["1002"]["penalty"], rows["1002"]["final"]) == ("0", "10")
    assert rows["1001"]["explanation"] == ("no submission time recorded: no penalty against "
                                           "the deadline of 2026-03-01 23:59 -05:00")
    assert explanations(out)["1002"]["explanation"] == grades.CANVAS_LATE  # no --due
    # The times come later: by Canvas user id, by the name in the download, and one stranger.
    given = tmp_path / "t.csv"
    given.write_text("student,submitted_at\n1001,2026-03-01T20:00:00-05:00\n"
                     "turingalan,2026-03-03T00:00:00-05:00\n9999,2026-03-01T20:00:00-05:00\n")
    code, printed, _ = run("batch", str(zipped), "--assignment", "udl_attention", "--out",
                           str(out), "--jobs", "2", "--times", str(given))
    lines = printed.splitlines()
    assert code == 0
    assert f"times: 2 of 3 students given a submission time by {given}" in lines
    assert f"times: {given} names 9999, who is not in this download" in lines
    assert any(line.startswith("graded 0, skipped 3 already in the gradebook") for line in lines)
    rows = explanations(out, *due)
    assert rows["1002"]["explanation"] == ("submitted 1 d 0 h 01 min after the deadline of "
                                           "2026-03-01 23:59 -05:00; 10% per day started, "
                                           "2 days: -20%")
    assert (rows["1002"]["submitted_at"], rows["1002"]["final"]) == \
        ("2026-03-03T05:00:00+00:00", "8")
    assert rows["1001"]["explanation"] == \
        "submitted on time for the deadline of 2026-03-01 23:59 -05:00"
    assert rows["1003"]["submitted_at"] == ""
