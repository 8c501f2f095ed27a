"""Where a submission defines each exercise: the cell of its last top-level definition, read
from the source with `ast` (nothing runs), for the feedback cells that go after it."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from grader.pipeline import ipython_syntax
from grader.submission import Submission


def bound_names(statement: ast.stmt) -> list[str]:
    """The names a top-level statement binds: a `def`, a `class`, an assignment, an import."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [statement.name]
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return [(alias.asname or alias.name).split(".")[0] for alias in statement.names]
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        targets = [statement.target]
    return [node.id for target in targets for node in ast.walk(target)
            if isinstance(node, ast.Name)]


def defining_cells(submission: Submission, names: Iterable[str]) -> dict[str, int]:
    """For each of `names` the submission binds at top level, the position of the cell (1-based,
    among all the notebook's cells) that binds it last; names it never binds are left out."""
    wanted = set(names)
    found: dict[str, int] = {}
    for cell in submission.cells:
        if cell.syntax_error:
            continue
        try:
            body = ipython_syntax.parse(cell.source).body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # as notebook_globals.top_level: a cell that does not parse here
        for statement in body:
            for name in bound_names(statement):
                if name in wanted:
                    found[name] = cell.index
    return found
