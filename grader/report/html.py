"""The HTML report: one self-contained file that works offline."""

from __future__ import annotations

from grader.report.render import render as _render
from grader.results import Result


def render(result: Result) -> str:
    """A complete HTML document."""
    return _render("report.html.j2", result, standalone=True)


def fragment(result: Result) -> str:
    """The same report without the document around it, for display inside Jupyter."""
    return _render("report.html.j2", result, standalone=False)
