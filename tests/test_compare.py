"""Comparison messages: type, then shape, then NaN/inf, then a pytest-approx style table."""

from __future__ import annotations

import re

import numpy as np
import pytest

from grader.pipeline import compare
from grader.sandbox.inside.protocol import Unsupported

E = (np.array([[0.1, 0.2], [0.3, 0.4]]),)


def test_equal_within_tolerance_passes():
    result = compare.compare(E[0] + 1e-12, E, ("output",), 1e-6, 1e-8, reveal=True)
    assert result.passed and result.message == ""


def test_type_is_named():
    result = compare.compare(Unsupported("builtins.str"), E, ("output",), 1e-6, 1e-8, True)
    assert result.message == "returned a builtins.str, which is not an array of numbers"
    assert compare.compare(None, E, ("output",), 1e-6, 1e-8, True).message == \
        "returned None, which is not an array of numbers"


def test_tuple_expected():
    expected = (np.eye(2), np.ones((2, 3)))
    result = compare.compare(np.eye(2), expected, ("weights", "context"), 1e-6, 1e-8, True)
    assert result.message == ("returned an array of shape (2, 2); expected a tuple of 2 values "
                              "(weights, context)")
    ok = compare.compare([np.eye(2), np.ones((2, 3))], expected, ("weights", "context"),
                         1e-6, 1e-8, True)
    assert ok.passed


def test_shape_first_with_a_transpose_hint():
    result = compare.compare(np.zeros((3, 2)), (np.zeros((2, 3)),), ("output",), 1e-6, 1e-8,
                             True)
    assert result.message == "shape (3, 2), expected (2, 3) (it looks transposed)"
    flat = compare.compare(np.zeros(4), E, ("output",), 1e-6, 1e-8, True)
    assert flat.message.startswith("shape (4,), expected (2, 2) (same number of elements")


def test_values_table_for_public_cases():
    obtained = E[0].copy()
    obtained[1, 0] = 0.5
    obtained[0, 1] = 0.25
    result = compare.compare(obtained, E, ("output",), 1e-6, 1e-8, reveal=True)
    assert result.message.splitlines() == [
        "values differ from the expected ones.",
        "A value counts as close when it is within 0.000001 times the expected value, plus "
        "0.00000001.",
        "Mismatched elements: 2 / 4",
        "Largest difference: 0.2",
        "Largest difference for its size: 66.7% of the expected value",
        "  Index        | Obtained       | Expected",
        "  (1, 0)       | 0.5            | 0.3",
        "  (0, 1)       | 0.25           | 0.2",
    ]
    (view,) = result.views
    assert view.mismatched.tolist() == [[False, True], [True, False]]


def test_hidden_cases_never_show_expected_values():
    obtained = E[0] * 2
    result = compare.compare(obtained, E, ("output",), 1e-6, 1e-8, reveal=False)
    assert result.message == ("values differ from the expected ones (hidden case: details are "
                              "not shown)")
    assert result.views == ()


EXPECTED = np.linspace(-1.0, 1.0, 15).reshape(3, 5)
EXPECTED_PAIR = (np.full((3, 3), 1 / 3), EXPECTED)


def _nudged(index: tuple[int, int], by: float) -> np.ndarray:
    wrong = EXPECTED.copy()
    wrong[index] += by
    return wrong


def _with(value: float, index: tuple[int, int] = (1, 2)) -> np.ndarray:
    wrong = EXPECTED.copy()
    wrong[index] = value
    return wrong


