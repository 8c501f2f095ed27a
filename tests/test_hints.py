"""Cell errors caused by the environment get one sentence with the fix (issue #10, NumPy 2)."""

from __future__ import annotations

from grader.pipeline import hints
from grader.results import CellResult, CellStatus

NUMPY2 = "line 48: TypeError: only 0-dimensional arrays can be converted to Python scalars"


def test_the_numpy2_scalar_error_gets_its_fix_once():
    cell = hints.explain(CellResult(1, CellStatus.ERROR, NUMPY2 + "; the grader ran the rest"))
    assert cell.message == (f"{NUMPY2} ({hints.NUMPY2_SCALAR}); the grader ran the rest")
    assert hints.explain(cell) == cell


def test_other_errors_and_other_statuses_are_left_alone():
    other = CellResult(2, CellStatus.ERROR, "line 1: NameError: name 'x' is not defined")
    assert hints.explain(other) is other
    crashed = CellResult(3, CellStatus.CRASHED, NUMPY2)
    assert hints.explain(crashed) is crashed
