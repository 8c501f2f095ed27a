"""Nothing a hidden call prints reaches the student (issue #21).

An exercise that prints its inputs would put the hidden cases' inputs into every report under
"What your code printed". What a hidden case's call prints is kept for the instructor (the
gradebook, `grade run --instructor`), and students are not even told that it printed: whether
it did is the submission's choice. Public calls run before any hidden one, so that a hidden
call cannot leave its inputs in the submission's /tmp for a public call to print. The worker
is never told a limit derived from a hidden case's expected outputs.
"""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pytest

from grader import cli, result_json
from grader.course import registry
from grader.model import Visibility
from grader.pipeline import checking, grading, vocabulary
from grader.report import gradescope_results as gradescope
from grader.report import html, junit, markdown, terminal
from grader.results import Verdict
from grader.sandbox import transport
from grader.sandbox.limits import Limits
from tests.helpers.sqlite_file import opened

OPTIONS = grading.Options(limits=Limits(cell_timeout=5, call_timeout=5))
UDL = registry.get("udl_attention")

# Prints its input, flushed, at every call; and once more without a newline or a flush,
# which the call's process must not lose when it is killed after its reply.
PRINTS_ITS_INPUTS = '''import numpy as np

def softmax(items_in):
    print(f"n={len(items_in)} inputs={list(np.round(items_in, 6))}", flush=True)
    print("unflushed tail", end="")
    e = np.exp(items_in - np.max(items_in))
    return e / e.sum()
'''


def _digits(values: np.ndarray) -> list[str]:
    """How the inputs appear in what the code prints (rounded to 6 decimals)."""
    return [repr(float(v)) for v in np.round(values, 6)]


def hidden_inputs() -> list[str]:
    softmax = UDL.exercise("softmax")
    return [text for case in softmax.cases if case.visibility is Visibility.HIDDEN
            for text in _digits(case.inputs()[0])]


def public_inputs() -> list[str]:
    return _digits(UDL.exercise("softmax").case("vector").inputs()[0])


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    path = tmp_path_factory.mktemp("printing") / "alice_udl_attention.py"
    path.write_text(PRINTS_ITS_INPUTS)
    return grading.grade(path, UDL, OPTIONS)


def student_texts(result) -> dict[str, str]:
    """Every format a student may be given."""
    return {"terminal": terminal.render(result, verbose=True), "json": result_json.render(result),
            "html": html.render(result), "markdown": markdown.render(result),
            "junit": junit.render([result]), "gradescope": gradescope.render(result)}


def test_the_hidden_inputs_reach_no_student_format(graded):
    assert graded.exercises[0].score == 1.0  # it is right: the prints cost nothing
    hidden = hidden_inputs()
    assert len(hidden) == 12  # six values and one, plus the advice case's five
    for name, text in student_texts(graded).items():
        assert [value for value in hidden if value in text] == [], name


def test_students_are_not_told_whether_hidden_calls_printed(graded):
    # A line names each public call (the example and the practice case); none speaks of the
    # hidden ones, whose three calls printed (each asked once: they pass at the end of the
    # notebook).
    assert graded.output.startswith("[grader] softmax, case 'vector', printed:\n")
    assert re.findall(r"^\[grader\] .*", graded.output, re.M) == [
        "[grader] softmax, case 'vector', printed:", "[grader] softmax, case 'practice', printed:"]
    assert "hidden" not in graded.output
    assert graded.hidden_output.count("[grader] softmax, case '") == 3
    for name, text in student_texts(graded).items():
        assert "hidden checks' calls printed" not in text, name
        assert "hidden checks ran" not in text, name


def test_a_public_call_prints_for_the_student_with_its_case_named(graded):
    vector = public_inputs()
    assert ("[grader] softmax, case 'vector', printed:\nn=3 inputs=[" in graded.output)
    assert all(value in graded.output for value in vector)
    # Without a flush or a newline, and still there: flushed before the call's reply.
    assert "unflushed tail" in graded.output


def test_the_instructor_keeps_the_hidden_output(graded):
    for value in hidden_inputs():
        assert value in graded.hidden_output
    assert "[grader] softmax, case 'six-values', printed:\nn=6 inputs=[" in graded.hidden_output
    assert result_json.to_dict(graded, instructor=True)["hidden_output"] == graded.hidden_output
    assert "hidden_output" not in result_json.to_dict(graded)
    back = result_json.from_dict(result_json.to_dict(graded, instructor=True))
    assert back.hidden_output == graded.hidden_output


def test_grade_run_shows_it_with_instructor_only(tmp_path):
    path = tmp_path / "alice_udl_attention.py"
    path.write_text(PRINTS_ITS_INPUTS)
    six = _digits(UDL.exercise("softmax").case("six-values").inputs()[0])[0]
    for flags, shown in (([], False), (["--instructor"], True)):
        out = io.StringIO()
        target = tmp_path / f"result{len(flags)}.json"
        code = cli.run(["run", str(path), "--json", str(target), *flags], out, io.StringIO())
        assert code == 0
        assert (six in out.getvalue(), six in target.read_text()) == (shown, shown), flags
        assert ("for the instructor only" in out.getvalue()) is shown


