"""What a regrade changed: each student whose recorded score or checks differ after grading
again, from what to what, and on which checks. A grade never changes silently: the batch
prints the summary and saves the whole diff as OUT/regrade-<timestamp>.json.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from grader import text
from grader.results import Result


@dataclass(frozen=True)
class Change:
    """One student's submission, graded again, with a different outcome."""

    student: str
    """Whose."""
    submission: str
    """The recorded submission."""
    old_score: float
    """The score recorded before."""
    new_score: float
    """The score now."""
    max_score: float
    """Points available now."""
    checks: tuple[str, ...]
    """Each check (or exercise) whose status or points changed: "ex/case: passed -> failed"."""

    def line(self) -> str:
        """One line of the summary."""
        shown = ", ".join(self.checks[:5]) + (f" and {len(self.checks) - 5} more"
                                              if len(self.checks) > 5 else "")
        return (f"{self.student}: {text.points(self.old_score)} -> {text.points(self.new_score)}"
                f"/{text.points(self.max_score)}" + (f" ({shown})" if shown else ""))


def compare(student: str, submission: str, old: Result, new: Result) -> Change | None:
    """The change between two results of one submission, or None when they agree on the
    score and on every check's status and points."""
    before, after = _checks(old), _checks(new)
    checks = []
    for name in list(before) + [name for name in after if name not in before]:
        was, now = before.get(name), after.get(name)
        if was != now:
            checks.append(f"{name}: {_state(was)} -> {_state(now)}")
    if old.status is not new.status:
        checks.insert(0, f"result: {old.status.value} -> {new.status.value}")
    if not checks and old.score == new.score:
        return None
    return Change(student, submission, old.score, new.score, new.max_score, tuple(checks))


def save(out: Path, assignment: str, changes: Sequence[Change], compared: int) -> Path:
    """Write OUT/regrade-<UTC timestamp>.json."""
    now = datetime.now(UTC)
    path = Path(out) / f"regrade-{now.strftime('%Y%m%dT%H%M%S%fZ')}.json"
    path.write_text(json.dumps({"assignment": assignment, "at": now.isoformat(
        timespec="seconds"), "compared": compared, "changed": [asdict(c) for c in changes]},
        indent=1), encoding="utf-8")
    return path


def summary(changes: Sequence[Change], compared: int, path: Path | None) -> list[str]:
    """The lines the batch prints."""
    if not compared:
        return []
    where = f"; saved in {path}" if path else ""
    head = (f"regrade: {len(changes)} of {compared} recorded submissions changed{where}"
            if changes else f"regrade: none of {compared} recorded submissions changed{where}")
    return [head, *(f"  {change.line()}" for change in changes)]


def _checks(result: Result) -> dict[str, tuple[str, float]]:
    found = {}
    for exercise in result.exercises:
        found[exercise.name] = (exercise.status.value, exercise.score)
        for check in exercise.checks:
            found[f"{exercise.name}/{check.name}"] = (check.status.value, check.score)
    return found


def _state(value: tuple[str, float] | None) -> str:
    return "absent" if value is None else f"{value[0]} ({text.points(value[1])} pts)"
