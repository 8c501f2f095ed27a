"""Comparison messages: type, then shape, then NaN/inf, then a pytest-approx style table."""

from __future__ import annotations

import numpy as np

from grader import compare
from grader.sandbox.protocol import Unsupported

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
        "values differ (rtol=1e-06, atol=1e-08)",
        "Mismatched elements: 2 / 4",
        "Max absolute difference: 0.2",
        "Max relative difference: 0.666667",
        "  Index        | Obtained       | Expected",
        "  (1, 0)       | 0.5            | 0.3",
        "  (0, 1)       | 0.25           | 0.2",
    ]
    (view,) = result.views
    assert view.mismatched.tolist() == [[False, True], [True, False]]


def test_hidden_cases_never_show_expected_values():
    obtained = E[0] * 2
    result = compare.compare(obtained, E, ("output",), 1e-6, 1e-8, reveal=False)
    assert result.message == "values differ (rtol=1e-06, atol=1e-08)\nMismatched elements: 4 / 4"
    assert result.views == ()
    assert "0.3" not in result.message


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
