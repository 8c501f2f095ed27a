"""`grade validate ASSIGNMENT`: the mistakes an author makes, each said with its fix.

- a stub (module or notebook) or the solution whose signature differs from the declaration;
- references that are missing, stale, or no longer what the solution computes;
- an exercise with points but no hidden scored case to earn them;
- a scored case that a catalogued misconception, a trivial or a degenerate answer passes
  (`grader.authoring.fairness`);
- public references that hold more than the public cases;
- two misconceptions that no case tells apart;
- a misconception that equals the reference on every case;
- a case whose note claims what its inputs do not exercise (`CLAIMS`);
- what grades correct code wrongly (`grader.authoring.soundness`): NaN or inf from the
  solution, inputs outside the domain of the master's examples, a skeleton's "could not
  infer" comment left in place, a declared alternative that loses points.

The solution runs in the sandbox (`building.compute`); the misconceptions, trusted code of
the declaration, run here, as diagnosis runs them.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import numpy as np

from grader.authoring import building, fairness, soundness
from grader.authoring.files import notebook_python, signatures
from grader.authoring.problems import Problem
from grader.course.layout import Layout
from grader.course.references import Outputs, as_outputs
from grader.errors import ReferencesError, SpecError, SubmissionError
from grader.model import Assignment, Case, Exercise, Inputs
from grader.pipeline import diagnose, notebooks

LARGE = 50.0
"""Magnitude of an input from which exp() of scores made of it may overflow (the same
threshold as `properties.finite_for_large_inputs`)."""


def _largest(inputs: Inputs) -> float:
    return max((float(np.max(np.abs(a[np.isfinite(a)]))) for a in inputs
                if isinstance(a, np.ndarray) and np.isfinite(a).any()), default=0.0)


def _one_token(inputs: Inputs) -> bool:
    return any((isinstance(a, np.ndarray) and 1 in a.shape) or
               (type(a) is int and a == 1) for a in inputs)


@dataclass(frozen=True)
class Claim:
    """Something a case's note may claim, and how to see it in the inputs."""

    words: re.Pattern[str]
    """Words of a note that make the claim."""
    holds: Callable[[Inputs], bool]
    """Whether the inputs exercise it."""
    missing: str
    """What the inputs lack, in words."""


CLAIMS = (
    Claim(re.compile(r"\boverflows?\b|\bstab\w*|\blarge (?:values|scores|inputs)|\bhuge\b|"
                     r"\bin the thousands\b", re.I),
          lambda inputs: _largest(inputs) >= LARGE,
          f"no input reaches {LARGE:g} in magnitude, so exp() cannot overflow"),
    Claim(re.compile(r"\b(?:one|single) (?:token|position)\b|\bN = 1\b", re.I),
          _one_token, "no input has an axis of size 1"),
)


def signature_problems(assignment: Assignment, layout: Layout) -> list[Problem]:
    """Stubs and solution that do not define each exercise with its declared signature."""
    found = []
    parts = tuple(e.notebook for e in assignment.exercises if e.notebook)
    solution = layout.solution(assignment.name)
    files: list[tuple[Path, str]] = [(solution, "the solution")]
    files.append((layout.module(assignment.name), "the stub module"))
    files += [(path, "the stub notebook") for path in layout.notebooks(assignment.name, parts)]
    defined: dict[Path, dict[str, str]] = {}
    for path, what in files:
        try:
            defined[path] = signatures(_code(path))
        except (OSError, ValueError, SyntaxError) as exc:
            found.append(Problem(str(path), f"{what} cannot be read ({exc}); write it, or run "
                                 "`grade assign` on the master"))
        except SpecError as exc:  # a notebook that is none: the message names the file
            found.append(Problem("", exc.message))
    solved = defined.get(solution, {})
    for exercise in assignment.exercises:
        wanted = solved.get(exercise.name)
        if solution in defined and wanted is None:
            found.append(Problem(str(solution), f"does not define {exercise.name}; add it"))
        elif wanted is not None and wanted != exercise.signature:
            found.append(Problem(str(solution), f"{exercise.name}{wanted} differs from the "
                                 f"declared signature {exercise.signature}; make them agree"))
        for path, what in files[1:]:
            if path not in defined or (exercise.notebook and path.suffix == ".ipynb"
                                       and path.name != exercise.notebook):
                continue
            stub = defined[path].get(exercise.name)
            if stub is None:
                found.append(Problem(str(path), f"{what} does not define {exercise.name}; "
                                     "add its stub"))
            elif stub != (wanted or exercise.signature):
                found.append(Problem(str(path), f"the stub {exercise.name}{stub} differs from "
                                     f"the solution's {exercise.name}{wanted or exercise.signature}"
                                     f"; give the stub the solution's parameters"))
    return found


