"""Amplification attacks (review #9): a submission must not cost the grader much more than its
size, nor make results and reports much larger than a few messages, nor turn hidden checks into
an oracle of the expected values. Each attack is a real submission graded end to end."""

from __future__ import annotations

import io
import json
import re
import time

import pytest

from grader import cli
from grader.course import registry
from grader.model import Visibility
from grader.pipeline import grading, scoring, vocabulary
from grader.results import CellStatus, CheckStatus, ResultStatus, Verdict
from grader.sandbox.limits import Limits
from grader.text import MESSAGE_CHARS
from tests.helpers.honest import HONEST, HONEST_SCORE  # qkv_projections and causal_mask right

OPTIONS = grading.Options(limits=Limits(cell_timeout=3, call_timeout=3, memory_mb=1024))
MB = 1 << 20
# Before the fix, loading the 60 KB cells below took 25 to 82 s of CPU; now well under 1 s.
# A generous bound of the grader's own CPU seconds (`time.process_time`), which another suite on
# the same machine does not stretch as it stretches wall time; the work itself is counted in
# test_loading.py.
FAST_S = 10.0



def notebook(path, cells: list[str], outputs: list | None = None):
    """Write a notebook of code cells, each with the same outputs."""
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": source,
         "outputs": outputs or []} for source in cells]}))
    return path


def grade(path):
    return grading.grade(path, registry.get("attention_basics"), OPTIONS)


