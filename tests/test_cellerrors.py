"""Cell errors across a class: messages split into errors, grouped by exception and message."""

from __future__ import annotations

import pytest

from grader.classreport import cellerrors
from grader.pipeline import hints
from tests.helpers.term import stored


@pytest.mark.parametrize("message, expected", [
    ("line 48: TypeError: only 0-dimensional arrays can be converted to Python scalars; the "
     "grader ran the rest of the cell anyway; Jupyter would have stopped at the first error",
     [(48, "TypeError", "only 0-dimensional arrays can be converted to Python scalars")]),
    ("line 2: NameError: name 'H_D' is not defined; line 5: ValueError: shapes (3,4) and "
     "(2,2) not aligned; x; y", [(2, "NameError", "name 'H_D' is not defined"),
                                 (5, "ValueError", "shapes (3,4) and (2,2) not aligned; x; y")]),
    ("SyntaxError: invalid syntax (line 3); the cell did not run",
     [(3, "SyntaxError", "invalid syntax (line 3)")]),
    ("line 4: stopped after 10 s; execution went on", [(4, "Timeout", "stopped after 10 s")]),
    ("line 1: shell command `!pip install x` is never run by the grader", []),
])
def test_cell_messages_are_split_into_errors(message, expected):
    assert cellerrors.notes(message) == expected


def _cell(message: str, number: int = 1, status: str = "error") -> dict:
    return {"index": number, "number": number, "status": status, "message": message,
            "file": ""}


def test_the_same_error_at_other_lines_and_sizes_is_one_group():
    numpy2 = (f"TypeError: only 0-dimensional arrays can be converted to Python scalars "
              f"({hints.NUMPY2_SCALAR})")
    older = numpy2.replace("0-dimensional", "length-1")  # NumPy before 2.0 said it so
    results = {
        "a": {"cells": [_cell(f"line 3: {numpy2}", 2), _cell("line 1: ValueError: size 4")]},
        "b": {"cells": [_cell(f"line 9: {older}", 5), _cell("line 2: ValueError: size 6")]},
        "c": {"cells": [_cell(f"line 3: {numpy2}; line 7: {numpy2}", 2)]},
        "d": {"cells": [_cell("line 1: shell command `!ls` is never run", status="skipped")]},
    }
    found = cellerrors.groups({student: stored(data) for student, data in results.items()})
    assert [(g.error, g.names, g.hint != "") for g in found] == [
        ("TypeError", ("a", "b", "c"), True), ("ValueError", ("a", "b"), False)]
    assert found[1].message == "size #"
    assert [(p.where, p.line, p.students) for p in found[0].places] == [
        ("code cell 2", 3, 2), ("code cell 5", 9, 1)]
    assert found[0].example.startswith("code cell 2, line 3: TypeError: only 0-dimensional")
