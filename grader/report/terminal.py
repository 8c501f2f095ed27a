"""A short, readable summary for the terminal; colour only where the terminal supports it.

Where Rich is not installed (the self-check a released file carries, with numpy alone), the same
lines are printed without colour by `plain`.
"""

from __future__ import annotations

import io
from pathlib import Path

from grader import text
from grader.results import CellStatus, CheckStatus, Result, ResultStatus

try:
    from rich.console import Console
    from rich.markup import escape
except ImportError:  # numpy alone: the same lines, without colour
    from grader.report.plain import Console, escape  # type: ignore[assignment]

_STYLE = {CheckStatus.PASSED: "green", CheckStatus.FAILED: "red", CheckStatus.MISSING: "yellow",
          CheckStatus.ERROR: "red", CheckStatus.TIMEOUT: "magenta"}
_CELL_STYLE = {CellStatus.OK: "green", CellStatus.ERROR: "red", CellStatus.TIMEOUT: "magenta",
               CellStatus.CRASHED: "red", CellStatus.SKIPPED: "dim"}
_MARK = {CheckStatus.PASSED: "✓", CheckStatus.FAILED: "✗", CheckStatus.MISSING: "?",
         CheckStatus.ERROR: "!", CheckStatus.TIMEOUT: "⏱"}


def _safe(value: str) -> str:
    """Untrusted text for one printed line: control characters shown (`text.visible`), no
    line break, and Rich markup escaped, so that it prints as the characters it is."""
    return escape(text.visible(value))


def _took(result: Result) -> str:
    """" in 0.42 s", where a student's report may say how long grading took (`timed`)."""
    return f" in {result.duration_s:.2f} s" if result.timed else ""


def render(result: Result, color: bool = False, verbose: bool = False) -> str:
    """The summary as text, with ANSI colours when `color` is set."""
    target = io.StringIO()
    console = Console(file=target, highlight=False, soft_wrap=True, emoji=False,
                      force_terminal=color, no_color=not color, width=100)
    # The path as the instructor typed it (reports for students show the file's name only).
    title = _safe(f"{result.submission} · {result.assignment}")
    if result.status is ResultStatus.ERROR:
        console.print(f"[bold]{title}[/]: [red]could not be graded[/]")
        console.print(f"  {_safe(result.error or '')}")
        return target.getvalue()
    if result.public_only:
        passed = sum(c.passed for e in result.exercises for c in e.checks)
        total = sum(len(e.checks) for e in result.exercises)
        console.print(f"[bold]{title}[/]: [bold]{passed} / {total} public checks pass[/] "
                      f"(public cases only){_took(result)}")
    else:
        console.print(f"[bold]{title}[/]: [bold]{result.score:g} / {result.max_score:g}[/]"
                      f"{_took(result)}")
    if result.show_hidden_after and not result.public_only:
        when = "shown since" if result.hidden_shown else "shown from"
        console.print(f"  hidden checks: details {when} {_safe(result.show_hidden_after)}")
    for exercise in result.exercises:
        style = _STYLE.get(exercise.status, "")
        passed = sum(check.passed for check in exercise.checks)
        points = "" if result.public_only else f"{exercise.score:g}/{exercise.max_score:g}  "
        if not exercise.scored:
            style, points = "dim", "given, not scored  "
        origin = f"  from {_safe(Path(exercise.file).name)}" if exercise.file else ""
        console.print(f"  [{style}]{_MARK.get(exercise.status, '·') if exercise.scored else '·'} "
                      f"{exercise.name}[/] "
                      f"{points}({passed}/{len(exercise.checks)} checks){origin}")
        if exercise.missing:
            console.print(f"      not found: {_safe(exercise.missing)}")
            continue
        for caution in dict.fromkeys(c.caution for c in exercise.checks if c.caution):
            console.print(f"      [yellow]careful[/]: {_safe(caution)}")
        shown = set()
        for check in exercise.checks:
            if check.passed:
                continue
            lines = check.message.splitlines() or [check.status.value]
            if check.diagnosis:
                lines = [f"[{check.diagnosis.id}] {check.diagnosis.message}", *lines]
            if lines[0] in shown and not verbose:
                continue
            shown.add(lines[0])
            public = check.visibility.value == "public"
            detail = lines[:8] if public or verbose or result.hidden_shown else lines[:1]
            console.print(f"      {_safe(check.name)} ({check.worth}): "
                          f"{_safe(detail[0])}")
            for line in detail[1:]:
                console.print(f"        {_safe(line)}")
    for cell in result.problem_cells:
        where = f"{_safe(Path(cell.file).name)} " if cell.file else ""
        console.print(f"  [{_CELL_STYLE.get(cell.status, '')}]{where}{cell.where}: "
                      f"{cell.status.value}[/]: {_safe(cell.message)}")
    return target.getvalue()
