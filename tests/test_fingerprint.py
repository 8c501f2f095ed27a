"""Fingerprints of graded functions: the same code up to names, comments, docstrings and layout
has the same one; different code has another; nothing of the submission runs."""

from __future__ import annotations

import ast
import json

from grader import result_json
from grader.course import registry
from grader.pipeline import fingerprint, grading, loading
from grader.results import Fingerprint
from tests.conftest import ROOT

NAMES = ("f", "Block")


def printed(make_submission, source, name="alice"):
    return fingerprint.fingerprints(loading.load(make_submission(source, name=name)), NAMES)


ORIGINAL = '''import numpy as np

def f(X, w):
    scores = X @ w
    top = np.max(scores, axis=0)
    return np.exp(scores - top) / np.sum(np.exp(scores - top), axis=0)
'''
DISGUISED = ['''import numpy

# my own work!
def f(inputs: "array", weights) -> "array":
    """Softmax of the projected inputs."""
    s = inputs @ weights   # project

    m: float = numpy.max(s, axis=0)
    "a string as a comment"
    return numpy.exp(s - m) / numpy.sum(numpy.exp(s - m),
                                        axis=0)
''']


def test_renamed_commented_and_reformatted_code_has_the_same_fingerprint(make_submission):
    original = printed(make_submission, ORIGINAL)
    copy = printed(make_submission, DISGUISED, name="bob")
    assert original["f"] == copy["f"] and original["f"] is not None
    assert original["Block"] is None  # never defined


def test_different_code_has_another_fingerprint(make_submission):
    original = printed(make_submission, ORIGINAL)["f"]
    for changed in (ORIGINAL.replace("axis=0)\n    return", "axis=1)\n    return"),
                    ORIGINAL.replace("X @ w", "w @ X"),
                    ORIGINAL.replace("np.max", "np.min"),
                    ORIGINAL.replace("scores - top) /", "scores) /")):
        assert printed(make_submission, changed, name="carol")["f"] != original, changed


def test_the_last_top_level_definition_counts_and_classes_too(make_submission):
    source = ORIGINAL + '''
def f(X, w):
    return X

class Block:
    def forward(self, x):
        return self.norm(x + self.attention(x))
'''
    found = printed(make_submission, source)
    assert found["f"] == fingerprint.of(ast.parse("def f(a, b):\n    return a").body[0])
    assert isinstance(found["Block"], Fingerprint) and found["Block"].nodes > 10


def test_a_notebook_is_read_cell_by_cell_and_nothing_runs(make_submission, tmp_path):
    marker = tmp_path / "ran"
    cells = [f"open({str(marker)!r}, 'w').write('x')", "import numpy as np",
             ORIGINAL.split("\n", 1)[1], "this is not python", "%time f(1, 2)"]
    found = printed(make_submission, cells)
    assert found["f"] == printed(make_submission, ORIGINAL, name="bob")["f"]
    assert not marker.exists()


def test_grading_stores_the_fingerprint_of_each_exercise_in_the_json_result():
    result = grading.grade(ROOT / "tests" / "corpus" / "udl_attention" / "vectorised.py",
                           registry.get("udl_attention"))
    exercises = json.loads(result_json.render(result))["exercises"]
    prints = {e["name"]: e["fingerprint"] for e in exercises}
    assert set(prints) == {e.name for e in registry.get("udl_attention").exercises}
    assert all(len(p["digest"]) == 32 and p["nodes"] > 20 for p in prints.values())
    assert prints["self_attention"] != prints["scaled_dot_product_self_attention"]


def _at_depth(frames: int, call):
    """call() from `frames` frames further down the stack, as a deep caller (Dask) has it."""
    return call() if frames <= 0 else _at_depth(frames - 1, call)


def test_a_definition_too_deep_to_normalise_has_no_fingerprint_whatever_the_stack(
        make_submission):
    # 150 levels: about 450 frames to normalise, which one caller has and another not.
    deep = "def f(X, w):\n    return X + " + "-" * 150 + "w\n"
    source = deep + ORIGINAL.replace("def f(", "def g(")
    submission = loading.load(make_submission(source))
    shallow = fingerprint.fingerprints(submission, ["f", "g"])
    assert _at_depth(600, lambda: fingerprint.fingerprints(submission, ["f", "g"])) == shallow
    assert shallow["f"] is None
    assert shallow["g"] == printed(make_submission, ORIGINAL, name="bob")["f"]
    just_under = "def f(X):\n    return " + "-" * (fingerprint.DEEPEST - 5) + "X\n"
    assert printed(make_submission, just_under, name="carol")["f"] is not None
