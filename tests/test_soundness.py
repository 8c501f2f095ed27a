"""Another course's master (D2L's masked softmax, in numpy) through `grade assign`: the
skeleton keeps integer valid lengths integer, None where it was passed, sizes shared and
lengths bounded by the keys; and `grade validate` refuses each way of grading correct code
wrongly (inputs outside the examples' domain, NaN, a comment left, a failing alternative),
and passes once it is fixed."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

from grader import cli
from grader.course import registry
from grader.course.layout import Layout

pytestmark = pytest.mark.usefixtures("fresh_registry")

CONFIG = '''# ASSIGNMENT CONFIG
assignment = "d2l_scoring"
title = "Attention scoring"

[exercises]
masked_softmax = 2
scaled = 1
'''
SOFTMAX = '''def masked_softmax(X, valid_lens):
    """Softmax over the last axis, keeping the first valid_lens keys of each row."""
    # BEGIN SOLUTION
    if valid_lens is None:
        e = np.exp(X - X.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    out = np.zeros_like(X)
    for b in range(X.shape[0]):
        row = X[b, :, :valid_lens[b]]
        e = np.exp(row - row.max(axis=-1, keepdims=True))
        out[b, :, :valid_lens[b]] = e / e.sum(axis=-1, keepdims=True)
    return out
    # END SOLUTION
'''
SCALED = '''def scaled(X, mode):
    """X scaled by its size, or not."""
    # BEGIN SOLUTION
    return X / X.shape[-1] if mode == "size" else X
    # END SOLUTION
'''
EXAMPLES = '''X = np.arange(16.0).reshape(2, 2, 4) / 7
print(masked_softmax(X, np.array([2, 3])))
print(masked_softmax(X, None))
print(scaled(X, "size"))
'''
VECTORISED = '''import numpy as np


def masked_softmax(X, valid_lens):
    if valid_lens is None:
        valid_lens = np.full(X.shape[0], X.shape[-1])
    keep = np.arange(X.shape[-1]) < np.asarray(valid_lens)[:, None, None]
    e = np.where(keep, np.exp(X - X.max(axis=-1, keepdims=True)), 0.0)
    return e / e.sum(axis=-1, keepdims=True)
'''


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = cli.run(list(argv), out, io.StringIO())
    return code, out.getvalue()


@pytest.fixture
def course(tmp_path, monkeypatch) -> Path:
    cells = [("raw", CONFIG), ("code", "import numpy as np\n"), ("code", SOFTMAX),
             ("code", SCALED), ("code", EXAMPLES)]
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": kind, "id": f"c{i}", "metadata": {}, "source": source,
         **({"outputs": [], "execution_count": None} if kind == "code" else {})}
        for i, (kind, source) in enumerate(cells)]}
    root = tmp_path / "course"
    master = root / "solutions" / "d2l_scoring_master.ipynb"
    master.parent.mkdir(parents=True)
    master.write_text(json.dumps(notebook))
    code, out = run("assign", str(master), "--out", str(root))
    assert code == 0, out
    for line in out.splitlines():
        if line.startswith("export "):
            name, _, value = line[len("export "):].partition("=")
            monkeypatch.setenv(name, value)
    registry.assignments.cache_clear()
    return root


def declaration(root: Path) -> Path:
    return Layout(root).declaration("d2l_scoring")


def test_the_skeleton_keeps_the_masters_domain(course):
    softmax, scaled = registry.get("d2l_scoring").exercises
    public, public_none, practice, drawn, _, _, drawn_none, _, _ = softmax.cases
    assert (practice.name, practice.visibility.value) == ("practice", "public")
    assert public.inputs()[1].dtype == np.int64 and public_none.inputs()[1] is None
    assert drawn_none.inputs()[1] is None
    for seed in range(30):
        X, lens = drawn.make_inputs(np.random.default_rng(seed))
        assert lens.dtype == np.int64 and lens.shape == (X.shape[0],)
        assert 2 <= lens.min() and lens.max() <= X.shape[2] - 1  # never above the keys
    text = declaration(course).read_text()
    assert "# valid_lens: integers from 2 up to X.shape[2] - 1" in text
    assert scaled.cases[-1].inputs()[1] == "size"
    assert "# grade assign: could not infer the domain of mode (str)" in text


def test_validate_points_at_the_comment_left_and_passes_once_it_is_gone(course):
    path = declaration(course)
    lines = [i for i, text in enumerate(path.read_text().splitlines(), 1)
             if "could not infer" in text]
    assert len(lines) == 4  # one per case drawn for that pattern: the practice case, 3 hidden
    code, out = run("validate", "d2l_scoring")
    assert (code, out) == (1, "".join(
        f"d2l_scoring: {path}:{line}: the skeleton could not infer this argument's domain, so "
        "every case it drew passes the master's value; draw it with an input maker "
        "(docs/authoring.md, \"Input makers\") or keep it, and delete the comment\n"
        for line in lines))
    path.write_text(re.sub(r"\n *# grade assign: could not infer.*\n(?: *# .*\n)*", "\n",
                           path.read_text()))
    assert run("validate", "d2l_scoring")[0] == 0


def edit(root: Path, old: str, new: str, build: bool = True) -> None:
    path = declaration(root)
    text = re.sub(r"\n *# grade assign: could not infer.*\n(?: *# .*\n)*", "\n",
                  path.read_text())
    assert old in text
    path.write_text(text.replace(old, new, 1))
    registry.assignments.cache_clear()
    assert not build or run("references", "build", "d2l_scoring")[0] == 0


def test_validate_refuses_inputs_outside_the_examples_domain(course):
    edit(course, 'Case("random-2"', 'Case("old", normal((2, 2, 4), (2,)), seed=1),\n'
         '        Case("random-2"', build=False)
    code, out = run("validate", "d2l_scoring")
    assert code == 1
    # the loops solution cannot even slice with a float length: the 0/8
    assert "masked_softmax/old: raised TypeError" in out and "fix the solution" in out
    assert ("d2l_scoring: masked_softmax/old: the argument valid_lens holds fractional floats "
            "and negative values, where the master's examples pass integers (int64), so correct "
            "code may fail or be given other numbers; draw it with integers(shape, low, high)"
            ) in out


def test_validate_refuses_nan_unless_the_note_says_so(course):
    edit(course, 'Case("random-2"', 'Case("empty", fixed(np.array([[[np.inf, 1.0, 2.0]]]), '
         'None), seed=1),\n        Case("random-2"')
    code, out = run("validate", "d2l_scoring")
    assert code == 1 and ("masked_softmax/empty: the solution returns NaN or +inf (3 of 3 "
                          "values)") in out
    edit(course, 'None), seed=1)', 'None), seed=1, note="an inf score gives NaN")')
    assert "masked_softmax/empty: the solution returns" not in run("validate", "d2l_scoring")[1]


def test_validate_grades_each_declared_alternative(course):
    (course / "solutions" / "loops.py").write_text(VECTORISED)
    edit(course, 'name="masked_softmax",', 'name="masked_softmax", alternatives=("loops.py",),')
    assert run("validate", "d2l_scoring") == (0, "d2l_scoring: 2 exercises, 14 cases: no "
                                              "problem found\n")
    wrong = VECTORISED.replace("X.shape[-1]) <", "X.shape[-1]) <=")
    (course / "solutions" / "loops.py").write_text(wrong)
    code, out = run("validate", "d2l_scoring")
    assert code == 1
    assert ("d2l_scoring: masked_softmax/random: the alternative loops.py gets no points "
            "(values differ") in out
    assert "fix the case's inputs so that correct code of either style gets the same" in out
