"""What no file for students may hold: a solution marker or a line of the solution, anywhere.

`grade assign` and `grade release` pass every file they write for students through
`refuse` first, as the bytes that will be written. A notebook is searched cell by cell, each
cell whole (source, attachments, outputs, metadata and any other key), then the notebook's
metadata: every key and string as JSON decodes it (an escape such as `\\u0023` hides
nothing), and every base64 run in a string decoded once (an attachment, an image output, a
`data:` URI, the self-check a released notebook carries). A zip (the `.check.npz`, the
self-check's bundle, once decoded) is searched member by member, a zip inside it likewise, a
text array as its text. Last, the file's bytes as written, whole. A hit names the place and
the fix.
"""

from __future__ import annotations

import ast
import base64
import binascii
import functools
import io
import json
import re
import tokenize
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from grader.errors import SpecError

MARKERS = ("BEGIN SOLUTION", "END SOLUTION")
"""The words of the master's markers, without their `# `: `#BEGIN SOLUTION` is one too."""
SHORTEST = 10
"""A solution line shorter than this (`return x`) stands anywhere, and is not looked for."""
_BASE64 = re.compile(r"[A-Za-z0-9+/\r\n]{16,}={0,2}")
_PROMPTS = re.compile(r"^(?:#+|>>>|\.\.\.|\s)+")
_SPACE = re.compile(r"\s+")
_OPENERS = ("#", "import ", "from ", '"""', "'''", "def ", "class ", "@")


@dataclass(frozen=True)
class Hit:
    """One secret found in a file."""

    where: str
    """The place: "cell 3 (markdown), its attachments", "line 12", "member x.npy"."""
    what: str
    """What was found: "a solution marker (BEGIN SOLUTION)", or the solution line."""


def solution_lines(solution: str, given: Iterable[str]) -> frozenset[str]:
    """The lines of `solution` (a module's source) that are secrets: stripped, of `SHORTEST`
    characters or more, that no text of `given` (the stubs' code) holds as a line, and that
    are code: not a comment, an import, a `def` or `class` line, or a docstring. A file holds
    one when one of its lines is that line, once stripped of indent and of a `#`, `>>>` or
    `...` before it: a solution in a markdown code block, commented out in a stub, printed in
    an output. A sentence that quotes a line among other words does not count: the exercise
    text may spell out a step (`attn_output, _ = self.self_attn(x, x, x)`) on purpose."""
    held = {_normal(line) for text in given for line in text.splitlines()}
    lines = solution.splitlines()
    try:
        tree: ast.AST | None = ast.parse(solution)
    except SyntaxError:
        tree = None
    prose = set()  # docstrings are prose that a stub may word alike, not a solution
    for node in ast.walk(tree) if tree else ():
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            prose |= set(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    return frozenset(
        _normal(text) for number, line in enumerate(lines, 1) for text in [line.strip()]
        if len(text) >= SHORTEST and _normal(text) not in held and number not in prose
        and not text.startswith(_OPENERS))


def _found(text: str, lines: frozenset[str]) -> str | None:
    for marker in MARKERS:
        if marker in text:
            return f"a solution marker ({marker})"
    if not lines:
        return None
    shortest, starts = _starts(lines)
    for line in text.splitlines():
        code = _code(line)
        # `_normal(code)` is a start of `code` without its white space: a line that starts
        # with no secret's first characters is no secret, and is not tokenized (a release
        # carries tens of thousands of lines of base64 and bundled code).
        if _SPACE.sub("", code)[:shortest] in starts and _normal(code) in lines:
            return f"a line of the solution ({code[:60]})"
    return None


@functools.lru_cache(maxsize=8)
def _starts(lines: frozenset[str]) -> tuple[int, frozenset[str]]:
    """The length of the shortest of `lines`, and each line's first characters of that
    length."""
    shortest = min(map(len, lines))
    return shortest, frozenset(line[:shortest] for line in lines)


def _normal(line: str) -> str:
    """A line of code as it is compared: without its comment and without any white space
    (`x > 0,x` is `x>0, x`), so that a solution line copied with its spacing changed or its
    comment dropped is still found."""
    try:
        tokens = [token for token in tokenize.generate_tokens(io.StringIO(line).readline)
                  if token.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE)]
        end = max((token.end[1] for token in tokens if token.string), default=len(line))
        line = line[:end]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass  # not a whole line of code (an open bracket): compared as it is
    return _SPACE.sub("", line)


