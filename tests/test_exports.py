"""`grade gradebook export` with a roster, a time policy and a dry run, end to end through
the command line, on gradebooks recorded with submission times."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest

from grader import result_json
from grader.gradebook import FILENAME, Gradebook, identities
from tests.helpers.command import run
from tests.helpers.sqlite_file import opened
from tests.helpers.term import book, canvas_roster, moodle_roster, result, table

DUE = "2026-03-01T23:59:00-05:00"
DEADLINE = datetime.fromisoformat(DUE)
ROSTER = [["Lovelace, Ada", "1001", "S-1", "ada@uni.edu", "A"],
          ["Turing, Alan", "1002", "S-2", "alan@uni.edu", "B"],
          ["Hopper, Grace", "1003", "", "grace@uni.edu", "A"]]
ALAN_LATE = ("submitted 1 h 05 min after the deadline of 2026-03-01 23:59 -05:00; 10% per day "
             "started, 1 day: -10%")


@pytest.fixture
def term(tmp_path):
    """ada on time, alan 1 h 05 min late, grace on the roster without a submission, and
    mallory, who handed in but is not on the roster."""
    book(tmp_path / "graded", {
        "1001": (5, 5, DEADLINE),
        "1002": (4, 4, DEADLINE + timedelta(hours=1, minutes=5)),
        "mallory": (3, 3, DEADLINE - timedelta(days=1))})
    canvas_roster(tmp_path / "roster.csv", ROSTER)
    return tmp_path


def export(term, *flags: str) -> tuple[int, str, str]:
    return run("gradebook", "export", "--out", str(term / "graded"), "--roster",
               str(term / "roster.csv"), "--due", DUE, *flags)


def test_canvas_export_uses_the_roster_ids_lists_the_missing_and_keeps_strangers(term):
    code, out, err = export(term, "--format", "canvas", "--late", "10%/day",
                            "--column", "udl_attention=Self-attention (4242)")
    assert code == 0
    assert out.splitlines() == [
        "Student,ID,SIS User ID,SIS Login ID,Section,Self-attention (4242)",
        "Points Possible,,,,,10",
        '"Lovelace, Ada",1001,S-1,ada@uni.edu,A,10',
        '"Turing, Alan",1002,S-2,alan@uni.edu,B,7.2',
        '"Hopper, Grace",1003,,grace@uni.edu,A,0',
        "mallory,,,mallory,,6"]
    assert err == (f"grade: not on the roster {term / 'roster.csv'}: mallory (listed under "
                   "the name of their submission)\n")


def test_csv_keeps_raw_score_time_lateness_penalty_and_final_apart(term):
    code, out, _ = export(term, "--late", "10%/day")
    rows = {row["student"]: row for row in table(out)}
    assert code == 0 and list(rows) == ["1001", "1002", "1003", "mallory"]
    alan = rows["1002"]
    assert (alan["score"], alan["penalty_percent"], alan["penalty"], alan["final"]) == \
        ("8", "10", "0.8", "7.2")
    assert alan["submitted_at"] == "2026-03-02T06:04:00+00:00"
    assert (alan["deadline"], alan["late_by_s"]) == (DUE, "3900")
    assert alan["explanation"] == ALAN_LATE
    assert rows["1001"]["explanation"] == ("submitted on time for the deadline of 2026-03-01 "
                                           "23:59 -05:00")
    grace = rows["1003"]
    assert (grace["status"], grace["score"], grace["final"], grace["on_roster"]) == \
        ("missing", "0", "0", "yes")
    assert grace["explanation"] == "no submission by the deadline of 2026-03-01 23:59 -05:00"
    assert (rows["mallory"]["on_roster"], rows["mallory"]["final"]) == ("no", "6")


def test_csv_names_a_moodle_download_by_the_rosters_keys_and_names(tmp_path):
    # Moodle's download keys each student by a participant id, which the roster never shows:
    # the roster's students are matched by name, and named in the csv by the roster's own key.
    book(tmp_path / "graded", {"301": (5, 5, DEADLINE), "302": (4, 4, DEADLINE),
                               "399": (3, 3, DEADLINE), "zoe": (1, 1, DEADLINE)})
    identities.identify(Gradebook(tmp_path / "graded"), "udl_attention", [
        ("301", "Ada Lovelace", {"moodle_participant_id": "301"}),
        ("302", "Alan Turing", {"moodle_participant_id": "302"}),
        ("399", "Mallory Stranger", {"moodle_participant_id": "399"})])
    moodle_roster(tmp_path / "roster.csv", [["Ada", "Lovelace", "S1", "", "", "ada@uni.edu"],
                                            ["Alan", "Turing", "S2", "", "", "alan@uni.edu"],
                                            ["Grace", "Hopper", "", "", "", "grace@uni.edu"]])
    code, out, _ = export(tmp_path, "--comments")
    header = out.splitlines()[0].split(",")
    assert code == 0 and header[-3:] == ["note", "name", "comment"]
    assert [(r["student"], r["name"], r["on_roster"], r["final"]) for r in table(out)] == [
        ("S1", "Ada Lovelace", "yes", "10"), ("S2", "Alan Turing", "yes", "8"),
        ("grace@uni.edu", "Grace Hopper", "yes", "0"), ("399", "Mallory Stranger", "no", "6"),
        ("zoe", "", "no", "2")]


def test_changing_the_policy_changes_the_grades_and_nothing_else(term):
    before = Gradebook(term / "graded").recorded()
    ten = {row["student"]: row for row in table(export(term, "--late", "10%/day")[1])}
    thirty = {row["student"]: row for row in table(export(term, "--late", "30%/day")[1])}
    assert (ten["1002"]["final"], thirty["1002"]["final"]) == ("7.2", "5.6")
    changed = {(student, column) for student in ten for column in ten[student]
               if ten[student][column] != thirty[student][column]}
    assert changed == {("1002", "penalty_percent"), ("1002", "penalty"), ("1002", "final"),
                       ("1002", "explanation")}
    assert Gradebook(term / "graded").recorded() == before  # never baked into the record


def test_an_extension_from_a_file_or_a_roster_column_moves_the_deadline(term):
    (term / "ext.csv").write_text("student,due\nalan@uni.edu,2026-03-02T12:00:00-05:00\n")
    rows = {row["student"]: row for row in table(
        export(term, "--late", "10%/day", "--extensions", str(term / "ext.csv"))[1])}
    assert rows["1002"]["final"] == "8"
    assert rows["1002"]["explanation"] == ("submitted on time for the deadline of 2026-03-02 "
                                           "12:00 -05:00 (extension)")
    canvas_roster(term / "roster.csv", [[*ROSTER[0], ""], [*ROSTER[1], "2026-03-02T00:30"],
                                        [*ROSTER[2], ""]], ("extension",))
    rows = {row["student"]: row for row in table(
        export(term, "--late", "10%/day", "--timezone", "America/New_York")[1])}
    assert rows["1002"]["explanation"] == (
        "submitted 34 min after the deadline of 2026-03-02 00:30 -05:00 (extension); 10% per "
        "day started, 1 day: -10%")


def test_the_hard_deadline_gives_no_credit(term):
    code, out, _ = export(term, "--format", "canvas", "--hard-deadline",
                          "2026-03-02T00:30:00-05:00")
    assert code == 0 and '"Turing, Alan",1002,S-2,alan@uni.edu,B,0' in out.splitlines()


def test_moodle_export_has_the_id_number_and_email_of_a_moodle_roster(term):
    moodle_roster(term / "roster.csv", [["Ada", "Lovelace", "1001", "", "", "ada@uni.edu"],
                                        ["Grace", "Hopper", "", "", "", "grace@uni.edu"]])
    code, out, err = export(term, "--format", "moodle", "--late", "10%/day")
    assert code == 0
    assert out.splitlines() == ["ID number,Email address,udl_attention", "1001,ada@uni.edu,10",
                                ",grace@uni.edu,0", "1002,,7.2", "mallory,,6"]
    assert "1002" in err and "mallory" in err


def test_comments_carry_each_students_one_line_summary(term):
    code, out, _ = export(term, "--format", "canvas", "--late", "10%/day", "--comments")
    rows = table("\n".join(line for line in out.splitlines() if "Points Possible" not in line))
    alan = next(row for row in rows if row["ID"] == "1002")
    assert code == 0 and alan["Comments"] == f"graded: 7.2/10; raw 8; {ALAN_LATE}"


def test_a_dry_run_says_what_would_change_against_the_last_export_and_writes_nothing(term):
    code, out, _ = export(term, "--format", "canvas", "--dry-run")
    assert (code, out) == (0, "no canvas export yet: all 4 grades would be new\n")
    assert not (term / "graded" / "exports").exists()
    assert export(term, "--format", "canvas", "--output", str(term / "c.csv"))[0] == 0
    memory = (term / "graded" / "exports" / "canvas.json").read_text()
    code, out, _ = export(term, "--format", "canvas", "--dry-run", "--late", "10%/day")
    lines = out.splitlines()
    assert code == 0 and lines[1:] == ["1002 udl_attention: 8 -> 7.2"]
    assert lines[0].startswith("1 grade would change against the canvas export of 20")
    assert (term / "graded" / "exports" / "canvas.json").read_text() == memory
    assert export(term, "--format", "canvas", "--dry-run")[1].startswith("nothing would change")


def test_a_stored_result_that_cannot_be_read_back_names_the_gradebook_and_the_fix(tmp_path):
    Gradebook(tmp_path).record("amy", "amy.py", result(5, 5))
    with opened(tmp_path / FILENAME) as db:
        db.execute("UPDATE results SET result = '{\"schema\": \"grader.result/1\"}'")
    code, out, err = run("gradebook", "export", "--out", str(tmp_path))
    assert (code, out) == (2, "")
    assert err.strip().endswith(
        f"{tmp_path / FILENAME}: the result of amy's amy.py cannot be read (KeyError: "
        "'assignment'); grade it again with `grade batch ... --force`")


def test_an_old_gradebook_gains_the_submission_time_column(tmp_path):
    folder = tmp_path / "graded"
    folder.mkdir()
    with opened(folder / FILENAME) as db:
        db.execute("CREATE TABLE results (student TEXT NOT NULL, assignment TEXT NOT NULL, "
                   "submission TEXT NOT NULL, sha256 TEXT NOT NULL, status TEXT NOT NULL, "
                   "score REAL NOT NULL, max_score REAL NOT NULL, result TEXT NOT NULL, "
                   "graded_at TEXT NOT NULL, PRIMARY KEY (student, assignment, submission))")
        db.execute("INSERT INTO results VALUES ('zoe', 'udl_attention', 'zoe.py', 'abc', "
                   "'graded', 7, 10, ?, '2026-01-01T00:00:00+00:00')",
                   (json.dumps(result_json.to_dict(result(3, 4), instructor=True)),))
    (row,) = Gradebook(folder).rows()
    assert (row.student, row.score, row.submitted_at) == ("zoe", 7.0, None)
    Gradebook(folder).record("amy", "amy.py", result(5, 5),
                             datetime.fromisoformat("2026-03-01T12:00:00+01:00"))
    code, out, _ = run("gradebook", "export", "--out", str(folder), "--due", DUE,
                       "--late", "10%/day")
    rows = {row["student"]: row for row in table(out)}
    assert code == 0 and rows["amy"]["submitted_at"] == "2026-03-01T11:00:00+00:00"
    assert rows["zoe"]["explanation"].startswith("no submission time recorded: no penalty")


@pytest.mark.parametrize(("flags", "message"), [
    (("--late", "10%/day"), "--late and --hard-deadline need --due"),
    (("--due", "2026-03-01T23:59"), "--due: '2026-03-01T23:59' has no offset"),
    (("--roster", "nowhere.csv"), "nowhere.csv: no such file"),
])
def test_bad_policy_flags_are_clear_errors_without_a_traceback(term, flags, message):
    code, out, err = run("gradebook", "export", "--out", str(term / "graded"), *flags)
    assert (code, out) == (2, "")
    assert err.startswith(f"grade: error: {message}") and "Traceback" not in err


def test_the_class_report_ends_with_each_students_grade_and_how_it_came_about(term):
    code, out, _ = run("gradebook", "report", "--out", str(term / "graded"), "--roster",
                       str(term / "roster.csv"), "--due", DUE, "--late", "10%/day")
    assert code == 0
    section = out.split("## Grades\n", 1)[1].splitlines()
    assert section[4] == f"| 1002 | udl_attention | graded | 8 | 0.8 | 7.2/10 | {ALAN_LATE} |"
    assert section[5].startswith("| 1003 | udl_attention | missing | 0 | 0 | 0/10 | no ")
    assert section[-1] == "Not on the roster: mallory"


def test_a_chosen_name_that_is_another_students_id_takes_nothing_of_theirs(term):
    # Mallory (Gradescope SID 20009, not on the roster) set her name to "1002", Alan's id;
    # Alan scored 8, she 10.
    found = Gradebook(term / "graded")
    found.record("20009", "20009/hw.py", result(5, 5), DEADLINE)
    identities.identify(found, "udl_attention", [
        ("20009", "1002", {"gradescope_sid": "20009", "email": "mallory@x.org"}),
        ("1002", "Turing, Alan", {"gradescope_sid": "1002"})])
    code, out, err = export(term, "--format", "canvas")
    assert code == 0
    assert out.splitlines()[2:] == ['"Lovelace, Ada",1001,S-1,ada@uni.edu,A,10',
                                    '"Turing, Alan",1002,S-2,alan@uni.edu,B,8',
                                    '"Hopper, Grace",1003,,grace@uni.edu,A,0',
                                    "20009,,,20009,,10", "mallory,,,mallory,,6"]
    assert "not on the roster" in err and ": 20009 (listed" in err


def test_two_submissions_that_fit_one_student_give_that_student_neither_score(term):
    # Ada's email names a second submission of the same assignment, worth less.
    found = Gradebook(term / "graded")
    found.record("ada@uni.edu", "ada@uni.edu/hw.py", result(1, 0), DEADLINE)
    code, out, err = export(term, "--format", "canvas")
    assert code == 0
    assert out.splitlines()[2:] == ['"Lovelace, Ada",1001,S-1,ada@uni.edu,A,',
                                    '"Turing, Alan",1002,S-2,alan@uni.edu,B,8',
                                    '"Hopper, Grace",1003,,grace@uni.edu,A,0',
                                    "mallory,,,mallory,,6"]
    assert f"grade: ambiguous: 1001 and ada@uni.edu all fit line 3 (Lovelace, Ada) of the " \
           f"roster {term / 'roster.csv'}; no grade is given" in err
    code, out, _ = export(term)
    assert [(r["student"], r["status"], r["final"], r["on_roster"]) for r in table(out)] == [
        ("1001", "ambiguous", "", "yes"), ("1002", "graded", "8", "yes"),
        ("1003", "missing", "0", "yes"), ("1001", "graded", "10", "no"),
        ("ada@uni.edu", "graded", "1", "no"), ("mallory", "graded", "6", "no")]
