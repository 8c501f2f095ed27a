"""The unit's layout, said where NumPy's shape errors say only sizes.

A student who treats X as (N, D) in a unit where it is (D, N) (`X @ omega_q`) gets NumPy's
"matmul: Input operand 1 has a mismatch in its core dimension 0, ..." and a line number.
When the assignment declares its layout (`Assignment.layout`), such a message gets one
sentence before it, naming the layout; NumPy's text stays below. Pure: messages and syntax
trees in, messages out. The sentence is the declaration's, and the student's own source, so
it says nothing of a hidden case's inputs.

The sentence is a guess at the cause, so it stays out of the way of a better one: a call whose
failure has a diagnosis (a notebook global read where this case needs another size) gets none,
and an exercise says it once, on its first check that has it (`once`).

A layout whose sentence blames a product ("a product such as X @ omega_q treats rows as
tokens") is said only when the student's source has one (`found_in`), and then it names the
product found in place of the example: "`X @ omega_q` on line 3 treats rows as tokens". In
the sentence's sense a product treats rows as tokens when its left operand is the data (the
example's left name, `X`, or the student's parameter in its place of the exercise's
signature) and its right operand a weight (a name that begins as the example's right one does
before its first underscore, `omega`, or the student's parameter in the place of such a
parameter); either may be transposed or indexed (`X.T`, `np.transpose(X)`, `X[:, n]`). A
product is `A @ B`, `A @= B`, `np.dot(A, B)`, `np.matmul(A, B)` (any module's), `A.dot(B)`
or `A.matmul(B)`. The unit's own form, `omega_q @ X`, is none, and so is a product of names
that only stand for X or a weight (`Q = X; Q @ omega_q`). The exercise's definition is read
first, then the functions it calls by name, transitively, where only the names themselves
count (`X @ omega`). A layout that blames no product, and an exercise whose own source could
not be read (defined by `exec`, or not by a `def` or `class`), are said as written, on
every shape error of a check without a diagnosis.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

from grader.results import CheckResult, Diagnosis

# What NumPy (and PyTorch, for the torch units) say when two arrays' shapes do not fit a
# product, a sum or an einsum, in a ValueError or a RuntimeError.
_SHAPE_ERROR = re.compile(
    r"mismatch in its core dimension|not aligned|could not be broadcast|"
    r"does not match previous terms|cannot be multiplied|must match the size of tensor")
_SHAPE_CLASSES = ("builtins.ValueError", "builtins.RuntimeError")
SENTENCE = "The shapes do not fit together: in this unit {layout}."
_OPENING = SENTENCE.split("{", 1)[0]
_BLAMED = re.compile(r"\ba product such as (\w+) @ (\w+) treats rows as tokens\b")
"""The part of a layout that blames a product: its data's name and an example weight."""
_PRODUCT_CALLS = frozenset({"dot", "matmul"})
_LONGEST = 60
"""A product written longer than this (characters) is shown cut, with "..."."""
_MOST_FUNCTIONS = 20
"""How many functions (the exercise's and those it calls) are read for a product."""
_LIBRARIES = frozenset({"np", "numpy", "torch"})
"""Names whose `.transpose(A)` transposes its argument, not itself."""
_DEEPEST = 8
"""How many transposes and indices are looked under for an operand's name."""

Source = Callable[[str], "tuple[ast.AST, int] | None"]
"""A top-level name's definition (a `def` or `class`) and the line where it starts in its
cell or file; None when there is none or it cannot be read."""


@dataclass(frozen=True)
class Product:
    """A product in the student's source that treats rows as tokens, as the layout says."""

    text: str
    """The product as written (re-printed from the syntax tree), for example "X @ omega_q"."""
    line: int
    """Its line in the cell (or file) that defines its function, as NumPy's errors count."""
    function: str = ""
    """The function it is in when the exercise reaches it through a call; "" for its own."""

    def said(self) -> str:
        """"`X @ omega_q` on line 3", or "`X @ omega` in project, line 2"."""
        where = f"in {self.function}, line" if self.function else "on line"
        return f"`{self.text}` {where} {self.line}"


@dataclass(frozen=True)
class Hint:
    """The layout of an assignment and how to read what one exercise's source says of it."""

    layout: str
    """The assignment's `layout`; "" for none."""
    read: Callable[[], tuple[Product, ...] | None]
    """The exercise's products that treat rows as tokens (`found_in`, None: unread), read
    only when a failure would say the layout: most gradings have none."""

    def explain(self, error: str, message: str, shown: str | None = None,
                diagnosis: Diagnosis | None = None) -> str:
        """`explain` with this layout and the products `read` finds."""
        found = self.read() if says_layout(self.layout, error, message, diagnosis) else None
        return explain(self.layout, error, message, shown, diagnosis, found)


def says_layout(layout: str, error: str, message: str, diagnosis: Diagnosis | None) -> bool:
    """Whether `explain` says the layout's sentence, whatever the source has: a shape
    error with no diagnosis of its own, in an assignment that declares a layout."""
    return bool(layout) and diagnosis is None and is_shape_error(error, message)


def is_shape_error(error: str, message: str) -> bool:
    """Whether an exception of class `error` ("builtins.ValueError") with `message` is
    NumPy's or PyTorch's complaint that two shapes do not fit."""
    return error in _SHAPE_CLASSES and _SHAPE_ERROR.search(message) is not None


