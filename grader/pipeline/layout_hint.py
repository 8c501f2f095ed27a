"""The unit's layout, said where NumPy's shape errors say only sizes.

A student who treats X as (N, D) in a unit where it is (D, N) (`X @ omega_q`) gets NumPy's
"matmul: Input operand 1 has a mismatch in its core dimension 0, ..." and a line number.
When the assignment declares its layout (`Assignment.layout`), such a message gets one
sentence before it, naming the layout; NumPy's text stays below. Pure: messages in, messages
out. The sentence is the declaration's alone, so it says nothing of a hidden case's inputs.
"""

from __future__ import annotations

import re

# What NumPy (and PyTorch, for the torch units) say when two arrays' shapes do not fit a
# product, a sum or an einsum, in a ValueError or a RuntimeError.
_SHAPE_ERROR = re.compile(
    r"mismatch in its core dimension|not aligned|could not be broadcast|"
    r"does not match previous terms|cannot be multiplied|must match the size of tensor")
_SHAPE_CLASSES = ("builtins.ValueError", "builtins.RuntimeError")
SENTENCE = "The shapes do not fit together: in this unit {layout}."


def is_shape_error(error: str, message: str) -> bool:
    """Whether an exception of class `error` ("builtins.ValueError") with `message` is
    NumPy's or PyTorch's complaint that two shapes do not fit."""
    return error in _SHAPE_CLASSES and _SHAPE_ERROR.search(message) is not None


def explain(layout: str, error: str, message: str, shown: str | None = None) -> str:
    """The message to show for a call that raised `error` ("module.name") with `message`:
    `shown` (else `message` itself), with the layout's sentence on the line before it when
    it is a shape error and the assignment declares a layout. Public checks only: a hidden
    check says only texts of the closed vocabulary (`vocabulary`)."""
    text = message if shown is None else shown
    if not layout or not is_shape_error(error, message):
        return text
    return f"{SENTENCE.format(layout=layout)}\n{text}"
