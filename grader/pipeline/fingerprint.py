"""A fingerprint of each graded function's source, for the class report's similar submissions.

Read from the source with `ast`, never by running it: parsing is safe, executing is not. The
fingerprint of a definition is a hash of its syntax tree after normalising what a copier
changes without changing the code: names (every name but a builtin is renamed in order of
first appearance, so `scores`/`s`, `np`/`numpy` and helper functions' names become the
same), docstrings and bare
strings, annotations, comments and whitespace (which the tree never had). Attribute names
(`.shape`, `.T`, `.sum`) and keyword names (`axis=`) are the library's, and stay.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
from collections.abc import Iterable

from grader.pipeline.notebook_globals import top_level
from grader.results import Fingerprint
from grader.submission import Submission

_BUILTINS = frozenset(dir(builtins))
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
DEEPEST = 100
"""A definition nested deeper than this (a sum of hundreds of terms, say) gets no fingerprint:
normalising and dumping it take about three frames a level, and the grader's stack is not the
student's to spend. Code people write is a few dozen levels deep."""


class _Normalise(ast.NodeTransformer):
    """Rename names canonically and drop what does not change what the code does."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def _name(self, name: str) -> str:
        if name in _BUILTINS:
            return name
        return self.names.setdefault(name, f"_{len(self.names)}")

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self._name(node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg, node.annotation, node.type_comment = self._name(node.arg), None, None
        return node

    def visit_Global(self, node: ast.Global) -> ast.AST:
        node.names = [self._name(name) for name in node.names]
        return node

    visit_Nonlocal = visit_Global  # type: ignore[assignment]

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.AST:
        if node.name:
            node.name = self._name(node.name)
        return self.generic_visit(node)

    def visit_Expr(self, node: ast.Expr) -> ast.AST | None:
        if isinstance(node.value, ast.Constant):
            return None  # a docstring, or a string used as a comment
        return self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST | None:
        if node.value is None:
            return None  # `x: int` declares, it does nothing
        assign = ast.Assign(targets=[node.target], value=node.value)
        return self.generic_visit(ast.copy_location(assign, node))

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.returns, node.type_comment = None, None
        return self._body_kept(node)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        return self._body_kept(node)

    def _body_kept(self, node: ast.FunctionDef | ast.ClassDef) -> ast.AST:
        """Rename a definition, visit it, and keep its body valid when only a docstring was
        in it."""
        node.name = self._name(node.name)
        self.generic_visit(node)
        if not node.body:
            node.body = [ast.Pass()]
        return node


def _depth(tree: ast.AST) -> int:
    """How many levels deep the tree is, counted without recursion."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in ast.iter_child_nodes(node))
    return deepest


def of(definition: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
       ) -> Fingerprint | None:
    """The fingerprint of one definition, normalised in place: pass a tree of your own (a
    copy would cost more than the whole rest of it). None when it is deeper than `DEEPEST`."""
    if _depth(definition) > DEEPEST:
        return None
    tree = _Normalise().visit(definition)
    dumped = ast.dump(tree, annotate_fields=False, include_attributes=False)
    return Fingerprint(hashlib.sha256(dumped.encode()).hexdigest()[:32],
                       sum(1 for _ in ast.walk(tree)))


def fingerprints(submission: Submission, names: Iterable[str]) -> dict[str, Fingerprint | None]:
    """For each name, the fingerprint of its last top-level definition (the one that is
    called at the end of the notebook), or None when the source never defines it there."""
    wanted = set(names)
    # `top_level` parses afresh: the trees are ours to normalise in place.
    found: dict[str, Fingerprint | None] = dict.fromkeys(wanted)
    last: dict[str, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef] = {}
    for statement in top_level(submission):
        if isinstance(statement, _DEFINITIONS) and statement.name in wanted:
            last[statement.name] = statement
    for name, definition in last.items():
        try:
            found[name] = of(definition)
        except (RecursionError, MemoryError):  # the caller's stack was deep already: advice
            found[name] = None  # is lost, never the grade
    return found
