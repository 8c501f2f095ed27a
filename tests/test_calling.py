"""How a case's inputs reach the code (grader.sandbox.inside.calling): tensors keep each
input's kind, as the master's tensors had it (docs/authoring.md, "Tensors and modules")."""

from __future__ import annotations

import numpy as np
import pytest

from grader.sandbox.inside import calling
from tests.conftest import needs

pytestmark = needs("torch_attention")
"""Skipped, with the command that installs torch, where it is not installed."""


@pytest.fixture(scope="module")
def torch():
    """torch, imported when a test runs, not when the tests are collected: every pytest-xdist
    worker collects this module, and one runs its tests (a module fixture groups them), so
    one imports torch for them where three did (a second and a half of CPU each)."""
    import torch

    return torch


def test_float_arrays_take_the_exercises_dtype_and_the_others_keep_their_own(torch):
    mask = np.tril(np.ones((3, 3), dtype=bool))
    lengths = np.array([2, 3])
    made = calling.to_tensors((np.ones((2, 3), dtype=np.float32), mask, lengths,
                               {"w": np.zeros(2)}), "float64")
    assert [t.dtype for t in made[:3]] == [torch.float64, torch.bool, torch.int64]
    assert made[3]["w"].dtype == torch.float64
    assert all(t.device.type == "cpu" for t in made[:3])
    assert torch.equal(made[1], torch.tensor(mask))


def test_a_student_who_inverts_a_boolean_mask_gets_a_boolean_mask(torch):
    def attend(scores, mask):
        return scores.masked_fill(~mask, float("-inf")).softmax(-1)

    out = calling.invoke(attend, "function", (np.zeros((2, 2)), np.tril(np.ones((2, 2), bool))),
                         {}, "float64")
    np.testing.assert_allclose(out, [[1.0, 0.0], [0.5, 0.5]])


def test_the_guides_torch_example_runs_as_the_grader_runs_it(torch):
    """docs/authoring.md, "Tensors and modules": its declaration verbatim; a module written as
    a student would gets the state_dict, a boolean mask and the init_kwargs, and its
    unscaled twin is what the documented variant computes."""
    from pathlib import Path

    from torch import nn

    from grader.pipeline import diagnose

    guide = (Path(__file__).parents[1] / "docs" / "authoring.md").read_text()
    block = guide.split("#### Tensors and modules", 1)[1].split("```python\n", 1)[1]
    scope: dict = {}
    exec(block.split("```")[0], scope)
    exercise = scope["scorer"]

    class Scorer(nn.Module):
        def __init__(self, d_model, scaled=True):
            super().__init__()
            self.proj, self.scale = nn.Linear(d_model, d_model), d_model ** 0.5 if scaled else 1

        def forward(self, x, mask):
            assert mask.dtype == torch.bool and x.dtype == torch.float32
            scores = self.proj(x) @ x.transpose(-2, -1) / self.scale
            return scores.masked_fill(~mask, float("-inf")).softmax(-1)

    for case in exercise.cases:
        inputs = case.inputs()
        right = calling.invoke(Scorer, "class", inputs, case.init_kwargs, exercise.tensors)
        wrong = calling.invoke(lambda **kw: Scorer(scaled=False, **kw), "class", inputs,
                               case.init_kwargs, exercise.tensors)
        (variant,) = diagnose.run_variant(exercise.misconceptions[0].variant, inputs,
                                          case.init_kwargs, 1)
        assert right.shape == (inputs[1].shape[0], *inputs[2].shape[1:])
        np.testing.assert_allclose(wrong, variant, rtol=1e-4, atol=1e-5)
        assert not np.allclose(right, variant, rtol=1e-4, atol=1e-5)
    assert exercise.cases[1].inputs()[0]["proj.weight"].shape == (16, 16)
