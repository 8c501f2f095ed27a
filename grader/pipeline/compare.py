"""Comparing what a student's code returned with the reference, in pytest-approx style.

Pure functions of arrays: no file system, no processes. The order of the checks is the order
in which a student should fix things: the type, then the shape, then NaN and inf, then values.

A hidden case's message says only what the student's own output shows (its type, its shape,
that it contains NaN) and that its values differ: no count, difference, index or tolerance, so
that probing submissions learn nothing about the expected values beyond pass or fail.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from grader.results import ArrayView, Verdict

MAX_VIEW_SIDE = 40
MAX_SLICES = 3
"""The most 2-D slices of an output of 3 or more dimensions that a report draws."""
TABLE_ROWS = 5
HIDDEN_VALUES = "values differ from the expected ones (hidden case: details are not shown)"
HIDDEN_NAN = "contains NaN (an overflow in exp()?)"


@dataclass(frozen=True)
class Comparison:
    """Outcome of comparing one returned value with its reference outputs."""

    passed: bool
    """Every output matched within tolerance."""
    message: str
    """Empty when passed; otherwise what is wrong, first problem first."""
    obtained: tuple[np.ndarray, ...] | None = None
    """The returned outputs as float arrays, when they could be converted."""
    views: tuple[ArrayView, ...] = ()
    """Expected and obtained side by side, for outputs that can be drawn."""
    verdict: Verdict = Verdict.PASSED
    """The first problem, in a word: the type, then the shape, then the values."""


def _unsupported(value: Any) -> bool:
    """Whether `value` stands for an object the worker could not send back (the protocol's
    `Unsupported`). None exists before the protocol is loaded, so a value called in this
    process (`check()`) is judged without loading it."""
    protocol = sys.modules.get("grader.sandbox.inside.protocol")
    return protocol is not None and isinstance(value, protocol.Unsupported)


MOST_COUNTED = 10
"""The most values of a returned tuple or list that a message counts: a count is a number the
student's code chooses, and on a hidden case it could spell out the case's inputs."""


def describe_type(value: Any, reveal: bool = True) -> str:
    """A short name for what was returned: "a str", "a tuple of 3 values", "None"; without
    `reveal` (a hidden case), an array by its number of dimensions, not its shape."""
    if value is None:
        return "None"
    if _unsupported(value):
        return f"a {value.type_name}"
    if isinstance(value, (tuple, list)):
        count = (str(len(value)) if len(value) <= MOST_COUNTED
                 else f"more than {MOST_COUNTED}")
        return f"a {type(value).__name__} of {count} values"
    if isinstance(value, np.ndarray):
        return (f"an array of shape {value.shape}" if reveal
                else f"an array of {value.ndim} dimensions")
    return f"a {type(value).__name__}"


def as_float_array(value: Any) -> tuple[np.ndarray | None, str]:
    """Convert a returned value to a float array, or say why it cannot be."""
    if value is None or _unsupported(value) or isinstance(value, (dict, str)):
        return None, f"returned {describe_type(value)}, which is not an array of numbers"
    try:
        array = np.asarray(value)
        if array.dtype.kind == "c":
            return None, "returned complex numbers; expected real ones"
        return array.astype(np.float64), ""
    except (ValueError, TypeError):
        return None, (f"returned {describe_type(value)} that does not convert to an array of "
                      "numbers (are the parts of different shapes?)")


def split_outputs(value: Any, names: tuple[str, ...], reveal: bool = True
                  ) -> tuple[list[Any] | None, str]:
    """Split a return value into one item per expected output."""
    if len(names) == 1:
        return [value], ""
    if isinstance(value, (tuple, list)) and len(value) == len(names):
        return list(value), ""
    wanted = f"a tuple of {len(names)} values ({', '.join(names)})"
    return None, f"returned {describe_type(value, reveal)}; expected {wanted}"


HIDDEN_SHAPE = ("the wrong shape: expected {expected}. Your shape has sizes that are neither "
                "in the expected shape nor in the inputs, so it is not shown (a hidden case).")


def shape_problem(obtained: np.ndarray, expected: np.ndarray, reveal: bool = True,
                  sizes: frozenset[int] = frozenset()) -> str:
    """Why two shapes differ, with a hint when the difference is a familiar one.

    Without `reveal` (a hidden case), the student's shape is said only when each of its sizes
    is 1, one of the expected shape's or one of `sizes` (the case's inputs'): a shape is
    numbers the student's code chooses, and `(0, 652, 175, 1664)` could spell out a hidden
    case's inputs."""
    if reveal or set(obtained.shape) <= {*expected.shape, *sizes, 1}:
        message = f"shape {obtained.shape}, expected {expected.shape}"
    else:
        message = HIDDEN_SHAPE.format(expected=expected.shape)
    if obtained.ndim == 2 and obtained.shape[::-1] == expected.shape:
        return message + " (it looks transposed)"
    if obtained.size == expected.size:
        return message + " (same number of elements: a reshape, a missing keepdims, or an " \
                         "extra axis?)"
    return message


