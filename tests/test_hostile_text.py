"""Text from a submission is harmless in every output (issue #9): it moves no terminal cursor,
starts no Markdown block, always encodes as UTF-8, and no spreadsheet runs it as a formula.

Each test builds a real submission and grades it, or builds the `Result` a writer receives.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
from pathlib import Path

from grader import cli, result_json, text
from grader.batch import batch, jobs
from grader.course import registry
from grader.gradebook import Gradebook
from grader.gradescope import autograder
from grader.model import Visibility
from grader.pipeline import grading, vocabulary
from grader.report import gradescope_results, html, junit, markdown, terminal
from grader.results import (
    CellResult,
    CellStatus,
    CheckResult,
    CheckStatus,
    Diagnosis,
    ExerciseResult,
    Result,
    ResultStatus,
    Verdict,
)
from grader.sandbox.limits import Limits

OPTIONS = grading.Options(limits=Limits(cell_timeout=3, call_timeout=3, memory_mb=1024))
# What no output may hold: C0 controls but tab and newline (so CR too), DEL, C1 (ESC is C0,
# CSI is C1, BEL is C0).
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Clear the screen, home the cursor, draw a full score; C1 CSI; BEL.
FAKE_SCORE = "\x1b[2J\x1b[H10 / 10 \u2713 \x9b31m\x07"


def _write(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.write_text(source)
    return path


def _shown(document: str) -> str:
    """A JSON document's strings as a reader sees them (\\u escapes decoded)."""
    return json.dumps(json.loads(document), ensure_ascii=False)


def _hostile_result(hostile: str) -> Result:
    """A graded result with `hostile` in every string a submission controls."""
    check = CheckResult("vector", Visibility.PUBLIC, False, 0.0, 1.0, CheckStatus.ERROR,
                        f"raised ValueError: {hostile}", Diagnosis("some-id", f"d {hostile}"),
                        note=f"n {hostile}")
    exercise = ExerciseResult("softmax", CheckStatus.ERROR, 0.0, 1.0, (check,))
    return Result("attention_basics", f"bad{hostile}.py", ResultStatus.GRADED, 0.0, 1.0, 0.5,
                  cells=(CellResult(1, CellStatus.ERROR, f"line 1: E: {hostile}"),),
                  exercises=(exercise,), output=f"out {hostile}")


WRITERS = {"terminal": terminal.render, "markdown": markdown.render, "html": html.render,
           "json": result_json.render, "junit": lambda result: junit.render([result]),
           "gradescope": gradescope_results.render}


def _read(writer: str, output: str) -> str:
    """A writer's output as its reader sees it."""
    return _shown(output) if writer in ("json", "gradescope") else output


# --------------------------------------------------------------------------- terminal escapes


