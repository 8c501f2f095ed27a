"""Making text that comes from a submission safe to show anywhere.

A submission controls its exception messages, what it prints, its file name and its
student's folder name. Such text must not move a terminal's cursor, draw a fake score,
start a Markdown heading or fail to encode. `clean` is applied where text crosses from the
worker into the grader (the protocol boundary) and again by every writer; each writer adds
what its own format needs (`one_line` for a Markdown table cell or heading, `csv_cell` for a
spreadsheet cell). What is printed to a terminal goes through `visible` instead, which shows a
control character (ESC as `\\x1b`) rather than drop it; Rich markup is escaped by the one
terminal writer that uses Rich (`report.terminal`). `clean_fields` cleans a whole frozen
dataclass (a `Result`) at once, and `cap` cuts a message to the length a result keeps.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, TypeVar, cast

T = TypeVar("T")

# C0 controls but tab and newline, DEL, and C1 controls (ESC is C0, CSI is C1).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# What `visible` shows: `_CONTROL`, and the bidirectional embeddings, overrides and
# isolates, which reorder what a terminal shows.
_SHOWN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# Everything some renderer treats as a line break: CR LF, VT, FF, the file/group/record
# separators, NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR (str.splitlines' list).
_BREAKS = re.compile(r"\r\n|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def clean(text: str) -> str:
    """Text without control characters (newline and tab stay) or lone surrogates.

    A lone surrogate cannot be encoded as UTF-8 and would crash every writer, so it becomes
    U+FFFD; a bare carriage return becomes a newline, so that it cannot overwrite a line.
    """
    text = _SURROGATE.sub("\ufffd", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", text)


def visible(text: str, lines: bool = False) -> str:
    """Text for a terminal: every control character shown, never sent (ESC as the four
    characters `\\x1b`, RLO as `\\u202e`), so that the reader sees something was there and
    the terminal only printable text; no lone surrogate. With `lines`, newline and tab stay
    as layout and a bare carriage return is a newline; without, every line break is a space.
    The result holds no control character: showing it again changes nothing."""
    text = _SURROGATE.sub("\ufffd", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n") if lines \
        else _BREAKS.sub(" ", text)
    return _SHOWN.sub(_shown, text)


def _shown(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def one_line(text: str) -> str:
    """`clean` text on a single line: every kind of line break becomes a space."""
    return clean(_BREAKS.sub(" ", text))


def clean_tree(value: object) -> object:
    """`clean` every string in a JSON-like value (dicts, lists, tuples), keys included."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {clean_tree(key): clean_tree(item) for key, item in value.items()}
    if isinstance(value, list):
        return [clean_tree(item) for item in value]
    if isinstance(value, tuple):
        return tuple(clean_tree(item) for item in value)
    return value


def clean_fields(value: T) -> T:
    """`clean` every string of a frozen dataclass, recursively through its fields and tuples.

    Enum members (the statuses are `str`s) and arrays are left as they are.
    """
    item: Any = value
    if type(item) is str:
        return cast(T, clean(item))
    if isinstance(item, tuple):
        return cast(T, tuple(clean_fields(part) for part in item))
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        return cast(T, dataclasses.replace(item, **{
            f.name: clean_fields(getattr(item, f.name)) for f in dataclasses.fields(item)
            if f.init}))
    return value


# OWASP's list of cell starts a spreadsheet may read as a formula (= + - @ tab CR), checked
# once the text is on one line, where a CR has become a space; spreadsheets may also skip
# spaces before a formula.
_FORMULA_START = ("=", "+", "-", "@", "\t", " ")


def csv_cell(text: str) -> str:
    """`one_line` text that no spreadsheet reads as a formula: a risky start gets a `'`."""
    text = one_line(text)
    return "'" + text if text.startswith(_FORMULA_START) else text


MESSAGE_CHARS = 2000
"""Longest message kept in a result (a cell's, a check's): longer helps no one, and a message
built from a submission could otherwise be as large as the submission, or larger."""


def cap(text: str, limit: int = MESSAGE_CHARS) -> str:
    """`text` cut to `limit` characters, saying how many more there were."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def points(value: float) -> str:
    """Points (and percentages) as the result JSON has them, in every table, page and
    message: 12.333333, never 12.3333 (`scoring.shown` rounded them already), and 2 for 2.0."""
    return f"{value:.15g}"
