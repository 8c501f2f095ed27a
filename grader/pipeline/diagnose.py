"""Naming the misconception behind a wrong answer.

When a check fails, the exercise's known wrong variants run on the same inputs (in the grader's
process: they are trusted code). If the student's output matches a variant, the variant's
mistake is the diagnosis; a variant that agrees with the reference on these inputs proves
nothing and is skipped. Failing that, the exercise's properties (weights that do not sum to 1,
weights on future tokens, NaN only for large inputs) may explain the output. Each case is
diagnosed on its own here; `grader.pipeline.agreement` then takes back what the exercise's
other cases refute.
"""

from __future__ import annotations

import ast
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from grader.course.references import Outputs, as_outputs
from grader.model import Exercise, Misconception
from grader.results import Diagnosis

# Looser than the checks: a float32 or loop-based student matches a float64 variant.
MATCH_RTOL = 1e-4
MATCH_ATOL = 1e-6


@dataclass(frozen=True)
class Written:
    """A number written in a function's code where a size goes, as
    `grader.pipeline.notebook_globals.numbers_written` reads it."""

    value: float
    """The number, for example 2.0 for `/ 2`."""
    line: int
    """Its line in the cell (or module) that defines the function."""
    divisor: bool
    """It divides something other than a size (`scores / 2`): it may stand for a size's
    square root (a scale) as well as for a size. Elsewhere (`range(3)`, `np.sqrt(4)`,
    `np.zeros((4, 3))`, `Q[:2]`) it is a size."""


def same(a: Outputs, b: Outputs, rtol: float = MATCH_RTOL, atol: float = MATCH_ATOL) -> bool:
    """Whether two sets of outputs agree (NaN matching NaN, inf matching inf)."""
    return len(a) == len(b) and all(
        x.shape == y.shape and bool(np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True))
        for x, y in zip(a, b, strict=True))


