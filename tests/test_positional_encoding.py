"""The fourth assignment, `positional_encoding`: each mistake students make with sinusoidal
encodings is named, in the encoding itself and in the two exercises built on it, and the
solution scores full marks. The code below is written as students write it, not as the
variants are."""

from __future__ import annotations

import pytest

from grader.pipeline import grading
from grader.sandbox.limits import Limits
from grader.spec import registry
from tests.conftest import ROOT

OPTIONS = grading.Options(limits=Limits(cell_timeout=10, call_timeout=10))
SOLUTION = (ROOT / "solutions" / "positional_encoding.py").read_text()
VECTORISED = '''    positions = np.arange(seq_len)[:, np.newaxis]
    frequencies = 1.0 / np.power(10000.0, np.arange(0, d_model, 2) / d_model)
    angles = positions * frequencies[np.newaxis, :]
    encoding = np.zeros((seq_len, d_model))
    encoding[:, 0::2] = np.sin(angles)
    encoding[:, 1::2] = np.cos(angles)
'''
LOOP = '''    encoding = np.zeros((seq_len, d_model))
    for pos in range(seq_len):
        for i in range(0, d_model, 2):
            encoding[pos, i] = np.sin(pos / (10000 ** (i / d_model)))
            encoding[pos, i + 1] = np.cos(pos / (10000 ** (i / d_model)))
'''
MISTAKES = {
    "sin-cos-swapped": VECTORISED.replace("np.sin(angles)", "np.COS(angles)")
    .replace("np.cos(angles)", "np.sin(angles)").replace("np.COS", "np.cos"),
    "wrong-exponent-base": VECTORISED.replace("10000.0", "1000.0"),
    # PyTorch's div_term without its log(10000): exp(-2i/d) has the base e.
    "wrong-exponent-base (e)": VECTORISED.replace(
        "1.0 / np.power(10000.0, np.arange(0, d_model, 2) / d_model)",
        "np.exp(np.arange(0, d_model, 2) * (-1.0 / d_model))"),
    "positions-from-one": VECTORISED.replace("np.arange(seq_len)", "np.arange(1, seq_len + 1)"),
    "frequency-wrong-axis": LOOP.replace("pos / (10000 ** (i / d_model))",
                                         "i / (10000 ** (pos / d_model))"),
    "exponent-per-column": LOOP.replace("np.cos(pos / (10000 ** (i / d_model)))",
                                        "np.cos(pos / (10000 ** ((i + 1) / d_model)))"),
}


def with_encoding(body: str) -> str:
    """The solution module with the body of sinusoidal_encoding replaced."""
    start = SOLUTION.index('    positions = np.arange(seq_len)[:, np.newaxis]')
    end = SOLUTION.index("    return encoding")
    return SOLUTION[:start] + body + SOLUTION[end:]


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
    for exercise in result.exercises:
        failing = [c for c in exercise.checks if not c.passed]
        assert failing and exercise.score == 0.0, exercise.name
        assert {c.diagnosis.id for c in failing if c.diagnosis} == {wanted}, exercise.name
        assert all(c.diagnosis for c in failing if c.scored), exercise.name


def test_attention_without_positions_is_named(make_submission):
    text = SOLUTION.replace("    H = add_positional_encoding(X)\n", "    H = X\n")
    result = grading.grade(make_submission(text, name="carol_positional_encoding"),
                           registry.get("positional_encoding"), OPTIONS)
    attention = result.exercises[2]
    assert attention.score == 0.0
    assert {c.diagnosis.id for c in attention.checks if c.diagnosis} == {"positions-not-added"}
    assert result.score == 3.0
