"""The unit's layout, said where NumPy's shape errors say only sizes.

A student who treats X as (N, D) in a unit where it is (D, N) (`X @ omega_q`) gets NumPy's
"matmul: Input operand 1 has a mismatch in its core dimension 0, ..." and a line number.
When the assignment declares its layout (`Assignment.layout`), such a message gets one
sentence before it, naming the layout; NumPy's text stays below. Pure: messages in, messages
out. The sentence is the declaration's alone, so it says nothing of a hidden case's inputs.

The sentence is a guess at the cause, so it stays out of the way of a better one: a call whose
failure has a diagnosis (a notebook global read where this case needs another size) gets none,
and an exercise says it once, on its first check that has it (`once`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from grader.results import CheckResult, Diagnosis

# What NumPy (and PyTorch, for the torch units) say when two arrays' shapes do not fit a
# product, a sum or an einsum, in a ValueError or a RuntimeError.
_SHAPE_ERROR = re.compile(
    r"mismatch in its core dimension|not aligned|could not be broadcast|"
    r"does not match previous terms|cannot be multiplied|must match the size of tensor")
_SHAPE_CLASSES = ("builtins.ValueError", "builtins.RuntimeError")
SENTENCE = "The shapes do not fit together: in this unit {layout}."
_OPENING = SENTENCE.split("{", 1)[0]


def is_shape_error(error: str, message: str) -> bool:
    """Whether an exception of class `error` ("builtins.ValueError") with `message` is
    NumPy's or PyTorch's complaint that two shapes do not fit."""
    return error in _SHAPE_CLASSES and _SHAPE_ERROR.search(message) is not None


def explain(layout: str, error: str, message: str, shown: str | None = None,
            diagnosis: Diagnosis | None = None) -> str:
    """The message to show for a call that raised `error` ("module.name") with `message`:
    `shown` (else `message` itself), with the layout's sentence on the line before it when
    it is a shape error, the assignment declares a layout and the failure has no `diagnosis`
    of its own. Public checks only: a hidden check says only texts of the closed vocabulary
    (`vocabulary`)."""
    text = message if shown is None else shown
    if not layout or diagnosis is not None or not is_shape_error(error, message):
        return text
    return f"{SENTENCE.format(layout=layout)}\n{text}"


def once(checks: Sequence[CheckResult]) -> tuple[CheckResult, ...]:
    """One exercise's checks with the layout's sentence kept on the first check that has it
    and taken off the others, and off every check whose diagnosis (given after `explain`, as
    the exercise's cases agree) names the cause."""
    said = False
    kept = []
    for check in checks:
        first, _, rest = check.message.partition("\n")
        if first.startswith(_OPENING):
            if said or check.diagnosis is not None:
                check = replace(check, message=rest)
            else:
                said = True
        kept.append(check)
    return tuple(kept)
