"""Why a function the grader looks for is not defined, when the submission says why: the cell
that defines it did not run (a syntax error, an error before the `def`, a skipped cell).

"no function named softmax is defined" is true, but a student who wrote `softmax` goes looking
for a typo in its name; the cell's own error is what to fix. Pure: results in, results out.

An assignment split across notebooks (the book's two) is graded one file at a time: a file
that is one part defines nothing of the other. Each exercise then says its part, and a part
the file defines nothing of is "not handed in" (`ExerciseResult.handed_in`), said once by
the reports, never as failures one by one. A function the notebook gives ready-made (the
book's softmax_cols, in both notebooks) says nothing of which part a file is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import PurePath

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
    return _parts(tuple(explained), submission, homes or {})


def _parts(exercises: tuple[ExerciseResult, ...], submission: Submission,
           homes: Mapping[str, str]) -> tuple[ExerciseResult, ...]:
    """Each exercise with its part, when the assignment is split across notebooks; those of a
    part that this file defines nothing of (and is not named after) marked not handed in. A
    file that defines nothing of any part is a blank one: its exercises simply fail."""
    parts = list(dict.fromkeys(homes[e.name] for e in exercises if homes.get(e.name)))
    if len(parts) < 2:
        return exercises
    named = PurePath(submission.path).name
    present = {homes[e.name] for e in exercises if homes.get(e.name) and not e.provided and (
        e.status is not CheckStatus.MISSING or _defining(e.name, submission))}
    present |= {part for part in parts if part == named}
    marked = []
    for exercise in exercises:
        home = homes.get(exercise.name, "")
        if not home:
            marked.append(exercise)
            continue
        number = f"part {parts.index(home) + 1}"
        away = bool(present) and home not in present
        checks = tuple(replace(c, message=f"{number} not handed in ({home})")
                       if away and c.status is CheckStatus.MISSING else c
                       for c in exercise.checks)
        marked.append(replace(exercise, part=f"{number} ({home})", handed_in=not away,
                              checks=checks))
    return tuple(marked)
