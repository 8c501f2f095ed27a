"""The two parts of Rich that the terminal summary uses, as plain text, for where Rich is missing.

The self-check that a released notebook or module carries runs with numpy alone, so its summary
is printed without Rich: the same lines, without colour (`terminal` imports these instead).
Markup is read as Rich reads it: a tag is `[` then a letter, `#`, `/` or `@`, up to `]`; an odd
number of backslashes before it makes it text. `tests/test_plain.py` holds the two to the same
output.
"""

from __future__ import annotations

import re
from typing import Any, TextIO

_ESCAPE = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")
_TAGS = re.compile(r"((\\*)\[([a-z#/@][^[]*?)])")


def escape(markup: str) -> str:
    """Text that prints as itself, as Rich's `escape` writes it."""
    markup = _ESCAPE.sub(lambda m: f"{m.group(1)}{m.group(1)}\\{m.group(2)}", markup)
    if markup.endswith("\\") and not markup.endswith("\\\\"):
        return markup + "\\"
    return markup


def _text(markup: str) -> str:
    """What a line of markup prints: tags dropped, escaped ones printed as text."""
    parts, position = [], 0
    for match in _TAGS.finditer(markup):
        whole, escapes, _ = match.groups()
        start, end = match.span()
        parts.append(markup[position:start].replace("\\[", "["))
        backslashes, escaped = divmod(len(escapes), 2)
        parts.append("\\" * backslashes)
        if escaped:
            parts.append(whole[len(escapes):])
        position = end
    parts.append(markup[position:].replace("\\[", "["))
    return "".join(parts)


class Console:
    """Prints markup as plain text to `file`; Rich's other keyword arguments are accepted."""

    def __init__(self, file: TextIO, **options: Any) -> None:
        self.file = file

    def print(self, markup: str) -> None:
        """One line of markup, as text."""
        self.file.write(_text(markup) + "\n")
