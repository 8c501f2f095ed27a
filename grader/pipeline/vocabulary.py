"""What a student may read of a hidden check: a closed set of texts, written here.

A hidden case's inputs must never reach a student, and a submission's code sees them. So
everything a student-facing format says of a hidden check is chosen from a finite set of
texts that depends on the submission only through
- the verdict (`results.Verdict`: passed, wrong values, wrong shape, wrong type, raised,
  crashed, timed out, too large, not written);
- for a raise, the exception's class when it is one of `RAISES` (usual built-in classes,
  each worth its bits to a student), else "an exception of another class";
- a diagnosis id of the exercise's catalogue, with the instructor's sentence for it (or a
  fixed sentence of the grader's for its own ids), never a sentence computed from the call;
- whether a public case of the same exercise fails with the same verdict, to point to it.

Nothing the submission chose is said: no name, qualname, dtype, field, shape, size, count,
exit code, signal, message, line or timing. What the grader computed of the call (the full
comparison, the exception's message) is kept in `CheckResult.detail`, which only the
instructor's views and, once `show_hidden_after` has passed, the students see
(`disclosure`). `size` counts the texts of an exercise, so that the bits a hidden check can
carry are a figure, not an argument (SECURITY.md, "What a hidden check says").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from grader.model import Assignment, Exercise, Visibility
from grader.results import CheckResult, Diagnosis, ExerciseResult, Verdict

VERDICTS: Mapping[Verdict, str] = {
    Verdict.WRONG_VALUES: "returned values that differ from the expected ones",
    Verdict.WRONG_SHAPE: "returned an array of the wrong shape",
    Verdict.WRONG_TYPE: "returned something other than the array(s) of numbers asked for",
    Verdict.RAISED: "raised an exception of a class of its own or a rare one",
    Verdict.CRASHED: "crashed: the process that ran the call died",
    Verdict.TIMED_OUT: "did not return within the time limit",
    Verdict.TOO_LARGE: "returned far more data than the expected outputs hold",
    Verdict.NOT_WRITTEN: "is not defined where the grader looks for it",
}
"""The sentence of each failing verdict."""

RAISES: Mapping[str, str] = {
    "NotImplementedError": "the stub is still there: nothing is written yet",
    "IndexError": "an index past the end of an axis: a size taken from the notebook or "
                  "written as a number, not read from the inputs",
    "ValueError": "shapes that do not fit a product, a broadcast or a reshape",
    "TypeError": "a call with the wrong arguments, or of something that is not a function",
    "NameError": "a name the function uses that is defined elsewhere in the notebook, or not "
                 "at all",
    "AttributeError": "a method of the wrong kind of object (a list's .T, an array's .size())",
    "ZeroDivisionError": "a division by a size that is zero on this case (// between sizes)",
    "RuntimeError": "PyTorch's complaint that shapes or dtypes do not fit",
    "MemoryError": "an array far larger than the inputs call for",
    "RecursionError": "a function that calls itself without end",
    "AxisError": "an axis the array does not have: a hard-coded axis for another layout",
}
"""The exception classes a hidden check may name, each with what it usually means in this
unit: NumPy's, PyTorch's and Python's own complaints about shapes, sizes and names, which
tell a student where to look. Any other class, and a class of the student's own that takes
one of these names, reads "an exception of a class of its own or a rare one"."""

_MODULES = {"builtins", "numpy", "numpy.exceptions", "numpy.core._exceptions",
            "numpy._core._exceptions"}

SAME_AS_PUBLIC = "A public case of this exercise fails the same way: see its details there."
HIDDEN = "This is a hidden case: what went wrong is said, never its numbers."

OWN_DIAGNOSES: Mapping[str, str] = {
    "uses-global": "It reads a notebook global (a size such as N or D) where it should take "
                   "the size from the shapes of its inputs: the global fits the notebook's "
                   "example, not this case.",
    "hard-coded-size": "It writes a size as a number, which fits only the notebook's example: "
                       "take sizes from the shapes of the inputs.",
    "unattempted": "Not written yet: it still behaves as the notebook's stub does. Replace the "
                   "stub's body with your own code.",
    "callee-fails": "It is right by itself: it fails because a graded or given function it "
                    "calls fails, and passes with the right one in its place. Fix that function "
                    "(the exercise's public example names it).",
}
"""The sentences of the grader's own diagnosis ids on a hidden check: the full ones name
globals and numbers of the student's (`diagnose.uses_global`) or the function a failure comes
from (`owncode.sentence`), which the public checks say."""


def raised(error: str) -> str:
    """The class a hidden check may name for an exception of class `error` ("module.name"),
    or "" when it is not one of `RAISES` (a class of the student's own, whatever its name)."""
    module, _, name = error.rpartition(".")
    return name if name in RAISES and module in _MODULES else ""


def message(verdict: Verdict, error_class: str = "", same_as_public: bool = False) -> str:
    """The message of a failing hidden check."""
    if verdict is Verdict.RAISED and error_class in RAISES:
        said = f"raised {error_class}, which usually means {RAISES[error_class]}"
    else:
        said = VERDICTS[verdict]
    tail = f" {SAME_AS_PUBLIC}" if same_as_public else ""
    return f"{said}. {HIDDEN}{tail}"


def diagnosis(found: Diagnosis | None, exercise: Exercise) -> Diagnosis | None:
    """A hidden check's diagnosis: its id with the instructor's sentence for it (a catalogued
    misconception), the grader's (its own ids, the shared catalogue), or none."""
    if found is None:
        return None
    from grader.assignments.variants import CATALOGUE  # loaded only for a hidden check

    sentence = next((m.message for m in exercise.misconceptions if m.id == found.id),
                    None) or OWN_DIAGNOSES.get(found.id) or CATALOGUE.get(found.id)
    return Diagnosis(found.id, sentence) if sentence else None


def diagnosis_ids(exercise: Exercise) -> frozenset[str]:
    """Every diagnosis id a hidden check of `exercise` may carry."""
    from grader.assignments.variants import CATALOGUE  # loaded only for a hidden check

    own = {m.id for m in exercise.misconceptions} | set(OWN_DIAGNOSES) | set(CATALOGUE)
    return frozenset(own)


def _closed_check(check: CheckResult, exercise: Exercise,
                  public: Sequence[CheckResult]) -> CheckResult:
    """A hidden check as students may read it; the public ones as they are."""
    if check.visibility is Visibility.PUBLIC:
        return check
    name = raised_name(check)
    if check.passed:
        return replace(check, message="", diagnosis=None, detail="", views=(), alternatives=(),
                       raised=name)
    same = any(not p.passed and p.verdict is check.verdict and p.raised == name
               for p in public)
    return replace(check, message=message(check.verdict, name, same),
                   diagnosis=diagnosis(check.diagnosis, exercise),
                   detail=_detail(check), views=(), alternatives=(),
                   raised=name)


def _detail(check: CheckResult) -> str:
    """What the grader found of a failing hidden check, for the instructor: its message and
    its diagnosis in full."""
    found = [check.detail or check.message]
    if check.diagnosis is not None:
        found.append(f"[{check.diagnosis.id}] {check.diagnosis.message}")
    return "\n".join(filter(None, found))


def raised_name(check: CheckResult) -> str:
    """The exception class a check may name: only one of `RAISES`."""
    return check.raised if check.raised in RAISES else ""


def close(result: ExerciseResult, exercise: Exercise) -> ExerciseResult:
    """An exercise's result whose hidden checks say only texts of the vocabulary."""
    public = [c for c in result.checks if c.visibility is Visibility.PUBLIC]
    return replace(result, checks=tuple(_closed_check(c, exercise, public)
                                        for c in result.checks))


def texts(exercise: Exercise) -> frozenset[str]:
    """Every message a failing hidden check of `exercise` may carry."""
    said = [*(message(v, "", same) for v in VERDICTS for same in (False, True)),
            *(message(Verdict.RAISED, name, same) for name in RAISES
              for same in (False, True))]
    return frozenset(said)


def size(exercise: Exercise) -> int:
    """How many different things a hidden check of `exercise` can say: passed, or one of
    `texts` with one of the diagnoses or none."""
    return 1 + len(texts(exercise)) * (len(diagnosis_ids(exercise)) + 1)


def bits(assignment: Assignment) -> float:
    """The most bits one hidden check of `assignment` can carry: log2 of the largest
    `size` of its exercises."""
    return max((math.log2(size(e)) for e in assignment.exercises), default=0.0)
