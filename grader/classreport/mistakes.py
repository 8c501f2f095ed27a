"""The class's own mistakes, told apart from what the notebook's given code or an unscored
check says. Pure: results in, counts out.

A diagnosis counts as a student's mistake only on a scored check of an exercise the student
writes. Everything else is advice, listed apart:

- from the notebook's given code: a diagnosis on a function the notebook provides (the book's
  `softmax_cols`, which overflows), or one on a later exercise that the student's copy of a
  provided function also gets: it comes from that function, which the notebook has the
  exercises after it call (the book's `softmax_cols` overflowing inside the student's
  attention on the large-scores case). Where no check says who it comes from, a student's
  own code that makes the same mistake after a given function that makes it is advice too;
- from an unscored check: a diagnosis seen only on checks worth no points (a public example,
  a stability case), which cost the student nothing.

A check whose failure comes from a function its exercise calls (`CheckResult.callee`, the
grader found it passes with that function's reference: `grader.pipeline.owncode`) counts
nothing on its exercise: the mistake is counted once, on that function. A provided function
that a scored check's failure comes from is no longer what the notebook gave (the given code
fails no scored check): it is the student's own copy, and its diagnoses are the student's
own mistakes.
"""

from __future__ import annotations

import enum
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from grader.assignments.variants import CATALOGUE
from grader.pipeline.diagnose import UNATTEMPTED
from grader.results import CheckResult, ExerciseResult, Result


class Source(enum.StrEnum):
    """Why a diagnosis is advice rather than a student's own mistake."""

    GIVEN = "given-code"
    """It comes from a function the notebook provides."""
    UNSCORED = "unscored-check"
    """It was found only on checks worth no points."""


@dataclass(frozen=True)
class MisconceptionStats:
    """One diagnosis on one exercise, counted for the students whose own scored code has it."""

    id: str
    """The catalogue id, for example "transposed-weights"."""
    exercise: str
    """The exercise it was found in."""
    names: tuple[str, ...]
    """The students who got it on at least one scored check, sorted."""
    explanation: str
    """What it means: the message the students were given."""
    share: float
    """`students` over the graded submissions."""

    @property
    def students(self) -> int:
        """How many students got it."""
        return len(self.names)


@dataclass(frozen=True)
class Advice:
    """One diagnosis on one exercise that is no student's own mistake: it comes from the
    notebook's given code or from unscored checks."""

    id: str
    """The catalogue id, for example "unstable-softmax"."""
    exercise: str
    """The exercise whose checks carry it."""
    source: Source
    """Where it comes from."""
    names: tuple[str, ...]
    """The students whose results carry it (and do not count it as their mistake), sorted."""
    explanation: str
    """The message the students were given."""
    share: float
    """`students` over the graded submissions."""

    @property
    def students(self) -> int:
        """How many students' results carry it."""
        return len(self.names)


def _find(result: Result, name: str) -> ExerciseResult | None:
    return next((e for e in result.exercises if e.name == name), None)


def _diagnoses(exercise: ExerciseResult | None) -> list[tuple[CheckResult, str, str]]:
    """(check, id, message) of each diagnosed check, "unattempted" aside (not a mistake), and
    so is a failure that comes from a function the exercise calls (counted there)."""
    found = []
    for check in exercise.checks if exercise else ():
        diagnosis = check.diagnosis
        if diagnosis and diagnosis.id != UNATTEMPTED and not check.callee:
            found.append((check, diagnosis.id, diagnosis.message))
    return found


def _own_copies(result: Result, provided: Sequence[str]) -> set[str]:
    """The provided functions that a scored check's failure comes from: the student's own
    copies, changed (what the notebook gives fails no scored check)."""
    return {check.callee for exercise in result.exercises for check in exercise.checks
            if check.callee in provided and check.scored}


def tally(order: Sequence[str], provided: Sequence[str], graded: Mapping[str, Result]
          ) -> tuple[tuple[MisconceptionStats, ...], tuple[Advice, ...]]:
    """The class's own mistakes, most frequent first, and the advice apart, most frequent
    first, from the results of the graded students (student -> result). `order` is
    every exercise, in the assignment's order; `provided`, those the notebook gives."""
    # (exercise, id, None) for a student's own mistake, (exercise, id, source) for advice.
    who: dict[tuple[str, str, Source | None], set[str]] = defaultdict(set)
    said: dict[tuple[str, str, Source | None], Counter[str]] = defaultdict(Counter)
    for student, result in graded.items():
        # What this student's copy of a given function gets, it passes on to the exercises
        # after it in the notebook, which call it (the book's softmax_cols, in the attention).
        given: set[str] = set()
        own = _own_copies(result, provided)
        for name in order:
            found = _diagnoses(_find(result, name))
            for check, id, message in found:
                source = (None if name in own
                          else Source.GIVEN if name in provided or id in given
                          else None if check.scored else Source.UNSCORED)
                who[name, id, source].add(student)
                said[name, id, source][message] += 1
            if name in provided and name not in own:
                given |= {id for _, id, _ in found}
    total = len(graded) or 1
    mistakes = [MisconceptionStats(id=id, exercise=name, names=tuple(sorted(names)),
                                   explanation=explanation(id, said[name, id, None]),
                                   share=len(names) / total)
                for (name, id, source), names in who.items() if source is None]
    mistakes.sort(key=lambda m: (-m.students, order.index(m.exercise), m.id))
    # A student who makes the mistake on a scored check is counted there, not advised.
    apart = [Advice(id=id, exercise=name, source=source, names=tuple(sorted(rest)),
                    explanation=explanation(id, said[name, id, source]),
                    share=len(rest) / total)
             for (name, id, source), names in who.items()
             if source is not None and (rest := names - who.get((name, id, None), set()))]
    apart.sort(key=lambda a: (-a.students, order.index(a.exercise), a.id, a.source.value))
    return tuple(mistakes), tuple(apart)


def explanation(id: str, messages: Counter[str]) -> str:
    """The message the students got; when it varies (it names a global's value, say), the
    catalogue's sentence, else the most common one as an example."""
    if len(messages) == 1:
        return next(iter(messages))
    if id in CATALOGUE:
        return CATALOGUE[id]
    return "For example: " + messages.most_common(1)[0][0]
