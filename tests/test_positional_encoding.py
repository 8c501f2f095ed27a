"""The fourth assignment, `positional_encoding`: each mistake students make with sinusoidal
encodings is named, in the encoding itself and in the two exercises built on it, and the
solution scores full marks. The code below is written as students write it, not as the
variants are."""

from __future__ import annotations

import pytest

from grader.course import registry
from grader.pipeline import grading
from grader.sandbox.limits import Limits
from tests.helpers.positional import LOOP, MISTAKES, SOLUTION, with_encoding

OPTIONS = grading.Options(limits=Limits(cell_timeout=10, call_timeout=10))

def test_the_loop_and_the_solution_score_full_marks(make_submission):
    for text in (SOLUTION, with_encoding(LOOP)):
        result = grading.grade(make_submission(text, name="alice_positional_encoding"),
                               registry.get("positional_encoding"), OPTIONS)
        assert (result.score, result.max_score) == (6.0, 6.0)


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_each_mistake_is_named_in_every_exercise(make_submission, mistake):
    result = grading.grade(make_submission(with_encoding(MISTAKES[mistake]),
                                           name="bob_positional_encoding"),
                           registry.get("positional_encoding"), OPTIONS)
    wanted = mistake.split(" ")[0]
    for number, exercise in enumerate(result.exercises):
        failing = [c for c in exercise.checks if not c.passed]
        assert failing and exercise.score == 0.0, exercise.name
        named = {c.diagnosis.id for c in failing if c.diagnosis}
        # The mistake is the encoding's: named there; an exercise that calls it is told that
        # it fails through it (callee-fails), or the mistake where it is seen in its output.
        if number == 0:
            assert named == {wanted}, exercise.name
        else:
            assert named and named <= {wanted, "callee-fails"}, (exercise.name, named)
            assert {c.callee for c in failing if c.diagnosis.id == "callee-fails"} <= {
                e.name for e in result.exercises[:number]}, exercise.name
        assert all(c.diagnosis for c in failing if c.scored), exercise.name


def test_attention_without_positions_is_named(make_submission):
    text = SOLUTION.replace("    H = add_positional_encoding(X)\n", "    H = X\n")
    result = grading.grade(make_submission(text, name="carol_positional_encoding"),
                           registry.get("positional_encoding"), OPTIONS)
    attention = result.exercises[2]
    assert attention.score == 0.0
    assert {c.diagnosis.id for c in attention.checks if c.diagnosis} == {"positions-not-added"}
    assert result.score == 3.0