def test_the_gradebook_keeps_it_for_the_instructor(tmp_path):
    folder = tmp_path / "submissions" / "alice"
    folder.mkdir(parents=True)
    (folder / "hw.py").write_text(PRINTS_ITS_INPUTS)
    out = io.StringIO()
    code = cli.run(["batch", str(tmp_path / "submissions"), "--assignment", "udl_attention",
                    "--out", str(tmp_path / "graded"), "--jobs", "1"], out, io.StringIO())
    assert code == 0, out.getvalue()
    six = _digits(UDL.exercise("softmax").case("six-values").inputs()[0])[0]
    with opened(tmp_path / "graded" / "gradebook.sqlite") as db:
        (stored,) = db.execute("SELECT result FROM results").fetchone()
    assert six in json.loads(stored)["hidden_output"]
    reports = [p for p in (tmp_path / "graded").rglob("*") if p.is_file()
               and p.suffix in (".html", ".md", ".json")]
    assert reports
    for report in reports:
        assert six not in report.read_text(), report


# A hidden call leaves its inputs in /tmp; a public call of a later exercise prints them.
THROUGH_TMP = '''import numpy as np

def softmax(items_in):
    with open("/tmp/seen.txt", "a") as stream:
        stream.write(" ".join(repr(float(v)) for v in np.round(items_in, 6)) + "\\n")
    e = np.exp(items_in - np.max(items_in))
    return e / e.sum()

def self_attention(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):
    try:
        print(open("/tmp/seen.txt").read(), flush=True)
    except OSError:
        print("nothing seen yet", flush=True)
    return np.zeros_like(X)
'''


def test_no_public_call_runs_after_a_hidden_one(make_submission):
    result = grading.grade(make_submission(THROUGH_TMP, name="alice_udl_attention"), UDL,
                           OPTIONS)
    assert "[grader] self_attention, case 'notebook-example', printed:\n" in result.output
    assert [value for value in hidden_inputs() if value in result.output] == []
    # The hidden call of self_attention, later, sees them: its output is the instructor's.
    assert all(value in result.hidden_output for value in hidden_inputs())


def test_the_worker_is_never_told_a_size_derived_from_a_hidden_case(make_submission,
                                                                    monkeypatch):
    sent = []
    request = transport.PipeTransport.request

    def spy(self, header, value, deadline, limit=transport.MAX_REPLY_BYTES):
        sent.append(dict(header))
        return request(self, header, value, deadline, limit)

    group = transport.PipeTransport.send

    def spy_group(self, header, value, deadline):
        sent.append(dict(header))
        return group(self, header, value, deadline)

    monkeypatch.setattr(transport.PipeTransport, "request", spy)
    monkeypatch.setattr(transport.PipeTransport, "send", spy_group)
    grading.grade(make_submission(PRINTS_ITS_INPUTS, name="alice_udl_attention"), UDL, OPTIONS)
    assert all(set(header) == {"op", "calls"} for header in sent if header["op"] == "calls")
    calls = [header for header in sent if header.get("op") == "call"] + [
        call for header in sent if header.get("op") == "calls" for call in header["calls"]]
    assert len(calls) >= 3
    assert all(set(header) == {"op", "name", "kind", "tensors", "timeout", "at", "group", "fresh"}
               for header in calls), calls


def test_a_reply_too_large_is_dropped_and_the_worker_goes_on(make_submission):
    """Refused by the grader as it reads it, now that the worker knows no limit: the channel
    stays in step, so the next call is answered by the same worker, with no restart."""
    code = '''import numpy as np

def softmax(items_in):
    if len(items_in) == 6:
        return np.ones(3_000_000)  # 24 MB for an expected 48 bytes
    e = np.exp(items_in - np.max(items_in))
    return e / e.sum()
'''
    result = grading.grade(make_submission(code, name="alice_udl_attention"), UDL, OPTIONS)
    checks = {c.name: c for c in result.exercises[0].checks}
    assert checks["six-values"].message == vocabulary.message(Verdict.TOO_LARGE)
    assert checks["six-values"].verdict is Verdict.TOO_LARGE
    assert checks["six-values"].detail == ("the call returned far more data than the expected "
                                           "outputs hold; it was not compared")
    assert checks["one-element"].passed and checks["vector"].passed
    assert "restart" not in result.isolation


# A line is a number the code chooses too: an `exec` of as many blank lines as an input's digits
# raises at that line (the review of #22).
LINE_OF_ITS_CHOOSING = '''import numpy as np

def softmax(items_in):
    x = np.asarray(items_in, dtype=float)
    exec(compile("\\n" * (int(abs(x).sum() * 100) % 100000) + "raise ValueError", "leak", "exec"))
'''


