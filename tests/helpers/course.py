"""A course's own assignment, declared outside the package and released, as another instructor
makes it (docs/authoring.md): the master, the completed declaration, and students' modules
with one catalogued mistake each (`tests/test_released_course.py`,
`tests/test_check_anywhere.py`)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from grader.course import registry
from grader.course.layout import Layout
from tests.helpers.command import run as grade
from tests.helpers.command import write_master

NAME = "scoring_course"
CONFIG = f'''# ASSIGNMENT CONFIG
assignment = "{NAME}"
title = "Attention scoring, batched"

[exercises]
scaled_scores = 1
attend = 2
'''
EXERCISES = tuple(tomllib.loads(CONFIG)["exercises"])
"""The exercises CONFIG declares, in its order."""
SCORES = '''def scaled_scores(queries, keys):
    """The (batch, queries, keys) scores Q K^T / sqrt(d)."""
    # BEGIN SOLUTION
    d = queries.shape[-1]
    return queries @ np.swapaxes(keys, -1, -2) / np.sqrt(d)
    # END SOLUTION


check("scaled_scores")  # runs the public cases and explains what is wrong
'''
ATTEND = '''def attend(queries, keys, values):
    """Scaled dot-product attention over a batch: softmax over the keys, then the values."""
    # BEGIN SOLUTION
    scores = scaled_scores(queries, keys)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = weights / weights.sum(axis=-1, keepdims=True)
    return weights @ values
    # END SOLUTION


check("attend")  # runs the public cases and explains what is wrong
'''
EXAMPLES = '''rng = np.random.default_rng(7)
Q = rng.normal(size=(2, 3, 4))
K = rng.normal(size=(2, 5, 4))
V = rng.normal(size=(2, 5, 6))
print(scaled_scores(Q, K).shape)
print(attend(Q, K, V))
'''
# What the instructor adds to the skeleton: hidden cases of other sizes, and the mistakes.
COMPLETED = '''
import dataclasses

import numpy as np

from grader.assignments.variants import misconception


def _softmax(scores, axis=-1):
    e = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _scores(queries, keys, scale):
    return queries @ np.swapaxes(keys, -1, -2) / scale(queries.shape[-1])


def _attend(scale=np.sqrt, axis=-1):
    return lambda q, k, v: _softmax(_scores(q, k, scale), axis) @ v


SCALES = (("missing-scale", lambda d: 1.0), ("wrong-scale", lambda d: d))
scaled_scores = dataclasses.replace(scaled_scores, cases=scaled_scores.cases + (
    Case("more-features", normal((3, 2, 8), (3, 6, 8)), seed=11),
    Case("one-batch", normal((1, 4, 16), (1, 3, 16)), seed=12),
), misconceptions=tuple(
    misconception(id, lambda q, k, scale=scale: _scores(q, k, scale)) for id, scale in SCALES))
attend = dataclasses.replace(attend, cases=attend.cases + (
    Case("more-features", normal((3, 2, 8), (3, 6, 8), (3, 6, 5)), seed=21),
    Case("one-batch", normal((1, 4, 16), (1, 3, 16), (1, 3, 2)), seed=22),
), misconceptions=(*(misconception(id, _attend(scale=scale)) for id, scale in SCALES),
                   misconception("softmax-wrong-axis", _attend(axis=-2))))
ASSIGNMENT = dataclasses.replace(ASSIGNMENT, exercises=(scaled_scores, attend))
'''
# Students' modules, as a student writes them: one mistake each (or none), by template.
STUDENT = '''import numpy as np


def scaled_scores(queries, keys):
    d = queries.shape[-1]
    return queries @ np.swapaxes(keys, -1, -2){scores}


def attend(queries, keys, values):
    d = queries.shape[-1]
    scores = queries @ keys.transpose(0, 2, 1){attend}
    weights = np.exp(scores - scores.max(axis={axis}, keepdims=True))
    weights /= weights.sum(axis={axis}, keepdims=True)
    return weights @ values
'''
RIGHT = {"scores": " / np.sqrt(d)", "attend": " / np.sqrt(d)", "axis": -1}
MISTAKES = {  # (exercise, id): how the student's module differs from a right one
    ("scaled_scores", "missing-scale"): {"scores": ""},
    ("scaled_scores", "wrong-scale"): {"scores": " / d"},
    ("attend", "missing-scale"): {"attend": ""},
    ("attend", "wrong-scale"): {"attend": " / d"},
    ("attend", "softmax-wrong-axis"): {"axis": -2},
}
PAIRED = ((("scaled_scores", "missing-scale"), ("attend", "wrong-scale")),
          (("scaled_scores", "wrong-scale"), ("attend", "missing-scale")),
          (("attend", "softmax-wrong-axis"),))
"""Each catalogued mistake once, as the tests' completed modules make them: the student's two
functions are independent (`attend` does not call `scaled_scores`), so one module carries a
mistake in each, a different one in each, so that a diagnosis said of the wrong exercise is
caught. Three modules, not five: each is graded several ways."""
# The full report, where every public check is listed (the compact view shows the first).
CHECKS = ('\n\nfrom grader import check\n\ncheck("scaled_scores", full=True)\n'
          'check(attend, full=True)\n')


def student(mistake: dict[str, object]) -> str:
    """A student's module with `mistake` in it."""
    return STUDENT.format(**{**RIGHT, **mistake})


def student_of(mistakes: tuple[tuple[str, str], ...]) -> str:
    """A student's module with each of `mistakes` (keys of `MISTAKES`) in it."""
    return student({key: value for made in mistakes for key, value in MISTAKES[made].items()})


def label_of(mistakes: tuple[tuple[str, str], ...]) -> str:
    """`mistakes` as a test names them: "exercise.id", joined by "+"."""
    return "+".join(f"{exercise}.{id}" for exercise, id in mistakes)


def make(top: Path) -> dict[str, object]:
    """The course made in `top` as docs/authoring.md says: the environment `grade assign`
    printed, the folder with the release, and the instructor's folder."""
    master = write_master(top / f"{NAME}_master.ipynb", [
        ("raw", CONFIG), ("markdown", "# Scoring\n\nWrite both functions."),
        ("code", "import numpy as np\n\nfrom grader import check\n"), ("code", SCORES),
        ("code", ATTEND), ("code", EXAMPLES)])
    registry.assignments.cache_clear()
    with pytest.MonkeyPatch.context() as patch:
        code, out, err = grade("assign", str(master), "--out", str(top / "course"))
        assert (code, err) == (0, ""), err
        layout = Layout(top / "course")
        env = layout.environment()
        for key, value in env.items():
            patch.setenv(key, value)
        skeleton = layout.declaration(NAME).read_text().splitlines()
        assert skeleton[-1].startswith("# grade assign skeleton")
        layout.declaration(NAME).write_text("\n".join(skeleton[:-1]) + "\n" + COMPLETED)
        code, out, err = grade("assign", str(master), "--out", str(top / "course"))
        assert (code, err) == (0, ""), err
        assert "the declaration, kept: you have edited it" in out
        registry.assignments.cache_clear()
        code, out, err = grade("release", NAME, "--out", str(top / "release"))
        assert (code, err) == (0, ""), err
    registry.assignments.cache_clear()
    return {"env": env, "release": top / "release", "course": top / "course"}