def test_escape_sequences_in_exceptions_reach_no_output(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    source = _write(tmp_path, "hostile_attention_basics.py", r'''
def softmax(x):
    raise ValueError("boom\r\x1b[2J\x1b[H10 / 10 \u2713 \x9b31m\x07")

raise RuntimeError("cell\r\x1b[2J\x1b[H10 / 10 \u2713 \x9b31m\x07")
''')
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(["run", source.name, "--md", "r.md", "--html", "r.html", "--junit", "r.xml",
                    "--json", "r.json"], out, err)
    assert (code, err.getvalue()) == (0, "")
    # Hidden cases ran: the first line says no time, and a hidden check the vocabulary's text.
    assert out.getvalue() == (
        "hostile_attention_basics.py · attention_basics: 0 / 10\n"
        "  ! softmax 0/2  (0/6 checks)\n"
        "      vector (public example, no points): raised ValueError: boom\n"
        "        [2J[H10 / 10 \u2713 31m (line 3)\n"
        f"      three-dims (hidden): {vocabulary.message(Verdict.RAISED, 'ValueError', True)}\n"
        "  ? qkv_projections 0/2  (0/4 checks)\n"
        "      not found: no function named qkv_projections is defined\n"
        "  ? scaled_dot_product_attention 0/3  (0/7 checks)\n"
        "      not found: no function named scaled_dot_product_attention is defined\n"
        "  ? causal_mask 0/1  (0/4 checks)\n"
        "      not found: no function named causal_mask is defined\n"
        "  ? causal_self_attention 0/2  (0/5 checks)\n"
        "      not found: no function named causal_self_attention is defined\n"
        "  the module: error: line 5: RuntimeError: cell [2J[H10 / 10 \u2713 31m\n")
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    shutil.copy(source, root / "submission")
    monkeypatch.setenv(autograder.ROOT_ENV, str(root))
    autograder.run(registry.get("attention_basics"), OPTIONS)
    outputs = {name: (tmp_path / name).read_text(encoding="utf-8")
               for name in ("r.md", "r.html", "r.xml", "summary.md")}
    outputs["r.json"] = _shown((tmp_path / "r.json").read_text(encoding="utf-8"))
    outputs["results.json"] = _shown((root / "results" / "results.json").read_text())
    for name, shown in outputs.items():
        assert CONTROL.search(shown) is None, name
    assert ("| the module | error | line 5: RuntimeError: cell \\[2J\\[H10 / 10 \u2713 31m |\n"
            in outputs["r.md"])


def test_every_writer_drops_control_characters_and_the_terminal_shows_them():
    result = _hostile_result(FAKE_SCORE)
    for name, write in WRITERS.items():
        assert CONTROL.search(_read(name, write(result))) is None, name
    shown = "\\x1b[2J\\x1b[H10 / 10 \u2713 \\x9b31m\\x07"
    assert terminal.render(result) == (
        f"bad{shown}.py · attention_basics: 0 / 1 in 0.50 s\n"
        "  ! softmax 0/1  (0/1 checks)\n"
        f"      vector (public example, no points): [some-id] d {shown}\n"
        f"        raised ValueError: {shown}\n"
        f"  the module: error: line 1: E: {shown}\n")
    document = json.loads(result_json.render(result))
    assert document["submission"] == "bad[2J[H10 / 10 \u2713 31m.py"
    assert document["output"] == "out [2J[H10 / 10 \u2713 31m"


def test_batch_progress_lines_show_escape_sequences_as_text():
    stream = io.StringIO()
    report = batch._progress(stream, 1)
    job = jobs.Job((Path("x"),), ("\x1b[2Jeve\x9b/nb\x07.ipynb",), "\x1b[2Jeve\x9b",
                    ("0" * 64,))
    report(job, Result("attention_basics", "nb.ipynb", ResultStatus.GRADED, 3.0, 10.0, 0.1))
    assert re.fullmatch(r"\[1/1\] \\x1b\[2Jeve\\x9b \(\\x1b\[2Jeve\\x9b/nb\\x07\.ipynb\): "
                        r"3/10; [0-9.]+/s, about 0 s left\n", stream.getvalue())


# --------------------------------------------------------------------------- Markdown blocks


def test_line_breaks_in_messages_start_no_markdown_block(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    source = _write(tmp_path, "hostile_attention_basics.py", r'''
def softmax(x):
    raise ValueError("boom\r# Hacked\u2028# Hacked")

raise RuntimeError("cell\r# Hacked\u2028# Hacked")
''')
    out, err = io.StringIO(), io.StringIO()
    assert cli.run(["run", source.name, "--md", "r.md"], out, err) == 0
    for report in ((tmp_path / "r.md").read_text(encoding="utf-8"),
                   (tmp_path / "summary.md").read_text(encoding="utf-8")):
        lines = report.splitlines()  # every kind of line break, U+2028 included
        assert [line for line in lines if line.startswith("#")] == [
            "## Feedback: hostile\\_attention\\_basics.py (attention\\_basics)",
            "### softmax: error", "### qkv\\_projections: missing",
            "### scaled\\_dot\\_product\\_attention: missing", "### causal\\_mask: missing",
            "### causal\\_self\\_attention: missing", "### Cells that did not simply run"]
        assert all(line.endswith("|") for line in lines if line.startswith("|"))
        assert ("| Cell | What happened | Details |\n|---|---|---|\n"
                "| the module | error | line 5: RuntimeError: cell \\# Hacked \\# Hacked "
                "|\n\n") in report
        assert ("- 💥 **vector** (public example, no points)\n  ```text\n"
                "  raised ValueError: boom\n  # Hacked\n  # Hacked (line 3)\n  ```\n") in report


def test_markdown_writers_keep_untrusted_text_on_its_line():
    hostile = "x\r# Hacked\u2028# Hacked\x85- item\n<b>"
    ungradable = Result("attention_basics", "a.py", ResultStatus.ERROR, 0.0, 10.0, 0.0,
                        error=f"a.py: {hostile}")
    # The NEL (U+0085) is a C1 control: the writers drop it before anything else.
    assert "**Could not be graded.** a.py: x \\# Hacked \\# Hacked- item \\<b\\>\n" in \
        markdown.render(ungradable)
    test = gradescope_results.to_dict(_hostile_result(hostile))["tests"][0]
    assert test["output"] == (
        "**Likely mistake:** d x \\# Hacked \\# Hacked- item \\<b\\>\n\n"
        "*n x \\# Hacked \\# Hacked- item \\<b\\>*\n\n"
        "```text\nraised ValueError: x\n# Hacked\u2028# Hacked- item\n<b>\n```")


# --------------------------------------------------------------------------- lone surrogates


def test_a_lone_surrogate_crashes_no_writer(tmp_path):
    result = _hostile_result("\ud800")
    for name, write in WRITERS.items():
        shown = _read(name, write(result))
        assert shown.encode("utf-8") and "\ufffd" in shown, name
    book = Gradebook(tmp_path)
    book.record("\x1b[2Jeve\ud800", "\x1b[2Jeve\ud800/nb.py", result)
    (row,) = book.rows()
    assert (row.student, row.submission) == ("[2Jeve\ufffd", "[2Jeve\ufffd/nb.py")
    assert book.results()[0].cells[0].message == "line 1: E: \ufffd"
    for fmt in ("csv", "canvas", "moodle"):
        out = io.StringIO()
        assert cli.run(["gradebook", "export", "--out", str(tmp_path), "--format", fmt],
                       out, io.StringIO()) == 0
        assert "[2Jeve\ufffd" in out.getvalue()


def test_run_writes_every_report_for_an_undecodable_file_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    name = os.fsdecode(b"bad\xff_attention_basics.py")  # "bad\udcff_...": a lone surrogate
    Path(name).write_text('raise ValueError("\\ud800")\n')
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(["run", name, "--assignment", "attention_basics", "--json", "r.json",
                    "--html", "r.html", "--md", "r.md", "--junit", "r.xml"], out, err)
    assert (code, err.getvalue()) == (0, "")
    assert out.getvalue().startswith("bad\ufffd_attention_basics.py · attention_basics: 0 / 10")
    document = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert document["submission"] == "bad\ufffd_attention_basics.py"
    assert document["cells"] == [{"index": 1, "status": "error",
                                  "message": "line 1: ValueError: \ufffd", "file": "",
                                  "number": 0, "execution_count": None,
                                  "where": "the module"}]
    assert "Feedback for bad\ufffd_attention_basics.py" in (tmp_path / "r.html").read_text(
        encoding="utf-8")
    assert "## Feedback: bad\ufffd\\_attention\\_basics.py" in (tmp_path / "r.md").read_text(
        encoding="utf-8")
    assert 'testsuite name="bad\ufffd_attention_basics.py"' in (tmp_path / "r.xml").read_text(
        encoding="utf-8")


# --------------------------------------------------------------------------- CSV formulas


def test_student_names_never_become_spreadsheet_formulas(tmp_path):
    source = _write(tmp_path, "mask_attention_basics.py", '''
import numpy as np

def causal_mask(seq_len):
    return np.triu(np.full((seq_len, seq_len), -np.inf), k=1)
''')
    result = grading.grade(source, registry.get("attention_basics"), OPTIONS)
    assert (result.score, result.max_score) == (1.0, 10.0)
    book = Gradebook(tmp_path / "out")
    names = ['=HYPERLINK("x")', "+1", "-1", "@SUM(A1)", "\tx", "\rx", "alice"]
    for student in names:
        book.record(student, f"{student}/nb.py", result)
    shown = ["'\tx", "' x", "'+1", "'-1", "'=HYPERLINK(\"x\")", "'@SUM(A1)", "alice"]

    def export(fmt: str) -> list[list[str]]:
        out = io.StringIO()
        assert cli.run(["gradebook", "export", "--out", str(tmp_path / "out"), "--format", fmt],
                       out, io.StringIO()) == 0
        return list(csv.reader(io.StringIO(out.getvalue())))

    plain = export("csv")
    assert plain[0][:8] == ["student", "assignment", "score", "max_score", "status",
                            "submission", "sha256", "graded_at"]
    assert [row[:7] for row in plain[1:]] == [
        [cell, "attention_basics", "1", "10", "graded", f"{cell}/nb.py", result.sha256]
        for cell in shown]
    assert export("canvas") == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "attention_basics"],
        ["Points Possible", "", "", "", "", "10"],
        *([cell, "", "", cell, "", "1"] for cell in shown)]
    assert export("moodle") == [["ID number", "attention_basics"],
                                *([cell, "1"] for cell in shown)]


