"""A short, readable summary for the terminal; colour only where the terminal supports it.

The summary is built as lines of styled pieces (`Piece`), each piece's text printed as the
characters it is (untrusted text through `text.visible` first). Plain text joins the pieces;
colour (and a tab) hands them to Rich, imported only then, since Rich costs a `grade run`
whose output is not a terminal about a third of numpy's import. A test proves that the plain
lines are what Rich prints without colour.
"""

from __future__ import annotations

import io
from pathlib import Path

from grader import text
from grader.report.advice import handed_in, is_tip, label, parts
from grader.results import CellStatus, CheckStatus, ExerciseResult, Result, ResultStatus

_STYLE = {CheckStatus.PASSED: "green", CheckStatus.FAILED: "red", CheckStatus.MISSING: "yellow",
          CheckStatus.ERROR: "red", CheckStatus.TIMEOUT: "magenta"}
_CELL_STYLE = {CellStatus.OK: "green", CellStatus.ERROR: "red", CellStatus.TIMEOUT: "magenta",
               CellStatus.CRASHED: "red", CellStatus.SKIPPED: "dim"}
_MARK = {CheckStatus.PASSED: "✓", CheckStatus.FAILED: "✗", CheckStatus.MISSING: "?",
         CheckStatus.ERROR: "!", CheckStatus.TIMEOUT: "⏱"}

Piece = tuple[str, str]
"""(text, Rich style): a run of one style; "" for none."""
Line = tuple[Piece, ...]


def _safe(value: str) -> str:
    """Untrusted text for one printed line: control characters shown (`text.visible`), no
    line break."""
    return text.visible(value)


def _took(result: Result) -> str:
    """" in 0.42 s", where a student's report may say how long grading took (`timed`)."""
    return f" in {result.duration_s:.2f} s" if result.timed else ""


def lines(result: Result, verbose: bool = False) -> list[Line]:
    """The summary, line by line."""
    title = _safe(f"{result.submission} · {result.assignment}")
    if result.status is ResultStatus.ERROR:
        return [((title, "bold"), (": ", ""), ("could not be graded", "red")),
                ((f"  {_safe(result.error or '')}", ""),)]
    out: list[Line] = []
    listed = handed_in(result)  # a part not handed in is said once, below the title
    if result.public_only:
        passed = sum(c.passed for e in listed for c in e.checks)
        total = sum(len(e.checks) for e in listed)
        out.append(((title, "bold"), (": ", ""),
                    (f"{passed} / {total} public checks pass", "bold"),
                    (f" (public cases only){_took(result)}", "")))
    else:
        out.append(((title, "bold"), (": ", ""),
                    (f"{result.score:g} / {result.max_score:g}", "bold"), (_took(result), "")))
    if parts(result).heading:
        out.append((("  ", ""), (_safe(parts(result).heading), "yellow")))
    if result.show_hidden_after and not result.public_only:
        when = "shown since" if result.hidden_shown else "shown from"
        out.append(((f"  hidden checks: details {when} {_safe(result.show_hidden_after)}", ""),))
    for exercise in listed:
        out.extend(_exercise(result, exercise, verbose))
    for cell in result.problem_cells:
        where = f"{_safe(Path(cell.file).name)} " if cell.file else ""
        out.append((("  ", ""), (f"{where}{cell.where}: {cell.status.value}",
                                 _CELL_STYLE.get(cell.status, "")),
                    (f": {_safe(cell.message)}", "")))
    return out


def _exercise(result: Result, exercise: ExerciseResult, verbose: bool) -> list[Line]:
    style = _STYLE.get(exercise.status, "")
    passed = sum(check.passed for check in exercise.checks)
    points = "" if result.public_only else f"{exercise.score:g}/{exercise.max_score:g}  "
    if not exercise.scored:
        style, points = "dim", "given, not scored  "
    origin = f"  from {_safe(Path(exercise.file).name)}" if exercise.file else ""
    mark = _MARK.get(exercise.status, "·") if exercise.scored else "·"
    out: list[Line] = [(("  ", ""), (f"{mark} {exercise.name}", style),
                        (f" {points}({passed}/{len(exercise.checks)} checks){origin}", ""))]
    if exercise.missing:
        out.append(((f"      not found: {_safe(exercise.missing)}", ""),))
        return out
    if exercise.caution:
        out.append((("      ", ""), ("careful", "yellow"), (f": {_safe(exercise.caution)}", "")))
    shown = set()
    for check in exercise.checks:
        if check.passed:
            continue
        said = check.message.splitlines() or [check.status.value]
        if check.diagnosis:
            said = [f"[{check.diagnosis.id}] {check.diagnosis.message}", *said]
        if said[0] in shown and not verbose:
            continue
        shown.add(said[0])
        public = check.visibility.value == "public"
        detail = said[:9] if public or verbose or result.hidden_shown else said[:1]
        head = f"      {_safe(check.name)} ({check.worth}): "
        if is_tip(exercise, check):  # advice, worth no points: never drawn as a failure
            out.append(((head, ""), (label(check, True) or "Tip:", "blue"),
                        (f" {_safe(detail[0])}", "")))
        else:
            out.append(((head + _safe(detail[0]), ""),))
        out.extend(((f"        {_safe(line)}", ""),) for line in detail[1:])
    return out


def plain(summary: list[Line]) -> str:
    """The lines as plain text (a tab, which Rich expands to the next multiple of eight
    columns of the terminal's cells, through Rich; where Rich is missing, as a released
    file's own self-check runs with numpy alone, to the next multiple of eight characters)."""
    text = "".join("".join(piece for piece, _ in line) + "\n" for line in summary)
    if "\t" not in text:
        return text
    try:
        return coloured(summary, color=False)
    except ImportError:
        return text.expandtabs(8)


def coloured(summary: list[Line], color: bool = True) -> str:
    """The lines as Rich prints them: with ANSI colours, or (`color` False) without."""
    from rich.console import Console
    from rich.text import Text

    target = io.StringIO()
    console = Console(file=target, highlight=False, soft_wrap=True, emoji=False,
                      force_terminal=color, no_color=not color, width=100)
    for line in summary:
        console.print(Text.assemble(*line))
    return target.getvalue()


def render(result: Result, color: bool = False, verbose: bool = False) -> str:
    """The summary as text, with ANSI colours when `color` is set."""
    summary = lines(result, verbose)
    return coloured(summary) if color else plain(summary)
