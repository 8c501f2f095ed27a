"""The Markdown report, for CI job summaries."""

from __future__ import annotations

from grader.report.render import render as _render
from grader.results import Result


def render(result: Result) -> str:
    """The report as GitHub-flavoured Markdown."""
    return _render("report.md.j2", result)
