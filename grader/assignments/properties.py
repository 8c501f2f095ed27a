"""Properties that explain a wrong output better than its values do.

Each factory returns a check `(inputs, obtained, expected) -> (id, message) | None`, run on a
failing output. Like variants, they run in the grader's process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from grader.assignments.variants import CATALOGUE

Finding = tuple[str, str] | None
Property = Callable[[tuple[Any, ...], tuple[np.ndarray, ...], tuple[np.ndarray, ...]], Finding]


def sums_to_one(output: int = 0, axis: int = -1, what: str = "row") -> Property:
    """The output's slices along `axis` must each sum to 1."""

    def check(inputs: tuple[Any, ...], obtained: tuple[np.ndarray, ...],
              expected: tuple[np.ndarray, ...]) -> Finding:
        with np.errstate(invalid="ignore"):
            sums = np.sum(obtained[output], axis=axis)
        finite = sums[np.isfinite(sums)]
        if finite.size and not np.allclose(finite, 1.0, atol=1e-4):
            return ("weights-not-normalised",
                    f"{CATALOGUE['weights-not-normalised']} Each {what} should sum to 1; "
                    f"yours sum to between {finite.min():.4g} and {finite.max():.4g}.")
        return None

    return check


def no_future(output: int = 0) -> Property:
    """Causal weights: nothing above the diagonal."""

    def check(inputs: tuple[Any, ...], obtained: tuple[np.ndarray, ...],
              expected: tuple[np.ndarray, ...]) -> Finding:
        weights = obtained[output]
        if weights.ndim < 2 or weights.shape[-1] != weights.shape[-2]:
            return None
        above = np.triu(np.nan_to_num(np.abs(weights), nan=1.0), k=1)
        if (above > 1e-9).any():
            count = int((above > 1e-9).sum())
            return ("future-leak", f"{CATALOGUE['future-leak']} {count} weight(s) above the "
                    "diagonal are not 0.")
        return None

    return check


def finite_for_large_inputs(threshold: float = 50.0) -> Property:
    """NaN or inf where the reference is finite, on inputs large enough to overflow exp()."""

    def check(inputs: tuple[Any, ...], obtained: tuple[np.ndarray, ...],
              expected: tuple[np.ndarray, ...]) -> Finding:
        bad = any(np.any(~np.isfinite(o) & np.isfinite(e))
                  for o, e in zip(obtained, expected, strict=True) if o.shape == e.shape)
        largest = max((float(np.max(np.abs(a))) for a in inputs
                       if isinstance(a, np.ndarray) and a.size), default=0.0)
        if bad and largest >= threshold:
            return ("unstable-softmax", CATALOGUE["unstable-softmax"])
        return None

    return check


def outputs_in_another_order() -> Property:
    """Right values, returned in the wrong order (for example (Q, V, K))."""

    def check(inputs: tuple[Any, ...], obtained: tuple[np.ndarray, ...],
              expected: tuple[np.ndarray, ...]) -> Finding:
        if len(obtained) != len(expected) or len(expected) < 2:
            return None
        used: set[int] = set()
        for item in obtained:
            match = next((i for i, e in enumerate(expected) if i not in used
                          and e.shape == item.shape and np.allclose(item, e, rtol=1e-4)), None)
            if match is None:
                return None
            used.add(match)
        return ("qkv-order", CATALOGUE["qkv-order"])

    return check


def large_negative_mask() -> Property:
    """A mask that is right in shape and pattern, but uses a finite number for -inf."""

    def check(inputs: tuple[Any, ...], obtained: tuple[np.ndarray, ...],
              expected: tuple[np.ndarray, ...]) -> Finding:
        mask, reference = obtained[0], expected[0]
        if mask.shape != reference.shape:
            return None
        hidden = np.isinf(reference)
        if hidden.any() and np.all(mask[~hidden] == 0) and np.all(mask[hidden] <= -1e3) \
                and np.all(np.isfinite(mask[hidden])):
            return ("mask-finite", f"{CATALOGUE['mask-finite']} You used "
                    f"{float(mask[hidden].max()):.3g}; use -np.inf.")
        return None

    return check
