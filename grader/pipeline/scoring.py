"""Turning compared cases into scored results. Pure: no I/O, no student code.

Points are counted exactly, as fractions (2 points over 6 cases are 1/3 each, and six of them
are 2, not 1.9999999999999998), and rounded in one place, `shown`, to `DECIMALS` decimals:
every score and maximum of a result is such a number, so the result JSON, the gradebook's
CSV, Gradescope's results.json and the class report all say the same one.

Every message a check carries is capped here, where check results are built: an exception
message or a comparison is the student's to make long, and the result must stay small.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from grader.model import Exercise
from grader.results import CheckResult, CheckStatus, Diagnosis, ExerciseResult, Verdict
from grader.text import cap

_ALL_SAME = (CheckStatus.MISSING, CheckStatus.TIMEOUT, CheckStatus.ERROR)
DECIMALS = 6
"""Decimals of every score a result holds."""


def exact(value: float) -> Fraction:
    """A number of points as the decimal it is written as: 0.1 is 1/10, not the binary
    fraction nearest to it."""
    return Fraction(repr(float(value)))


def shown(points: Fraction) -> float:
    """Exact points as a result holds them: rounded once, to `DECIMALS` decimals."""
    return float(round(points, DECIMALS))


def share(exercise: Exercise, name: str) -> Fraction:
    """Exact points of the case called `name`: the exercise's points split equally across
    the cases that earn points (hidden and scored); 0 for a public or an unscored case."""
    earning = [case for case in exercise.cases if case.earns_points]
    if not exercise.case(name).earns_points:
        return Fraction(0)
    return exact(exercise.scored_points) / len(earning)


def _exact_check(exercise: Exercise, check: CheckResult) -> tuple[Fraction, Fraction]:
    """(score, max_score) of a check, exactly."""
    try:
        worth = share(exercise, check.name)
    except KeyError:  # no case of the exercise: its own numbers, as they are
        return exact(check.score), exact(check.max_score)
    return (worth if check.score else Fraction(0)), (worth if check.max_score else Fraction(0))


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
    pairs = [_exact_check(exercise, check) for check in checks]
    return ExerciseResult(
        name=exercise.name, status=status, score=shown(sum((s for s, _ in pairs), Fraction(0))),
        max_score=shown(sum((m for _, m in pairs), Fraction(0))), checks=tuple(checks),
        provided=exercise.provided)


def passed_check(name: str, exercise: Exercise, **fields: object) -> CheckResult:
    """A check that earned its points."""
    points = shown(share(exercise, name))
    return CheckResult(name=name, passed=True, score=points, max_score=points,
                       status=CheckStatus.PASSED, **fields)  # type: ignore[arg-type]


STATUS: dict[Verdict, CheckStatus] = {
    Verdict.WRONG_VALUES: CheckStatus.FAILED, Verdict.WRONG_SHAPE: CheckStatus.FAILED,
    Verdict.WRONG_TYPE: CheckStatus.FAILED, Verdict.RAISED: CheckStatus.ERROR,
    Verdict.CRASHED: CheckStatus.ERROR, Verdict.TOO_LARGE: CheckStatus.ERROR,
    Verdict.TIMED_OUT: CheckStatus.TIMEOUT, Verdict.NOT_WRITTEN: CheckStatus.MISSING}
"""A failing check's status, from its verdict: what a report groups it under."""


def failed_check(name: str, exercise: Exercise, verdict: Verdict, message: str,
                 diagnosis: Diagnosis | None = None, **fields: object) -> CheckResult:
    """A check that earned nothing, and why (capped at `text.MESSAGE_CHARS` characters); its
    status follows from its `verdict` (`STATUS`)."""
    points = shown(share(exercise, name))
    return CheckResult(name=name, passed=False, score=0.0, max_score=points,
                       status=STATUS[verdict], message=cap(message), diagnosis=diagnosis,
                       verdict=verdict, **fields)  # type: ignore[arg-type]


def total(exercises: Sequence[ExerciseResult]) -> tuple[float, float]:
    """(score, max_score) of a submission: the exact sums of its exercises' (which `shown`
    has rounded already, so the total is what adding up the exercises gives)."""
    return (shown(sum((exact(e.score) for e in exercises), Fraction(0))),
            shown(sum((exact(e.max_score) for e in exercises), Fraction(0))))
