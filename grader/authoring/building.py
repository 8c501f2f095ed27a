"""Building references: run the solution on every case in the sandbox, store what it returns
(`grader.course.references` keeps the format), and say what no longer agrees.

The solution runs in the sandbox, as a submission does (`compute`): never in this process, so
that a solution made from an instructor's notebook (`grade assign`) cannot touch the grader.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from grader.course.layout import ENV_SOLUTIONS, Layout
from grader.course.references import Outputs, as_outputs, file_sha256, not_public, read, write
from grader.errors import ReferencesError, SubmissionError
from grader.model import Assignment, Visibility
from grader.pipeline import loading
from grader.results import CellStatus
from grader.sandbox.config import SandboxConfig
from grader.sandbox.limits import Limits
from grader.sandbox.session import Session

# A solution is trusted to finish, not to be quick: torch builds a model per case. A master
# imports what it needs itself (nothing is preloaded before `grade assign` has read it), and a
# build of torch with CUDA maps 3 GB of address space as it is imported.
LIMITS = Limits(cell_timeout=120.0, call_timeout=120.0, submission_timeout=3600.0,
                memory_mb=8192)


def compute(assignment: Assignment, solution: Path | None = None
            ) -> dict[tuple[str, str], Outputs]:
    """Run the solution on every case's inputs, in the sandbox, as a submission is run."""
    path = solution or Layout.from_environment().solution(assignment.name)
    fix = "fix the solution (or the case's declaration)"
    if not path.is_file():
        raise ReferencesError(f"{path}: no solution file; write it, or set {ENV_SOLUTIONS}")
    try:
        module = loading.load(path, LIMITS)
    except SubmissionError as exc:
        raise ReferencesError(exc.message) from None
    outputs: dict[tuple[str, str], Outputs] = {}
    with Session(SandboxConfig(LIMITS, assignment.requires, "solution")) as session:
        for cell in session.run(module):
            if cell.status not in (CellStatus.OK, CellStatus.SKIPPED):
                raise ReferencesError(f"{path}: {cell.message}; fix the solution")
        for exercise in assignment.exercises:
            for case in exercise.cases:
                where = f"{path}: {exercise.name}/{case.name}"
                outcome = session.call(exercise.name, exercise.kind, case.inputs(),
                                       dict(case.init_kwargs), exercise.tensors)
                if not outcome.returned:
                    raise ReferencesError(f"{where}: {outcome.message}; {fix}")
                try:
                    outputs[(exercise.name, case.name)] = as_outputs(
                        outcome.value, len(exercise.outputs))
                except (TypeError, ValueError):
                    raise ReferencesError(f"{where}: returned something that is not "
                                          f"{len(exercise.outputs)} array(s) of numbers; "
                                          f"{fix}") from None
    return outputs


def build(assignment: Assignment, layout: Layout | None = None) -> tuple[Path, Path]:
    """Recompute and store the hidden and public references of `layout` (by default where
    grading looks for them; `grade assign` gives its own folder); return both paths."""
    layout = layout or Layout.from_environment()
    solution = layout.solution(assignment.name)
    outputs = compute(assignment, solution)
    sha = file_sha256(solution)
    public = {key: value for key, value in outputs.items()
              if assignment.exercise(key[0]).case(key[1]).visibility is Visibility.PUBLIC}
    hidden, shipped = layout.hidden(assignment.name), layout.public(assignment.name)
    write(hidden, assignment, sha, outputs)
    write(shipped, assignment, sha, public)
    return hidden, shipped


def verify(assignment: Assignment, fresh: Mapping[tuple[str, str], Outputs] | None = None,
           layout: Layout | None = None) -> list[str]:
    """What no longer agrees between the stored references and `solutions/` (of `layout`, by
    default where grading looks); empty when all do. `fresh` is what `compute` returned, when
    the caller has it."""
    layout = layout or Layout.from_environment()
    problems = []
    solution = layout.solution(assignment.name)
    if not solution.is_file():
        return [f"{solution}: no solution file; write it, or set {ENV_SOLUTIONS}"]
    sha = file_sha256(solution)
    if fresh is None:
        try:
            fresh = compute(assignment, solution)
        except ReferencesError as exc:
            return [str(exc)]
    rebuild = f"run `grade references build {assignment.name}`"
    for path, public_only in ((layout.hidden(assignment.name), False),
                              (layout.public(assignment.name), True)):
        try:
            stored = read(path, assignment.name)
        except ReferencesError as exc:
            problems.append(str(exc))
            continue
        if stored.solution_sha256 != sha:
            problems.append(f"{path}: stale, built from another version of {solution}; "
                            f"{rebuild}")
        if public_only:
            problems += [f"{path}: holds {name}, which is not a public case: it ships to "
                         f"students with the package; {rebuild}"
                         for name in not_public(assignment, stored)]
        for (exercise, case), outputs in fresh.items():
            spec = assignment.exercise(exercise).case(case)
            if public_only and spec.visibility is not Visibility.PUBLIC:
                continue
            old = stored.outputs.get((exercise, case))
            if old is None or len(old) != len(outputs) or not all(
                    a.shape == b.shape and np.allclose(a, b, rtol=spec.rtol, atol=spec.atol)
                    for a, b in zip(old, outputs, strict=True)):
                problems.append(f"{path}: {exercise}/{case} differs from what the solution "
                                f"computes; {rebuild}")
    return problems
