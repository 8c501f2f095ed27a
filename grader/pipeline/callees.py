"""Which graded or given functions an exercise calls, and the part of a solution module that
defines one function: read from the source with `ast`, nothing runs here.

A name is followed through the top-level functions and classes that define it, whatever the
call looks like (`attention(...)`, `softmax_cols(x / s)`, a method that calls it): a
function the exercise reaches only through a local variable or an attribute is not found,
and then nothing is run again for it (`owncode`).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from grader.pipeline.definitions import bound_names

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _used(statement: ast.stmt) -> set[str]:
    """Every plain name a statement reads or binds, at any depth."""
    return {node.id for node in ast.walk(statement) if isinstance(node, ast.Name)}


def _closure(start: str, used: dict[str, set[str]]) -> set[str]:
    """`start` and every name of `used` (a definition's name -> the names it uses) that it
    reaches, transitively."""
    seen = {start}
    todo = [start]
    while todo:
        for name in sorted(used.get(todo.pop(), set()) & used.keys() - seen):
            seen.add(name)
            todo.append(name)
    return seen


def reached(statements: Sequence[ast.stmt], exercises: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """For each of `exercises` that the submission defines with a `def` or a `class` at top
    level, the other exercises its definition reaches by name, directly or through other
    top-level functions and classes of the submission (the last definition of each), in the
    order of `exercises`."""
    defined: dict[str, ast.stmt] = {}
    for statement in statements:
        if isinstance(statement, _DEFINITIONS):
            defined[statement.name] = statement
    used = {name: _used(statement) for name, statement in defined.items()}
    return {name: tuple(e for e in exercises if e != name and e in _closure(name, used))
            for name in exercises if name in defined}


def definition_source(module: str, name: str) -> str | None:
    """The part of a module's source that defines `name`: the top-level statements that bind
    it or a name it reaches (functions, classes, assignments, imports), in the module's order;
    None when the module does not bind `name` or does not parse."""
    try:
        body = ast.parse(module).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    binding: dict[str, list[ast.stmt]] = {}
    for statement in body:
        for bound in bound_names(statement):
            binding.setdefault(bound, []).append(statement)
    if name not in binding:
        return None
    used = {bound: set().union(*map(_used, statements)) for bound, statements in binding.items()}
    kept = {id(s) for bound in _closure(name, used) for s in binding[bound]}
    return "\n\n".join(ast.unparse(s) for s in body if id(s) in kept) + "\n"
