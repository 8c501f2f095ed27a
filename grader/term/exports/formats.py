"""The export formats: one dialect module per platform, each naming itself. Light to import
(`grade gradebook export --format` is parsed from it): a dialect imports no gradebook."""

from __future__ import annotations

from grader.term.exports import canvas, moodle, plain

DIALECTS = {dialect.NAME: dialect for dialect in (plain, canvas, moodle)}
"""Each format's dialect, by the name `--format` gives it."""
FORMATS = tuple(DIALECTS)
"""The formats, the first the default."""


def described() -> str:
    """`--format`'s help: each format with what it is for."""
    return ", ".join(f"{name} ({dialect.FOR})" for name, dialect in DIALECTS.items())