def test_a_hidden_calls_error_line_is_not_said_either(make_submission):
    result = grading.grade(make_submission(LINE_OF_ITS_CHOOSING, name="alice_udl_attention"),
                           UDL, OPTIONS)
    checks = {c.name: c for c in result.exercises[0].checks}
    # The public case raises ValueError too: the hidden check points to it, and says no line.
    assert checks["six-values"].message == vocabulary.message(Verdict.RAISED, "ValueError", True)
    assert checks["six-values"].raised == "ValueError"
    assert "(line " in checks["six-values"].detail  # the instructor's view says where
    assert "(line " in checks["vector"].message  # a public check says where


# The review of #21 found two more ways out: a hidden call's exception message, and the shape
# of what it returns (numbers the student's code chooses).
RAISES_ITS_INPUTS = '''import numpy as np

class Leak(Exception):
    pass

def softmax(items_in):
    x = np.asarray(items_in, dtype=float)
    if x.size == 6:
        raise ValueError("inputs=%r" % (x.tolist(),))
    if x.size == 5:
        raise type("V" + "_".join(str(int(abs(v))) for v in x), (Exception,), {})()
    if x.size == 1:
        return np.zeros((0,) + tuple(int(abs(v) * 1000) % 60000 + 2 for v in x[:3]))
    raise ValueError("public inputs=%r" % (x.tolist(),))
'''


def test_a_hidden_calls_exception_says_its_class_and_line_never_its_message(make_submission):
    result = grading.grade(make_submission(RAISES_ITS_INPUTS, name="alice_udl_attention"), UDL,
                           OPTIONS)
    checks = {c.name: c for c in result.exercises[0].checks}
    assert checks["six-values"].message == vocabulary.message(Verdict.RAISED, "ValueError", True)
    assert checks["six-values"].detail.startswith("raised ValueError: inputs=[")
    # The class's name is the code's to choose: not said either.
    assert checks["large-values"].message == vocabulary.message(Verdict.RAISED)
    assert checks["large-values"].raised == ""
    assert checks["one-element"].message == vocabulary.message(Verdict.WRONG_SHAPE)
    # A public check shows all of it: its inputs ship with the stubs.
    assert checks["vector"].message.startswith("raised ValueError: public inputs=[")
    hidden = hidden_inputs()
    for name, text in student_texts(result).items():
        assert [value for value in hidden if value in text] == [], name
        assert "V_189" not in text and "652" not in text, name


def test_a_count_or_a_sum_of_the_students_output_is_not_said_on_a_hidden_check(
        make_submission):
    code = '''import numpy as np

def softmax(items_in):
    n = int(abs(items_in[0]) * 1000)
    if len(items_in) == 6:  # ragged: does not convert to an array
        return tuple(np.zeros(i) for i in range(n + 11))
    return np.full(len(items_in), n + 0.5)  # each sums to a number of its choosing
'''
    result = grading.grade(make_submission(code, name="alice_udl_attention"), UDL, OPTIONS)
    checks = {c.name: c for c in result.exercises[0].checks}
    assert checks["six-values"].message == vocabulary.message(Verdict.WRONG_TYPE)
    assert checks["six-values"].detail == (
        "returned a tuple of more than 10 values that does not convert to an array of numbers "
        "(are the parts of different shapes?)")
    normalised = checks["one-element"].diagnosis
    assert (normalised.id, normalised.message) == (
        "weights-not-normalised", "The attention weights do not sum to 1 for every query: "
        "take a softmax over the keys.")
    assert "yours sum to between" in checks["one-element"].detail  # the instructor's view
    # On the public case the student's own numbers are said.
    assert "yours sum to between" in checks["vector"].diagnosis.message


# Keeps the cells' output channel under another descriptor, and writes its inputs there at
# every call: past the call's own output file, straight onto what the cells print.
WRITES_TO_THE_CELLS_CHANNEL = '''import os
import numpy as np

KEPT = os.dup(1)

def softmax(items_in):
    os.write(KEPT, f"n={len(items_in)} inputs={list(np.round(items_in, 6))}\\n".encode())
    e = np.exp(items_in - np.max(items_in))
    return e / e.sum()
'''


@pytest.mark.parametrize("engine", ["fast", "kernel"])
def test_what_reaches_the_cells_channel_during_hidden_calls_is_the_instructors(tmp_path,
                                                                              engine):
    """Found by an outside review: hidden inputs written on a descriptor kept from a cell
    reached every student format. What arrives once the hidden cases have begun is kept for
    the instructor, and students are not told of it; what public calls wrote there stays
    shown."""
    path = tmp_path / "alice_udl_attention.py"
    path.write_text(WRITES_TO_THE_CELLS_CHANNEL)
    result = grading.grade(path, UDL, grading.Options(limits=OPTIONS.limits, engine=engine))
    assert result.exercises[0].score == 1.0
    for name, text in student_texts(result).items():
        assert [value for value in hidden_inputs() if value in text] == [], name
    if engine == "fast":  # the kernel engine's calls never write on the cells' channel
        assert all(value in result.output for value in public_inputs())
        assert "printed outside any call" not in result.output and "[grader]" not in result.output
        assert result.hidden_output.startswith(checking.LATE_PRINTED)
        assert all(value in result.hidden_output for value in hidden_inputs())
