"""The term's guide, command by command, run as written on a generated download of each
platform: the commands are read from docs/term.md, so that it cannot drift from what the grader
does. Between the first batch and the first export, the test plays "a bug in the assignment":
it lowers the recorded score of one right submission, which the regrade must then restore."""

from __future__ import annotations

import csv
import io
import json
import re
import shlex

import pytest

from grader.gradebook import FILENAME
from tests.conftest import ROOT
from tests.helpers.command import run
from tests.helpers.platforms import (
    canvas_zip,
    git_class,
    gradescope_zip,
    moodle_worksheet,
    moodle_zip,
)
from tests.helpers.sqlite_file import opened
from tests.helpers.term import canvas_roster, moodle_roster

# Who is who in tests/helpers/platforms.py's downloads: ada and alan hand in right work,
# grace the blank stub; margaret is on the roster and hands in nothing.
KEYS = {"canvas": ("1001", "1002", "1003"), "moodle": ("301", "302", "303"),
        "gradescope": ("20001", "alan@example.edu", "20003"), "git": ("ada", "alan", "grace")}
CANVAS_ROSTER = [["Lovelace, Ada", "1001", "20001", "ada", "A"],
                 ["Turing, Alan", "1002", "20002", "alan", "A"],
                 ["Hopper, Grace", "1003", "20003", "grace", "A"],
                 ["Hamilton, Margaret", "1004", "20004", "margaret", "A"]]
MOODLE_ROSTER = [["Ada", "Lovelace", "S1", "", "", "ada@example.edu"],
                 ["Alan", "Turing", "S2", "", "", "alan@example.edu"],
                 ["Grace", "Hopper", "S3", "", "", "grace@example.edu"],
                 ["Margaret", "Hamilton", "S4", "", "", "margaret@example.edu"]]


def walkthrough() -> list[list[str]]:
    """The bash blocks of docs/term.md's "The term", each as its commands."""
    guide = (ROOT / "docs" / "term.md").read_text()
    section = guide.split("## The term: roster, deadlines, overrides, regrades", 1)[1]
    section = section.split("- **Roster.**", 1)[0]
    return [block.splitlines() for block in re.findall(r"```bash\n(.+?)\n```", section, re.S)]


def commands(platform: str) -> list[str]:
    """The week's commands for `platform`: Canvas's as the guide writes them; for the others,
    the guide's first line for that platform in place of Canvas's, and Moodle's export format."""
    (first,), others, exports, override, again = walkthrough()
    assert [line.split()[2] for line in others] == ["moodle-download.zip",
                                                    "gradescope-export.zip", "repos/"]
    source = {"canvas": first, "moodle": others[0], "gradescope": others[1],
              "git": others[2]}[platform]
    week = [source, "FIX", *exports, *override,
            again[0].replace(first, source), *again[1:]]
    assert again[0] == first + " --force"
    if platform == "moodle":
        week = [line.replace("--format canvas", "--format moodle").replace(
            "canvas.csv", "moodle.csv") for line in week]
    return week


def download(platform: str, here) -> None:
    """What the instructor downloaded, under the names the guide gives it."""
    if platform == "canvas":
        canvas_zip(here / "canvas-download.zip")
        (here / "times.csv").write_text("student,submitted_at\n"
                                        "1001,2024-09-23T22:05:00-04:00\n"
                                        "1002,2024-09-24T01:04:00-04:00\n"
                                        "1003,2024-09-22T09:00:00-04:00\n")
    elif platform == "moodle":
        moodle_zip(here / "moodle-download.zip")
        moodle_worksheet(here / "worksheet.csv", {
            "301": "Monday, 23 September 2024, 10:05 PM",
            "302": "Tuesday, 24 September 2024, 1:04 AM",
            "303": "Sunday, 22 September 2024, 9:00 AM"})
    elif platform == "gradescope":
        gradescope_zip(here / "gradescope-export.zip")
    else:
        git_class(here / "repos")
    if platform == "moodle":
        moodle_roster(here / "roster.csv", MOODLE_ROSTER)
    else:
        canvas_roster(here / "roster.csv", CANVAS_ROSTER)


def lower_recorded_score(out, student: str) -> float:
    """The bug: `student`'s first check that earned points lost them; the points lost."""
    with opened(out / FILENAME) as db:
        (text,) = db.execute("SELECT result FROM results WHERE student = ?",
                             (student,)).fetchone()
        result = json.loads(text)
        exercise, check = next((ex, c) for ex in result["exercises"] for c in ex["checks"]
                               if c["score"] > 0)
        taken = check["score"]
        check.update(status="failed", passed=False, score=0.0)
        exercise["score"] -= taken
        result["score"] -= taken
        db.execute("UPDATE results SET result = ?, score = ? WHERE student = ?",
                   (json.dumps(result), result["score"], student))
    assert taken > 0
    return float(taken)


def uploaded(path, platform: str) -> dict[str, str]:
    """The exported grade of each roster id (Canvas: ID; Moodle: ID number)."""
    rows = [row for row in csv.DictReader(io.StringIO(path.read_text()))
            if not row[next(iter(row))].strip().startswith("Points Possible")]
    key = "ID number" if platform == "moodle" else "ID"
    return {row[key]: row["udl_attention"] for row in rows}