WRONG = {  # a probing submission's guesses, each wrong in its own way
    "one element off by a little": _nudged((0, 0), 1e-3),
    "one element off by a lot": _nudged((2, 4), 7.0),
    "one element off by its own size": _nudged((1, 1), EXPECTED[1, 1]),
    "all wrong": EXPECTED * 2 + 1,
    "all zero": np.zeros((3, 5)),
    "negated": -EXPECTED,
    "one NaN": _with(np.nan),
    "all NaN": np.full((3, 5), np.nan),
    "one inf": _with(np.inf),
    "one -inf": _with(-np.inf),
    "NaN and inf": _with(np.inf, (0, 1)) + _with(np.nan) - EXPECTED,
    "huge values": EXPECTED * 1e300,
    "transposed": EXPECTED.T.copy(),
    "wrong shape": np.zeros((3, 4)),
    "flat": EXPECTED.ravel(),
    "one more row": np.vstack([EXPECTED, EXPECTED[:1]]),
    "integers": np.arange(15).reshape(3, 5),
    "a scalar": 0.5,
}


def _numbers_in(message: str, *arrays: np.ndarray) -> list[str]:
    """The digits of a message, once the shapes it may name are taken out."""
    for array in arrays:
        message = message.replace(str(np.shape(array)), "<shape>")
    return re.findall(r"\d", message)


@pytest.mark.parametrize("wrong", sorted(WRONG))
def test_hidden_messages_hold_no_number_but_shapes(wrong):
    result = compare.compare(WRONG[wrong], (EXPECTED,), ("output",), 1e-6, 1e-8, reveal=False)
    assert not result.passed and result.views == ()
    assert _numbers_in(result.message, WRONG[wrong], EXPECTED) == [], result.message
    pair = compare.compare((np.full((3, 3), 1 / 3), WRONG[wrong]), EXPECTED_PAIR,
                           ("weights", "context"), 1e-6, 1e-8, reveal=False)
    assert not pair.passed
    assert _numbers_in(pair.message, WRONG[wrong], EXPECTED) == [], pair.message
    # The same answers on a public case do show numbers, where they help: the scan finds them.
    public = compare.compare(WRONG[wrong], (EXPECTED,), ("output",), 1e-6, 1e-8, reveal=True)
    if np.shape(WRONG[wrong]) == EXPECTED.shape:
        assert _numbers_in(public.message, WRONG[wrong], EXPECTED) != []
    elif set(np.shape(WRONG[wrong])) <= {*EXPECTED.shape, 1}:
        assert public.message == result.message
    else:  # sizes of the code's own choosing: said on a public case only (#21)
        assert public.message.startswith(f"shape {np.shape(WRONG[wrong])}, expected (3, 5)")
        assert result.message.startswith(compare.HIDDEN_SHAPE.format(expected=(3, 5)))


@pytest.mark.parametrize("wrong, message", [
    ("one element off by a little", compare.HIDDEN_VALUES),
    ("all wrong", compare.HIDDEN_VALUES),
    ("one NaN", "contains NaN (an overflow in exp()?)\n" + compare.HIDDEN_VALUES),
    ("all NaN", "contains NaN (an overflow in exp()?)\n" + compare.HIDDEN_VALUES),
    ("one inf", compare.HIDDEN_VALUES),
    ("wrong shape", compare.HIDDEN_SHAPE.format(expected=(3, 5))),
    ("transposed", "shape (5, 3), expected (3, 5) (it looks transposed)"),
    ("a scalar", "shape (), expected (3, 5)"),
])
def test_hidden_messages_say_what_the_output_shows(wrong, message):
    result = compare.compare(WRONG[wrong], (EXPECTED,), ("output",), 1e-6, 1e-8, reveal=False)
    assert result.message == message
    pair = compare.compare((np.zeros((3, 3)), WRONG[wrong]), EXPECTED_PAIR,
                           ("weights", "context"), 1e-6, 1e-8, reveal=False)
    assert pair.message == "weights: " + compare.HIDDEN_VALUES + "\ncontext: " + message


