"""Calling each exercise on each case in a submission's sandbox, and turning what comes back
into checks: judged against the reference (`judging`), the exercise's diagnoses agreed,
scored; what the calls printed split into what students see and what only the instructor
sees. What a hidden check says is chosen later, from the closed vocabulary (`vocabulary`).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from grader.course import references
from grader.model import Assignment, Case, Exercise, Visibility
from grader.pipeline import agreement, diagnose, layout_hint, scoring, vocabulary
from grader.pipeline.diagnose import Written
from grader.pipeline.judging import Context, judgement
from grader.results import CheckResult, ExerciseResult, Verdict
from grader.sandbox.asks import Ask
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
    for exercise in assignment.exercises:  # its public cases, a request per place
        public = [(exercise, case) for case in exercise.cases
                  if case.visibility is Visibility.PUBLIC]
        calls += _graded(session, public, stored, contexts, hints, ("end", "definition"))
    if public_only:
        return calls
    session.seal_output()  # what is printed from now on may show hidden inputs
    late = {exercise.name for exercise in assignment.exercises
            if any(c.exercise == exercise.name and c.check.caution == LATE for c in calls)}
    for exercise in assignment.exercises:  # its hidden cases, in one request
        hidden = [(exercise, case) for case in exercise.cases
                  if case.visibility is Visibility.HIDDEN]
        calls += _graded(session, hidden, stored, contexts, hints, ("end",), late)
    return calls


def _graded(session: Session, cases: Sequence[tuple[Exercise, Case]],
            stored: references.References, contexts: Mapping[str, Context],
            hints: Mapping[str, layout_hint.Hint], places: tuple[str, ...],
            late: Container[str] = ()) -> list[Call]:
    """Check each case at each of `places` in turn until it passes ("end": after every cell;
    "definition": right after the cell that defined the exercise, where a pass is marked
    `LATE`); the cases of an exercise in `late` only at its definition. The calls of one
    place go to the worker as one request (`Session.calls`). A shape error says the
    assignment's layout first, as the exercise's hint allows. Each case's check is that of
    the first place (or the passing one), with what its calls printed and the outputs it
    compared."""
    trials = [_Trial(exercise, case, stored.get(exercise.name, case.name),
                     ("definition",) if exercise.name in late else places, case.inputs(),
                     contexts[exercise.name], hints[exercise.name])
              for exercise, case in cases]
    for step in range(len(places)):
        asked = [trial for trial in trials if trial.open_at(step)]
        if not asked:
            break
        outcomes = session.calls([trial.ask(step) for trial in asked])
        for trial, outcome in zip(asked, outcomes, strict=True):
            trial.record(step, outcome)
    return [trial.call() for trial in trials]


@dataclass
class _Trial:
    """One case being checked at its places in turn (`_graded`)."""

    exercise: Exercise
    case: Case
    expected: references.Outputs
    places: tuple[str, ...]
    inputs: tuple[object, ...]
    context: Context
    hint: layout_hint.Hint
    check: CheckResult | None = None
    """The check of the first place, or of the passing one."""
    done: bool = False
    printed: list[str] = field(default_factory=list)
    obtained: references.Outputs | None = None

    def open_at(self, step: int) -> bool:
        return not self.done and step < len(self.places)

    def ask(self, step: int) -> Ask:
        exercise, case = self.exercise, self.case
        return Ask(exercise.name, exercise.kind, self.inputs, dict(case.init_kwargs),
                   exercise.tensors, at=self.places[step], max_bytes=reply_limit(self.expected),
                   group=case.visibility.value)

    def record(self, step: int, outcome: CallOutcome) -> None:
        at = self.places[step]
        if outcome.printed:
            self.printed.append(outcome.printed)
        if outcome.returned:
            judged = judgement(self.exercise, self.case, outcome.value, self.expected,
                               self.inputs, self.context)
            check = judged.check
            if judged.passed:
                if at == "definition":
                    check = replace(check, caution=LATE if len(self.places) > 1
                                    else LATE_HIDDEN)
                self.check, self.obtained, self.done = check, judged.obtained, True
                return
            if self.check is None:
                self.obtained = judged.obtained
        else:
            check = _failed_call(self.exercise, self.case, outcome, self.context, self.inputs,
                                 self.hint)
        self.check = self.check or check
        # never defined, or too slow to try twice
        self.done = outcome.failure in (Verdict.NOT_WRITTEN, Verdict.TIMED_OUT)

    def call(self) -> Call:
        assert self.check is not None
        return Call(self.exercise.name, self.check, "\n".join(self.printed), self.obtained,
                    self.expected, self.context)


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
