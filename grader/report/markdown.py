"""The Markdown report, for CI job summaries."""

from __future__ import annotations

from grader.model import Result
from grader.report.render import render as _render


def render(result: Result) -> str:
    """The report as GitHub-flavoured Markdown."""
    return _render("report.md.j2", result)
