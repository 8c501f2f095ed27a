"""When students may see the details of hidden checks: after the assignment's
`show_hidden_after`, the way Gradescope's after_due_date tests work.

Before that time (and always, when it is not set) a hidden check shows its result, its status,
its diagnosis and a message with no number derived from the hidden case (`compare`). From
that time on, its message also holds the comparison's numbers: how many elements differ, the
largest differences, and the worst elements with what was obtained and what was expected.
Never its inputs, and never the heatmaps (the whole expected arrays). The decision is taken
when the submission is graded, against an injectable clock (`grading.Options.clock`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

from grader.model import Assignment, Visibility
from grader.results import Result

Clock = Callable[[], datetime]


def wall_clock() -> datetime:
    """Now, in UTC."""
    return datetime.now(UTC)


def shown(assignment: Assignment, now: datetime) -> bool:
    """Whether the details of hidden checks are visible at `now`."""
    return assignment.show_hidden_after is not None and now >= assignment.show_hidden_after


def disclose(result: Result, assignment: Assignment, now: datetime) -> Result:
    """The result as students may see it at `now`: the details of hidden checks in their
    messages once they are due; else kept aside (`CheckResult.detail`) for the instructor's
    views and, when the assignment shows them some day, Gradescope's after_due_date tests."""
    after = assignment.show_hidden_after
    visible = shown(assignment, now)
    exercises = []
    for exercise in result.exercises:
        checks = []
        for check in exercise.checks:
            if check.visibility is Visibility.HIDDEN and check.detail and visible:
                check = replace(check, message=check.detail)
            checks.append(check)
        exercises.append(replace(exercise, checks=tuple(checks)))
    when = after.astimezone(UTC).isoformat(timespec="minutes") if after else ""
    return replace(result, exercises=tuple(exercises), show_hidden_after=when,
                   hidden_shown=visible)