def _code(line: str) -> str:
    """A line as the code it shows: stripped, and without the `#`, `>>>` or `...` before
    it (a solution commented out, or written as a doctest, is still the solution)."""
    return _PROMPTS.sub("", line.strip()).strip()


def _decoded(text: str) -> Iterator[str]:
    """Each base64 run of `text`, decoded (what is not base64 decodes to noise, harmless)."""
    for match in _BASE64.finditer(text):
        run = re.sub(r"\s", "", match.group())
        run = run[:len(run) // 4 * 4]
        try:
            decoded = base64.b64decode(run, validate=True)
        except (binascii.Error, ValueError):
            continue
        yield decoded.decode("utf-8", "replace")
        if decoded[:4] == b"PK\x03\x04" and zipfile.is_zipfile(io.BytesIO(decoded)):
            # a zip (the self-check's bundle): its members; a part of one (a line of a
            # source, which nbformat splits) is read whole where the lines are joined
            yield from (text for _, texts in _members("a base64 zip", decoded) for text in texts)


def _texts(value: object) -> Iterator[str]:
    """Every key and string in a JSON value, a list of strings also joined (nbformat splits a
    source or a base64 payload into lines), each with its base64 runs decoded."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
            yield from _decoded(item)
        elif isinstance(item, dict):
            stack += [*item.keys(), *item.values()]
        elif isinstance(item, list):
            stack += item
            if all(isinstance(part, str) for part in item):
                stack.append("".join(item))


def marked(cell: dict[str, Any]) -> str | None:
    """The key of a notebook cell (source, attachments, metadata...) that holds a solution
    marker, or None."""
    for key, value in cell.items():
        if any(marker in text for text in _texts(value) for marker in MARKERS):
            return str(key)
    return None


def _places(name: str, data: bytes, first: int) -> Iterator[tuple[str, Iterable[str]]]:
    """(place, its texts) of a file, the most precise places first; a notebook's cells
    numbered from `first`."""
    if name.endswith(".ipynb"):
        try:
            notebook = json.loads(data)
        except ValueError:
            notebook = None
        if isinstance(notebook, dict):
            cells = notebook.get("cells")
            for number, cell in enumerate(cells if isinstance(cells, list) else [], first):
                kind = cell.get("cell_type", "?") if isinstance(cell, dict) else "?"
                for key, value in cell.items() if isinstance(cell, dict) else ():
                    yield f"cell {number} ({kind}), its {key}", _texts(value)
            for key, value in notebook.items():
                if key != "cells":
                    yield f"the notebook's {key}", _texts(value)
    if data[:4] == b"PK\x03\x04":
        yield from _members(name, data)
    text = data.decode("utf-8", "replace")
    for number, line in enumerate(text.splitlines(), 1):
        yield f"line {number}", (line,)
    yield "the file's bytes", (text, data.decode("latin-1"))


def _members(name: str, data: bytes) -> Iterator[tuple[str, Iterable[str]]]:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for info in archive.infolist():
                member = archive.read(info)
                texts = [member.decode("latin-1")]
                if info.filename.endswith(".npy"):
                    array = np.lib.format.read_array(io.BytesIO(member), allow_pickle=False)
                    if array.dtype.kind in "US":  # UTF-32 or bytes: read as the text they are
                        texts += [item.decode("utf-8", "replace") if isinstance(item, bytes)
                                  else str(item) for item in array.ravel().tolist()]
                yield f"member {info.filename}", texts
                if member[:4] == b"PK\x03\x04":  # a zip inside (check data in a bundle)
                    for where, inside in _members(f"{name}: {info.filename}", member):
                        yield f"member {info.filename}, its {where}", inside
    except (zipfile.BadZipFile, ValueError, OSError) as exc:  # compressed: unread is unchecked
        raise SpecError(f"{name}: cannot be read back as a zip to check it ({exc}); report "
                        "this as a bug") from None


def find(name: str, data: bytes, lines: frozenset[str], first: int = 1) -> Hit | None:
    """The first secret in file `name` whose bytes are `data`, or None; a notebook's cells
    are numbered from `first`."""
    for where, texts in _places(name, data, first):
        for text in texts:
            what = _found(text, lines)
            if what:
                return Hit(where, what)
    return None


def refuse(path: Path, data: bytes, lines: frozenset[str], fix: str) -> None:
    """SpecError naming `path`, the place, what it holds and `fix`, when `data` (what would be
    written to `path`) holds a solution marker or one of `lines`."""
    hit = find(path.name, data, lines)
    if hit:
        raise SpecError(f"{path}: {hit.where}, holds {hit.what}; {fix}")
