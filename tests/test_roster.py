"""Rosters as Canvas and Moodle export them: recognised by header, matched by an id to an id
column and by a name to a name, never two students to one row."""

from __future__ import annotations

from datetime import datetime

import pytest

from grader.errors import UsageError
from grader.term import policy, roster
from tests.helpers.classes import small_class
from tests.helpers.command import run
from tests.helpers.term import canvas_roster, moodle_roster

CANVAS_ROWS = [["Lovelace, Ada", "1001", "S-1", "ada@uni.edu", "A"],
               ["Turing, Alan", "1002", "S-2", "alan@uni.edu", "B"],
               ["Hopper, Grace", "1003", "", "grace@uni.edu", "A"]]


def test_canvas_roster_matches_by_canvas_id_sis_ids_and_lastfirst_name(tmp_path):
    found = roster.read(canvas_roster(tmp_path / "r.csv", CANVAS_ROWS))
    assert found.platform == "canvas" and [s.name for s in found.students] == [
        "Lovelace, Ada", "Turing, Alan", "Hopper, Grace"]
    alone = {key: found.match([key]) for key in ["1001", "s-2", "GRACE@UNI.EDU", "lovelaceada",
                                                 "mallory"]}
    assert {key: m.students[key].canvas_id for key, m in alone.items() if m.students} == {
        "1001": "1001", "s-2": "1002", "GRACE@UNI.EDU": "1003", "lovelaceada": "1001"}
    assert alone["mallory"] == roster.Matching({}, ("mallory",))


def test_a_download_student_is_matched_by_its_ids_first_then_its_name(tmp_path):
    found = roster.read(canvas_roster(tmp_path / "r.csv", [
        *CANVAS_ROWS, ["Turing, Alice", "1004", "S-4", "alice@uni.edu", "B"]]))
    known = {"301": roster.Known(names=("Ada Lovelace",)),  # a Moodle participant: by name
             # the email wins over the name
             "20002": roster.Known(("alan@uni.edu",), ("Turing, Alice",)),
             "ghost": roster.Known(("ghost@uni.edu",), ("Nobody Here",))}
    matched = found.match(["301", "20002", "ghost"], known)
    assert {key: s.canvas_id for key, s in matched.students.items()} == {
        "301": "1001", "20002": "1002"}
    assert (matched.strangers, matched.ambiguous) == (("ghost",), ())
    # without them, a participant id is no one
    assert found.match(["301"]).strangers == ("301",)


def test_moodle_roster_matches_by_id_number_email_and_first_last_name(tmp_path):
    path = moodle_roster(tmp_path / "m.csv", [["Ada", "Lovelace", "7001", "", "", "ada@uni.edu"],
                                              ["Alan", "Turing", "", "", "", "alan@uni.edu"]])
    found = roster.read(path)
    assert found.platform == "moodle"
    alone = {key: found.match([key]) for key in ["7001", "alan@uni.edu", "Ada Lovelace", "x"]}
    assert {key: m.students[key].email for key, m in alone.items() if m.students} == {
        "7001": "ada@uni.edu", "alan@uni.edu": "alan@uni.edu", "Ada Lovelace": "ada@uni.edu"}
    assert alone["x"].strangers == ("x",) and found.students[1].key == "alan@uni.edu"


def test_a_name_two_students_share_matches_neither_and_says_so(tmp_path):
    path = moodle_roster(tmp_path / "m.csv", [["Sam", "Lee", "1", "", "", ""],
                                              ["Sam", "Lee", "2", "", "", ""]])
    found = roster.read(path)
    assert found.match(["samlee"]) == roster.Matching(
        {}, (), (roster.Ambiguity(("samlee",), found.students),))
    assert found.match(["samlee"]).ambiguous[0].line(path) == (
        f"samlee fits line 2 (Sam Lee) or line 3 (Sam Lee) of the roster {path}; no grade is "
        "given to the row from them: fix the roster or grade them apart")


def test_a_chosen_name_is_never_taken_for_another_students_id(tmp_path):
    found = roster.read(canvas_roster(tmp_path / "r.csv", CANVAS_ROWS))
    # Mallory, on no roster, calls herself "1001" (Ada's Canvas id) and "ada@uni.edu" (her
    # email); on GitHub, "S-2" (Alan's SIS User ID).
    known = {"20009": roster.Known(("20009", "mallory@x.org"), ("1001", "ada@uni.edu")),
             "m4llory": roster.Known(("m4llory",), ("S-2",)),
             "1001": roster.Known(("1001",), ("lovelaceada",)),
             # Ada's own name: a row one key fits by id is that key's alone.
             "mal": roster.Known(("mal@x.org",), ("Lovelace, Ada",))}
    matched = found.match(["1001", "20009", "m4llory", "mal"], known)
    assert {key: s.canvas_id for key, s in matched.students.items()} == {"1001": "1001"}
    assert (matched.strangers, matched.ambiguous) == (("20009", "m4llory", "mal"), ())