def non_finite_problem(obtained: np.ndarray, expected: np.ndarray, reveal: bool = True) -> str:
    """Say where NaN or inf appear that the reference does not have.

    Without `reveal`, only whether the output contains NaN, which the reference never does
    (NaN is never close to anything): where the reference is infinite is not said.
    """
    if not reveal:
        return HIDDEN_NAN if np.isnan(obtained).any() else ""
    expected = np.asarray(expected, dtype=np.float64)  # a boolean reference has no sign
    parts = []
    nan = np.isnan(obtained) & ~np.isnan(expected)
    if nan.any():
        parts.append(f"{int(nan.sum())} NaN value(s)")
    inf = np.isinf(obtained) & ~(np.isinf(expected) & (np.sign(obtained) == np.sign(expected)))
    if inf.any():
        parts.append(f"{int(inf.sum())} infinite value(s)")
    if not parts:
        return ""
    where = " where the reference is finite"
    if np.isinf(expected).any():  # a mask: -inf is expected somewhere, so no guess about exp()
        return " and ".join(parts) + " where the reference has other values"
    return " and ".join(parts) + where + " (an overflow in exp()?)"


def value_problem(obtained: np.ndarray, expected: np.ndarray, rtol: float, atol: float,
                  reveal: bool, boolean: bool = False) -> tuple[str, np.ndarray]:
    """pytest-approx style report of mismatched values, and the mismatch mask.

    Without `reveal`, one sentence that gives nothing away (see the module's docstring).
    A `boolean` output (the code returned booleans, and the reference holds only 0 and 1:
    references are stored as floats) is said in True and False, never as a difference of 1.
    """
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.isclose(obtained, expected, rtol=rtol, atol=atol)
        mismatched = ~close
        count = int(mismatched.sum())
        if count == 0:
            return "", mismatched
        if not reveal:
            return HIDDEN_VALUES, mismatched
        if boolean and np.isin(expected, (0, 1)).all():
            return _boolean_problem(obtained, expected, mismatched, count), mismatched
        both_finite = np.isfinite(obtained) & np.isfinite(expected) & mismatched
        diff = np.abs(obtained - expected)
        lines = ["values differ from the expected ones.", tolerance(rtol, atol),
                 f"Mismatched elements: {count} / {expected.size}"]
        if both_finite.any():
            finite_diff = np.where(both_finite, diff, 0.0)
            relative = np.where(both_finite & (expected != 0),
                                finite_diff / np.where(expected == 0, 1, np.abs(expected)), 0.0)
            lines.append(f"Largest difference: {finite_diff.max():.6g}")
            lines.append(f"Largest difference for its size: {proportion(relative.max())}")
        order = np.argsort(np.where(mismatched, np.nan_to_num(diff, nan=np.inf, posinf=np.inf),
                                    -1.0), axis=None)[::-1][:TABLE_ROWS]
        lines.append(f"  {'Index':<12} | {'Obtained':<14} | Expected")
        for flat in order:
            index = np.unravel_index(flat, expected.shape)
            if not mismatched[index]:
                break
            where = str(tuple(int(i) for i in index))
            lines.append(f"  {where:<12} | {obtained[index]:<14.6g} | {expected[index]:.6g}")
    return "\n".join(lines), mismatched


def decimal(value: float) -> str:
    """A small positive number as a student writes it, with its leading zero and no
    exponent: 0.000001, never 1e-06."""
    return np.format_float_positional(value, trim="-")


def tolerance(rtol: float, atol: float) -> str:
    """The comparison's tolerance in words: how close a value must be to count as equal."""
    return (f"A value counts as close when it is within {decimal(rtol)} times the expected "
            f"value, plus {decimal(atol)}.")


def proportion(relative: float) -> str:
    """A relative difference in words: "2.5 times the expected value", "3% of it"."""
    if relative >= 1:
        return f"{relative:.4g} times the expected value"
    return f"{relative * 100:.3g}% of the expected value"


