"""ISO 8601 times as instructors' files and platforms' exports write them, read in one place:
`datetime.fromisoformat`, after surrounding space is dropped and a lower-case `z` for UTC, an
offset without its colon (`-0800`) and a fraction of a second of any length are written in
the one form every Python reads."""

from __future__ import annotations

import re
from datetime import datetime

_ZULU = re.compile(r"[Zz]$")
_OFFSET = re.compile(r"(T.*[+-]\d\d)(\d\d)$")
_FRACTION = re.compile(r"\.(\d+)")


def normal(value: str) -> str:
    """`value` in the plainest form `fromisoformat` reads: surrounding space dropped, `Z` or
    `z` as `+00:00`, an offset's colon, a fraction of a second in 6 digits (longer ones cut)."""
    text = _OFFSET.sub(r"\1:\2", _ZULU.sub("+00:00", value.strip()))
    return _FRACTION.sub(lambda digits: "." + f"{digits[1]:0<6}"[:6], text)


def parse(value: str) -> datetime:
    """`value` as a datetime (`normal`); ValueError when it is not one."""
    return datetime.fromisoformat(normal(value))