def _code(path: Path) -> str:
    """A module's source, or a notebook's code cells as Python (`notebook_python`)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".ipynb":
        return text
    try:
        return notebook_python(notebooks.read(str(path), text, fix="run `grade assign` again"))
    except SubmissionError as exc:
        raise SpecError(exc.message) from None


def reference_problems(assignment: Assignment, fresh: dict[tuple[str, str], Outputs],
                       layout: Layout | None = None) -> list[Problem]:
    """References missing, stale, or different from what the solution computes now (each
    message names the file)."""
    return [Problem("", problem) for problem in building.verify(assignment, fresh, layout)]


def _outputs(exercise: Exercise, case: Case) -> list[Outputs | None]:
    inputs = case.inputs()
    return [diagnose.run_variant(m.variant, inputs, case.init_kwargs, len(exercise.outputs))
            for m in exercise.misconceptions]


_CALLED = ("it is called with a case's inputs, as numpy arrays, and returns the outputs "
           "as the solution does",
           "it is called with a case's inputs, as numpy arrays (the state_dict first, then "
           "forward's inputs), and the case's init_kwargs as keywords, and returns forward's "
           "output")


def _argument(value: object) -> str:
    """An argument of a call, in a few words: an array by its shape and dtype."""
    if isinstance(value, np.ndarray):
        return f"array{value.shape} {value.dtype}"
    if isinstance(value, dict):
        return f"state_dict of {len(value)}" if value and all(
            isinstance(v, np.ndarray) for v in value.values()) else f"dict of {len(value)}"
    text = repr(value)
    return text if len(text) <= 20 else type(value).__name__


def _failure(exercise: Exercise, variant: Callable[..., object]) -> str:
    """How the grader calls a variant on the exercise's first case, and how that failed."""
    case = exercise.cases[0]
    try:
        inputs = case.inputs()
    except Exception as exc:  # the instructor's generator, said as it failed
        return f"the case '{case.name}' cannot make its inputs ({type(exc).__name__}: {exc})"
    words = [_argument(v) for v in inputs] + [
        f"{key}={value!r}" for key, value in case.init_kwargs.items()]
    call = f"variant({', '.join(words)})"
    try:
        with np.errstate(all="ignore"):
            value = variant(*copy.deepcopy(inputs), **case.init_kwargs)
        as_outputs(value, len(exercise.outputs))
    except Exception as exc:  # what went wrong is the message
        text = " ".join(str(exc).split())[:200]
        return f"on the case '{case.name}' the grader called {call}, which raised " \
               f"{type(exc).__name__}: {text}"
    return f"on the case '{case.name}' the grader called {call}, which returned no outputs " \
           f"of {len(exercise.outputs)} arrays ({type(value).__name__})"


