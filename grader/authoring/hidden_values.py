"""The numbers of an assignment's hidden cases, as release looks for them in what it writes.

A hidden case's inputs and expected outputs must never reach students. The released check
data holds the outputs of misconceptions on the public cases, and such an output can hold a
hidden case's numbers by the structure of the exercise (positions counted from 1 on the
public 50 positions give position 50, which a hidden case of 200 positions holds; a wrong
base of 1000 over 6 features gives the frequencies that 10000 gives over 8). A value is
looked for as `tests/test_release.py` scans a release: each pair of neighbouring values that
holds one that is not a round number (a size such as 5 or 32 is everywhere), as float64 and
as float32 bytes, and a lone value alone; values that a public case shows are no secret.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from grader.course.references import References
from grader.model import Assignment, Visibility

DTYPES = ("<f8", "<f4")


def _arrays(value: Any) -> Iterator[np.ndarray]:
    """The numeric arrays in an input or output (nested in tuples, lists and dicts)."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "fiu":
        yield np.asarray(value, dtype=float)
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _arrays(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _arrays(item)


def windows(arrays: Iterable[np.ndarray]) -> set[bytes]:
    """Each pair of neighbouring values that holds a distinctive one, as float64 and float32
    bytes; a distinctive value alone where it has no neighbour."""
    found: set[bytes] = set()
    for array in arrays:
        for dtype in DTYPES:
            with np.errstate(over="ignore"):  # a float64 beyond float32's range is inf there
                flat = np.asarray(array, dtype=float).ravel().astype(dtype)
                marks = np.isfinite(flat) & (flat != np.round(flat, 4))  # not a round number
            if len(flat) == 1 and marks[0]:
                found.add(flat.tobytes())
            if len(flat) < 2:
                continue
            pairs = np.stack([flat[:-1], flat[1:]], axis=1)[marks[:-1] | marks[1:]]
            found.update(bytes(pair) for pair in np.ascontiguousarray(pairs).view(
                np.dtype((np.void, 2 * flat.itemsize))).ravel().tolist())
    return found


def secrets(assignment: Assignment, stored: References) -> set[bytes]:
    """The windows of the hidden cases' inputs and expected outputs (`stored`: all the
    references) that no public case shows."""
    material: dict[Visibility, list[np.ndarray]] = {v: [] for v in Visibility}
    for exercise in assignment.exercises:
        for case in exercise.cases:
            found = material[case.visibility]
            found += _arrays((case.inputs(), dict(case.init_kwargs)))
            found += stored.get(exercise.name, case.name)
    return windows(material[Visibility.HIDDEN]) - windows(material[Visibility.PUBLIC])


def holds(outputs: Iterable[np.ndarray], secret: set[bytes]) -> bool:
    """Whether `outputs` hold a window of `secret`."""
    return not windows(outputs).isdisjoint(secret)
