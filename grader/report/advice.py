"""Advice told from failure: a check worth no points that fails is a tip.

A hidden case that earns nothing (huge inputs, one token) or any case of a function the
notebook gives ready-made says something worth knowing, but costs nothing: every report draws
it as a tip (a blue "Tip" box, "a tip" for its status), never with a failure's red bar or its
"Likely mistake". The public example of an exercise that counts is never a tip, although it
is worth no points: it stands for the hidden cases that are.
"""

from __future__ import annotations

from grader.model import Visibility
from grader.results import CheckResult, ExerciseResult


def is_tip(exercise: ExerciseResult, check: CheckResult) -> bool:
    """Whether a failing check is advice rather than a failure: it is worth no points and is
    not the notebook's example (a hidden case that earns nothing, such as huge inputs or one
    token, or any case of a function the notebook gives ready-made). Reports draw it as a
    tip, never as a failure."""
    if check.passed:
        return False
    return not exercise.scored or (check.visibility is Visibility.HIDDEN and not check.scored)


def label(check: CheckResult, tip: bool) -> str:
    """What a diagnosis box is headed, in words (the catalogue id is for machines): "Tip:"
    for advice, "Likely mistake:" for a failure, nothing for a stub not written yet."""
    if check.diagnosis is None or check.diagnosis.id == "unattempted":
        return ""
    return "Tip:" if tip else "Likely mistake:"
