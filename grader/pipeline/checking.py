"""Calling each exercise on each case in a submission's sandbox, and turning what comes back
into checks: judged against the reference (`judging`), the exercise's diagnoses agreed,
scored; what the calls printed split into what students see and what only the instructor
sees. What a hidden check says is chosen later, from the closed vocabulary (`vocabulary`).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from grader.course import references
from grader.model import Assignment, Case, Exercise, Visibility
from grader.pipeline import agreement, diagnose, layout_hint, scoring, vocabulary
from grader.pipeline.diagnose import Written
from grader.pipeline.judging import Context, Judgement, judgement
from grader.results import CheckResult, ExerciseResult, Verdict
from grader.sandbox.outcomes import CallOutcome
from grader.sandbox.session import Session
from grader.text import cap

LATE_PRINTED = "[grader] printed outside any call while the hidden cases ran:\n"
REPLY_FLOOR = 1 << 20
REPLY_FACTOR = 16
LATE = ("passes right after the cell that defines it, but not at the end of the notebook: a "
        "later cell changes something it uses")
LATE_HIDDEN = ("checked right after the cell that defines it, where its public example passes "
               "and the end of the notebook does not: a later cell changes something it uses")
"""The caution of a hidden case asked where the public cases chose (`grade_calls`)."""



@dataclass(frozen=True)
class Call:
    """One case of one exercise, checked: its result and what its calls printed."""

    exercise: str
    """The exercise's name."""
    check: CheckResult
    """The compared, diagnosed, scored case (before the exercise's diagnoses agree)."""
    printed: str = ""
    """What the calls of the case printed (at the end, then at the definition)."""
    obtained: references.Outputs | None = None
    """What the call returned, as compared; None when it returned no array of numbers."""
    expected: references.Outputs | None = None
    """The reference outputs of the case."""
    context: Context | None = None
    """What the exercise's diagnoses may know of the source, to agree them across cases."""

    @property
    def hidden(self) -> bool:
        """Whether it is a hidden case's: what it printed may show hidden inputs."""
        return self.check.visibility is Visibility.HIDDEN


def grade_calls(session: Session, assignment: Assignment, stored: references.References,
                public_only: bool, reads: Mapping[str, Mapping[str, tuple[float, ...]]],
                written: Mapping[str, Sequence[Written]] | None = None,
                statements: Sequence[ast.stmt] = ()) -> list[Call]:
    """Every case of every exercise, public ones first. The calls of one submission share its
    private /tmp: a hidden call could leave its inputs there for a later call to print, so no
    public call runs after any hidden one, and only public calls' output reaches students.

    A public case that fails at the end of the notebook is asked again right after the cell
    that defined its exercise (a later cell may rebind a global it uses). A hidden case is
    asked once, at the one place its exercise's public cases chose: right after the
    definition when a public case passed only there, else at the end. No hidden answer's
    verdict decides whether or where another call is made, so no call can learn it.

    A shape error says the assignment's layout (`layout_hint`), as the exercise's source
    (its definition among the submission's top-level `statements`) allows."""
    contexts = {e.name: Context.of(e, reads[e.name], (written or {}).get(e.name, ()))
                for e in assignment.exercises}
    hints = _hints(assignment, statements)
    calls = []
    for exercise in assignment.exercises:
        for case in exercise.cases:
            if case.visibility is Visibility.PUBLIC:
                calls.append(_graded(session, exercise, case, stored, contexts[exercise.name],
                                     hints[exercise.name], ("end", "definition")))
    if public_only:
        return calls
    session.seal_output()  # what is printed from now on may show hidden inputs
    for exercise in assignment.exercises:
        late = any(c.exercise == exercise.name and c.check.caution == LATE for c in calls)
        for case in exercise.cases:
            if case.visibility is Visibility.HIDDEN:
                calls.append(_graded(session, exercise, case, stored, contexts[exercise.name],
                                     hints[exercise.name], ("definition",) if late else ("end",)))
    return calls


