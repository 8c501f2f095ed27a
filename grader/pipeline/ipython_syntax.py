"""IPython syntax to Python: magics, `!` escapes and `pip install` automagic, transformed with
IPython's own transforms, in linear time; and `parse`, the one-thread-at-a-time `ast.parse`.

Nothing here runs code. IPython's transforms are driven in one pass instead of by IPython's
loop, which tokenizes the whole cell again after each magic.
"""

from __future__ import annotations

import ast
import re
import threading
import tokenize
from collections.abc import Callable, Iterator
from typing import Any

# Linear: an attempt starts only at a line start, and [ \t] cannot match a line break, so no
# attempt leaves its line (`\s*` could, and made 60 KB of blank lines cost 25 s).
_AUTOMAGIC = re.compile(r"^([ \t]*)((?:pip|conda|mamba)[ \t]+install\b)", re.MULTILINE)
# IPython's `obj?` pattern backtracks quadratically; no real help target is this long.
HELP_CHARS = 200
# About IPython's own limit (it raises after 500 rounds); a course notebook has a few a cell.
MAX_TRANSFORMS = 500
# Characters the tokenizer may read per character of a cell, while transforming it.
TOKENIZE_FACTOR = 2

_PARSING = threading.Lock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse`, one thread at a time. A batch grades in threads, and CPython 3.11 keeps
    the AST conversion's recursion depth per interpreter, not per thread: two threads parsing
    at once can fail with SystemError ("AST constructor recursion depth mismatch"), seen in a
    batch of 200 notebooks on 3.11.7, where it made the grader fail a submission."""
    with _PARSING:
        return ast.parse(source, filename=filename)


def to_python(source: str) -> str:
    """Turn IPython syntax (magics, `!` escapes, `pip install` automagic) into Python.

    Raises TooMuchIPython for a cell whose IPython syntax is not worth the time to transform.
    """
    try:
        parse(source)
        return source  # plain Python: most cells
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return transform(source)


def transform(source: str) -> str:
    """`to_python` of a cell that is not plain Python (the caller parsed it and failed).

    Raises TooMuchIPython as `to_python` does."""
    source = _AUTOMAGIC.sub(r"\1%\2", source)
    try:
        with _PARSING:  # IPython's transforms compile too
            return transform_cell(source)
    except TooMuchIPython:
        raise
    except Exception:  # IPython's transforms are not written for hostile input: whatever
        return source  # they raise, the cell stays as written and ast.parse reports it


class TooMuchIPython(ValueError):
    """A cell has more IPython syntax than the grader transforms; the message says what."""


def transform_cell(source: str) -> str:
    """What IPython's `TransformerManager().transform_cell` returns, in linear time.

    IPython finds the first magic, transforms it and tokenizes the whole cell again, up to 500
    times (then raises). Here the tokens are read once, logical line by logical line, with
    IPython's own finders and transforms; after a transform, tokenizing starts again on the
    line after it, which is what IPython's next round sees there too.
    """
    # Imported here: IPython is slow to import, and most cells are plain Python.
    from IPython.core.inputtransformer2 import TransformerManager

    manager = TransformerManager()
    lines = (source if source.endswith("\n") else source + "\n").splitlines(keepends=True)
    for transform in manager.cleanup_transforms + manager.line_transforms:
        lines = transform(lines)
    return "".join(_OnePass(lines, manager.token_transformers).run())


class _OnePass:
    """IPython's token transforms applied to `lines` in one pass (see `transform_cell`)."""

    def __init__(self, lines: list[str], finders: list) -> None:
        self.lines = lines
        self.finders = list(finders)
        self.at = 0  # the next line the tokenizer reads
        self.transforms = 0
        # A magic line with an unclosed bracket makes the lines after it be read again.
        self.budget = TOKENIZE_FACTOR * sum(map(len, lines)) + 1000

    def run(self) -> list[str]:
        """The transformed lines."""
        done: list[str] = []
        start = 0
        while start < len(self.lines):
            settled, start = self._transform_first(start)
            done.extend(settled)
        return done

    def _readline(self) -> str:
        if self.at >= len(self.lines):
            return ""
        line = self.lines[self.at]
        self.at += 1
        self.budget -= len(line)
        if self.budget < 0:
            raise TooMuchIPython(
                "cannot be parsed: its magics or shell escapes leave brackets open, and "
                "reading the code after each of them again would take too long")
        return line

    def _transform_first(self, start: int) -> tuple[list[str], int]:
        """Transform the first IPython syntax from line `start` on: (the lines now settled,
        the line to go on from); all the rest is settled when nothing more can be done."""
        lines, self.at = self.lines, start
        try:
            for group in _logical_lines(_tokens(self._readline)):
                found = [t for t in (finder.find([group]) for finder in self.finders) if t]
                if not found:
                    continue
                # The transforms get the group's own lines (copying from `start` would be
                # quadratic), so their line numbers move to count from its first line.
                first, end = group[0].start[0] - 1, group[-1].end[0]
                while start + end < len(lines) and lines[start + end - 1].endswith("\\\n"):
                    end += 1  # IPython's transforms join backslash continuations themselves
                window = lines[start + first:start + end]
                for candidate in sorted(found, key=lambda t: t.sortby()):
                    new = self._apply(candidate, first, window)
                    if new is not None:
                        self.transforms += 1
                        if self.transforms > MAX_TRANSFORMS:
                            raise TooMuchIPython(
                                f"cannot be parsed: more than {MAX_TRANSFORMS} magics, shell "
                                "escapes and help lines in one cell (IPython stops there too)")
                        # The transform replaced lines start_line..last by one line.
                        last = first + candidate.start_line + len(window) - len(new)
                        return (lines[start:start + first] + new[:candidate.start_line + 1],
                                start + last + 1)
                # Nothing here could be transformed. IPython would find a failed `obj?` first
                # in every later round, and so never transform help syntax after it.
                failed = [type(t) for t in found if _is_help(t)]
                self.finders = [f for f in self.finders if f not in failed]
        except IndentationError as exc:  # a dedent only the lines before `start` explain:
            if exc.lineno and exc.lineno > 1:  # go on from there with fresh indentation
                return lines[start:start + exc.lineno - 1], start + exc.lineno - 1
        return lines[start:], len(lines)

    @staticmethod
    def _apply(candidate: Any, first: int, window: list[str]) -> list[str] | None:
        """The window with the candidate transformed, or None when it cannot be."""
        candidate.start_line -= first
        if _is_help(candidate):
            candidate.q_line -= first
            # IPython's pattern for it backtracks quadratically; so long a target is not help.
            if sum(map(len, window[candidate.start_line:candidate.q_line + 1])) > HELP_CHARS:
                return None
        try:
            return list(candidate.transform(window))
        except SyntaxError:
            return None  # as IPython does: try the next candidate


def _is_help(candidate: Any) -> bool:
    """Whether a candidate is `obj?` help syntax (IPython's HelpEnd, which can fail)."""
    return hasattr(candidate, "q_line")


def _tokens(readline: Callable[[], str]) -> Iterator[tokenize.TokenInfo]:
    """The tokens IPython's `make_tokens_by_line` reads. The IPython that runs on Python
    3.12 and later reads them through `generate_tokens_catch_errors`, which ends a cell whose
    tokenizing fails on a known error (an unclosed bracket: "unexpected EOF") with an empty
    ERRORTOKEN, so that `obj?` on such a cell's last line is not help; an IPython without it
    (8.12, on 3.11) lets the error end the tokens."""
    from IPython.utils import tokenutil

    catching = getattr(tokenutil, "generate_tokens_catch_errors", None)
    if catching is None:
        return tokenize.generate_tokens(readline)
    return catching(readline, extra_errors_to_catch=["expected EOF"])  # type: ignore[no-any-return]


def _logical_lines(tokens: Iterator[tokenize.TokenInfo]) -> Iterator[list[tokenize.TokenInfo]]:
    """Tokens grouped by logical line, as IPython's `make_tokens_by_line` groups them: only
    operators are brackets (from Python 3.12 on, an f-string's text is tokens of its own)."""
    group: list[tokenize.TokenInfo] = []
    depth = 0
    try:
        for token in tokens:
            group.append(token)
            if token.type == tokenize.NEWLINE or (token.type == tokenize.NL and depth <= 0):
                yield group
                group = []
            elif token.type == tokenize.OP and token.string in ("(", "[", "{"):
                depth += 1
            elif token.type == tokenize.OP and token.string in (")", "]", "}"):
                depth = max(depth - 1, 0)
    except tokenize.TokenError:
        pass  # the cell ends inside a bracket or a string: IPython looks at what came before
    if group:
        yield group
