"""What a student's report files are called: the one rule for `grade run`'s report folders and
a batch's `results/<student>/`."""

from __future__ import annotations

from pathlib import Path

from grader.results import Result


def report_path(folder: Path, result: Result, suffix: str) -> Path:
    """Where `result`'s report with `suffix` (".json", ".html", ".md") goes in `folder`: named
    after the submission file, or after the assignment when the result combines a student's
    several files."""
    stem = result.assignment if result.files else Path(result.submission).stem
    return folder / f"{stem}{suffix}"
