"""The declared data model: a case's inputs are made once and handed out as copies."""

from __future__ import annotations

import numpy as np

from grader.course import registry
from grader.model import Case


def test_a_case_makes_its_inputs_once_and_a_caller_cannot_change_them():
    made: list[int] = []

    def make(rng: np.random.Generator) -> tuple[object, ...]:
        made.append(1)
        x = rng.standard_normal((2, 3))
        return x, [x[0].copy()], 3, None

    case = Case("one", make, seed=7)
    first = case.inputs()
    first[0][:] = 0.0  # a caller (a diagnosis, a variant) that writes into its inputs
    first[1][0][:] = 0.0
    second = case.inputs()
    fresh = make(np.random.default_rng(7))
    assert len(made) == 2  # once for the case, once for `fresh` above
    assert np.array_equal(second[0], fresh[0]) and np.array_equal(second[1][0], fresh[1][0])
    assert second[2:] == (3, None)
    assert second[0] is not first[0] and second[0].flags.writeable
    assert case.inputs()[0] is not second[0]


def test_every_declared_case_hands_out_what_its_seed_makes():
    for assignment in registry.assignments().values():
        for exercise in assignment.exercises:
            for case in exercise.cases:
                case.inputs()  # made and kept
                again = case.make_inputs(np.random.default_rng(case.seed))
                for kept, fresh in zip(case.inputs(), again, strict=True):
                    if isinstance(fresh, np.ndarray):
                        assert kept.dtype == fresh.dtype and np.array_equal(kept, fresh)
                    else:
                        assert type(kept) is type(fresh)
