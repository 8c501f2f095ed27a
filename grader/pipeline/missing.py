"""Why a function the grader looks for is not defined, when the submission says why: the cell
that defines it did not run (a syntax error, an error before the `def`, a skipped cell).

"no function named softmax is defined" is true, but a student who wrote `softmax` goes looking
for a typo in its name; the cell's own error is what to fix. Pure: results in, results out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from grader.results import CellResult, CellStatus, CheckStatus, ExerciseResult
from grader.submission import Submission


def _defining(name: str, submission: Submission) -> list[int]:
    """The indices of the cells whose source defines `name` at the start of a line."""
    pattern = re.compile(rf"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+{re.escape(name)}\b",
                         re.MULTILINE)
    return [cell.index for cell in submission.cells if pattern.search(cell.source)]


def explain(exercises: Sequence[ExerciseResult], submission: Submission,
            cells: Sequence[CellResult], homes: Mapping[str, str] | None = None
            ) -> tuple[ExerciseResult, ...]:
    """The exercises, with each missing one's message naming the cell that defines it and
    did not run, and that cell's error; else the notebook it belongs in (`homes`: exercise
    name -> notebook, for an assignment of several); the others as they are."""
    by_index = {cell.index: cell for cell in cells}
    explained = []
    for exercise in exercises:
        if exercise.status is not CheckStatus.MISSING:
            explained.append(exercise)
            continue
        failed = [by_index[i] for i in _defining(exercise.name, submission)
                  if i in by_index and by_index[i].status is not CellStatus.OK]
        home = (homes or {}).get(exercise.name, "")
        if failed:
            cell = failed[-1]
            why = cell.message.splitlines()[0].split("; ")[0] if cell.message \
                else cell.status.value
            said = f": {cell.where} defines it, but did not run ({why}); fix that first"
        else:
            said = f" (it belongs in {home})" if home else ""
        checks = tuple(replace(check, message=check.message + said)
                       if check.status is CheckStatus.MISSING else check
                       for check in exercise.checks)
        explained.append(replace(exercise, checks=checks))
    return tuple(explained)
