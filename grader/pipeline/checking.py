"""Calling each exercise on each case in a submission's sandbox, and turning what comes back
into checks: judged against the reference (`judging`), the exercise's diagnoses agreed,
scored; what the calls printed split into what students see and what only the instructor
sees; and a hidden call's error told without its message.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from grader.model import Assignment, Case, Exercise, Visibility
from grader.pipeline import agreement, diagnose, layout_hint, scoring
from grader.pipeline.diagnose import Written
from grader.pipeline.judging import Context, Judgement, judgement
from grader.results import CheckResult, CheckStatus, Diagnosis, ExerciseResult
from grader.sandbox.inside.calling import NOT_IMPLEMENTED
from grader.sandbox.outcomes import CallOutcome
from grader.sandbox.session import Session
from grader.spec import references
from grader.text import cap

LATE_PRINTED = "[grader] printed outside any call while the hidden cases ran:\n"
LATE_NOTE = ("[grader] something was printed outside any call while the hidden checks ran; it "
             "is not shown, since it could show their hidden inputs")
REPLY_FLOOR = 1 << 20
REPLY_FACTOR = 16
LATE = ("passes right after the cell that defines it, but not at the end of the notebook: a "
        "later cell changes something it uses")



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
                 written: Mapping[str, Sequence[Written]] | None = None) -> list[Call]:
    """Every case of every exercise, public ones first. The calls of one submission share its
    private /tmp: a hidden call could leave its inputs there for a later call to print, so no
    public call runs after any hidden one, and only public calls' output reaches students."""
    contexts = {e.name: Context.of(e, reads[e.name], (written or {}).get(e.name, ()))
                for e in assignment.exercises}
    calls = []
    for visibility in (Visibility.PUBLIC, Visibility.HIDDEN):
        if public_only and visibility is Visibility.HIDDEN:
            break
        if visibility is Visibility.HIDDEN:
            session.seal_output()  # what is printed from now on may show hidden inputs
        for exercise in assignment.exercises:
            for case in exercise.cases:
                if case.visibility is visibility:
                    check, printed, obtained = _grade_case(session, exercise, case, stored,
                                                           contexts[exercise.name],
                                                           assignment.layout)
                    calls.append(Call(exercise.name, check, printed, obtained,
                                      stored.get(exercise.name, case.name),
                                      contexts[exercise.name]))
    return calls


def exercise_result(exercise: Exercise, calls: Sequence[Call]) -> ExerciseResult:
    """An exercise's checks in the order of its cases, their diagnoses agreed across its
    cases (`agreement`), scored."""
    by_case = {call.check.name: call for call in calls if call.exercise == exercise.name}
    mine = [(case, by_case[case.name]) for case in exercise.cases if case.name in by_case]
    context = next((call.context for _, call in mine if call.context), Context())
    checks = agreement.agree(exercise, [agreement.Evidence(case, call.check, call.obtained,
                                                           call.expected)
                                        for case, call in mine], context)
    return scoring.exercise_result(exercise, checks)


HIDDEN_PRINTED = ("[grader] {count} of the hidden checks' calls printed something; it is not "
                  "shown, since it could show their hidden inputs")


def outputs(cells: str, calls: Sequence[Call], limit: int, late: str = "") -> tuple[str, str]:
    """(what students see, what only the instructor sees) of a submission's output: the
    cells' output (capped already) and the public calls' under a line naming each call; one
    line saying that hidden calls printed, whose output goes to the second text alone, with
    `late`, what reached the cells' channel once hidden cases had begun."""
    shown: list[str] = []
    kept: list[str] = []
    for call in calls:
        if not call.printed:
            continue
        label = f"[grader] {call.exercise}, case '{call.check.name}', printed:\n{call.printed}"
        (kept if call.hidden else shown).append(label)
    notes = [cap("\n".join(shown), limit)]
    if kept:
        notes.append(HIDDEN_PRINTED.format(count=len(kept)))
    if late:
        notes.append(LATE_NOTE)
        kept.insert(0, LATE_PRINTED + late)
    return "\n".join(filter(None, [cells, *notes])), cap("\n".join(kept), limit)


_RAISED = re.compile(r"raised (?P<name>[A-Za-z_]\w*)(?P<said>.*?)(?P<where> \(line \d+\))?",
                     re.S)
