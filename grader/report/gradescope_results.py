"""Gradescope's results.json: one test per check, Markdown output, visibility per case."""

from __future__ import annotations

import json
from typing import Any

from grader import result_json, text
from grader.model import Visibility
from grader.report import markdown
from grader.report.advice import is_tip, label
from grader.report.render import fence, md_escape
from grader.results import Result

# Hidden cases are shown once the due date has passed; public ones at once. With the
# assignment's show_hidden_after, a hidden test carries its details, which Gradescope shows
# after the due date set there (set it to the same time), or at once when it has passed.
VISIBILITY = {Visibility.PUBLIC: "visible", Visibility.HIDDEN: "after_due_date"}


def to_dict(result: Result) -> dict[str, Any]:
    """The results.json document for one graded submission."""
    result = text.clean_fields(result)
    tests = []
    for i, exercise in enumerate(result.exercises, start=1):
        for j, check in enumerate(exercise.checks, start=1):
            lines = []
            tip = is_tip(exercise, check)
            if check.diagnosis:  # the catalogue id stays in the tags, for machines
                headed = label(check, tip)
                lines.append((f"**{headed}** " if headed else "")
                             + md_escape(check.diagnosis.message))
            if check.note:
                lines.append(f"*{md_escape(check.note)}*")
            if check.caution:
                lines.append(f"**Careful:** {md_escape(check.caution)}.")
            # after_due_date tests show the details once due, where the assignment says when
            message = (check.detail or check.message) if result.show_hidden_after \
                else check.message
            if message:
                marks = fence(message)
                lines.append(f"{marks}text\n{message}\n{marks}")
            # A tip has no status: Gradescope colours a test by its status, and a tip is worth
            # no points, so it is shown neither green nor red.
            status = {} if tip else {"status": "passed" if check.passed else "failed"}
            tests.append({
                "name": f"{exercise.name}: {check.name}" + (" (a tip)" if tip else ""),
                "number": f"{i}.{j}", "score": check.score, "max_score": check.max_score,
                **status,
                "output": "\n\n".join(lines), "output_format": "md",
                "visibility": "visible" if result.hidden_shown else VISIBILITY[check.visibility],
                "tags": [exercise.name, check.visibility.value,
                         *([check.diagnosis.id] if check.diagnosis else [])],
            })
    timing = {"execution_time": round(result.duration_s, 3)} if result.timed else {}
    return {
        "score": result.score, **timing,
        "output": markdown.render(result),
        "output_format": "md", "test_output_format": "md", "test_name_format": "text",
        "visibility": "visible", "stdout_visibility": "hidden", "tests": tests,
        "extra_data": {"grader": result_json.to_dict(result)},
    }


def render(result: Result) -> str:
    """results.json as text."""
    return json.dumps(to_dict(result), indent=2)
