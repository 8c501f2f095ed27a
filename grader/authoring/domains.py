"""What the master's own example calls say about each argument: its kind (an integer, a
boolean or a float array, None, a number, something else), the sizes the arguments share,
the range of integer values and the size that bounds them. `skeleton` draws hidden cases from
it; `validate` checks that a declaration's cases stay inside it. Pure: data in, data out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from grader.model import Inputs

DRAWN = ("floats", "integers", "booleans")
"""The kinds of argument a hidden case draws afresh."""


def kind(value: Any) -> str:
    """The kind of one argument: floats, integers, booleans (arrays), none, number, or
    other (a string, a list, a tuple, a mapping, complex numbers: kept as the master's)."""
    if value is None:
        return "none"
    if isinstance(value, np.ndarray):
        return {"f": "floats", "i": "integers", "u": "integers", "b": "booleans"}.get(
            value.dtype.kind, "other")
    if type(value) in (bool, int, float):
        return "number"
    return "other"


def pattern(args: Inputs) -> tuple[tuple[str, int], ...]:
    """The calls that one hidden case stands for share this: each argument's kind and number
    of dimensions."""
    return tuple((kind(a), a.ndim if isinstance(a, np.ndarray) else 0) for a in args)


@dataclass(frozen=True)
class Size:
    """A size that hidden cases draw once and every axis in `axes` takes."""

    name: str
    """Its name in the skeleton: the first axis's, as `X.shape[2]`."""
    axes: tuple[tuple[int, int], ...]
    """(argument position, axis) of each axis of that size in every example call; axis -1:
    the argument is an integer that is the size itself."""
    low: int
    """The smallest value hidden cases draw: twice the examples' smallest."""
    high: int
    """The largest value hidden cases draw: three times the examples' largest."""

    @property
    def step(self) -> int:
        """Hidden cases draw multiples of the examples' sizes (their greatest common divisor),
        so that a size the solution needs even, or divisible by the heads, stays so."""
        return math.gcd(*self.seen)
    seen: tuple[int, ...]
    """Its value in each example call."""


@dataclass(frozen=True)
class Bound:
    """Integer values of one argument: from `low` to `high` (a number or a size's name)."""

    low: int
    high: int | str
    why: str
    """What was inferred, in words, for a comment of the skeleton."""


def sizes(params: Sequence[str], calls: Sequence[Inputs]) -> list[Size]:
    """The sizes of the array arguments: axes that are equal in every example call are one,
    drawn from twice the smallest example's size to three times the largest, in multiples of
    them: never the examples' own sizes, so that code that reads a size from the notebook
    (a global `d = 2`) instead of its inputs fails a hidden case. An axis of size 1 in every
    call stays 1: it is one to broadcast (a mask's (1, 1, seq, seq)), not a size."""
    groups: dict[tuple[int, ...], list[tuple[int, int]]] = {}
    first = calls[0]
    for position, value in enumerate(first):
        if kind(value) in DRAWN:
            for axis in range(value.ndim):
                key = tuple(int(call[position].shape[axis]) for call in calls)
                groups.setdefault(key, []).append((position, axis))
    if not groups:  # no array: each integer of 2 or more is a size, as subsequent_mask(5)
        for position in int_sizes(first):
            key = tuple(int(call[position]) for call in calls)
            groups.setdefault(key, []).append((position, -1))
    return [Size(params[axes[0][0]] if axes[0][1] < 0 else
                 f"{params[axes[0][0]]}.shape[{axes[0][1]}]", tuple(axes),
                 *((1, 1) if set(seen) == {1} else (2 * min(seen), 3 * max(seen))), seen)
            for seen, axes in groups.items()]


def bound(position: int, calls: Sequence[Inputs], found: Sequence[Size]) -> Bound:
    """The values an integer array argument takes: between the smallest and the largest the
    examples use, and below the size of another argument's axis that bounds it in every call
    (up to that size where some example reaches it, else up to one less)."""
    values = [np.asarray(call[position]) for call in calls]
    low = min(int(v.min()) for v in values if v.size)
    high = max(int(v.max()) for v in values if v.size)
    candidates = []
    for size in found:
        if any(p == position for p, _ in size.axes):
            continue
        tops = [int(v.max()) if v.size else 0 for v in values]
        if all(top <= seen for top, seen in zip(tops, size.seen, strict=True)):
            reaches = any(top == seen for top, seen in zip(tops, size.seen, strict=True))
            slack = sum(seen - top for top, seen in zip(tops, size.seen, strict=True))
            candidates.append((slack, -size.axes[0][1], size, reaches))
    if not candidates:
        return Bound(low, high, f"integers from {low} to {high}, as in the master's calls")
    _, _, size, reaches = min(candidates, key=lambda c: c[:2])
    limit = size.name if reaches else f"{size.name} - 1"
    why = (f"integers from {low} up to {limit}, as in the master's calls" +
           ("" if reaches else f" (never {size.name} there; write \"{size.name}\" if they may "
            "reach it)"))
    return Bound(low, limit, why)


def int_sizes(args: Inputs) -> list[int]:
    """The positions of the integers of 2 or more in a call that passes no array: sizes to
    draw (`subsequent_mask(5)`), where a call with arrays takes its sizes from them."""
    if any(kind(a) in DRAWN for a in args):
        return []
    return [i for i, a in enumerate(args) if type(a) is int and a >= 2]


def lower_triangular(value: Any) -> bool:
    """Whether a boolean array's last two axes are a square lower triangle, diagonal
    included, in every leading index (a causal mask)."""
    if not isinstance(value, np.ndarray) or value.dtype.kind != "b" or value.ndim < 2 \
            or value.shape[-1] != value.shape[-2] or value.shape[-1] < 2:
        return False
    return bool(np.array_equal(value, np.broadcast_to(
        np.tril(np.ones(value.shape[-2:], dtype=bool)), value.shape)))


def each_row(value: Any) -> bool:
    """Whether each row of a boolean array (along its last axis) holds a True: every query
    sees some key."""
    return bool(np.asarray(value).any(axis=-1).all()) if np.ndim(value) else bool(value)


def outside(examples: Sequence[Any], value: Any) -> str:
    """Why `value` lies outside the domain of the master's example values for its argument
    (empty when it does not): floats where the examples pass integers, other than booleans
    where they pass booleans, negative values where they are never negative."""
    seen = [example for example in examples if example is not None]
    if not seen or value is None:
        return ""
    kinds = {kind(example) for example in seen}
    mine = kind(value)
    if kinds == {"booleans"} and mine != "booleans":
        return "is not a boolean array, where the master's examples pass booleans"
    if kinds == {"integers"}:
        if mine != "integers":
            dtypes = ", ".join(sorted({str(example.dtype) for example in seen}))
            if mine == "floats":
                fractional = bool(np.any(np.asarray(value) % 1))
                what = "fractional floats" if fractional else "floats"
                if np.asarray(value).size and np.min(value) < 0:
                    what += " and negative values"
                return f"holds {what}, where the master's examples pass integers ({dtypes})"
            return f"is not an integer array, where the master's examples pass one ({dtypes})"
        if all(example.size == 0 or example.min() >= 0 for example in seen) and \
                value.size and value.min() < 0:
            return (f"holds negative values (down to {int(value.min())}), where the master's "
                    "examples are never negative")
    return ""