def test_a_hidden_shape_is_said_when_its_sizes_are_the_inputs_or_the_expected_ones():
    """A shape is numbers the code chooses: on a hidden case, (0, 652, 175, 1664) could spell
    out the inputs (#21), so only sizes the case already has are said."""
    for sizes, said in ((frozenset(), False), (frozenset({3, 4}), True),
                        (frozenset({3, 7}), False)):
        result = compare.compare(np.zeros((3, 4)), (EXPECTED,), ("output",), 1e-6, 1e-8,
                                 reveal=False, sizes=sizes)
        assert (result.message == "shape (3, 4), expected (3, 5)") is said, sizes
    spelled = compare.compare(np.zeros((0, 652, 175, 1664)), (EXPECTED,), ("output",), 1e-6,
                              1e-8, reveal=False, sizes=frozenset({3, 5}))
    assert spelled.message == ("the wrong shape: expected (3, 5). Your shape has sizes that are "
                               "neither in the expected shape nor in the inputs, so it is not "
                               "shown (a hidden case).")


def test_hidden_infinities_that_match_say_nothing_of_where_the_reference_is_infinite():
    mask = np.triu(np.full((3, 3), -np.inf), 1)
    wrong = mask.copy()
    wrong[0, 0] = 1.0
    result = compare.compare(wrong, (mask,), ("output",), 1e-6, 1e-8, reveal=False)
    assert result.message == compare.HIDDEN_VALUES
    nan_free = compare.compare(np.where(np.isinf(mask), -1e9, 0.0), (mask,), ("output",),
                               1e-6, 1e-8, reveal=False)
    assert nan_free.message == compare.HIDDEN_VALUES


def test_nan_and_inf_are_named():
    obtained = E[0].copy()
    obtained[0, 0] = np.nan
    obtained[1, 1] = np.inf
    result = compare.compare(obtained, E, ("output",), 1e-6, 1e-8, reveal=True)
    first = result.message.splitlines()[0]
    assert first == ("1 NaN value(s) and 1 infinite value(s) where the reference is finite "
                     "(an overflow in exp()?)")


def test_matching_infinities_are_equal():
    mask = np.triu(np.full((3, 3), -np.inf), 1)
    assert compare.compare(mask.copy(), (mask,), ("output",), 1e-6, 1e-8, True).passed
    wrong = np.where(np.isinf(mask), -1e9, 0.0)
    result = compare.compare(wrong, (mask,), ("output",), 1e-6, 1e-8, True)
    assert "Mismatched elements: 3 / 9" in result.message


def test_lists_and_ints_convert():
    assert compare.compare([[0.1, 0.2], [0.3, 0.4]], E, ("output",), 1e-6, 1e-8, True).passed
    ragged = compare.compare([[1.0], [1.0, 2.0]], E, ("output",), 1e-6, 1e-8, True)
    assert "does not convert to an array of numbers" in ragged.message


def test_infinities_in_a_mask_are_not_blamed_on_exp():
    mask = np.triu(np.full((3, 3), -np.inf), 1)
    wrong = np.tril(np.full((3, 3), -np.inf), -1)  # the other triangle
    message = compare.compare(wrong, (mask,), ("output",), 1e-6, 1e-8, True).message
    assert message.splitlines()[0] == ("3 infinite value(s) where the reference has other "
                                       "values")
    assert "exp()" not in message


def test_a_boolean_output_is_said_in_true_and_false():
    expected = np.tril(np.ones((3, 3)))  # references are stored as floats
    obtained = expected.T.astype(bool)
    result = compare.compare(obtained, (expected,), ("mask",), 1e-6, 1e-8, reveal=True)
    assert result.message.splitlines() == [
        "values differ from the expected ones (a boolean output).",
        "Mismatched elements: 6 / 9",
        "3 False where True was expected; 3 True where False was expected",
        "  Index        | Obtained       | Expected",
        "  (0, 1)       | True           | False",
        "  (0, 2)       | True           | False",
        "  (1, 0)       | False          | True",
        "  (1, 2)       | True           | False",
        "  (2, 0)       | False          | True",
    ]
    assert "Largest difference" not in result.message
    numbers = compare.compare(obtained.astype(float), (expected,), ("mask",), 1e-6, 1e-8, True)
    assert "Largest difference: 1" in numbers.message  # floats returned: said as numbers
