"""Turning compared cases into scored results. Pure: no I/O, no student code.

Every message a check carries is capped here, where check results are built: an exception
message or a comparison is the student's to make long, and the result must stay small.
"""

from __future__ import annotations

from collections.abc import Sequence

from grader.model import Exercise
from grader.results import CheckResult, CheckStatus, Diagnosis, ExerciseResult
from grader.sandbox.limits import cap

_ALL_SAME = (CheckStatus.MISSING, CheckStatus.TIMEOUT, CheckStatus.ERROR)


def exercise_result(exercise: Exercise, checks: Sequence[CheckResult]) -> ExerciseResult:
    """Add up an exercise's checks; its status says what most needs fixing in the checks
    that count (an unscored check is advice, and does not fail an exercise that has points)."""
    scored = [check for check in checks if check.scored] or list(checks)
    statuses = {check.status for check in scored}
    if statuses == {CheckStatus.PASSED}:
        status = CheckStatus.PASSED
    else:
        status = next((s for s in _ALL_SAME if statuses == {s}), CheckStatus.FAILED)
        if status is CheckStatus.FAILED and statuses <= {CheckStatus.ERROR, CheckStatus.TIMEOUT}:
            status = CheckStatus.ERROR
    return ExerciseResult(
        name=exercise.name, status=status,
        score=round(sum(check.score for check in checks), 6),
        max_score=float(sum(check.max_score for check in checks)), checks=tuple(checks),
        provided=exercise.provided)


def passed_check(name: str, exercise: Exercise, **fields: object) -> CheckResult:
    """A check that earned its points."""
    points = exercise.case_points(exercise.case(name))
    return CheckResult(name=name, passed=True, score=points, max_score=points,
                       status=CheckStatus.PASSED, **fields)  # type: ignore[arg-type]


def failed_check(name: str, exercise: Exercise, status: CheckStatus, message: str,
                 diagnosis: Diagnosis | None = None, **fields: object) -> CheckResult:
    """A check that earned nothing, and why (capped at `limits.MESSAGE_CHARS` characters)."""
    points = exercise.case_points(exercise.case(name))
    return CheckResult(name=name, passed=False, score=0.0, max_score=points,
                       status=status, message=cap(message), diagnosis=diagnosis,
                       **fields)  # type: ignore[arg-type]


def total(exercises: Sequence[ExerciseResult]) -> tuple[float, float]:
    """(score, max_score) of a submission."""
    return (round(sum(e.score for e in exercises), 6),
            float(sum(e.max_score for e in exercises)))
