"""Naming the misconception behind a wrong answer.

When a check fails, the exercise's known wrong variants run on the same inputs (in the grader's
process: they are trusted code). If the student's output matches a variant, the variant's
mistake is the diagnosis; a variant that agrees with the reference on these inputs proves
nothing and is skipped. Failing that, the exercise's properties (weights that do not sum to 1,
weights on future tokens, NaN only for large inputs) may explain the output.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from grader.model import Diagnosis, Exercise
from grader.references import Outputs, as_outputs

# Looser than the checks: a float32 or loop-based student matches a float64 variant.
MATCH_RTOL = 1e-4
MATCH_ATOL = 1e-6


def same(a: Outputs, b: Outputs, rtol: float = MATCH_RTOL, atol: float = MATCH_ATOL) -> bool:
    """Whether two sets of outputs agree (NaN matching NaN, inf matching inf)."""
    return len(a) == len(b) and all(
        x.shape == y.shape and bool(np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True))
        for x, y in zip(a, b, strict=True))


def _copies(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(np.array(item) if isinstance(item, np.ndarray) else
                 {k: np.array(v) for k, v in item.items()} if isinstance(item, Mapping) else item
                 for item in inputs)


def _run(variant: Any, inputs: tuple[Any, ...], init: Mapping[str, Any],
         count: int) -> Outputs | None:
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return as_outputs(variant(*_copies(inputs), **init), count)
    except Exception:  # a variant that does not apply to these inputs (shapes) says nothing
        return None


def diagnose(exercise: Exercise, inputs: tuple[Any, ...], init: Mapping[str, Any],
             obtained: Outputs, expected: Outputs) -> Diagnosis | None:
    """The misconception that explains `obtained`, or None. Call it only for failed checks."""
    if same(obtained, expected):
        return None  # never diagnose an answer the reference accepts
    count = len(exercise.outputs)
    for mistake in exercise.misconceptions:
        wrong = _run(mistake.variant, inputs, init, count)
        if wrong is None or same(wrong, expected):
            continue
        if same(obtained, wrong):
            return Diagnosis(mistake.id, mistake.message)
    for check in exercise.properties:
        try:
            with np.errstate(all="ignore"):
                found = check(inputs, obtained, expected)
        except (ValueError, IndexError, TypeError):
            found = None
        if found:
            return Diagnosis(*found)
    return None
