"""Each exercise judged on its own code: a failing check is asked again with the reference of
each graded or given function its exercise calls in place of the submission's own.

A correct `MultiHeadedAttention` that calls the student's wrong `attention` fails as it runs.
Which functions an exercise calls is read from the submission's source (`callees.reached`:
the exercise's definition, followed through the submission's top-level functions and
classes). For each failing check worth a student's reading (a scored case, or the public
example), the case is called again in the sandbox, once per such function in the
assignment's order, with that function's definition from the solution module
(`callees.definition_source`) put in place of the submission's own in the call's process
(`calling.substitute`), until one call passes. When one does:

- the check's diagnosis is `CALLEE_FAILS`, with a sentence that says the exercise is right by
  itself and names the function where the mistake is (a hidden check says the vocabulary's
  fixed sentence for that id);
- `CheckResult.callee` names it, for the class report, which counts the mistake there once;
- with the assignment's `credit` "own-code", a scored check earns its points (a public
  example, worth none, keeps its failure and its sentence).

Security: these calls are made after every hidden case has been asked, in a fresh process
each, and what they print goes nowhere. The submission's code meets the reference function
there (it may read it), and what comes back of the call is one bit: whether the case then
passed, said in the closed vocabulary. Nothing is run again in a public-only grading, which
has no solution.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import replace

from grader.course import references
from grader.model import Assignment, Case, Credit, Exercise, Visibility
from grader.pipeline import callees, checking, compare, scoring
from grader.pipeline.checking import Call
from grader.pipeline.diagnose import CALLEE_FAILS
from grader.results import CheckResult, Diagnosis, ExerciseResult, Verdict
from grader.sandbox.session import Session

GROUP = "own-code"
"""The call group of the calls asked again: never a process shared with a graded call."""

Blamed = Mapping[tuple[str, str], str]
"""(exercise, case) -> the function whose reference makes that failing check pass."""


def sentence(exercise: str, callee: str) -> str:
    """What a check that fails only because of `callee` says."""
    return (f"`{exercise}` is right by itself: it fails because the `{callee}` it calls fails "
            f"(see {callee}).")


def solution_sources(assignment: Assignment, wanted: Sequence[str]) -> dict[str, str]:
    """The definition of each of `wanted` in the assignment's solution module; none when the
    module cannot be read (a release's check, which has no solution)."""
    try:
        module = references.solution_file(assignment.name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    found = {name: callees.definition_source(module, name) for name in wanted}
    return {name: source for name, source in found.items() if source}


def blame(session: Session, assignment: Assignment, calls: Sequence[Call],
          stored: references.References, statements: Sequence[ast.stmt]) -> Blamed:
    """Ask each failing check worth reading again with the reference of each function its
    exercise calls (see the module's docstring); what passes, and with which function. Call
    it once every hidden case has been asked."""
    failing = [call for call in calls if _worth_asking(call)]
    if not failing:  # most gradings: the source is not read
        return {}
    reached = callees.reached(statements, [e.name for e in assignment.exercises])
    failing = [call for call in failing if reached.get(call.exercise)]
    if not failing:
        return {}
    sources = solution_sources(assignment, sorted({c for call in failing
                                                   for c in reached[call.exercise]}))
    late = {call.exercise for call in calls if call.check.caution == checking.LATE}
    found: dict[tuple[str, str], str] = {}
    for call in failing:
        exercise = assignment.exercise(call.exercise)
        case = exercise.case(call.check.name)
        at = "definition" if call.hidden and exercise.name in late else "end"
        for callee in reached[exercise.name]:
            if callee in sources and _passes(session, exercise, case, stored, at,
                                             {"name": callee, "source": sources[callee]}):
                found[exercise.name, case.name] = callee
                break
    return found


def _worth_asking(call: Call) -> bool:
    """A failing check a student reads for its exercise: scored, or the public example (an
    unscored hidden case is advice), of a function that exists."""
    check = call.check
    return (not check.passed and check.verdict is not Verdict.NOT_WRITTEN
            and (check.scored or check.visibility is Visibility.PUBLIC))


def _passes(session: Session, exercise: Exercise, case: Case,
            stored: references.References, at: str, reference: dict[str, str]) -> bool:
    """Whether the case passes with `reference` in place of the submission's function."""
    expected = stored.get(exercise.name, case.name)
    outcome = session.call(exercise.name, exercise.kind, case.inputs(), dict(case.init_kwargs),
                           exercise.tensors, at=at, max_bytes=checking.reply_limit(expected),
                           group=GROUP, fresh=True, reference=reference)
    if not outcome.returned:
        return False
    return compare.compare(outcome.value, expected, exercise.outputs, case.rtol, case.atol,
                           reveal=False, axes=exercise.axes).passed


def attribute(result: ExerciseResult, exercise: Exercise, blamed: Blamed,
              credit: Credit) -> ExerciseResult:
    """An exercise's result with each check that `blamed` names told where its mistake is,
    and scored as `credit` says."""
    checks = [_attributed(check, exercise, blamed.get((exercise.name, check.name)), credit)
              for check in result.checks]
    if checks == list(result.checks):
        return result
    return replace(scoring.exercise_result(exercise, checks), file=result.file,
                   fingerprint=result.fingerprint)


def _attributed(check: CheckResult, exercise: Exercise, callee: str | None,
                credit: Credit) -> CheckResult:
    if callee is None or check.passed:
        return check
    if credit == "own-code" and check.scored:
        return scoring.passed_check(check.name, exercise, visibility=check.visibility,
                                    note=check.note, callee=callee)
    return replace(check, diagnosis=Diagnosis(CALLEE_FAILS, sentence(exercise.name, callee)),
                   alternatives=(), callee=callee)