def _truth(value: Any) -> str:
    """A value said as a boolean where it is one (0 or 1), else as the number it is."""
    return {0.0: "False", 1.0: "True"}.get(float(value), f"{value:.6g}")


def _boolean_problem(obtained: np.ndarray, expected: np.ndarray, mismatched: np.ndarray,
                     count: int) -> str:
    """A boolean output's mismatches said in its own terms ("False where True was
    expected"), never as a difference of 0 and 1."""
    wanted = expected.astype(bool)
    counts = ((int(np.sum(mismatched & wanted & (obtained == 0))),
               "False where True was expected"),
              (int(np.sum(mismatched & ~wanted & (obtained == 1))),
               "True where False was expected"))
    parts = [f"{n} {what}" for n, what in counts if n]
    lines = ["values differ from the expected ones (a boolean output).",
             f"Mismatched elements: {count} / {expected.size}", "; ".join(parts)]
    lines.append(f"  {'Index':<12} | {'Obtained':<14} | Expected")
    shown = (i for i in np.ndindex(expected.shape) if mismatched[i])
    for index in itertools.islice(shown, TABLE_ROWS):
        where = str(tuple(int(i) for i in index))
        lines.append(f"  {where:<12} | {_truth(obtained[index]):<14} | "
                     f"{_truth(expected[index])}")
    return "\n".join(lines)


def _views(label: str, obtained: np.ndarray, expected: np.ndarray,
           mismatched: np.ndarray, axes: tuple[str, str] | None) -> list[ArrayView]:
    """An output as heatmaps: a 2-D one whole; one of 3 or more dimensions as its 2-D slices
    over the last two axes, the first `MAX_SLICES` that hold a differing cell, each labelled
    by its index ("[1, :, :]")."""
    arrays = [np.atleast_2d(a) for a in (expected, obtained, mismatched)]
    if max(arrays[0].shape[-2:]) > MAX_VIEW_SIDE:
        return []
    rows, columns = axes or ("row", "column")
    if arrays[0].ndim == 2:
        return [ArrayView(arrays[0], arrays[1], arrays[2].astype(bool), label, rows, columns)]
    leading = arrays[0].shape[:-2]
    count = int(np.prod(leading))
    differing = np.flatnonzero(arrays[2].reshape(count, -1).any(axis=1))[:MAX_SLICES]
    views = []
    for flat in differing:
        index = tuple(int(i) for i in np.unravel_index(flat, leading))
        name = "[" + ", ".join([*map(str, index), ":", ":"]) + "]"
        views.append(ArrayView(arrays[0][index], arrays[1][index],
                               arrays[2][index].astype(bool), label, rows, columns, name, count))
    return views


def compare(value: Any, expected: tuple[np.ndarray, ...], names: tuple[str, ...],
            rtol: float, atol: float, reveal: bool,
            axes: Mapping[str, tuple[str, str]] | None = None,
            sizes: frozenset[int] = frozenset()) -> Comparison:
    """Compare a return value with the reference outputs.

    `sizes` are the sizes of the case's inputs, which a hidden case's message may say of the
    student's shape (`shape_problem`).
    `reveal` allows expected values in the message (public cases only); `axes` names the
    rows and columns of each output for its heatmap.
    """
    items, problem = split_outputs(value, names, reveal)
    if items is None:
        return Comparison(False, problem, verdict=Verdict.WRONG_TYPE)
    obtained_all: list[np.ndarray] = []
    problems: list[str] = []
    views: list[ArrayView] = []
    verdict = Verdict.PASSED
    for name, item, reference in zip(names, items, expected, strict=True):
        prefix = f"{name}: " if len(names) > 1 else ""
        obtained, problem = as_float_array(item)
        if obtained is None:
            return Comparison(False, prefix + problem, verdict=Verdict.WRONG_TYPE)
        obtained_all.append(obtained)
        if obtained.shape != reference.shape:
            problems.append(prefix + shape_problem(obtained, reference, reveal, sizes))
            verdict = Verdict.WRONG_SHAPE
            continue
        text, mismatched = value_problem(obtained, reference, rtol, atol, reveal,
                                         boolean=np.asarray(item).dtype.kind == "b")
        special = non_finite_problem(obtained, reference, reveal)
        if text:
            problems.append(prefix + (special + "\n" if special else "") + text)
            if verdict is Verdict.PASSED:
                verdict = Verdict.WRONG_VALUES
            if reveal:
                views += _views(name, obtained, reference, mismatched, (axes or {}).get(name))
    return Comparison(not problems, "\n".join(problems), tuple(obtained_all), tuple(views),
                      verdict)