def _hints(assignment: Assignment, statements: Sequence[ast.stmt]
           ) -> dict[str, layout_hint.Hint]:
    """Each exercise's layout hint, its products read from the last top-level definition of
    each name (lines counted in its cell, as NumPy's errors count them)."""
    defined: dict[str, tuple[ast.AST, int]] = {
        s.name: (s, 1) for s in statements
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    return {e.name: layout_hint.Hint(assignment.layout, functools.partial(
        layout_hint.found_in, e.name, e.signature, assignment.layout, defined.get))
        for e in assignment.exercises}


def _graded(session: Session, exercise: Exercise, case: Case, stored: references.References,
            context: Context, hint: layout_hint.Hint, places: tuple[str, ...]) -> Call:
    check, printed, obtained = _grade_case(session, exercise, case, stored, context, hint,
                                           places)
    return Call(exercise.name, check, printed, obtained, stored.get(exercise.name, case.name),
                context)


def exercise_result(exercise: Exercise, calls: Sequence[Call]) -> ExerciseResult:
    """An exercise's checks in the order of its cases, their diagnoses agreed across its
    cases (`agreement`), scored."""
    by_case = {call.check.name: call for call in calls if call.exercise == exercise.name}
    mine = [(case, by_case[case.name]) for case in exercise.cases if case.name in by_case]
    context = next((call.context for _, call in mine if call.context), Context())
    checks = agreement.agree(exercise, [agreement.Evidence(case, call.check, call.obtained,
                                                           call.expected)
                                        for case, call in mine], context)
    return scoring.exercise_result(exercise, layout_hint.once(checks))


def outputs(cells: str, calls: Sequence[Call], limit: int, late: str = "") -> tuple[str, str]:
    """(what students see, what only the instructor sees) of a submission's output: the
    cells' output (capped already) and the public calls' under a line naming each call; what
    hidden calls printed, and `late` (what reached the cells' channel once hidden cases had
    begun), go to the second text alone. Whether hidden calls printed is not said to
    students: it is the submission's choice, and could depend on the hidden inputs."""
    shown: list[str] = []
    kept: list[str] = []
    for call in calls:
        if not call.printed:
            continue
        label = f"[grader] {call.exercise}, case '{call.check.name}', printed:\n{call.printed}"
        (kept if call.hidden else shown).append(label)
    if late:
        kept.insert(0, LATE_PRINTED + late)
    return "\n".join(filter(None, [cells, cap("\n".join(shown), limit)])), \
        cap("\n".join(kept), limit)


def reply_limit(expected: references.Outputs) -> int:
    """The most bytes of arrays a call may return: room for any dtype and a wrong shape or
    two, never so much that comparing and diagnosing it costs the grader real memory."""
    return REPLY_FLOOR + REPLY_FACTOR * sum(np.asarray(output).nbytes for output in expected)


def _grade_case(session: Session, exercise: Exercise, case: Case,
                stored: references.References, context: Context, hint: layout_hint.Hint,
                places: tuple[str, ...]) -> tuple[CheckResult, str, references.Outputs | None]:
    """Check one case at each of `places` in turn until it passes ("end": after every cell;
    "definition": right after the cell that defined the exercise, where a pass is marked
    `LATE`). A shape error says the assignment's layout first, as `hint` allows. Returns the
    check of the first place (or the passing one), what its calls printed and the outputs it
    compared."""
    inputs = case.inputs()
    expected = stored.get(exercise.name, case.name)
    first: CheckResult | None = None
    kept: references.Outputs | None = None
    printed: list[str] = []
    for at in places:
        outcome, judged = _call(session, exercise, case, inputs, at, expected, context)
        if outcome.printed:
            printed.append(outcome.printed)
        if judged is not None:
            check = judged.check
            if judged.passed:
                if at == "definition":
                    check = replace(check, caution=LATE if len(places) > 1 else LATE_HIDDEN)
                return check, "\n".join(printed), judged.obtained
            if first is None:
                kept = judged.obtained
        else:
            check = _failed_call(exercise, case, outcome, context, inputs, hint)
        first = first or check
        if outcome.failure in (Verdict.NOT_WRITTEN, Verdict.TIMED_OUT):
            break  # never defined, or too slow to try twice
    assert first is not None
    return first, "\n".join(printed), kept


def _failed_call(exercise: Exercise, case: Case, outcome: CallOutcome, context: Context,
                 inputs: tuple[object, ...], hint: layout_hint.Hint) -> CheckResult:
    """The check of a call that returned nothing to compare: a raise, a crash, a time-out."""
    assert outcome.failure is not None
    diagnosis = diagnose.of_error(exercise, outcome.unattempted, inputs, context.reads,
                                  context.example)
    message = outcome.message  # a missing function's home is said by `missing.explain`
    if case.visibility is Visibility.PUBLIC:
        message = hint.explain(outcome.error, outcome.message, message, diagnosis)
    return scoring.failed_check(case.name, exercise, outcome.failure, message,
                                diagnosis=diagnosis, visibility=case.visibility,
                                note=case.note, raised=vocabulary.raised(outcome.error))


def _call(session: Session, exercise: Exercise, case: Case, inputs: tuple[object, ...],
          at: str, expected: references.Outputs, context: Context
          ) -> tuple[CallOutcome, Judgement | None]:
    """One call of the case, and its judgement when it returned."""
    outcome = session.call(exercise.name, exercise.kind, inputs, dict(case.init_kwargs),
                           exercise.tensors, at=at, max_bytes=reply_limit(expected),
                           group=case.visibility.value)
    if not outcome.returned:
        return outcome, None
    return outcome, judgement(exercise, case, outcome.value, expected, inputs, context)