def _copies(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(np.array(item) if isinstance(item, np.ndarray) else
                 {k: np.array(v) for k, v in item.items()} if isinstance(item, Mapping) else item
                 for item in inputs)


def run_variant(variant: Any, inputs: tuple[Any, ...], init: Mapping[str, Any],
                count: int) -> Outputs | None:
    """A trusted variant's outputs on copies of the inputs; None where it does not apply."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return as_outputs(variant(*_copies(inputs), **init), count)
    except Exception:  # a variant that does not apply to these inputs (shapes) says nothing
        return None


UNATTEMPTED = "unattempted"
USES_GLOBAL = "uses-global"
HARD_CODED = "hard-coded-size"
CALLEE_FAILS = "callee-fails"
"""A check that fails only because a graded or given function its exercise calls fails
(`grader.pipeline.owncode`): the mistake is that function's, not this exercise's."""


def parameters(signature: str) -> list[str]:
    """The parameter names of a signature such as "(Q, K, V, mask=None)"."""
    from grader.pipeline import ipython_syntax  # loaded only to name a hard-coded size

    try:
        tree = ipython_syntax.parse(f"def f{signature}: pass")  # one thread at a time
    except SyntaxError:
        return []
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    return [a.arg for a in (*function.args.posonlyargs, *function.args.args)]


def _sizes(exercise: Exercise) -> dict[tuple[int, int], tuple[int | None, ...]]:
    """Each axis of the exercise's array inputs, `(argument, axis)`, with its size in every
    case: two axes with the same sizes in every case are one size (the batch of queries, keys
    and values), which a global may stand for without ambiguity."""
    table: dict[tuple[int, int], list[int | None]] = {}
    cases = exercise.cases
    for k, case in enumerate(cases):
        try:
            inputs = case.inputs()
        except Exception:  # an instructor's broken generator is validate's to report
            continue
        for i, item in enumerate(inputs):
            if isinstance(item, np.ndarray):
                for axis, size in enumerate(item.shape):
                    table.setdefault((i, axis), [None] * len(cases))[k] = size
    return {place: tuple(sizes) for place, sizes in table.items()}


def _groups(exercise: Exercise, example: tuple[Any, ...], inputs: tuple[Any, ...],
            value: float, cache: dict[str, Any]) -> list[list[tuple[tuple[int, int], int]]]:
    """The axes of the example's arrays whose size is `value`, as groups of axes that are one
    size (`_sizes`), each axis `(argument, axis)` with its size in `inputs`."""
    here = {(i, axis): np.shape(inputs[i])[axis] for i, item in enumerate(example)
            if isinstance(item, np.ndarray) for axis, size in enumerate(item.shape)
            if size == value and i < len(inputs) and np.ndim(inputs[i]) > axis}
    if not here:
        return []
    if "sizes" not in cache:
        cache["sizes"] = _sizes(exercise)
    groups: dict[object, list[tuple[tuple[int, int], int]]] = {}
    for place, size in here.items():
        groups.setdefault(cache["sizes"].get(place, place), []).append((place, size))
    return list(groups.values())


def _axis(exercise: Exercise, place: tuple[int, int]) -> str:
    """An axis as the student's code would write it: "X.shape[0]"."""
    names = parameters(exercise.signature)
    i, axis = place
    return f"{names[i]}.shape[{axis}]" if i < len(names) else f"argument {i + 1}"


def uses_global(exercise: Exercise, reads: Mapping[str, tuple[float, ...]],
                inputs: tuple[Any, ...], example: tuple[Any, ...] | None) -> Diagnosis | None:
    """The notebook globals the function reads where this case's inputs have other sizes.

    A global counts when one of its values (at the end of the notebook, or where the function
    is defined) is a size of the notebook's example (the first public case: say
    omega_q1.shape[0] == H_D == 4) and this case's inputs have another size there: the code
    reads the global, and the global is wrong here, so the diagnosis says only what the code
    does. Axes that have the same size in every case of the exercise are one size. When the
    example gives the global's value to one size only, the diagnosis names its axis, on every
    case where that size differs; when it gives it to several (batch = d = 2), it cannot tell
    which one the global stands for, and names none: it is given on every case where one of
    them differs."""
    if example is None or not reads:
        return None
    cache: dict[str, Any] = {}
    found = []
    for name, values in reads.items():
        for value in values:
            groups = _groups(exercise, example, inputs, value, cache)
            differ = [group for group in groups if all(n != value for _, n in group)]
            if not differ:
                continue
            if len(groups) == 1:
                place, size = differ[0][0]
                found.append(f"the notebook's global {name} = {value:g}, where "
                             f"{_axis(exercise, place)} is {size}")
            else:
                found.append(f"the notebook's global {name} = {value:g}, the size of "
                             "several axes in the notebook's example, which this case's inputs "
                             "do not have")
            break
    if not found:
        return None
    return Diagnosis(USES_GLOBAL, f"{exercise.name} reads " + ", and ".join(found) + ". Take "
                     "sizes from the shapes of the inputs inside the function: the notebook's "
                     "globals fit only its example.")


def hard_coded(exercise: Exercise, written: Sequence[Written], inputs: tuple[Any, ...],
               example: tuple[Any, ...] | None) -> Diagnosis | None:
    """The numbers written in the function's code that stand for a size of the notebook's
    example where this case's inputs have another size, in the spirit of
    `uses_global`: `/ 2` is the square root of the example's head size 4, `range(3)` its
    3 tokens. A number names what it stands for when the example gives it one meaning only;
    `grader.pipeline.agreement` keeps the diagnosis only when every case with the example's
    sizes passes, so that a number the code needs (`D // 2` heads) is never blamed."""
    if example is None or not written:
        return None
    cache: dict[str, Any] = {}
    found: dict[tuple[float, str], list[int]] = {}  # a number, what it stands for: its lines
    for number in written:
        readings = [(prefix, value, group)
                    for prefix, value in [("", number.value)] + (
                        [("the square root of ", number.value ** 2)] if number.divisor else [])
                    for group in _groups(exercise, example, inputs, value, cache)]
        differ = [r for r in readings if all(n != r[1] for _, n in r[2])]
        if not differ:
            continue
        if len(readings) == 1:
            prefix, value, group = differ[0]
            place, size = group[0]
            axis = _axis(exercise, place)
            if prefix:  # the size it is the square root of, said with the size itself
                said = (f"stands for the square root of {axis}, which is {value:g} in the "
                        f"notebook's example, but {size} in this case")
            else:
                said = (f"stands for {axis}, which is {value:g} in the notebook's example, "
                        f"but {size} in this case")
        else:
            said = ("is a size of the notebook's example, or the square root of one, that this "
                    "case's inputs do not have")
        found.setdefault((number.value, said), []).append(number.line)
    texts = []
    for (value, said), lines in found.items():
        lines = sorted(set(lines))
        listed = (f"lines {', '.join(map(str, lines[:-1]))} and {lines[-1]}" if len(lines) > 1
                  else f"line {lines[0]}")
        texts.append(f"`{value:g}` on {listed} {said}")
    if not found:
        return None
    return Diagnosis(HARD_CODED, f"{exercise.name} writes sizes as numbers: " + "; ".join(texts)
                     + ". A number written in the code fits only the notebook's example: "
                     "take sizes from the shapes of the inputs inside the function.")


def unattempted_stub(what: str) -> Diagnosis:
    """The diagnosis of a stub nobody has written yet."""
    return Diagnosis(UNATTEMPTED, f"Not written yet: it {what}, as the notebook's stub does. "
                                  "Replace the stub's body with your own code.")


def of_error(exercise: Exercise, unattempted: bool, inputs: tuple[Any, ...],
             reads: Mapping[str, tuple[float, ...]] | None = None,
             example: tuple[Any, ...] | None = None) -> Diagnosis | None:
    """The diagnosis of a call that returned nothing to compare (a raise, a crash): an
    untouched stub (`unattempted`: it raised NotImplementedError), else a notebook global
    read where this case needs another size (an index out of range because N is the
    notebook's). A number written for a size is found when the exercise's cases agree
    (`agreement`)."""
    if unattempted:
        return unattempted_stub("still raises NotImplementedError")
    return uses_global(exercise, reads or {}, inputs, example)


def stub_answer(inputs: tuple[Any, ...], obtained: Outputs) -> str | None:
    """What an untouched stub returns, in words, when `obtained` is one: zeros or an input
    unchanged (the book's stubs return `np.zeros_like(X)` and `items_in.copy()`)."""
    if all(o.size and not o.any() for o in obtained):
        return "returns zeros"
    arrays = [np.asarray(item, dtype=float) for item in inputs
              if isinstance(item, (np.ndarray, list))]
    if all(any(a.shape == o.shape and np.array_equal(a, o) for a in arrays) for o in obtained):
        return "returns its input unchanged"
    return None


def matches(exercise: Exercise, inputs: tuple[Any, ...], init: Mapping[str, Any],
            obtained: Outputs, expected: Outputs) -> list[Misconception]:
    """Every catalogued mistake whose output `obtained` is, in catalogue order. Most inputs
    tell them apart; some do not (with symmetric scores, a softmax over the wrong axis and
    transposed weights give the same numbers)."""
    count = len(exercise.outputs)
    found = []
    for mistake in exercise.misconceptions:
        wrong = run_variant(mistake.variant, inputs, init, count)
        if wrong is not None and not same(wrong, expected) and same(obtained, wrong):
            found.append(mistake)
    return found


def consistent(diagnoses: list[Diagnosis | None],
               alternatives: list[tuple[Diagnosis, ...]]) -> list[Diagnosis | None]:
    """One exercise's diagnoses made to agree: where a case's output matches several mistakes
    equally (`alternatives`, all that match), it is given the one that most other cases of
    the exercise show, so that one bug is never called two names."""
    seen = Counter(d.id for d in diagnoses if d is not None)
    agreed = []
    for diagnosis, others in zip(diagnoses, alternatives, strict=True):
        if diagnosis is not None and diagnosis.id in {d.id for d in others}:
            current = diagnosis.id
            best = max(others, key=lambda d: (seen[d.id], d.id == current))
            if seen[best.id] > seen[current]:
                diagnosis = best
        agreed.append(diagnosis)
    return agreed


def diagnose(exercise: Exercise, inputs: tuple[Any, ...], init: Mapping[str, Any],
             obtained: Outputs, expected: Outputs,
             reads: Mapping[str, tuple[float, ...]] | None = None,
             example: tuple[Any, ...] | None = None,
             matching: list[Misconception] | None = None, written: Sequence[Written] = (),
             rejected: frozenset[str] = frozenset()) -> Diagnosis | None:
    """The misconception that explains `obtained`, or None. Call it only for failed checks.

    A notebook global read where this case needs another size comes first, then a number
    written for a size of the example (`written`), then a known wrong variant that the output
    matches; then an untouched stub is `unattempted`, never explained by a property, since it
    is not a misconception. `matching` is what `matches` returned for these outputs, when the
    caller has it; `rejected` are ids that the exercise's other cases refute
    (`grader.pipeline.agreement`), never given."""
    if same(obtained, expected):
        return None  # never diagnose an answer the reference accepts
    misread = uses_global(exercise, reads or {}, inputs, example)
    if misread:
        return misread  # first: a variant may match by chance (sqrt(H_D) = sqrt(D) when D = 4)
    if HARD_CODED not in rejected:
        literal = hard_coded(exercise, written, inputs, example)
        if literal:
            return literal  # as a global: `/ 2` matches sqrt(D) by chance when D = 4
    if matching is None:
        matching = matches(exercise, inputs, init, obtained, expected)
    matching = [m for m in matching if m.id not in rejected]
    if matching:
        return Diagnosis(matching[0].id, matching[0].message)
    stub = stub_answer(inputs, obtained)
    if stub:
        return unattempted_stub(stub)
    for check in exercise.properties:
        try:
            with np.errstate(all="ignore"):
                found = check(inputs, obtained, expected)
        except (ValueError, IndexError, TypeError):
            found = None
        if found:
            return Diagnosis(*found)
    return None
