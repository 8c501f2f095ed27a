"""No free points (issue #10): no scored case accepts a wrong answer, a provided function is
never scored, advice costs nothing, and an untouched stub is `unattempted`, nothing else.

Notebooks here are written as the book writes them: globals, two-space indents, `print(...)`
checks, the book's names, and its own stubs (`items_in.copy()`, `np.zeros_like(X)`)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from grader.authoring import fairness
from grader.course import references, registry
from grader.pipeline import grading, scoring
from grader.results import CheckStatus
from grader.sandbox.limits import Limits
from tests.helpers.book import BOOK_SETUP, BOOK_STUBS, RETURN_V

OPTIONS = grading.Options(limits=Limits(cell_timeout=5, call_timeout=5))

EVERY_EXERCISE = [(name, exercise.name) for name, assignment in registry.assignments().items()
                  for exercise in assignment.exercises]


def hidden(assignment):
    stored = references.load(registry.get(assignment))
    return lambda exercise: lambda case: stored.get(exercise.name, case.name)


@pytest.mark.parametrize(("assignment", "exercise"), EVERY_EXERCISE)
def test_no_scored_case_accepts_a_wrong_answer(assignment, exercise):
    declared = registry.get(assignment).exercise(exercise)
    assert fairness.leaks(declared, hidden(assignment)(declared)) == []
    if not declared.provided:
        assert any(case.scored for case in declared.cases), "an exercise needs a scored case"


def test_the_check_finds_free_points_when_a_one_token_case_is_scored():
    declared = registry.get("udl_attention").exercise("self_attention")
    scored = dataclasses.replace(declared, cases=tuple(
        dataclasses.replace(case, scored=True) for case in declared.cases))
    found = {(leak.case, leak.answer) for leak in
             fairness.leaks(scored, hidden("udl_attention")(declared))}
    assert found == {("one-token", "softmax-wrong-axis"), ("one-token", "transposed-weights"),
                     ("one-token", "extra-scale"), ("one-token", "qk-swapped"),
                     ("one-token", "return V"),
                     ("one-token", "uniform attention"),
                     ("one-token", "hard attention (an argmax for the softmax)")}


def test_a_conditional_mistake_that_no_case_shows_is_a_leak():
    declared = registry.get("attention_basics").exercise("softmax")
    without_large = dataclasses.replace(declared, cases=tuple(
        case for case in declared.cases if case.name != "large-values"))
    assert [str(leak) for leak in
            fairness.leaks(without_large, hidden("attention_basics")(declared))] == [
        "softmax/every case accepts the wrong answer 'unstable-softmax'"]


def test_unscored_cases_and_provided_exercises_are_worth_nothing():
    udl = registry.get("udl_attention")
    assert udl.max_score == 10.0
    assert udl.exercise("softmax_cols").scored_points == 0.0
    multihead = udl.exercise("multihead_scaled_self_attention")
    # The public example earns nothing (#21): the points go to the two hidden scored cases.
    assert [(case.name, scoring.shown(scoring.share(multihead, case.name)))
            for case in multihead.cases] == [
        ("notebook-example", 0.0), ("practice", 0.0), ("small", 2.5), ("one-token", 0.0),
        ("wide", 2.5)]


def test_return_v_earns_nothing(make_submission):
    result = grading.grade(make_submission(RETURN_V, name="alice_udl_attention"),
                           registry.get("udl_attention"), OPTIONS)
    points = {e.name: e.score for e in result.exercises}
    assert points == {"softmax": 0.0, "softmax_cols": 0.0, "self_attention": 0.0,
                      "scaled_dot_product_self_attention": 0.0,
                      "multihead_scaled_self_attention": 0.0}
    assert result.score == 0.0
    one_token = result.exercises[2].checks[3]
    assert (one_token.name, one_token.passed, one_token.max_score) == ("one-token", True, 0.0)


def test_the_book_notebook_untouched_scores_zero_and_every_stub_is_unattempted(
        make_submission):
    result = grading.grade(make_submission(BOOK_STUBS, name="alice_udl_attention"),
                           registry.get("udl_attention"), OPTIONS)
    assert (result.score, result.max_score) == (0.0, 10.0)
    by_name = {e.name: e for e in result.exercises}
    # The book's softmax_cols is shown as checked, and costs nothing for its large values.
    provided = by_name["softmax_cols"]
    assert (provided.score, provided.max_score) == (0.0, 0.0)
    for name in ("softmax", "self_attention", "scaled_dot_product_self_attention",
                 "multihead_scaled_self_attention"):
        failing = [c for c in by_name[name].checks if not c.passed]
        assert failing, name
        assert {c.diagnosis.id for c in failing if c.diagnosis} == {"unattempted"}, name
        assert all(c.diagnosis for c in failing), name
    stub = by_name["self_attention"].checks[0].diagnosis
    assert stub.message == ("Not written yet: it returns zeros, as the notebook's stub does. "
                            "Replace the stub's body with your own code.")
    assert by_name["softmax"].checks[0].diagnosis.message.startswith(
        "Not written yet: it returns its input unchanged")


def test_stability_is_advice_in_the_book_assignment(make_submission):
    naive = BOOK_SETUP + '''
def softmax(items_in):
  e = np.exp(items_in)
  return e / np.sum(e)
'''
    result = grading.grade(make_submission([naive], name="alice_udl_attention"),
                           registry.get("udl_attention"), OPTIONS)
    softmax = result.exercises[0]
    large = next(c for c in softmax.checks if c.name == "large-values")
    assert (large.passed, large.score, large.max_score) == (False, 0.0, 0.0)
    assert large.diagnosis.id == "unstable-softmax"
    assert large.note.startswith("advice, worth no points")
    assert (softmax.status, softmax.score, softmax.max_score) == (CheckStatus.PASSED, 1.0, 1.0)


def test_a_raising_stub_is_unattempted(make_submission):
    stub = '''import numpy as np

def softmax(items_in):
    raise NotImplementedError("softmax")
'''
    result = grading.grade(make_submission(stub, name="alice_udl_attention"),
                           registry.get("udl_attention"), OPTIONS)
    diagnoses = {c.diagnosis.id for c in result.exercises[0].checks}
    assert diagnoses == {"unattempted"}


# --------------------------------------------------------------------------- issue #21
# Answers that are right only where a case is degenerate, graded end to end: each earned
# points before #21 (the numbers in the comments), and each must earn nothing now.

DEGENERATE_SOFTMAX = {
    "ones": "np.ones_like(np.asarray(items_in, dtype=float))",  # 0.5/10 before
    "normalised": "np.asarray(items_in, dtype=float) / np.sum(items_in)",  # 0.5/10 before
}


@pytest.mark.parametrize("body", DEGENERATE_SOFTMAX.values(), ids=list(DEGENERATE_SOFTMAX))
def test_a_degenerate_softmax_earns_nothing_in_udl_attention(make_submission, body):
    code = f"import numpy as np\n\ndef softmax(items_in):\n    return {body}\n"
    result = grading.grade(make_submission(code, name="alice_udl_attention"),
                           registry.get("udl_attention"), OPTIONS)
    softmax = result.exercises[0]
    one = next(c for c in softmax.checks if c.name == "one-element")
    assert (one.passed, one.max_score) == (True, 0.0)  # it still passes, and earns nothing
    assert (softmax.score, result.score) == (0.0, 0.0)


def test_an_argmax_softmax_earns_nothing_in_attention_basics(make_submission):
    code = '''import numpy as np

def softmax(x):
    x = np.asarray(x, dtype=float)
    hot = np.zeros_like(x)
    np.put_along_axis(hot, np.argmax(x, axis=-1)[..., None], 1.0, axis=-1)
    return hot
'''  # 0.8/10 before: it passed large-values (one-hot rows) and one-element
    result = grading.grade(make_submission(code, name="alice_attention_basics"),
                           registry.get("attention_basics"), OPTIONS)
    softmax = result.exercises[0]
    assert {c.name: c.passed for c in softmax.checks} == {
        "vector": False, "matrix": False, "practice": False, "three-dims": False,
        "large-values": False, "one-element": True}
    assert (softmax.score, result.score) == (0.0, 0.0)


NEVER_ATTENDS = '''import torch
from torch import nn

class SimpleEncoderBlock(nn.Module):
    def __init__(self, embed_dim=64, num_heads=4, ff_dim=256):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(embed_dim, ff_dim), nn.ReLU(),
                                nn.Linear(ff_dim, embed_dim))
        self.norm1 = nn.LayerNorm(embed_dim)
        self.norm2 = nn.LayerNorm(embed_dim)
        self.embed_dim = embed_dim

    def forward(self, x):
        E = self.embed_dim
        v = x @ self.self_attn.in_proj_weight[2 * E:].T + self.self_attn.in_proj_bias[2 * E:]
        x = self.norm1(x + self.self_attn.out_proj(v))
        return self.norm2(x + self.ff(x))
'''


def test_an_encoder_block_that_never_attends_earns_nothing(make_submission):
    pytest.importorskip("torch")
    result = grading.grade(make_submission(NEVER_ATTENDS, name="alice_torch_attention"),
                           registry.get("torch_attention"), OPTIONS)
    block = result.exercises[1]
    assert {c.name: (c.passed, c.max_score) for c in block.checks} == {
        "small": (False, 0.0), "practice": (False, 0.0), "defaults": (False, 1.5),
        "two-heads": (False, 1.5), "one-token": (True, 0.0)}  # 1/5 before: one-token was scored
    assert (block.score, result.score) == (0.0, 0.0)


def _lookup_module(assignment: str) -> str:
    """A submission that returns the public expected outputs, looked up by its inputs' bytes,
    and zeros elsewhere: what a student who copied the notebook's "True values" hands in."""
    declared = registry.get(assignment)
    stored = references.load(declared, public_only=True)
    table: dict[str, dict[str, list]] = {}
    for exercise in declared.exercises:
        for case in exercise.cases:
            if case.visibility.value == "public":
                first = np.asarray(case.inputs()[0], dtype=float)
                outputs = stored.get(exercise.name, case.name)
                table.setdefault(exercise.name, {})[first.tobytes().hex()] = [
                    o.tolist() for o in outputs]
    lines = ["import numpy as np", f"TABLE = {table!r}", "",
             "def look_up(name, first, shape):",
             "    found = TABLE[name].get(np.asarray(first, dtype=float).tobytes().hex())",
             "    if found is None:",
             "        return np.zeros(shape)",
             "    return np.array(found[0])", ""]
    for exercise in declared.exercises:
        params = exercise.signature.strip("()")
        first = params.split(",")[0].strip()
        lines += [f"def {exercise.name}({params}):",
                  f"    return look_up({exercise.name!r}, {first}, np.shape({first}))", ""]
    return "\n".join(lines)


def test_public_outputs_looked_up_earn_nothing(make_submission):
    """3.83/10 before #21: every public case of udl_attention was scored."""
    result = grading.grade(make_submission(_lookup_module("udl_attention"),
                                           name="alice_udl_attention"),
                           registry.get("udl_attention"), OPTIONS)
    public = [c for e in result.exercises for c in e.checks if c.visibility.value == "public"]
    assert public and all(c.passed for c in public)  # the lookup works...
    assert all((c.score, c.max_score, c.worth) == (
        0.0, 0.0, "public, no points" if c.name == "practice" else "public example, no points")
        for c in public)
    assert result.score == 0.0  # ...and earns nothing
    assert result.max_score == 10.0
