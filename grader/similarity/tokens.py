"""The normalised token stream of the code a student wrote, read from the source and never run.

Each top-level function or class of a submission becomes a `Definition`: its body's tokens
(`tokenize`), normalised as `grader.pipeline.fingerprint` normalises a tree, so that what a
copier changes without changing the code changes nothing here:
- names (every name but a builtin) are renamed `_0`, `_1`, ... in order of first appearance,
  afresh in each definition, so that renaming a variable, a helper or `np` hides nothing;
- docstrings and bare strings, `print(...)` statements, comments and layout (line breaks,
  blank lines, `;`) are dropped; indentation stays, as the structure it is.
Attribute and keyword names (`.shape`, `axis=`) are the library's, and stay. Each token keeps
the cell and line it came from, so that a shared fragment can be shown where it was written.

Student code is hostile: the source compared is capped (`MAX_SOURCE`, `MAX_TOKENS`), a
definition nested deeper than `fingerprint.DEEPEST` is refused, and a RecursionError or
MemoryError of the parser makes the student "not compared", with why, never a traceback.
"""

from __future__ import annotations

import ast
import builtins
import io
import keyword
import tokenize
from dataclasses import dataclass

from grader.pipeline.fingerprint import DEEPEST
from grader.submission import Submission

MAX_SOURCE = 1 << 20
"""Characters of code compared per student (a notebook of the book is about 20,000): past
this, the student is not compared."""
MAX_TOKENS = 100_000
"""Normalised tokens compared per student (the book's solutions are about 2,000)."""

_BUILTINS = frozenset(dir(builtins))
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_LAYOUT = frozenset({tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.ENCODING,
                     tokenize.ENDMARKER})
INDENT, DEDENT = "<in>", "<out>"


class TooMuch(ValueError):
    """A student's code is past the limits of what is compared: the message says which."""


@dataclass(frozen=True)
class Token:
    """One normalised token, and where it was written."""

    text: str
    """The token as compared: `_3` for a renamed name, the source text otherwise."""
    cell: int
    """The 1-based code cell it is in (a module is cell 1)."""
    line: int
    """Its 1-based line in that cell."""


@dataclass(frozen=True)
class Definition:
    """A top-level function or class of a submission, normalised."""

    name: str
    """Its name, as written."""
    tokens: tuple[Token, ...]
    """Its body's normalised tokens (the signature is renamed from, but not compared: the stub
    gives it)."""
    calls: frozenset[str]
    """The names it calls (`helper(...)`): a helper of an exercise is compared with it."""
    cell: int
    """The 1-based code cell it is in."""
    lines: tuple[str, ...]
    """Its source, line by line, from its `def` (for showing it)."""
    first_line: int
    """The line of the cell its `def` is on."""


def _dropped(node: ast.stmt) -> bool:
    """A docstring, a bare string, or a `print(...)`: no part of what the code computes."""
    if not isinstance(node, ast.Expr):
        return False
    value = node.value
    return isinstance(value, ast.Constant) or (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
        and value.func.id == "print")


def _normal_string(text: str) -> str:
    """A string literal in one quoting, so that 'ij' and "ij" are one token."""
    try:
        return repr(ast.literal_eval(text))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def definition(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
               source_lines: list[str], cell: int) -> Definition:
    """One top-level definition of a cell, normalised; `source_lines` are the cell's."""
    renamed: set[tuple[int, int]] = set()  # (line, byte column) of names to rename
    skipped: list[tuple[tuple[int, int], tuple[int, int]]] = []
    calls: set[str] = set()
    stack: list[tuple[ast.AST, int]] = [(node, 1)]
    while stack:  # one walk, without recursion, that also measures the depth
        child, level = stack.pop()
        if level > DEEPEST:
            raise TooMuch(f"{node.name} (cell {cell}) is nested more than {DEEPEST} levels deep")
        stack.extend((grandchild, level + 1) for grandchild in ast.iter_child_nodes(child))
        if isinstance(child, ast.Name) and child.id not in _BUILTINS:
            renamed.add((child.lineno, child.col_offset))
        elif isinstance(child, ast.arg):
            renamed.add((child.lineno, child.col_offset))
        elif isinstance(child, ast.Call) and isinstance(child.func, ast.Name):
            calls.add(child.func.id)
        if isinstance(child, ast.stmt) and child is not node and _dropped(child):
            skipped.append(((child.lineno, child.col_offset),
                            (child.end_lineno or child.lineno, child.end_col_offset or 0)))
    first, last = node.lineno, node.end_lineno or node.lineno
    lines = source_lines[first - 1:last]
    names: dict[str, str] = {}
    tokens: list[Token] = []
    body = False
    previous = ""
    readline = io.StringIO("".join(lines)).readline
    for token in tokenize.generate_tokens(readline):
        if token.type in _LAYOUT or token.string == ";":
            continue
        # The closing dedents come on a line after the definition's last.
        row, column = min(token.start[0] + first - 1, last), token.start[1]
        line = source_lines[row - 1]
        byte_column = column if line.isascii() else len(
            line[:column].encode("utf-8", "surrogatepass"))  # ast counts bytes, tokenize not
        # A dedent starts where the next statement does: a dropped print after a block
        # keeps the block's end.
        if skipped and token.type != tokenize.DEDENT and any(
                start <= (row, byte_column) < end for start, end in skipped):
            continue
        text = token.string
        if token.type == tokenize.INDENT:
            text = INDENT
        elif token.type == tokenize.DEDENT:
            text = DEDENT
        elif token.type == tokenize.NAME and ((row, byte_column) in renamed or (
                previous in ("def", "class") and not keyword.iskeyword(text))):
            text = names.setdefault(text, f"_{len(names)}")
        elif token.type == tokenize.STRING:
            text = _normal_string(text)
        previous = token.string
        if not body:
            body = token.type == tokenize.INDENT  # the signature ends at the body's indent
            if not body:
                continue
        tokens.append(Token(text, cell, row))
    return Definition(node.name, tuple(tokens), frozenset(calls), cell,
                      tuple(line.rstrip("\r\n") for line in lines), first)


def definitions(submission: Submission) -> tuple[Definition, ...]:
    """The last top-level definition of each name in a submission, in order; `TooMuch` when
    its code is past the limits. A cell that does not parse is passed over."""
    size = sum(len(cell.source) for cell in submission.cells)
    if size > MAX_SOURCE:
        raise TooMuch(f"{size:,} characters of code, over the {MAX_SOURCE:,} compared")
    found: dict[str, Definition] = {}
    count = 0
    for cell in submission.cells:
        if cell.syntax_error:
            continue
        try:
            tree = ast.parse(cell.source)
        except (SyntaxError, ValueError):
            continue
        except (RecursionError, MemoryError):
            raise TooMuch(f"cell {cell.number} is nested too deeply to read") from None
        lines = cell.source.splitlines(keepends=True)
        for statement in tree.body:
            if not isinstance(statement, _DEFINITIONS):
                continue
            try:
                made = definition(statement, lines, cell.number)
            except (tokenize.TokenError, IndentationError, SyntaxError):
                continue
            except (RecursionError, MemoryError):
                raise TooMuch(f"{statement.name} (cell {cell.number}) is too deep to read"
                              ) from None
            count += len(made.tokens)
            if count > MAX_TOKENS:
                raise TooMuch(f"over {MAX_TOKENS:,} tokens of code, the most compared")
            found.pop(statement.name, None)
            found[statement.name] = made
    return tuple(found.values())
