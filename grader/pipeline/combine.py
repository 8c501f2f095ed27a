"""One student's several files, as one result: each exercise from the file where it scores best.

The book splits the unit across two notebooks (12_1 for softmax and self-attention, 12_2 for
multi-head attention), and students hand in both. Each file is graded on its own, in its own
sandbox, and the results are combined here: a pure function of the per-file results.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from grader.model import Assignment, Exercise
from grader.pipeline import scoring
from grader.results import CellResult, CellStatus, CheckStatus, ExerciseResult, Result, ResultStatus


def name(paths: Sequence[str]) -> str:
    """What a combined result is called: its files, joined ("12_1.ipynb + 12_2.ipynb")."""
    return " + ".join(paths)


def digest(hashes: Sequence[str]) -> str:
    """One hash for several files' hashes: it changes when any of them does."""
    return hashlib.sha256("\n".join(hashes).encode()).hexdigest()


def _rank(exercise: Exercise, result: Result, graded: ExerciseResult) -> tuple:
    """Higher is better: points, then checks passed (advice included), then a function that
    is at least defined, then a file that is the exercise's part (`handed_in`), then the file
    being the notebook the declaration names."""
    passed = sum(check.passed for check in graded.checks)
    declared = bool(exercise.notebook) and Path(result.submission).name == exercise.notebook
    return (graded.score, passed, graded.status is not CheckStatus.MISSING, graded.handed_in,
            declared)


def best_of(assignment: Assignment, results: Sequence[Result]) -> Result:
    """The results of one student's files for `assignment`, combined.

    A single result is returned as it is. A file that could not be graded costs nothing when
    another was: its error is kept as a problem of that file, and the other files count.
    """
    if len(results) == 1:
        return results[0]
    files = tuple(result.submission for result in results)
    graded = [result for result in results if result.status is ResultStatus.GRADED]
    combined = digest([result.sha256 for result in results])
    duration = round(sum(result.duration_s for result in results), 3)
    if not graded:
        return replace(results[0], submission=name(files), files=files, sha256=combined,
                       duration_s=duration,
                       error="; ".join(result.error or "" for result in results),
                       grader_failed=any(result.grader_failed for result in results))
    exercises = []
    for exercise in assignment.exercises:
        options = [(result, next(e for e in result.exercises if e.name == exercise.name))
                   for result in graded]
        chosen, best = max(options, key=lambda pair: _rank(exercise, *pair))
        exercises.append(replace(best, file=chosen.submission))
    cells: list[CellResult] = []
    for result in results:
        if result.status is ResultStatus.ERROR:
            cells.append(CellResult(0, CellStatus.ERROR, result.error or "",
                                    file=result.submission))
        cells += [replace(cell, file=result.submission) for cell in result.cells]
    output = "".join(f"--- {result.submission}\n{result.output}" for result in graded
                     if result.output)
    score, max_score = scoring.total(exercises)
    return replace(graded[0], submission=name(files), files=files, sha256=combined,
                   score=score, max_score=max_score, duration_s=duration, cells=tuple(cells),
                   exercises=tuple(exercises), output=output,
                   grader_failed=any(result.grader_failed for result in results))
