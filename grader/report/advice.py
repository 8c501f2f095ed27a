"""What a report says besides pass and fail: advice told from failure (a check worth no
points that fails is a tip), and the parts of a split assignment that a file is or is not.

A hidden case that earns nothing (huge inputs, one token) or any case of a function the
notebook gives ready-made says something worth knowing, but costs nothing: every report draws
it as a tip (a blue "Tip" box, "a tip" for its status), never with a failure's red bar or its
"Likely mistake". A public case of an exercise that counts (the notebook's example, the practice
case) is never a tip, although it is worth no points: it stands for the hidden cases that are.
"""

from __future__ import annotations

from dataclasses import dataclass

from grader.model import Visibility
from grader.results import CheckResult, ExerciseResult, Result


def is_tip(exercise: ExerciseResult, check: CheckResult) -> bool:
    """Whether a failing check is advice rather than a failure: a hidden case that earns
    nothing (huge inputs, one token), or any case of a function the notebook gives
    ready-made. A public case of an exercise that counts (the notebook's example, the
    practice case) stands for its hidden cases and is never a tip. Reports draw a tip as
    such, never as a failure."""
    if check.passed:
        return False
    return not exercise.scored or (check.visibility is Visibility.HIDDEN and not check.scored)


def label(check: CheckResult, tip: bool) -> str:
    """What a diagnosis box is headed, in words (the catalogue id is for machines): "Tip:"
    for advice, "Likely mistake:" for a failure, nothing for a stub not written yet."""
    if check.diagnosis is None or check.diagnosis.id == "unattempted":
        return ""
    return "Tip:" if tip else "Likely mistake:"


@dataclass(frozen=True)
class Parts:
    """The parts of a split assignment as one file's report says them."""

    here: tuple[str, ...]
    """The parts this file is, "part 1 (udl_attention_12_1.ipynb)"."""
    away: tuple[str, ...]
    """The parts it is not and defines nothing of: not handed in."""

    @property
    def heading(self) -> str:
        """One sentence for the top of a report; empty when nothing is missing."""
        if not self.away:
            return ""
        count = len(self.here) + len(self.away)
        here = " and ".join(self.here) or "no part"
        away = " and ".join(self.away)
        both = "both notebooks" if count == 2 else "every notebook"
        return (f"This file is {here} of {count}; {away} not handed in, so its exercises are "
                f"not graded here. Hand in {both}.")


def parts(result: Result) -> Parts:
    """The parts of `result`'s assignment that its file is and is not."""
    here = dict.fromkeys(e.part for e in result.exercises if e.part and e.handed_in)
    away = dict.fromkeys(e.part for e in result.exercises if e.part and not e.handed_in)
    return Parts(tuple(here), tuple(away))


def handed_in(result: Result) -> tuple[ExerciseResult, ...]:
    """The exercises of the parts the file is: those a report lists one by one."""
    return tuple(e for e in result.exercises if e.handed_in)
