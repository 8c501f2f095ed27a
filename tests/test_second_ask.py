"""The second ask: a public case that fails at the end of the notebook is asked again right
after the cell that defined its exercise; a hidden case is asked once, at the place the
public cases chose, so that no call learns from being asked whether a hidden answer failed.
A pass right after the definition is marked in every format."""

from __future__ import annotations

import re

import numpy as np
import pytest

from grader.course import registry
from grader.model import Visibility
from grader.pipeline import checking, grading
from grader.report import gradescope_results, html, junit, markdown, terminal
from grader.result_json import render as render_json
from grader.sandbox.limits import Limits

OPTIONS = grading.Options(limits=Limits(cell_timeout=5, call_timeout=5))
ASSIGNMENT = registry.get("attention_basics")


def _key(x: np.ndarray) -> str:
    return repr(round(float(np.abs(x).sum()), 6))


PUBLIC = sorted(_key(c.inputs()[0]) for c in ASSIGNMENT.exercise("softmax").cases
                if c.visibility is Visibility.PUBLIC)

# The review's attack: softmax, always wrong, learns that it is asked again about a hidden
# case (its mark in /tmp), and tells the multi-step exercise graded after it to switch from
# its first formula (no scale) to the right one.
ORACLE = f'''
import os
import numpy as np

PUBLIC = {PUBLIC!r}


def softmax(x):
    key = repr(round(float(np.abs(x).sum()), 6))
    print("CALLED", key)
    mark = "/tmp/asked_" + key
    if os.path.exists(mark) and key not in PUBLIC:
        open("/tmp/second_ask", "w").close()
    open(mark, "w").close()
    return x * 0.0
'''

LEARNER = '''
def causal_self_attention(X, W_q, W_k, W_v):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    scale = np.sqrt(K.shape[1]) if os.path.exists("/tmp/second_ask") else 1.0
    n = len(X)
    S = Q @ K.T / scale + np.triu(np.full((n, n), -np.inf), k=1)
    W = np.exp(S - S.max(axis=1, keepdims=True))
    W = W / W.sum(axis=1, keepdims=True)
    return W, W @ V
'''

LATER = "later = 1  # a statement after the definitions: a second ask could be made"


def _scores(result) -> dict[str, float]:
    return {e.name: e.score for e in result.exercises}


def test_the_oracle_attack_earns_nothing_it_would_not_earn_without_a_second_ask(
        make_submission):
    attack = grading.grade(make_submission([ORACLE, LEARNER, LATER], name="attack"),
                           ASSIGNMENT, OPTIONS)
    honest = grading.grade(make_submission([ORACLE.replace('open("/tmp/second_ask", "w")',
                                                           'open("/tmp/never", "w")'),
                                            LEARNER, LATER], name="honest"),
                           ASSIGNMENT, OPTIONS)
    assert _scores(attack) == _scores(honest)
    assert _scores(attack)["causal_self_attention"] == 0.0
    # Every hidden case of softmax was asked once; the public ones at the end and again at
    # the definition (their answers are the student's to see anyway).
    called = re.findall(r"CALLED (\S+)", attack.hidden_output)
    assert called and len(called) == len(set(called))
    hidden = [c for c in ASSIGNMENT.exercise("softmax").cases
              if c.visibility is Visibility.HIDDEN]
    assert sorted(called) == sorted(_key(c.inputs()[0]) for c in hidden)


BROKEN_LATER = [
    '''
import numpy as np

def _normalise(e):
    return e / e.sum(axis=-1, keepdims=True)


def softmax(x):
    return _normalise(np.exp(x - x.max(axis=-1, keepdims=True)))
''',
    '''
def _normalise(e):  # a later cell rebinds what softmax uses
    return e
''',
]


@pytest.fixture(scope="module")
def late(tmp_path_factory):
    path = tmp_path_factory.mktemp("late") / "late.ipynb"
    import json

    path.write_text(json.dumps({
        "nbformat": 4, "nbformat_minor": 5, "metadata": {},
        "cells": [{"cell_type": "code", "id": f"c{i}", "metadata": {}, "outputs": [],
                   "execution_count": None, "source": source}
                  for i, source in enumerate(BROKEN_LATER)]}))
    return grading.grade(path, ASSIGNMENT, OPTIONS)


def test_a_hidden_case_is_asked_where_the_public_case_passed_and_marked(late):
    (softmax,) = [e for e in late.exercises if e.name == "softmax"]
    assert softmax.score == 2.0
    assert all(c.passed and c.caution == (checking.LATE if c.visibility is Visibility.PUBLIC
                                          else checking.LATE_HIDDEN) for c in softmax.checks)


@pytest.mark.parametrize("render", [
    terminal.render, render_json, html.render, markdown.render,
    lambda result: junit.render([result]), gradescope_results.render])
def test_a_pass_after_the_definition_is_marked_in_every_format(late, render):
    text = render(late)
    assert "later cell changes something it uses" in text.replace("\n", " ").replace(
        "        ", " ")


def test_the_exercise_says_its_caution_once(late):
    """The public example's caution and the hidden cases' (the same thing in their own words)
    are one warning for the student: the terminal and the reports say the exercise's once."""
    (softmax,) = [e for e in late.exercises if e.name == "softmax"]
    assert softmax.caution == checking.LATE
    summary = terminal.render(late)
    assert summary.count("careful:") == 1
    assert f"careful: {checking.LATE}" in summary.replace("\n", " ").replace("        ", " ")
    assert checking.LATE_HIDDEN not in summary.replace("\n", " ").replace("        ", " ")
    page = markdown.render(late)
    assert page.count(checking.LATE) == 1 and checking.LATE_HIDDEN not in page


def test_the_class_report_counts_the_passes_after_the_definition(late):
    from grader.classreport import page, stats
    from grader.gradebook import Row

    row = Row("ada", "attention_basics", "late.ipynb", late.sha256, "graded", late.score,
              late.max_score, "2026-11-27T10:00:00+00:00")
    report = stats.build("attention_basics", [(row, late)])
    late_counts = {e.name: e.late for e in report.exercises}
    assert late_counts["softmax"] == 1
    assert sum(late_counts.values()) == 1
    assert '"late": 1' in page.render_json(report)
    assert "Passed late" in page.html(report) and "Passed late" in page.markdown(report)
