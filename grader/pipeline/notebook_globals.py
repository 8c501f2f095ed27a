"""Which notebook globals a student's function reads, and their values, read from the source.

Book-style notebooks set sizes as globals (`N = 3`, `D = 4`, `H_D = int(D/H)`), and students use
them inside functions that should take sizes from their inputs: the function then passes the
notebook's example and fails every other size. This module finds such reads without running
anything: a numeric global is one that top-level statements bind to arithmetic of numbers and
other numeric globals, evaluated here by a small interpreter of constants and operators.

Student code is hostile, and these reads are advice: whatever a notebook holds (a sum of a
thousand terms, `10**10**10`, `int(1e999)`), an expression is evaluated within a budget of
depth and size or left unknown, and nothing here raises.
"""

from __future__ import annotations

import ast
import builtins
import math
import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from grader.pipeline.diagnose import Written

if TYPE_CHECKING:
    from grader.submission import Submission

_BINARY: Mapping[type, Any] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
}
_CASTS: Mapping[str, Any] = {"int": int, "float": float, "round": round}
_LARGEST = 1 << 20  # sizes of a notebook's example; anything larger is not a size
_DEEPEST = 50
"""Operators nested deeper than this are no size a notebook sets; following them would cost
frames of the grader's own stack, which a sum of 990 terms would exhaust."""