def test_the_terminal_shows_control_characters_and_markup_as_text(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    name = "ev\x1b[2Jil\x07\r[bold red]x.py"
    _write(tmp_path, name, r'''
def softmax(x):
    print("\x1b[2J\x07[bold red]PRINTED\rFAKE")
    raise ValueError("\x1b]0;pwned\x07[bold red]FAKE 10/10\rover")
''')
    out, err = io.StringIO(), io.StringIO()
    assert cli.run(["run", name, "--assignment", "attention_basics"], out, err) == 0
    shown = out.getvalue()
    assert CONTROL.search(shown) is None and err.getvalue() == ""
    first, _, vector, over, *_ = shown.splitlines()
    # The file name: each control character shown, a carriage return a space, markup as text.
    assert first == "ev\\x1b[2Jil\\x07 [bold red]x.py · attention_basics: 0 / 10"
    assert vector == ("      vector (public example, no points): raised ValueError: "
                      "]0;pwned[bold red]FAKE 10/10")
    assert over == "        over (line 4)"  # the carriage return: a line of its own
    # A terminal writer's own text: every control character and bidirectional override shown.
    assert text.visible("a\x1b[2J\x07b\rc\u202ed\x9b\tz") == "a\\x1b[2J\\x07b c\\u202ed\\x9b\tz"
    assert text.visible("x\r\ny\rz\x1b", lines=True) == "x\ny\nz\\x1b"
    assert text.visible(text.visible("\x1b\x07")) == text.visible("\x1b\x07")