KNOWN_ERRORS = frozenset(
    {name for name, value in vars(builtins).items()
     if isinstance(value, type) and issubclass(value, BaseException)}
    | {"AxisError", "LinAlgError"})
"""Exception classes whose names a hidden check may say: Python's and numpy's usual ones. A
class the student's code defines has a name it chooses, which could spell out the inputs."""


def hidden_error(message: str) -> str:
    """A hidden call's error as students see it: its exception class (a usual one), never
    its message or its line, which the student's code chooses and could make spell out the
    hidden inputs (`raise ValueError(repr(x))`; an `exec` of as many blank lines as an input's
    digits). Messages the grader writes (a timeout, a crash) are kept."""
    match = _RAISED.fullmatch(message)
    if match is None:
        return message
    name = match["name"]
    what = f"raised {name}" if name in KNOWN_ERRORS else "raised an exception of its own class"
    if not match["said"].strip() and not match["where"]:
        return what
    return (f"{what}; its message and line are shown for public checks only, since the code "
            "could make them spell out this hidden case's inputs")


def reply_limit(expected: references.Outputs) -> int:
    """The most bytes of arrays a call may return: room for any dtype and a wrong shape or
    two, never so much that comparing and diagnosing it costs the grader real memory."""
    return REPLY_FLOOR + REPLY_FACTOR * sum(np.asarray(output).nbytes for output in expected)


def _grade_case(session: Session, exercise: Exercise, case: Case,
                stored: references.References, context: Context, layout: str = ""
                ) -> tuple[CheckResult, str, references.Outputs | None]:
    """Check one case at the end of the notebook and, failing that, right after the cell that
    defined the exercise: a later cell that rebinds a global must not undo working code.
    A shape error says the assignment's `layout` first. Returns the check, what its calls
    printed and the outputs the check compared."""
    inputs = case.inputs()
    expected = stored.get(exercise.name, case.name)
    first: CheckResult | None = None
    kept: references.Outputs | None = None
    printed: list[str] = []
    for at in ("end", "definition"):
        outcome, judged = _call(session, exercise, case, inputs, at, expected, context)
        if outcome.printed:
            printed.append(outcome.printed)
        if judged is not None:
            check, passed = judged.check, judged.passed
            if passed and at == "definition":
                check = replace(check, caution=LATE)
            if passed:
                return check, "\n".join(printed), judged.obtained
            if first is None:
                kept = judged.obtained
        else:
            diagnosis: Diagnosis | None
            if outcome.message.startswith(NOT_IMPLEMENTED):
                diagnosis = diagnose.unattempted("still raises NotImplementedError")
            else:  # an index out of range, say, because N is the notebook's global
                diagnosis = diagnose.uses_global(exercise, context.reads, inputs,
                                                 context.example)
            message, detail = outcome.message, ""
            if outcome.status is CheckStatus.MISSING and exercise.notebook:
                message += f" (it belongs in {exercise.notebook})"
            if case.visibility is Visibility.HIDDEN:  # the whole message once it is due
                message, detail = hidden_error(message), cap(message)
            message = layout_hint.explain(layout, outcome.message, message)
            check = scoring.failed_check(
                case.name, exercise, outcome.status, message, diagnosis=diagnosis,
                visibility=case.visibility, note=case.note, detail=detail)
        first = first or check
        if outcome.status in (CheckStatus.MISSING, CheckStatus.TIMEOUT):
            break  # never defined, or too slow to try twice
    assert first is not None
    return first, "\n".join(printed), kept



def _call(session: Session, exercise: Exercise, case: Case, inputs: tuple[object, ...],
          at: str, expected: references.Outputs, context: Context
          ) -> tuple[CallOutcome, Judgement | None]:
    """One call of the case, and its judgement when it returned. Never asked twice on the
    same inputs after a failure: a second ask would tell the code that its first answer
    failed (a mark in /tmp recognises the inputs), and let it answer otherwise."""
    outcome = session.call(exercise.name, exercise.kind, inputs, dict(case.init_kwargs),
                           exercise.tensors, at=at, max_bytes=reply_limit(expected),
                           group=case.visibility.value)
    if outcome.status is not CheckStatus.PASSED:
        return outcome, None
    return outcome, judgement(exercise, case, outcome.value, expected, inputs, context)
