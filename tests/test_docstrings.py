"""The grader's docstrings and comments state the design as it is: none names an issue, which
tells the history of a line, not what it does."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

from tests.conftest import ROOT

URL = re.compile(r"https?://\S+")
COLOUR = re.compile(r"#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})\b")
ISSUE = re.compile(r"(?<![\w&])#\d+\b|\bissues?\s+#?\d+|\bas before\b", re.IGNORECASE)


def prose(path: Path) -> list[tuple[int, str]]:
    """The comments and docstrings of a module (every string that stands as a statement), by
    the line they start on."""
    source = path.read_text(encoding="utf-8")
    found = [(token.start[0], token.string)
             for token in tokenize.generate_tokens(io.StringIO(source).readline)
             if token.type == tokenize.COMMENT]
    found += [(node.lineno, node.value.value) for node in ast.walk(ast.parse(source))
              if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
              and isinstance(node.value.value, str)]
    return found


def history(text: str) -> list[str]:
    """What in `text` names an issue (URLs and colour codes left aside)."""
    return ISSUE.findall(COLOUR.sub("", URL.sub("", text)))


def test_history_is_found_and_what_is_not_history_is_left():
    assert history("(issue #25)") == ["issue #25"]
    assert history("absent before #24; see issue 21, as before") == ["#24", "issue 21",
                                                                     "as before"]
    assert history('fill="#000", https://github.com/o/r/issues/3#12, &#39; x[#1]') == ["#1"]


def test_no_docstring_or_comment_of_the_grader_names_an_issue():
    modules = sorted((ROOT / "grader").rglob("*.py"))
    assert len(modules) > 100
    named = [f"{path.relative_to(ROOT)}:{line}: {', '.join(found)}"
             for path in modules for line, text in prose(path) if (found := history(text))]
    assert named == []