def misconception_problems(exercise: Exercise, expected: Callable[[Case], Outputs]
                           ) -> list[Problem]:
    """Misconceptions that no case can recognise, or tell from another, and free points."""
    found = []
    runs = [_outputs(exercise, case) for case in exercise.cases]
    mistakes = exercise.misconceptions

    def differs(i: int, j: int | None) -> bool:
        """Whether some case tells misconception i from j (None: from the reference)."""
        for case, outputs in zip(exercise.cases, runs, strict=True):
            mine = outputs[i]
            other = expected(case) if j is None else outputs[j]
            if mine is not None and other is not None and not diagnose.same(mine, other):
                return True
        return False

    invisible = {i for i in range(len(mistakes)) if not differs(i, None)}
    for i in sorted(invisible):
        if all(outputs[i] is None for outputs in runs):
            found.append(Problem(exercise.name, f"the misconception '{mistakes[i].id}' fails "
                                 f"on every case: {_failure(exercise, mistakes[i].variant)}, so "
                                 "no case can recognise it; fix its variant: " + _CALLED[
                                     exercise.kind == "class"]))
            continue
        fix = (f"add a case with {mistakes[i].conditional}" if mistakes[i].conditional
               else "fix its variant, or add a case on which it goes wrong")
        found.append(Problem(exercise.name, f"the misconception '{mistakes[i].id}' returns what "
                             f"the solution returns on every case, so no case can recognise it; "
                             f"{fix}"))
    for i, j in combinations(range(len(mistakes)), 2):
        if mistakes[i].id != mistakes[j].id and not {i, j} & invisible and not differs(i, j):
            found.append(Problem(exercise.name, f"the misconceptions '{mistakes[i].id}' and "
                                 f"'{mistakes[j].id}' give the same output on every case, so a "
                                 f"student with the second is told the first; add a case that "
                                 "tells them apart"))
    hidden_ids = {mistakes[i].id for i in invisible}
    leaks = fairness.leaks(exercise, expected)
    scored = sum(case.earns_points for case in exercise.cases)
    for leak in leaks:
        if leak.answer in hidden_ids:
            continue  # said above, better
        fix = ("change its inputs so that this answer gives other numbers, or mark it "
               "scored=False and say why in its note")
        if leak.answer in {m.id for m in mistakes} and sum(
                other.answer == leak.answer for other in leaks) < scored:
            # Other cases reject it: on these inputs the mistake may simply be right.
            fix = (f"if '{leak.answer}' is right on such inputs (a mistake that shows only on "
                   "some), declare it conditional=\"the inputs it shows on\"; else " + fix)
        if leak.case == "every case":
            fix = "add a case whose inputs show that mistake"
        found.append(Problem(f"{leak.exercise}/{leak.case}", f"accepts the wrong answer "
                             f"'{leak.answer}', so it gives free points; {fix}"))
    return found


def points_problems(exercise: Exercise) -> list[Problem]:
    """An exercise whose points no case can earn: only hidden scored cases are worth points
    (a public case is the example students check against, worth none)."""
    if exercise.points <= 0 or any(case.earns_points for case in exercise.cases):
        return []
    return [Problem(exercise.name, f"no hidden scored case, so its {exercise.points:g} points "
                    "can never be earned (a public case is the students' example and is worth "
                    "no points); add a hidden case")]


def note_problems(exercise: Exercise) -> list[Problem]:
    """Cases whose note claims what their inputs do not exercise."""
    found = []
    for case in exercise.cases:
        inputs = case.inputs()
        for claim in CLAIMS:
            match = claim.words.search(case.note)
            if match and not claim.holds(inputs):
                found.append(Problem(f"{exercise.name}/{case.name}", f"its note says "
                                     f"'{match.group(0)}', but {claim.missing}; change the "
                                     "inputs or the note"))
    return found


def problems(assignment: Assignment, layout: Layout | None = None) -> list[Problem]:
    """Every mistake found in an assignment, its files and its references."""
    layout = layout or Layout.current()
    found = signature_problems(assignment, layout)
    found += soundness.domain_problems(assignment, layout)
    found += soundness.marker_problems(assignment, layout)
    try:
        fresh = building.compute(assignment, layout.solution(assignment.name))
    except ReferencesError as exc:
        return [*found, Problem(assignment.name, str(exc))]
    found += reference_problems(assignment, fresh, layout)
    found += soundness.nonfinite_problems(assignment, fresh)
    found += soundness.alternative_problems(assignment, fresh, layout)
    for exercise in assignment.exercises:
        found += note_problems(exercise)
        if not exercise.provided:
            found += points_problems(exercise)
            found += misconception_problems(exercise, _expected(fresh, exercise))
    return list(dict.fromkeys(found))  # two variants of one mistake fail alike: said once


def _expected(fresh: dict[tuple[str, str], Outputs], exercise: Exercise
              ) -> Callable[[Case], Outputs]:
    def get(case: Case) -> Outputs:
        return fresh[(exercise.name, case.name)]
    return get


def summary(assignment: Assignment) -> str:
    """One line for an assignment without problems."""
    cases = sum(len(e.cases) for e in assignment.exercises)
    return (f"{assignment.name}: {len(assignment.exercises)} exercises, {cases} cases: "
            "no problem found")

