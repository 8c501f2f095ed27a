"""Judging one call: compare the value an exercise returned on a case with the reference, and
name the mistake behind a wrong one. A pure stage, shared by the grader and the students'
`check()`, that never touches the sandbox."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from grader.course.references import Outputs
from grader.model import Case, Exercise, Inputs, Visibility
from grader.pipeline import compare, diagnose, scoring
from grader.pipeline.diagnose import Written
from grader.results import CheckResult, Diagnosis


@dataclass(frozen=True)
class Context:
    """What the diagnosis may know of a submission's source, beyond a call's outputs."""

    reads: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    """The numeric notebook globals that the exercise's function reads, with their values
    (at the end of the notebook, then where the function is defined)."""
    example: Inputs | None = None
    """The inputs of the exercise's first public case: the notebook's own example."""
    written: tuple[Written, ...] = ()
    """The numbers the exercise's function writes where a size goes (`/ 2`, `range(3)`)."""

    @classmethod
    def of(cls, exercise: Exercise, reads: Mapping[str, tuple[float, ...]],
           written: Sequence[Written] = ()) -> Context:
        """The context of one exercise, given the globals its function reads and the numbers
        it writes."""
        public = next((c for c in exercise.cases if c.visibility is Visibility.PUBLIC), None)
        return cls(reads, public.inputs() if public else None, tuple(written))


@dataclass(frozen=True)
class Judgement:
    """One call judged."""

    check: CheckResult
    """The compared, diagnosed check."""
    obtained: Outputs | None
    """The returned outputs as float arrays; None when they are not arrays of numbers."""

    @property
    def passed(self) -> bool:
        """Whether the value matched the reference."""
        return self.check.passed


def judge(exercise: Exercise, case: Case, value: object, expected: Outputs,
          inputs: tuple[object, ...], context: Context | None = None
          ) -> tuple[CheckResult, bool]:
    """Compare a returned value with the reference and diagnose it; (check, passed)."""
    judged = judgement(exercise, case, value, expected, inputs, context)
    return judged.check, judged.passed


def judgement(exercise: Exercise, case: Case, value: object, expected: Outputs,
              inputs: tuple[object, ...], context: Context | None = None) -> Judgement:
    """Compare a returned value with the reference and diagnose it, keeping the outputs for
    the agreement of the exercise's cases (`grader.pipeline.agreement`)."""
    public = case.visibility is Visibility.PUBLIC
    # Compared in full for every case: a hidden check's student-facing text is chosen from
    # the closed vocabulary later (`vocabulary.close`); this message becomes its `detail`.
    result = compare.compare(value, expected, exercise.outputs, case.rtol, case.atol,
                             reveal=True, axes=exercise.axes)
    if result.passed:
        return Judgement(scoring.passed_check(case.name, exercise, visibility=case.visibility,
                                              note=case.note), result.obtained)
    diagnosis = None
    alternatives: tuple[Diagnosis, ...] = ()
    if result.obtained is not None:
        context = context or Context()
        matching = diagnose.matches(exercise, inputs, case.init_kwargs, result.obtained,
                                    expected)
        diagnosis = diagnose.diagnose(exercise, inputs, case.init_kwargs, result.obtained,
                                      expected, context.reads, context.example, matching,
                                      context.written)
        if len(matching) > 1:
            alternatives = tuple(Diagnosis(m.id, m.message) for m in matching)
    check = scoring.failed_check(case.name, exercise, result.verdict, result.message,
                                 diagnosis=diagnosis, views=result.views if public else (),
                                 visibility=case.visibility, note=case.note)
    return Judgement(replace(check, alternatives=alternatives), result.obtained)
