"""The input makers of `grader.assignments.inputs`: dtypes kept, shared sizes shared, integer
bounds that name a size kept below it, plain values kept, an undeclared size refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from grader.assignments.inputs import (
    booleans,
    combined,
    exactly,
    fixed,
    floats,
    integers,
    normal,
    size,
)
from grader.errors import SpecError


def test_each_maker_keeps_its_kind():
    rng = np.random.default_rng(0)
    (ints,) = integers((50,), 1, 3)(rng)
    (flags,) = booleans((4, 2))(rng)
    (values,) = floats((3,), dtype="float32")(rng)
    assert ints.dtype == np.int64 and set(ints.tolist()) == {1, 2, 3}  # both ends included
    assert flags.dtype == np.bool_ and flags.shape == (4, 2)
    assert values.dtype == np.float32
    assert exactly([1, 2], (3, None), "text")(rng) == ([1, 2], (3, None), "text")
    assert isinstance(fixed([1, 2])(rng)[0], np.ndarray)  # fixed makes lists float arrays


@pytest.mark.parametrize("seed", range(20))
def test_combined_shares_sizes_and_bounds(seed):
    make = combined(floats(("batch", "q", "keys")), integers(("batch",), 1, "keys - 1"), None,
                    size("keys"), normal((2,)), sizes={"batch": (1, 4), "q": 3, "keys": (2, 6)})
    X, lens, nothing, keys, extra = make(np.random.default_rng(seed))
    assert X.shape[1] == 3 and 2 <= keys <= 6 and X.shape[2] == keys
    assert lens.shape == (X.shape[0],) and lens.dtype == np.int64
    assert lens.min() >= 1 and lens.max() <= keys - 1
    assert nothing is None and extra.shape == (2,)
    assert all(np.array_equal(a, b) for a, b in zip(make(np.random.default_rng(seed)),
                                                    (X, lens, None, keys, extra), strict=True))


def test_a_size_not_declared_is_named_with_the_fix():
    with pytest.raises(SpecError, match=r"the size 'keys' is not declared \(declared: 'b'\); "
                       r"wrap the makers in combined"):
        combined(integers((2,), 0, "keys"), sizes={"b": 2})(np.random.default_rng(0))


def test_the_readme_example_makes_what_it_says():
    guide = (Path(__file__).parents[1] / "docs" / "authoring.md").read_text()
    block = guide.split("#### Input makers", 1)[1].split("```python\n", 1)[1].split("```")[0]
    scope: dict = {}
    exec("from grader.model import Case\n" + block, scope)
    for seed in range(10):
        X, lens = scope["masked"].make_inputs(np.random.default_rng(seed))
        assert X.shape[1] == 3 and lens.shape == (X.shape[0],) and lens.dtype == np.int64
        assert 1 <= lens.min() and lens.max() <= X.shape[2]
    assert scope["unmasked"].inputs()[1] is None
    assert scope["flags"].inputs()[1].dtype == np.bool_