def explain(layout: str, error: str, message: str, shown: str | None = None,
            diagnosis: Diagnosis | None = None,
            found: Sequence[Product] | None = None) -> str:
    """The message to show for a call that raised `error` ("module.name") with `message`:
    `shown` (else `message` itself), with the layout's sentence on the line before it when
    it is a shape error, the assignment declares a layout and the failure has no `diagnosis`
    of its own. A layout that blames a product is said only when `found` (the exercise's
    products that treat rows as tokens, `found_in`) has one, and names the first; with
    `found` None (the source was not read) it is said as written. Public checks only: a
    hidden check says only texts of the closed vocabulary (`vocabulary`)."""
    text = message if shown is None else shown
    if not says_layout(layout, error, message, diagnosis):
        return text
    blamed = _BLAMED.search(layout)
    if blamed is not None and found is not None:
        if not found:
            return text  # the sentence would blame a product the code does not have
        layout = (f"{layout[:blamed.start()]}{found[0].said()} treats rows as tokens"
                  f"{layout[blamed.end():]}")
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


def found_in(name: str, signature: str, layout: str, source: Source
             ) -> tuple[Product, ...] | None:
    """The products that treat rows as tokens, as `layout` blames them (see the module's
    docstring), in the definition of exercise `name` (declared with `signature`) and in the
    functions it calls by name, read through `source`: its own first, each function's by
    line. None when the exercise's own definition cannot be read; empty when the layout
    blames none."""
    own = source(name)
    if own is None:
        return None
    blamed = _BLAMED.search(layout)
    if blamed is None:
        return ()
    data, weight = blamed[1], blamed[2].split("_")[0] or blamed[2]
    node, start = own
    # The student's names in the places of the signature's (a function may take fewer).
    places = list(zip(_parameters(signature), _arguments(node), strict=False))
    datas = {data} | {mine for declared, mine in places if declared == data}
    weights = {mine for declared, mine in places if declared.startswith(weight)}
    found = list(_products(node, start, "", datas, weights, weight))
    seen, todo = {name}, _called(node)
    while todo and len(seen) < _MOST_FUNCTIONS:
        helper = todo.pop(0)
        if helper in seen:
            continue
        seen.add(helper)
        other = source(helper)
        if other is not None:
            found += _products(other[0], other[1], helper, {data}, set(), weight)
            todo += _called(other[0])
    return tuple(found)


def _parameters(signature: str) -> list[str]:
    try:
        function = ast.parse(f"def f{signature}: pass").body[0]
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    return _arguments(function)


def _arguments(node: ast.AST) -> list[str]:
    """A function's positional parameters, `self` aside; none for a class."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    return [a.arg for a in (*node.args.posonlyargs, *node.args.args) if a.arg != "self"]


def _called(node: ast.AST) -> list[str]:
    """The plain names a definition calls, in the order of the syntax tree."""
    return list(dict.fromkeys(n.func.id for n in ast.walk(node)
                              if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)))


def _operands(node: ast.AST) -> tuple[ast.expr, ast.expr] | None:
    """The left and right operands of a matrix product; None when `node` is none."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        return node.left, node.right
    if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.MatMult):
        return node.target, node.value
    if not isinstance(node, ast.Call) or node.keywords:
        return None
    called = node.func
    name = called.attr if isinstance(called, ast.Attribute) else \
        called.id if isinstance(called, ast.Name) else ""
    if name not in _PRODUCT_CALLS:
        return None
    if len(node.args) == 2:
        return node.args[0], node.args[1]  # np.dot(A, B)
    if len(node.args) == 1 and isinstance(called, ast.Attribute):
        return called.value, node.args[0]  # A.dot(B)
    return None


def _core(node: ast.expr) -> str:
    """The name under transposes and indices (`X.T`, `np.transpose(X)`, `X.transpose()`,
    `X[:, n]`); "" when there is none."""
    for _ in range(_DEEPEST):
        if isinstance(node, ast.Attribute) and node.attr == "T":
            node = node.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "transpose":
            library = isinstance(node.func.value, ast.Name) and node.func.value.id in _LIBRARIES
            node = node.args[0] if library and node.args else node.func.value
        else:
            break
    return node.id if isinstance(node, ast.Name) else ""


def _products(node: ast.AST, start: int, function: str, datas: set[str], weights: set[str],
              weight: str) -> Iterator[Product]:
    """The products of one definition (starting on line `start` of its cell) whose left
    operand is one of `datas` and whose right one is one of `weights` or begins with
    `weight`, by line."""
    found = []
    for child in ast.walk(node):
        operands = _operands(child)
        if operands is None:
            continue
        left, right = (_core(operand) for operand in operands)
        if left in datas and right not in datas and (right in weights
                                                     or right.startswith(weight)):
            found.append((getattr(child, "lineno", 1), getattr(child, "col_offset", 0), child))
    for line, _, child in sorted(found, key=lambda item: item[:2]):
        yield Product(_text(child), line + start - 1, function)


def _text(node: ast.AST) -> str:
    """A product as written, on one line, cut at `_LONGEST` characters."""
    try:
        text = ast.unparse(node)
    except (ValueError, RecursionError, MemoryError):
        return "a product"
    text = " ".join(text.split())
    return text if len(text) <= _LONGEST else f"{text[:_LONGEST - 3]}..."
