"""Whether a case can tell right from wrong.

A case worth points (hidden and scored) must give 0 to every catalogued misconception of its
exercise, to every trivial answer (an input returned unchanged, zeros, or what the exercise
declares as trivial: "return V", identity and uniform attention) and to every answer that is
degenerate for its inputs (all ones, one-hot rows, an input normalised, another case's
expected output). A case that cannot is declared `scored=False` and says why in its note, or
gets inputs that discriminate. Pure: references come in as arrays, nothing here touches files
or runs student code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from grader.assignments.variants import hard_weights
from grader.course.references import Outputs
from grader.model import Case, Exercise
from grader.pipeline import compare, diagnose


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


def degenerate_answers(inputs: tuple[Any, ...], expected: Outputs,
                       others: Sequence[tuple[str, Outputs]] = ()) -> Iterator[WrongAnswer]:
    """The answers that are degenerate for these inputs: right only where the case itself is
    degenerate (one element, one-hot rows, a single token). Each output is replaced alike:
    all ones; one-hot rows (the argmax along an axis, as a softmax that is an argmax gives on
    scores whose expected rows are one-hot); an input of the output's shape normalised, or its
    argmax one-hot; the expected output of another case of the exercise (`others`, by name),
    which a submission that looks outputs up by shape would return."""
    floats = [np.asarray(e, dtype=float) for e in expected]
    yield WrongAnswer("return ones", tuple(np.ones_like(e) for e in floats))
    for axis in sorted({a for e in floats for a in range(-e.ndim, 0)}):
        if all(e.ndim >= -axis and e.size for e in floats):
            yield WrongAnswer(f"one-hot rows (argmax over axis {axis})",
                              tuple(hard_weights(e, axis) for e in floats))
    arrays = [np.asarray(item, dtype=float) for item in inputs
              if isinstance(item, np.ndarray) and item.size]
    same_shape = [next((a for a in arrays if a.shape == e.shape), None) for e in floats]
    if all(a is not None for a in same_shape):
        chosen = [a for a in same_shape if a is not None]
        yield WrongAnswer("the input normalised over all of it",
                          tuple(_normalised(a, None) for a in chosen))
        for axis in range(-min(a.ndim for a in chosen), 0):
            yield WrongAnswer(f"the input normalised over axis {axis}",
                              tuple(_normalised(a, axis) for a in chosen))
            yield WrongAnswer(f"the input's argmax over axis {axis}, one-hot",
                              tuple(hard_weights(a, axis) for a in chosen))
    for name, outputs in others:
        if len(outputs) == len(expected) and all(
                np.shape(o) == np.shape(e) for o, e in zip(outputs, expected, strict=True)):
            yield WrongAnswer(f"the expected output of case '{name}'", outputs)


def _normalised(values: np.ndarray, axis: int | None) -> np.ndarray:
    """`values` divided by their sum along `axis` (all of them for None)."""
    with np.errstate(all="ignore"):
        return values / np.sum(values, axis=axis, keepdims=True)


def wrong_answers(exercise: Exercise, case: Case, expected: Outputs,
                  others: Sequence[tuple[str, Outputs]] = ()) -> Iterator[WrongAnswer]:
    """Every misconception's output, every trivial answer and every answer degenerate for
    the case's inputs (`others`: the other cases' expected outputs, by name)."""
    inputs = case.inputs()
    for position, mistake in enumerate(exercise.misconceptions):
        outputs = diagnose.run_variant(mistake.variant, inputs, case.init_kwargs,
                                       len(exercise.outputs))
        if outputs is not None:
            yield WrongAnswer(mistake.id, outputs, mistake.conditional, position)
    yield from trivial_answers(exercise, case, inputs, expected)
    yield from degenerate_answers(inputs, expected, others)


def accepted(exercise: Exercise, case: Case, expected: Outputs,
             others: Sequence[tuple[str, Outputs]] = ()) -> list[WrongAnswer]:
    """The wrong answers that this case, compared as the grader compares, lets pass."""
    found = []
    for wrong in wrong_answers(exercise, case, expected, others):
        value = wrong.outputs if len(exercise.outputs) > 1 else wrong.outputs[0]
        if compare.compare(value, expected, exercise.outputs, case.rtol, case.atol,
                           reveal=False).passed:
            found.append(wrong)
    return found


def leaks(exercise: Exercise, expected: Callable[[Case], Outputs]) -> list[Leak]:
    """The free points of an exercise: a case worth points that accepts a trivial or a
    degenerate answer or a mistake that shows on every input, and a conditional mistake that
    no case rejects."""
    if exercise.provided:
        return []
    found = []
    rejected: set[int] = set()  # positions of the misconceptions that some case tells apart
    outputs = {case.name: expected(case) for case in exercise.cases}
    for case in exercise.cases:
        others = [(name, out) for name, out in outputs.items() if name != case.name]
        passing = accepted(exercise, case, outputs[case.name], others)
        rejected |= set(range(len(exercise.misconceptions))) - {w.position for w in passing}
        found += [Leak(exercise.name, case.name, wrong.name) for wrong in passing
                  if case.earns_points and not wrong.conditional]
    found += [Leak(exercise.name, "every case", mistake.id)
              for position, mistake in enumerate(exercise.misconceptions)
              if mistake.conditional and position not in rejected]
    return found
