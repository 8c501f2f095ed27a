"""TeX in a notebook's Markdown, as MathML made on the server.

The feedback page runs no script (its content security policy forbids all), so MathJax cannot
draw the book's `$\\mathbf{x}_{n}\\in\\mathbb{R}^{D}$`; a browser draws MathML itself. Before
the Markdown becomes HTML, each formula outside code (`$...$`, `$$...$$`, `\\(...\\)`,
`\\[...\\]`) is replaced by the MathML that `latex2mathml` makes of it. A formula it cannot
read stays as written; code spans and fenced blocks are left alone. Pure: text in, text out.
The MathML then passes the page's allow-list (`feedback.clean`) like any other HTML.
"""

from __future__ import annotations

import re

_CODE = re.compile(r"(^[ \t]*```.*?^[ \t]*```[ \t]*$|^[ \t]*~~~.*?^[ \t]*~~~[ \t]*$|"
                   r"(`+)[^`].*?\2)", re.S | re.M)
"""Fenced blocks and code spans, which hold code, never math."""
_MATH = re.compile(r"\$\$(.+?)\$\$|\\\[(.+?)\\\]|"
                   r"(?<![\\$\w])\$(?=\S)([^$\n]+?)(?<=\S)\$(?![\d$])|\\\((.+?)\\\)", re.S)
"""Display math (`$$..$$`, `\\[..\\]`), then inline math (`$..$` not around a price such as
"$5 and $6", `\\(..\\)`)."""


def render(markdown: str) -> str:
    """`markdown` with each formula outside code written as MathML."""
    pieces = _CODE.split(markdown)
    out = []
    index = 0
    while index < len(pieces):
        out.append(_MATH.sub(_formula, pieces[index]))
        if index + 1 < len(pieces):
            out.append(pieces[index + 1])  # a code block or span, as it is
        index += 3  # the text, the code, the code's backticks (a group of _CODE)
    return "".join(out)


def _formula(match: re.Match[str]) -> str:
    """One formula as MathML, or as written when latex2mathml cannot read it."""
    from latex2mathml.converter import convert  # loaded only for a page with math

    display = match.group(1) or match.group(2)
    tex = display or match.group(3) or match.group(4) or ""
    try:
        return convert(tex.strip(), display="block" if display else "inline")
    except Exception:  # any TeX it cannot read: the student's text is shown as written
        return match.group(0)