def _number(value: object) -> float | None:
    """`value` as a finite float, or None (an int too large for a float, inf, nan)."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (OverflowError, ValueError, TypeError):
        return None
    return number if math.isfinite(number) else None


def _value(node: ast.expr, known: Mapping[str, float], depth: int = 0) -> float | None:
    """The number an expression of constants, known globals, + - * / // % and int(), float()
    or round() of those stands for; None past `_DEEPEST` or when it is no finite number."""
    if depth > _DEEPEST:
        return None
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return _number(node.value)
    if isinstance(node, ast.Name):
        return known.get(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _value(node.operand, known, depth + 1)
        return None if inner is None else -inner
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in _CASTS and len(node.args) == 1 and not node.keywords):
        inner = _value(node.args[0], known, depth + 1)  # the book writes H_D = int(D/H)
        return None if inner is None else _number(_CASTS[node.func.id](inner))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left = _value(node.left, known, depth + 1)
        right = None if left is None else _value(node.right, known, depth + 1)
        if left is None or right is None or abs(left) > _LARGEST or abs(right) > _LARGEST:
            return None
        try:
            return _number(_BINARY[type(node.op)](left, right))
        except ArithmeticError:  # a division by zero
            return None
    return None


def _bind(target: ast.expr, value: ast.expr, known: dict[str, float]) -> None:
    if isinstance(target, ast.Name):
        number = _value(value, known)
        if number is None:
            known.pop(target.id, None)
        else:
            known[target.id] = number
    elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and \
            len(target.elts) == len(value.elts):
        numbers = [_value(v, known) for v in value.elts]
        for name, number in zip(target.elts, numbers, strict=True):
            if isinstance(name, ast.Name):
                if number is None:
                    known.pop(name.id, None)
                else:
                    known[name.id] = number
    else:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                known.pop(node.id, None)


def top_level(submission: Submission) -> list[ast.stmt]:
    """The top-level statements of every cell that parses, in order."""
    from grader.pipeline import ipython_syntax  # check() reads functions, not cells

    statements: list[ast.stmt] = []
    for cell in submission.cells:
        if cell.syntax_error:
            continue
        try:
            statements += ipython_syntax.parse(cell.source).body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # parsed at a deeper stack than loading's, a long cell may not be
    return statements


def numeric_globals(submission: Submission) -> dict[str, float]:
    """The numeric globals as they stand at the end of the notebook."""
    return _numeric(top_level(submission))


def numeric_of(statements: Iterable[ast.stmt]) -> dict[str, float]:
    """The numeric globals that top-level `statements` leave, run in order."""
    return _numeric(list(statements))


def free_names(function: ast.FunctionDef) -> set[str]:
    """The names a function reads from outside itself, builtins aside: its globals."""
    return _free_names(function)


def _step(statement: ast.stmt, known: dict[str, float]) -> None:
    """What one top-level statement does to the numeric globals."""
    if isinstance(statement, ast.Assign):
        for target in statement.targets:
            _bind(target, statement.value, known)
    elif isinstance(statement, (ast.AugAssign, ast.AnnAssign)):
        _bind(statement.target, ast.Constant(None), known)
    elif isinstance(statement, (ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
        names = ([statement.name] if isinstance(statement, (ast.FunctionDef, ast.ClassDef))
                 else [(a.asname or a.name).split(".")[0] for a in statement.names])
        for name in names:
            known.pop(name, None)


def _numeric(statements: list[ast.stmt]) -> dict[str, float]:
    known: dict[str, float] = {}
    for statement in statements:
        _step(statement, known)
    return known


def _free_names(function: ast.FunctionDef) -> set[str]:
    """Names the function loads that it neither takes as a parameter nor binds itself."""
    arguments = function.args
    bound = {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)}
    bound |= {a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None}
    loaded: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            loaded |= set(node.names)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return loaded - bound - set(dir(builtins))


def globals_read(submission: Submission, functions: Iterable[str], *,
                 statements: Sequence[ast.stmt] | None = None
                 ) -> dict[str, dict[str, tuple[float, ...]]]:
    """For each of `functions`, the numeric globals its last top-level definition reads, each
    with the values it has when the function is called: at the end of the notebook, then (if
    different) where the function is defined, since the grader calls it at both places
    (`N = 3` for 12_1's example, `N = 6` later for 12_2's). Empty for a function that is not
    defined. The notebook is parsed once for all of them, or not at all when `statements`
    (its `top_level`, which neither function changes) are given."""
    wanted = set(functions)
    statements = top_level(submission) if statements is None else statements
    last = {statement.name: i for i, statement in enumerate(statements)
            if isinstance(statement, ast.FunctionDef) and statement.name in wanted}
    # Only the last definition's globals are copied: a copy at every one would be quadratic
    # in a notebook that defines the function thousands of times after thousands of globals.
    at = {i: name for name, i in last.items()}
    known: dict[str, float] = {}
    defined: dict[str, tuple[ast.FunctionDef, dict[str, float]]] = {}
    for i, statement in enumerate(statements):
        if i in at:
            assert isinstance(statement, ast.FunctionDef)
            defined[at[i]] = (statement, dict(known))
        _step(statement, known)
    found: dict[str, dict[str, tuple[float, ...]]] = {name: {} for name in wanted}
    for function, (node, then) in defined.items():
        for name in sorted(_free_names(node)):
            values = tuple(dict.fromkeys(v for v in (known.get(name), then.get(name))
                                         if v is not None))
            if values:
                found[function][name] = values
    return found


_SIZED_CALLS = frozenset({"range", "zeros", "ones", "empty", "eye", "reshape", "view",
                          "sqrt"})
"""Calls whose positional arguments (or their tuples' items) are sizes, or a size whose
square root is taken. Axis arguments (`axis=1`, `transpose(1, 2)`) are never read."""


def _sized(node: ast.expr, names: Iterable[str] = (), depth: int = 0) -> bool:
    """Whether an expression is arithmetic of sizes only: `X.shape[0] // 2`, `len(X)`,
    `int(d / 2)`, with `names` the function's names bound to such expressions."""
    if depth > _DEEPEST:
        return False
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float))
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Attribute):
        return node.attr in ("shape", "size", "ndim")
    if isinstance(node, ast.Subscript):
        return _sized(node.value, names, depth + 1)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id in ("len", "int", "float", "round") and len(node.args) == 1:
        return node.func.id == "len" or _sized(node.args[0], names, depth + 1)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _sized(node.left, names, depth + 1) and _sized(node.right, names, depth + 1)
    if isinstance(node, ast.UnaryOp):
        return _sized(node.operand, names, depth + 1)
    return False