@pytest.mark.parametrize("platform", ["canvas", "moodle", "gradescope", "git"])
def test_the_readme_term_on_each_platform(platform, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    download(platform, tmp_path)
    ada, alan, grace = KEYS[platform]
    ids = ("S1", "S2", "S3", "S4") if platform == "moodle" else ("1001", "1002", "1003", "1004")
    fmt = "moodle" if platform == "moodle" else "canvas"
    printed: list[tuple[int, str, str]] = []
    taken = 0.0
    for line in commands(platform):
        if line == "FIX":
            taken = lower_recorded_score(tmp_path / "graded", ada)
            continue
        argv = shlex.split(line)
        assert argv[0] == "grade"
        printed.append(run(*argv[1:]))
        assert printed[-1][0] == 0, (line, printed[-1])
    batch, grades_csv, first_upload, override, log, regrade, dry, final = printed

    # The batch: the download recognised, the times taken, the roster's missing student.
    out = batch[1].splitlines()
    assert f"as a {platform} download" in out[0]
    if platform in ("canvas", "moodle"):
        assert any(re.match(r"times: 3 of 3 students given a submission time by \S+$", s)
                   for s in out), out
    assert any(s.startswith("graded 3, skipped 0 already in the gradebook, 0 could not be "
                            "graded") for s in out), out
    assert "roster: 3 of 4 students handed in, 1 missing, 0 not on the roster" in out

    # The deadline and the late policy at export: alan is late by less than a day.
    # Each row names the student by the roster's own key, whatever the download called them.
    rows = {row["student"]: row for row in csv.DictReader(
        io.StringIO((tmp_path / "grades.csv").read_text()))}
    assert list(rows) == list(ids)
    names = [f"{first} {last}" for first, last, *_ in MOODLE_ROSTER] if platform == "moodle" \
        else [row[0] for row in CANVAS_ROSTER]
    assert [row["name"] for row in rows.values()] == names
    assert (rows[ids[0]]["score"], rows[ids[0]]["penalty"], rows[ids[0]]["final"]) == \
        (f"{10 - taken:.15g}", "0", f"{10 - taken:.15g}")
    assert rows[ids[0]]["explanation"] == \
        "submitted on time for the deadline of 2024-09-23 23:59 -04:00"
    assert (rows[ids[1]]["score"], rows[ids[1]]["penalty_percent"], rows[ids[1]]["penalty"],
            rows[ids[1]]["final"]) == ("10", "10", "1", "9")
    assert rows[ids[1]]["explanation"].startswith("submitted ") and rows[ids[1]][
        "explanation"].endswith("after the deadline of 2024-09-23 23:59 -04:00; 10% per day "
                                "started, 1 day: -10%")
    if platform in ("canvas", "moodle"):  # the times the file gave, to the minute
        assert rows[ids[1]]["submitted_at"] == "2024-09-24T05:04:00+00:00"
        assert "submitted 1 h 05 min after" in rows[ids[1]]["explanation"]
    assert (rows[ids[2]]["final"], rows[ids[2]]["on_roster"]) == ("0", "yes")
    assert (rows[ids[3]]["status"], rows[ids[3]]["final"]) == ("missing", "0")

    # The override and its log.
    assert override[1].startswith("recorded: ") and "softmax" in override[1]
    (entry,) = log[1].splitlines()
    assert grace in entry and "softmax accepted after review" in entry

    # The regrade names ada's change, from what to what, and saves it.
    (saved,) = (tmp_path / "graded").glob("regrade-*.json")
    lines = regrade[1].splitlines()
    assert any(s.startswith("regrade: 1 of 3 recorded submissions changed; saved in ")
               for s in lines), lines
    assert any(s.startswith(f"  {ada}: {10 - taken:.15g} -> 10/10 (") for s in lines), lines
    assert json.loads(saved.read_text())["changed"][0]["student"] == ada

    # The dry run: against the first upload, the regrade and the override change two grades.
    assert dry[1].splitlines()[1:] == [f"{ada} udl_attention: {10 - taken:.15g} -> 10",
                                       f"{grace} udl_attention: 0 -> 1"]
    assert dry[1].startswith(f"2 grades would change against the {fmt} export of ")

    # The upload: raw, penalty and override, and the missing student, under the roster's ids.
    assert uploaded(tmp_path / f"{fmt}.csv", platform) == \
        dict(zip(ids, ("10", "9", "1", "0"), strict=True))
    page = (tmp_path / "graded" / "results" / alan / "udl_attention.grade.md").read_text()
    assert page.startswith("# udl_attention: 9 / 10\n")
    assert "| Late penalty | -1 (10% of 10) |" in page
    assert "- Deadline: 2024-09-23 23:59 -04:00\n" in page
    page = (tmp_path / "graded" / "results" / grace / "udl_attention.grade.md").read_text()
    assert "| With the exercise overrides | 1 |" in page and "override softmax 0 -> 1" in page
    assert first_upload[1].startswith(f"wrote {fmt}.csv: 4 grades")
    assert grades_csv[0] == 0 and final[0] == 0
