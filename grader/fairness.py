"""Whether a case can tell right from wrong.

A scored case must give 0 to every catalogued misconception of its exercise and to every
trivial answer: an input returned unchanged, zeros, or what the exercise declares as trivial
("return V" for attention, which a one-token case cannot tell from attending). A case that
cannot is declared `scored=False` and says why in its note. Pure: references come in as
arrays, nothing here touches files or runs student code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from grader import compare, diagnose
from grader.model import Case, Exercise
from grader.references import Outputs


@dataclass(frozen=True)
class Leak:
    """A wrong answer that a scored case accepts."""

    exercise: str
    """The exercise's name."""
    case: str
    """The case's name."""
    answer: str
    """The misconception id, or the trivial answer's name (for example "return zeros")."""

    def __str__(self) -> str:
        return f"{self.exercise}/{self.case} accepts the wrong answer '{self.answer}'"


@dataclass(frozen=True)
class WrongAnswer:
    """A misconception's or a trivial answer's outputs on one case's inputs."""

    name: str
    """The misconception's id, or the trivial answer's name."""
    outputs: Outputs
    """What it returns on the case's inputs."""
    conditional: str = ""
    """The inputs a conditional misconception shows on; empty when it shows on all."""
    position: int = -1
    """Its place among the exercise's misconceptions (ids may repeat); -1 for a trivial one."""


def trivial_answers(exercise: Exercise, case: Case, inputs: tuple[Any, ...],
                    expected: Outputs) -> Iterator[WrongAnswer]:
    """The answers that compute nothing: zeros, an input unchanged, the declared ones."""
    yield WrongAnswer("return zeros", tuple(np.zeros_like(e) for e in expected))
    arrays = [np.asarray(item, dtype=float) for item in inputs if isinstance(item, np.ndarray)]
    same_shape = [next((a for a in arrays if a.shape == e.shape), None) for e in expected]
    if all(a is not None for a in same_shape):
        yield WrongAnswer("return the input unchanged",
                          tuple(a for a in same_shape if a is not None))
    for name, answer in exercise.trivial:
        outputs = diagnose.run_variant(answer, inputs, case.init_kwargs, len(exercise.outputs))
        if outputs is not None:
            yield WrongAnswer(name, outputs)


def wrong_answers(exercise: Exercise, case: Case, expected: Outputs) -> Iterator[WrongAnswer]:
    """Every misconception's output and every trivial answer on the case's inputs."""
    inputs = case.inputs()
    for position, mistake in enumerate(exercise.misconceptions):
        outputs = diagnose.run_variant(mistake.variant, inputs, case.init_kwargs,
                                       len(exercise.outputs))
        if outputs is not None:
            yield WrongAnswer(mistake.id, outputs, mistake.conditional, position)
    yield from trivial_answers(exercise, case, inputs, expected)


def accepted(exercise: Exercise, case: Case, expected: Outputs) -> list[WrongAnswer]:
    """The wrong answers that this case, compared as the grader compares, lets pass."""
    found = []
    for wrong in wrong_answers(exercise, case, expected):
        value = wrong.outputs if len(exercise.outputs) > 1 else wrong.outputs[0]
        if compare.compare(value, expected, exercise.outputs, case.rtol, case.atol,
                           reveal=False).passed:
            found.append(wrong)
    return found


def leaks(exercise: Exercise, expected: Callable[[Case], Outputs]) -> list[Leak]:
    """The free points of an exercise: a scored case that accepts a trivial answer or a
    mistake that shows on every input, and a conditional mistake that no case rejects."""
    if exercise.provided:
        return []
    found = []
    rejected: set[int] = set()  # positions of the misconceptions that some case tells apart
    for case in exercise.cases:
        passing = accepted(exercise, case, expected(case))
        rejected |= set(range(len(exercise.misconceptions))) - {w.position for w in passing}
        found += [Leak(exercise.name, case.name, wrong.name) for wrong in passing
                  if case.scored and not wrong.conditional]
    found += [Leak(exercise.name, "every case", mistake.id)
              for position, mistake in enumerate(exercise.misconceptions)
              if mistake.conditional and position not in rejected]
    return found
