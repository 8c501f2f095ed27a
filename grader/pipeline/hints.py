"""Plain-words hints for cell errors whose cause is the environment, not the student.

Notebooks written for an older library can fail for reasons no student would guess. Each hint
is one sentence appended to the cell's message, with the fix. Pure: messages in, messages out.
"""

from __future__ import annotations

from dataclasses import replace

from grader.results import CellResult, CellStatus

NUMPY2_SCALAR = (
    "NumPy 2 no longer turns a one-element array into a number with float() or int(), where "
    "NumPy 1, which the notebook was written for, only warned: write x.item() instead of "
    "float(x)")
# The messages NumPy gives, from 1.25 to 2.x, for float() of an array that is not 0-d.
_NUMPY2_MESSAGES = ("only 0-dimensional arrays can be converted to Python scalars",
                    "only length-1 arrays can be converted to Python scalars")


def explain(cell: CellResult) -> CellResult:
    """The cell, with a hint after each error that has a known outside cause."""
    if cell.status is not CellStatus.ERROR or NUMPY2_SCALAR in cell.message:
        return cell
    message = cell.message
    for known in _NUMPY2_MESSAGES:
        message = message.replace(known, f"{known} ({NUMPY2_SCALAR})")
    return cell if message == cell.message else replace(cell, message=message)
