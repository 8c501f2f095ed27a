"""Grading a class: student names, parallel batches, resuming after kill -9, outputs."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader import cli
from grader.batch import batch, finding
from grader.course import registry
from grader.errors import UsageError
from grader.gradebook import FILENAME, Gradebook
from grader.pipeline import grading
from grader.sandbox.limits import Limits
from tests.conftest import ROOT
from tests.helpers.classes import Terminal, make_class, normalised, small_class

CORPUS = ROOT / "tests" / "corpus" / "udl_attention"
OPTIONS = grading.Options(limits=Limits(cell_timeout=5, call_timeout=5))


@pytest.mark.parametrize("relative, student", [
    ("alice/notebook.ipynb", "alice"),
    ("alice/deep/er/helpers.py", "alice"),
    ("bob_attention_123.ipynb", "bob"),
    ("carol.ipynb", "carol"),
])
def test_default_student_names(relative, student):
    assert finding.student_of(relative, None) == student


def test_a_custom_pattern_and_its_errors():
    pattern = finding.compile_pattern(r"^(?P<student>[a-z]+\d+)-")
    assert finding.student_of("abc123-final.ipynb", pattern) == "abc123"
    assert finding.student_of("late.ipynb", pattern) is None
    with pytest.raises(UsageError, match="needs a group named student"):
        finding.compile_pattern(r"^(\w+)_")
    with pytest.raises(UsageError, match="is not a regular expression"):
        finding.compile_pattern(r"(?P<student>")


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory) -> tuple[Path, Path, batch.Summary, str]:
    """`make_class`'s class graded by one batch of two job processes: its folder, the batch's
    output folder, its summary and what it printed as it went. Read, never changed: a test
    that grades again does so in a copy."""
    top = tmp_path_factory.mktemp("class")
    folder = make_class(top / "submissions")
    progress = io.StringIO()
    summary = batch.run(folder, registry.get("udl_attention"), top / "out", 2, OPTIONS,
                        progress=progress)
    return folder, top / "out", summary, progress.getvalue()


def test_batch_grades_everything_in_parallel_and_records_it(graded_class):
    _, out, summary, progress = graded_class
    assert (summary.graded, summary.skipped, summary.errors) == (8, 0, 1)
    rows = {row.student: row for row in Gradebook(out).rows()}
    assert sorted(rows) == ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"]
    assert rows["alice"].score == 10.0 and rows["bob"].score == 4.0
    assert rows["dave"].status == "error" and rows["erin"].score == 0.0
    lines = progress.splitlines()
    assert len(lines) == 8 and lines[-1].startswith("[8/8] ")
    assert "/s, about" in lines[0]
    student = out / "results" / "bob"
    assert sorted(p.name for p in student.iterdir()) == ["hw.html", "hw.json", "hw.md"]
    assert json.loads((student / "hw.json").read_text())["submission"] == "bob/hw.ipynb"


def test_a_rerun_grades_only_what_is_new_or_changed(graded_class, tmp_path):
    graded_folder, graded_out, _, _ = graded_class
    folder = shutil.copytree(graded_folder, tmp_path / "submissions")
    shutil.copytree(graded_out, tmp_path / "out")
    assignment = registry.get("udl_attention")
    shutil.copy(ROOT / "solutions" / "udl_attention.py", folder / "erin" / "hw.py")
    (folder / "ivan_udl.py").write_text((CORPUS / "vectorised.py").read_text())
    again = batch.run(folder, assignment, tmp_path / "out", 2, OPTIONS, progress=io.StringIO())
    assert (again.graded, again.skipped) == (2, 7)
    rows = {row.student: row for row in Gradebook(tmp_path / "out").rows()}
    assert rows["erin"].score == 10.0 and rows["ivan"].score == 10.0
    # `--force` grades everything again: test_regrade's to show, with what changed.


def _batch_command(folder: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "grader", "batch", str(folder), "--assignment",
            "udl_attention", "--out", str(out), "--jobs", "2"]


def test_killed_halfway_and_resumed_equals_never_interrupted(tmp_path):
    folder = make_class(tmp_path / "submissions", slow=True)
    subprocess.run(_batch_command(folder, tmp_path / "whole"), check=False, capture_output=True,
                   timeout=300)
    interrupted = tmp_path / "interrupted"
    process = subprocess.Popen(_batch_command(folder, interrupted), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    recorded = 0
    while time.monotonic() < deadline and recorded < 3:
        time.sleep(0.05)
        try:
            recorded = len(normalised(interrupted))
        except sqlite3.Error:
            recorded = 0
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    partial = normalised(interrupted)
    assert 3 <= len(partial) < 8, "the batch should be killed halfway"
    resumed = subprocess.run(_batch_command(folder, interrupted), capture_output=True,
                             text=True, timeout=300)
    assert f"skipped {len(partial)} already in the gradebook" in resumed.stdout
    assert normalised(interrupted) == normalised(tmp_path / "whole")


def test_batch_command_line_and_exports(tmp_path):
    folder = make_class(tmp_path / "submissions")
    out = io.StringIO()
    code = cli.run(["batch", str(folder), "--assignment", "udl_attention", "--out",
                    str(tmp_path / "out"), "--jobs", "2"], out, io.StringIO())
    assert code == 1  # dave's notebook could not be graded
    assert "graded 8, skipped 0 already in the gradebook, 1 could not be graded" in \
        out.getvalue()
    canvas = io.StringIO()
    assert cli.run(["gradebook", "export", "--out", str(tmp_path / "out"), "--format",
                    "canvas", "--column", "udl_attention=Self-attention (4242)"],
                   canvas, io.StringIO()) == 0
    lines = canvas.getvalue().splitlines()
    assert lines[0] == "Student,ID,SIS User ID,SIS Login ID,Section,Self-attention (4242)"
    assert lines[1] == "Points Possible,,,,,10"
    assert "alice,,,alice,,10" in lines and "bob,,,bob,,4" in lines
    moodle = io.StringIO()
    cli.run(["gradebook", "export", "--out", str(tmp_path / "out"), "--format", "moodle"],
            moodle, io.StringIO())
    assert moodle.getvalue().splitlines()[:2] == ["ID number,udl_attention", "alice,10"]
    target = tmp_path / "grades.csv"
    cli.run(["gradebook", "export", "--out", str(tmp_path / "out"), "--output", str(target)],
            io.StringIO(), io.StringIO())
    header, *rows = target.read_text().splitlines()
    assert header == ("student,assignment,score,max_score,status,submission,sha256,graded_at,"
                      "submitted_at,deadline,late_by_s,penalty_percent,penalty,final,on_roster,"
                      "explanation,note,name")
    assert len(rows) == 8 and rows[3].startswith("dave,udl_attention,0,10,error,dave_hw.ipynb,")


def test_export_without_a_gradebook_is_a_usage_error(tmp_path):
    err = io.StringIO()
    assert cli.run(["gradebook", "export", "--out", str(tmp_path)], io.StringIO(), err) == 2
    assert "no gradebook here" in err.getvalue()


def test_the_best_submission_of_a_student_counts(tmp_path):
    folder = tmp_path / "submissions"
    (folder / "zoe").mkdir(parents=True)
    shutil.copy(ROOT / "solutions" / "udl_attention.py", folder / "zoe" / "final.py")
    (folder / "zoe" / "helpers.py").write_text("import numpy as np\n")
    batch.run(folder, registry.get("udl_attention"), tmp_path / "out", 2, OPTIONS,
              progress=io.StringIO())
    out = io.StringIO()
    cli.run(["gradebook", "export", "--out", str(tmp_path / "out"), "--format", "moodle"],
            out, io.StringIO())
    assert out.getvalue().splitlines()[1] == "zoe,10"


def test_a_terminal_gets_a_progress_bar_with_count_rate_and_time_left(tmp_path):
    folder = tmp_path / "submissions"
    folder.mkdir()
    for name in ("amy_udl.py", "ben_udl.py"):
        shutil.copy(ROOT / "solutions" / "udl_attention.py", folder / name)
    screen = Terminal()
    batch.run(folder, registry.get("udl_attention"), tmp_path / "out", 2, OPTIONS,
              progress=screen)
    text = screen.getvalue()
    assert "grading" in text and "2/2" in text and "/s" in text
    assert "[1/2]" not in text  # no plain lines on a terminal


def _batch(folder: Path, out: Path) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = cli.run(["batch", str(folder), "--assignment", "udl_attention", "--out", str(out),
                    "--jobs", "2"], stdout, stderr)
    return code, stdout.getvalue(), stderr.getvalue()


def test_missing_references_stop_the_batch_before_any_grading(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADER_REFERENCES", str(tmp_path / "nowhere"))
    out = tmp_path / "graded"
    code, stdout, stderr = _batch(small_class(tmp_path), out)
    assert (code, stdout) == (1, "")
    assert stderr == (f"grade: error: {tmp_path / 'nowhere' / 'udl_attention.npz'}: no "
                      "references for udl_attention; run `grade references build "
                      "udl_attention`\n")
    assert not (out / FILENAME).exists() or Gradebook(out).rows() == []


def test_stale_references_stop_the_batch_before_any_grading(tmp_path, monkeypatch):
    solutions = tmp_path / "solutions"
    shutil.copytree(ROOT / "solutions", solutions)
    solution = solutions / "udl_attention.py"
    solution.write_text(solution.read_text() + "\n# edited after the references were built\n")
    monkeypatch.setenv("GRADER_SOLUTIONS", str(solutions))
    code, stdout, stderr = _batch(small_class(tmp_path), tmp_path / "graded")
    assert (code, stdout) == (1, "")
    assert stderr == (f"grade: error: {solutions / 'references' / 'udl_attention.npz'}: stale, "
                      f"built from another version of {solution}; run `grade references "
                      "build udl_attention`\n")


def test_rows_where_the_grader_failed_are_graded_again(tmp_path, monkeypatch):
    folder, out = small_class(tmp_path), tmp_path / "graded"
    real = grading.grade

    def broken(*args, **kwargs):
        raise RuntimeError("the grader's own bug")

    monkeypatch.setattr(grading, "grade", broken)
    code, stdout, _ = _batch(folder, out)
    assert code == 1 and "graded 2, skipped 0 already in the gradebook, 2 could not be " \
        "graded" in stdout
    assert [row.status for row in Gradebook(out).rows()] == ["error", "error"]
    monkeypatch.setattr(grading, "grade", real)
    code, stdout, _ = _batch(folder, out)
    assert code == 0 and "graded 2, skipped 0 already in the gradebook, 0 could not be " \
        "graded" in stdout
    assert [(row.status, row.score) for row in Gradebook(out).rows()] == [("graded", 10.0)] * 2
    code, stdout, _ = _batch(folder, out)  # graded rows stay graded
    assert "graded 0, skipped 2 already in the gradebook" in stdout


def test_a_submission_that_cannot_be_read_is_not_graded_again(tmp_path):
    folder, out = tmp_path / "submissions", tmp_path / "graded"
    folder.mkdir()
    (folder / "carol_udl_attention.ipynb").write_text("{ not json")
    _batch(folder, out)
    code, stdout, _ = _batch(folder, out)
    assert "graded 0, skipped 1 already in the gradebook" in stdout