def test_a_12_mb_notebook_is_refused_quickly_and_nothing_large_is_written(tmp_path):
    cells = [HONEST] + ["!ls\n" * (MB // 8)] * 24  # 12 MB of shell escapes, 0.5 MB a cell
    path = notebook(tmp_path / "alice_attention_basics.ipynb", cells)
    assert path.stat().st_size > 12 * MB
    started = time.process_time()
    result = grade(path)
    assert time.process_time() - started < FAST_S
    assert (result.status, result.score, result.cells, result.exercises) == (
        ResultStatus.ERROR, 0.0, (), ())
    assert result.error == (
        f"{path}: has 12.0 MB of code, over the 2 MB limit for all the code of a submission "
        "(--max-code-mb); remove pasted data, generated code and unused cells, and hand it in "
        "again")
    reports = {suffix: tmp_path / f"report.{suffix}" for suffix in ("json", "html", "md")}
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(["run", str(path), "--json", str(reports["json"]), "--html",
                    str(reports["html"]), "--md", str(reports["md"])], out, err)
    assert code == 1
    assert json.loads(reports["json"].read_text())["error"] == result.error
    for report in reports.values():
        assert report.stat().st_size < 20_000, report
    assert len(out.getvalue()) + len(err.getvalue()) < 5_000


def test_a_file_over_the_file_limit_is_refused_without_being_read(tmp_path):
    path = tmp_path / "alice_attention_basics.ipynb"
    with path.open("wb") as stream:
        stream.truncate(60 * MB)  # sparse: nothing to read, if anything tried
    result = grade(path)
    assert result.error == (
        f"{path}: is 60.0 MB, over the 50 MB limit for a submission file "
        "(--max-submission-mb); clear the outputs (Cell > All Output > Clear) and hand it in "
        "again")


def test_large_outputs_with_little_code_are_graded_normally(tmp_path):
    image = {"output_type": "display_data", "metadata": {},
             "data": {"image/png": "iVBORw0KGgo" * MB, "text/plain": "<Figure>"}}
    path = notebook(tmp_path / "plots_attention_basics.ipynb", [HONEST, "x = 1", "y = 2"],
                    outputs=[image])
    assert path.stat().st_size > 30 * MB  # 11 MB of image in each of three cells
    result = grade(path)
    assert result.status is ResultStatus.GRADED and result.error is None
    assert result.score == HONEST_SCORE
    assert [cell.status for cell in result.cells] == [CellStatus.OK] * 3


INVALID_60_KB = {
    "blank lines": ("\n" * 59_999 + "(", "SyntaxError: '(' was never closed (line 1)"),
    "help syntax": ("a" * 59_998 + ")?", "SyntaxError: unmatched ')' (line 1)"),
    "magic assignments": ("x = %ls\n" * 7_500, "cannot be parsed: more than 500 magics, shell "
                          "escapes and help lines in one cell (IPython stops there too)"),
}


@pytest.mark.parametrize("kind", sorted(INVALID_60_KB))
def test_a_60_kb_invalid_cell_is_a_syntax_error_found_quickly(tmp_path, kind):
    source, error = INVALID_60_KB[kind]
    path = notebook(tmp_path / "slow_attention_basics.ipynb", [HONEST, source])
    started = time.process_time()
    result = grade(path)
    assert time.process_time() - started < FAST_S
    assert result.status is ResultStatus.GRADED and result.score == HONEST_SCORE
    assert [(c.index, c.status, c.message) for c in result.problem_cells] == [
        (2, CellStatus.ERROR, f"{error}; the cell did not run")]


def test_many_statements_are_refused_before_they_run(tmp_path):
    path = notebook(tmp_path / "busy_attention_basics.ipynb", [HONEST, "x = 1\n" * 20_000])
    started = time.process_time()
    result = grade(path)
    assert time.process_time() - started < FAST_S  # was 20 s: one round trip a statement
    assert result.error == (
        f"{path}: has 20,004 top-level statements, over the limit of 5,000 (--max-statements); "
        "put repeated code in a loop or a function and hand it in again")


def test_a_cell_of_many_skipped_statements_has_a_capped_message(tmp_path):
    path = notebook(tmp_path / "noisy_attention_basics.ipynb", [HONEST, "!ls\n" * 499])
    result = grade(path)
    (cell,) = result.problem_cells
    assert cell.status is CellStatus.SKIPPED
    assert len(cell.message) <= MESSAGE_CHARS + 40


def test_a_huge_exception_message_is_capped(tmp_path):
    path = tmp_path / "loud_attention_basics.py"
    path.write_text(HONEST + '''
def causal_self_attention(X, W_q, W_k, W_v):
    raise ValueError("x" * 10_000_000)
''')
    result = grade(path)
    checks = next(e for e in result.exercises if e.name == "causal_self_attention").checks
    assert {c.status for c in checks} == {CheckStatus.ERROR}
    assert max(len(c.message) for c in checks) <= MESSAGE_CHARS + 40


def test_check_messages_are_capped_where_checks_are_built():
    exercise = registry.get("attention_basics").exercise("softmax")
    check = scoring.failed_check("vector", exercise, Verdict.RAISED, "y" * 10_000,
                                 visibility=Visibility.PUBLIC)
    assert check.message == "y" * MESSAGE_CHARS + "… (8,000 more characters)"
    assert scoring.failed_check("vector", exercise, Verdict.RAISED, "short",
                                visibility=Visibility.PUBLIC).message == "short"


# --------------------------------------------------------------------------- hidden oracle

PROBES = {  # softmax answers a probing submission might try on the hidden cases
    "off by a little in one element": "out.flat[0] += 1e-3",
    "off by a lot in one element": "out.flat[-1] += 0.5",
    "all wrong": "out = out * 2 + 1",
    "NaN in one element": "out.flat[0] = np.nan",
    "inf in one element": "out.flat[0] = np.inf",
    "wrong shape": "out = out[..., :1]",
    "transposed": "out = out.T",
}
SHAPE = re.compile(r"\((\d+, )*\d*,?\)")  # shapes may be named: they follow from the inputs


@pytest.mark.parametrize("probe", sorted(PROBES))
def test_hidden_checks_give_away_no_number(tmp_path, probe):
    path = tmp_path / "probe_attention_basics.py"
    path.write_text(HONEST.replace("def softmax", "def old_softmax") + f'''
def softmax(x):
    out = np.exp(x - x.max(axis=-1, keepdims=True))
    out = out / out.sum(axis=-1, keepdims=True)
    {PROBES[probe]}
    return out
''')
    result = grade(path)
    checks = next(e for e in result.exercises if e.name == "softmax").checks
    hidden = [c for c in checks if c.visibility is Visibility.HIDDEN and not c.passed]
    assert len(hidden) >= 2  # a one-element case may survive a transpose
    for check in hidden:
        assert re.findall(r"\d", SHAPE.sub("", check.message)) == [], check.message
        assert check.views == ()
    if probe not in ("wrong shape", "transposed"):  # public cases show the numbers: the
        public = [c for c in checks  # scan above would find them
                  if c.visibility is Visibility.PUBLIC and not c.passed]
        assert public and all(re.findall(r"\d", SHAPE.sub("", c.message)) for c in public)


def _peak_mb() -> float:
    with open("/proc/self/status") as stream:
        return next(int(row.split()[1]) for row in stream if row.startswith("VmHWM:")) / 1024


def test_a_huge_return_value_is_refused_before_the_grader_reads_it(tmp_path):
    # 64 MiB of int8 would cost the grader about 2 GB once made float64 and diagnosed.
    path = tmp_path / "huge_attention_basics.py"
    path.write_text(HONEST + '''
def causal_self_attention(X, W_q, W_k, W_v):
    return np.ones((8190, 8190), dtype=np.int8), X
''')
    with open("/proc/self/clear_refs", "w") as stream:
        stream.write("5")  # the peak of this test only
    before = _peak_mb()
    result = grade(path)
    growth = _peak_mb() - before
    causal = next(e for e in result.exercises if e.name == "causal_self_attention")
    refused = "the call returned far more data than the expected outputs hold; it was not compared"
    public = [c for c in causal.checks if c.visibility is Visibility.PUBLIC]
    hidden = [c for c in causal.checks if c.visibility is Visibility.HIDDEN]
    assert public and hidden and len(public) + len(hidden) == len(causal.checks)
    assert [c.message for c in public] == [refused] * len(public)
    # A hidden check says the closed vocabulary's text; the instructor's detail, the whole.
    assert [(c.message, c.detail) for c in hidden] == [
        (vocabulary.message(Verdict.TOO_LARGE, "", True), refused)] * len(hidden)
    assert result.score == HONEST_SCORE
    assert growth < 100, f"the grader grew by {growth:.0f} MB"