def _numbers(node: ast.expr, divisor: bool = False) -> Iterator[Written]:
    """The numbers of a size argument: `3`, `(4, 3)`, `[4, 3]`."""
    items = node.elts if isinstance(node, (ast.Tuple, ast.List)) else [node]
    for item in items:
        if isinstance(item, ast.Constant) and isinstance(item.value, (int, float)) \
                and not isinstance(item.value, bool):
            yield Written(float(item.value), item.lineno, divisor)


def _written(function: ast.FunctionDef) -> Iterator[Written]:
    """The numbers written where a size goes, in an allow-list of places."""
    sizes = _size_names(function)
    for node in ast.walk(function):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.FloorDiv)):
            if not _sized(node.left, sizes):
                yield from _numbers(node.right, divisor=True)  # `D / 2` counts heads
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            exponent = _value(node.right, {})
            if exponent is not None and exponent in (0.5, -0.5):  # `4 ** 0.5`
                yield from _numbers(node.left)
        elif isinstance(node, ast.Call):
            name = (node.func.id if isinstance(node.func, ast.Name) else
                    node.func.attr if isinstance(node.func, ast.Attribute) else "")
            if name in _SIZED_CALLS:
                for argument in node.args:
                    yield from _numbers(argument)
        elif isinstance(node, ast.Slice):
            for bound in (node.lower, node.upper):
                if bound is not None:
                    yield from _numbers(bound)


def _size_names(function: ast.FunctionDef) -> set[str]:
    """Names the function binds to sizes (`d = X.shape[0]`, `n = len(X)`, `h = d // 2`)."""
    names: set[str] = set()
    assignments = sorted((node for node in ast.walk(function) if isinstance(node, ast.Assign)),
                         key=lambda node: (node.lineno, node.col_offset))
    for node in assignments:
        if _sized(node.value, names):
            names |= {target.id for target in node.targets if isinstance(target, ast.Name)}
    return names


def numbers_written(submission: Submission, functions: Iterable[str], *,
                    statements: Sequence[ast.stmt] | None = None
                    ) -> dict[str, tuple[Written, ...]]:
    """For each of `functions`, the numbers its last top-level definition writes where a size
    goes, read from the source without running it: whole numbers from 2 up (0 and 1 are
    indices and identities more often than sizes). Empty for a function that is not defined.
    `statements`, when given, are the submission's `top_level`, parsed already."""
    wanted = set(functions)
    last: dict[str, ast.FunctionDef] = {}
    for statement in top_level(submission) if statements is None else statements:
        if isinstance(statement, ast.FunctionDef) and statement.name in wanted:
            last[statement.name] = statement
    found: dict[str, tuple[Written, ...]] = {name: () for name in wanted}
    for name, function in last.items():
        found[name] = written_by(function)
    return found


def written_by(function: ast.FunctionDef) -> tuple[Written, ...]:
    """The numbers one function's definition writes where a size goes, as `numbers_written`
    reads them, by line (the line of the definition's own source)."""
    numbers = [w for w in _written(function)
               if 2 <= w.value <= _LARGEST and w.value == int(w.value)]
    return tuple(dict.fromkeys(sorted(numbers, key=lambda w: (w.line, w.value))))


def read_by(function: ast.FunctionDef, known: Mapping[str, float]
            ) -> dict[str, tuple[float, ...]]:
    """The numeric globals among `known` (name: value) that one function's definition reads,
    in the form of `globals_read`: for `check()`, whose kernel holds the globals' values."""
    return {name: (known[name],) for name in sorted(_free_names(function)) if name in known}


def size_of(value: object) -> float | None:
    """A global's value as a size it may stand for: a finite number (a Python or NumPy
    integer or float, never a bool) no larger than any notebook's example; else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not (
            type(value).__module__ == "numpy" and hasattr(value, "dtype")
            and getattr(value, "ndim", 1) == 0 and value.dtype.kind in "iuf"):
        return None
    number = _number(value)
    return number if number is not None and abs(number) <= _LARGEST else None
