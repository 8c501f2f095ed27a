"""One exercise's diagnoses made to agree across its cases.

A diagnosis must hold on every case it can speak about. A catalogued mistake is named on a
check only when the student's outputs match its variant on every case of the exercise where
the variant can be told from the reference, or where those cases fail with a diagnosis of
their own: multi-head code that divides each head's scores by the literal 2 matches
`wrong-scale` (sqrt(D)) on a case with D = 4 by coincidence, passes the example (head size
4) where `wrong-scale` fails, and matches nothing where D = 6, so `wrong-scale` is never named.
A number written for a size (`hard-coded-size`) is named only when every case with the
example's sizes passes: otherwise the failures have another cause. What is refuted is taken
back on every case, and each case is diagnosed again without it, down to "values differ" and
whatever property holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from grader.course.references import Outputs
from grader.model import Case, Exercise, Misconception
from grader.pipeline import diagnose
from grader.pipeline.judging import Context
from grader.results import CheckResult, CheckStatus, Diagnosis


@dataclass(frozen=True)
class Evidence:
    """One case of an exercise as the agreement needs it."""

    case: Case
    """The case."""
    check: CheckResult
    """Its check, diagnosed on its own."""
    obtained: Outputs | None = None
    """The student's outputs, as compared; None when the call returned no array of numbers
    (an error, a timeout, a string): such a case says nothing of the variants."""
    expected: Outputs | None = None
    """The reference outputs; None when there are none (the case was not called)."""


class _Cases:
    """Inputs and variants' outputs of an exercise's cases, each computed once."""

    def __init__(self, exercise: Exercise) -> None:
        self.exercise = exercise
        self._inputs: dict[str, tuple[object, ...]] = {}
        self._outputs: dict[tuple[str, int], Outputs | None] = {}

    def inputs(self, case: Case) -> tuple[object, ...]:
        if case.name not in self._inputs:
            self._inputs[case.name] = case.inputs()
        return self._inputs[case.name]

    def variant(self, k: int, mistake: Misconception, case: Case) -> Outputs | None:
        if (case.name, k) not in self._outputs:
            self._outputs[case.name, k] = diagnose.run_variant(
                mistake.variant, self.inputs(case), case.init_kwargs,
                len(self.exercise.outputs))
        return self._outputs[case.name, k]


def _refuted(k: int, mistake: Misconception, evidence: Sequence[Evidence],
             diagnoses: Sequence[Diagnosis | None], cases: _Cases) -> bool:
    """Whether a case of the exercise shows that the student's code is not this mistake: it
    passes where the variant would fail, or it fails where the variant can be told from the
    reference, matching neither the variant nor any diagnosis of its own."""
    for item, diagnosis in zip(evidence, diagnoses, strict=True):
        if item.expected is None or item.obtained is None:
            continue
        wrong = cases.variant(k, mistake, item.case)
        if wrong is None:
            continue  # the variant does not apply to these inputs
        if item.check.passed:
            if not diagnose.same(wrong, item.expected, item.case.rtol, item.case.atol):
                return True  # right where the mistake would be wrong
        elif diagnose.same(wrong, item.expected) or diagnose.same(item.obtained, wrong):
            continue  # the mistake cannot be told here, or the student's output is it
        elif diagnosis is None or diagnosis.id == mistake.id:
            return True  # a failure the mistake would explain, and does not
    return False


def _literal_refuted(exercise: Exercise, evidence: Sequence[Evidence],
                     diagnoses: Sequence[Diagnosis | None], context: Context,
                     cases: _Cases) -> bool:
    """Whether a case whose sizes the written numbers fit (the example's) fails, other than
    by reading a notebook global: then the numbers are not what goes wrong, or not alone."""
    for item, diagnosis in zip(evidence, diagnoses, strict=True):
        if item.check.passed or (diagnosis is not None and diagnosis.id == diagnose.USES_GLOBAL):
            continue
        if diagnose.hard_coded(exercise, context.written, cases.inputs(item.case),
                               context.example) is None:
            return True
    return False


def _diagnosed(exercise: Exercise, item: Evidence, context: Context, cases: _Cases,
               rejected: frozenset[str]) -> Diagnosis | None:
    """A failing case diagnosed again without the `rejected` ids."""
    inputs = cases.inputs(item.case)
    if item.obtained is None or item.expected is None:
        if item.check.status is not CheckStatus.ERROR or diagnose.HARD_CODED in rejected:
            return None
        return diagnose.hard_coded(exercise, context.written, inputs, context.example)
    return diagnose.diagnose(exercise, inputs, item.case.init_kwargs, item.obtained,
                             item.expected, context.reads, context.example,
                             written=context.written, rejected=rejected)


def agree(exercise: Exercise, evidence: Sequence[Evidence], context: Context
          ) -> list[CheckResult]:
    """The checks of one exercise, in the order given, with diagnoses that hold on every case
    they can speak about, and one name for one bug (`diagnose.consistent`)."""
    cases = _Cases(exercise)
    diagnoses = [item.check.diagnosis for item in evidence]
    for i, item in enumerate(evidence):  # a number written for a size can make a call raise
        if diagnoses[i] is None and item.check.status is CheckStatus.ERROR:
            diagnoses[i] = _diagnosed(exercise, item, context, cases, frozenset())
    mistakes = list(enumerate(exercise.misconceptions))
    rejected: frozenset[str] = frozenset()
    while True:
        named = {d.id for d in diagnoses if d is not None} - rejected
        # One id may have several variants (sqrt(d_v) and d_k for `wrong-scale`): it is
        # refuted when every one of them is.
        wrong = {id for id in named
                 if any(mistake.id == id for _, mistake in mistakes)
                 and all(_refuted(k, mistake, evidence, diagnoses, cases)
                         for k, mistake in mistakes if mistake.id == id)}
        if diagnose.HARD_CODED in named and _literal_refuted(exercise, evidence, diagnoses,
                                                             context, cases):
            wrong.add(diagnose.HARD_CODED)
        if not wrong:
            break
        rejected |= wrong
        diagnoses = [_diagnosed(exercise, item, context, cases, rejected)
                     if d is not None and d.id in rejected and not item.check.passed else d
                     for item, d in zip(evidence, diagnoses, strict=True)]
    others = [tuple(a for a in item.check.alternatives if a.id not in rejected)
              for item in evidence]
    agreed = diagnose.consistent(diagnoses, others)
    return [replace(item.check, diagnosis=d, alternatives=alternatives)
            for item, d, alternatives in zip(evidence, agreed, others, strict=True)]
