"""How a case's inputs reach the code (grader.sandbox.inside.calling): tensors keep each
input's kind, as the master's tensors had it (docs/authoring.md, "Tensors and modules")."""

from __future__ import annotations

import numpy as np
import pytest

from grader.sandbox.inside import calling

torch = pytest.importorskip("torch")


def test_float_arrays_take_the_exercises_dtype_and_the_others_keep_their_own():
    mask = np.tril(np.ones((3, 3), dtype=bool))
    lengths = np.array([2, 3])
    made = calling.to_tensors((np.ones((2, 3), dtype=np.float32), mask, lengths,
                               {"w": np.zeros(2)}), "float64")
    assert [t.dtype for t in made[:3]] == [torch.float64, torch.bool, torch.int64]
    assert made[3]["w"].dtype == torch.float64
    assert all(t.device.type == "cpu" for t in made[:3])
    assert torch.equal(made[1], torch.tensor(mask))


def test_a_student_who_inverts_a_boolean_mask_gets_a_boolean_mask():
    def attend(scores, mask):
        return scores.masked_fill(~mask, float("-inf")).softmax(-1)

    out = calling.invoke(attend, "function", (np.zeros((2, 2)), np.tril(np.ones((2, 2), bool))),
                         {}, "float64")
    np.testing.assert_allclose(out, [[1.0, 0.0], [0.5, 0.5]])
