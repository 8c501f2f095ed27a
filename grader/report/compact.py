"""What `check()` shows under a student's cell: short, since it runs after every edit.

A passing exercise is one line. A failing one is its verdict, then its first failing check:
the mistake's id and sentence when one is named, and the first lines of what differs; the
full report is one click away, in an HTML `<details>` (in a terminal: `check(..., full=True)`).
The lines are in a `<pre>` with an inline monospace style, so that they keep their font and
columns wherever the notebook is shown, nbconvert's HTML export included. Pure: a `Result` in,
text out.
"""

from __future__ import annotations

import html
from typing import Literal

from grader import text
from grader.results import CheckResult, CheckStatus, ExerciseResult, Result, ResultStatus

DIFFERENCES = 8
"""How many lines of a failing check's message are shown (the table's first rows)."""
_MONOSPACE = ("font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; "
              "white-space: pre-wrap; margin: 0.2em 0")
_COLOURS = {"pass": "#1a7f37", "fail": "#b42318"}


def _verdict(exercise: ExerciseResult) -> tuple[Literal["pass", "fail"], str]:
    """Whether the exercise passes its public checks, and its first line."""
    passed = sum(check.passed for check in exercise.checks)
    total = len(exercise.checks)
    given = "given (not scored): " if not exercise.scored else ""
    if exercise.status is CheckStatus.PASSED:
        which = "its public check passes" if total == 1 else f"all {total} public checks pass"
        tail = "; hidden cases give the points" if exercise.scored else ""
        return "pass", f"✓ {exercise.name}: {given}{which}{tail}."
    return "fail", f"✗ {exercise.name}: {given}{passed} of {total} public checks pass."


def _first_failing(exercise: ExerciseResult) -> CheckResult | None:
    """The failing check to show: the first one with a diagnosis, else the first one."""
    failing = [check for check in exercise.checks if not check.passed]
    return next((c for c in failing if c.diagnosis is not None), failing[0] if failing else None)


def _lines(exercise: ExerciseResult) -> list[str]:
    """The lines under the verdict of a failing exercise."""
    if exercise.missing:
        return [f"  not found: {exercise.missing}"]
    check = _first_failing(exercise)
    if check is None:
        return []
    note = f" ({check.note})" if check.note else ""
    lines = [f"  {check.name}{note}:"]
    if check.diagnosis is not None:
        lines.append(f"  [{check.diagnosis.id}] {check.diagnosis.message}")
    message = check.message.splitlines() or [check.status.value]
    shown = message[:DIFFERENCES]
    lines += [f"    {line}" for line in shown]
    if len(message) > len(shown):
        lines.append("    …")
    return lines


def _plain(value: str) -> str:
    """Untrusted text (a student's exception) as printable characters, line breaks kept."""
    return text.visible(value, lines=True)


def lines(result: Result) -> list[str]:
    """The compact view as lines of text, the first of each exercise its verdict."""
    if result.status is ResultStatus.ERROR:
        return [f"✗ could not check: {result.error or ''}"]
    found: list[str] = []
    for exercise in result.exercises:
        state, first = _verdict(exercise)
        found.append(first)
        if state == "fail":
            found += _lines(exercise)
    return [_plain(line) for line in found]


def terminal(result: Result) -> str:
    """The compact view for a terminal: its lines, the full report left to `full=True`."""
    shown = lines(result)
    passing = all(e.status is CheckStatus.PASSED for e in result.exercises) and \
        result.status is not ResultStatus.ERROR
    hint = [] if passing else ["  (the full report: check(..., full=True))"]
    return "\n".join(shown + hint) + "\n"


def fragment(result: Result, full_report: str) -> str:
    """The compact view as HTML for Jupyter: the verdict in colour and monospace, the first
    differences, and `full_report` (the report's HTML fragment) in a `<details>` when an
    exercise fails; "" for `full_report` leaves it out."""
    shown = lines(result)
    failing = result.status is ResultStatus.ERROR or any(
        e.status is not CheckStatus.PASSED for e in result.exercises)
    colour = _COLOURS["fail" if failing else "pass"]
    head, rest = shown[0], shown[1:]
    body = (f'<pre style="{_MONOSPACE}"><strong style="color: {colour}">{html.escape(head)}'
            f"</strong>")
    if rest:
        body += "\n" + html.escape("\n".join(rest))
    body += "</pre>"
    if failing and full_report:
        body += ('<details><summary style="cursor: pointer">The full report</summary>'
                 f"{full_report}</details>")
    return f'<div class="grader-check">{body}</div>'