def test_two_keys_that_fit_one_row_alike_are_given_to_neither(tmp_path):
    found = roster.read(canvas_roster(tmp_path / "r.csv", CANVAS_ROWS))
    ada = found.students[0]
    # Two ids of Ada's (her Canvas id and her email), from two uploads of one assignment.
    both = found.match(["1001", "ada@uni.edu"])
    assert both == roster.Matching({}, (), (roster.Ambiguity(("1001", "ada@uni.edu"),
                                                             (ada,)),))
    # Two names, with no id: the same.
    named = found.match(["x1", "x2"], {"x1": roster.Known(names=("Ada Lovelace",)),
                                       "x2": roster.Known(names=("Lovelace, Ada",))})
    assert (named.students, named.ambiguous) == ({}, (roster.Ambiguity(("x1", "x2"), (ada,)),))
    # A key whose ids fit two rows.
    split = found.match(["k"], {"k": roster.Known(("1001", "alan@uni.edu"))})
    assert split.ambiguous == (roster.Ambiguity(("k",), found.students[:2]),)


def test_an_extension_column_gives_a_student_their_own_deadline(tmp_path):
    rows = [[*CANVAS_ROWS[0], "2026-03-03T23:59:00-05:00"], [*CANVAS_ROWS[1], ""]]
    found = roster.read(canvas_roster(tmp_path / "r.csv", rows, ("Extension",)))
    assert found.students[0].extension == datetime.fromisoformat("2026-03-03T23:59:00-05:00")
    assert found.students[1].extension is None
    zoned = canvas_roster(tmp_path / "z.csv", [[*CANVAS_ROWS[0], "2026-03-10T12:00"]], ("due",))
    local = roster.read(zoned, policy.parse_zone("America/New_York")).students[0].extension
    assert local is not None and local.isoformat() == "2026-03-10T12:00:00-04:00"


@pytest.mark.parametrize(("content", "message"), [
    ("Name,Score\nada,3\n", "r.csv: line 1: the header is neither Canvas's"),
    ("Student,ID,SIS User ID,SIS Login ID,Section\nLovelace, Ada,1001,S-1,ada,A\n",
     "r.csv: line 2: 6 cells where the header has 5; quote cells that hold commas"),
    ("Student,ID,SIS User ID,SIS Login ID,Section\nAda,1001,,,\nAlan,1001,,,\n",
     "r.csv: line 3: the id '1001' is also on line 2; each student must appear once"),
    ("Student,ID,SIS User ID,SIS Login ID,Section\nAda,,,,A\n",
     "r.csv: line 2: Ada has no id at all"),
    ("Student,ID,SIS User ID,SIS Login ID,Section,Extension\nAda,1,,,,friday\n",
     "r.csv: line 2: Extension: 'friday' is not a date and time"),
    ("Student,ID,SIS User ID,SIS Login ID,Section,Extension\nAda,1,,,,2026-03-10T12:00\n",
     "r.csv: line 2: Extension: '2026-03-10T12:00' has no offset"),
    ("Student,ID,SIS User ID,SIS Login ID,Section\n", "r.csv: no students under the header"),
])
def test_bad_rosters_name_the_file_the_line_and_the_fix(tmp_path, content, message):
    path = tmp_path / "r.csv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(UsageError) as raised:
        roster.read(path)
    assert str(raised.value).startswith(f"{tmp_path}/{message}")


def test_a_roster_that_is_not_utf8_says_which_line(tmp_path):
    path = tmp_path / "r.csv"
    path.write_bytes(b"Student,ID,SIS User ID,SIS Login ID,Section\nL\xe9a,1,,,\n")
    with pytest.raises(UsageError, match=r"r.csv: line 2: not UTF-8 text; save the file as "
                                         "CSV UTF-8"):
        roster.read(path)


def test_an_extensions_file_is_student_and_due(tmp_path):
    path = tmp_path / "ext.csv"
    path.write_text("student,due\nAlice,2026-03-03T23:59:00-05:00\n")
    assert roster.extensions(path) == {
        "alice": datetime.fromisoformat("2026-03-03T23:59:00-05:00")}
    path.write_text("alice,2026-03-03T23:59:00-05:00,extra\n")
    with pytest.raises(UsageError, match="ext.csv: line 1: write two cells, student,due"):
        roster.extensions(path)


def test_batch_with_a_roster_counts_the_missing_and_names_the_strangers(tmp_path):
    folder, out = small_class(tmp_path), tmp_path / "graded"
    path = canvas_roster(tmp_path / "r.csv", [["Smith, Alice", "1", "", "alice", ""],
                                              ["Jones, Carol", "3", "", "carol", ""]])
    code, output, err = run("batch", str(folder), "--assignment", "udl_attention", "--out",
                            str(out), "--jobs", "1", "--roster", str(path))
    assert code == 0
    assert "roster: 1 of 2 students handed in, 1 missing, 1 not on the roster" in output
    assert err == f"grade: not on the roster {path}: bob\n"


def test_batch_with_a_bad_roster_stops_before_grading(tmp_path):
    folder, out = small_class(tmp_path), tmp_path / "graded"
    (tmp_path / "r.csv").write_text("Name\nalice\n")
    code, output, err = run("batch", str(folder), "--assignment", "udl_attention", "--out",
                            str(out), "--roster", str(tmp_path / "r.csv"))
    assert (code, output) == (2, "")
    assert err.startswith(f"grade: error: {tmp_path / 'r.csv'}: line 1: the header is neither")
    assert not out.exists()
