"""The feedback notebooks of `grade run --feedback` and `grade batch --feedback`: a student's
own notebook read again, the cell of each exercise found in its source
(`grader.pipeline.definitions`), and the result's feedback cells put after them
(`grader.report.feedback`), written as `.ipynb` or as one HTML page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from grader.errors import SubmissionError
from grader.pipeline import definitions, loading, notebooks, submissions
from grader.report import feedback
from grader.results import Result
from grader.sandbox.limits import Limits

SUFFIX = ".feedback.html"
"""What a notebook's feedback page is called beside its other reports: `<stem>.feedback.html`."""


def annotated(result: Result, path: Path, key: str = "",
              limits: Limits | None = None) -> tuple[dict[str, Any] | None, str]:
    """The notebook at `path` with `result`'s feedback cells, or None and why not (it is no
    notebook, or it cannot be read). `key` is the file's name in a result that combines a
    student's several files."""
    if path.suffix != ".ipynb":
        return None, f"{path.name} is a module, not a notebook: its feedback is the --html report"
    try:
        submission = loading.load(path, limits)
        raw = submissions.read_bytes(path).decode("utf-8-sig")
        notebook = notebooks.read(str(path), raw)
    except SubmissionError as exc:
        return None, str(exc)
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"{path}: cannot be read again ({exc})"
    defined = definitions.defining_cells(submission, [e.name for e in result.exercises])
    return feedback.annotate(result, notebook, defined, key), ""


def content(result: Result, path: Path, key: str, target: Path,
            limits: Limits | None = None) -> tuple[str | None, str]:
    """The feedback file for the notebook at `path`, as `target`'s suffix asks: a notebook
    (`.ipynb`) or a page (any other); or None and why not."""
    notebook, why = annotated(result, path, key, limits)
    if notebook is None:
        return None, why
    if target.suffix == ".ipynb":
        return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", ""
    try:
        return feedback.to_html(notebook, f"Feedback: {path.name}"), ""
    except Exception as exc:  # nbconvert on a notebook it cannot read: no page, said
        return None, (f"{path.name}: nbconvert could not render it "
                      f"({type(exc).__name__}: {exc}); the --html report has its feedback")
