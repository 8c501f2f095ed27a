"""A PyTorch master notebook through `grade assign` and `grade validate` with no declaration
written by hand (docs/authoring.md, "Tensors and modules"): tensors keep their dtypes, a
module becomes a class exercise, masks are drawn as causal masks."""

from __future__ import annotations

import pytest

from grader.course import layout, registry
from tests.helpers.command import run, write_master

pytest.importorskip("torch")
pytestmark = pytest.mark.usefixtures("fresh_registry")

CONFIG = '''# ASSIGNMENT CONFIG
assignment = "torch_course"
title = "Attention in PyTorch"

[exercises]
attention = 3
MultiHeadedAttention = 4
subsequent_mask = 2
'''
IMPORTS = '''import math

import torch
from torch import nn

from grader import check
'''
MASK = '''def subsequent_mask(size):
    """Mask out subsequent positions: a (1, size, size) boolean lower triangle."""
    # BEGIN SOLUTION
    return torch.tril(torch.ones(1, size, size, dtype=torch.bool))
    # END SOLUTION
'''
ATTENTION = '''def attention(query, key, value, mask=None):
    """Compute scaled dot-product attention; return (output, p_attn)."""
    # BEGIN SOLUTION
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    return torch.matmul(p_attn, value), p_attn
    # END SOLUTION
'''
MHA = '''class MultiHeadedAttention(nn.Module):
    """Multi-head attention with h heads over d_model features."""

    def __init__(self, h, d_model):
        super().__init__()
        assert d_model % h == 0
        self.d_k = d_model // h
        self.h = h
        self.linears = nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(4)])

    def forward(self, query, key, value, mask=None):
        # BEGIN SOLUTION
        if mask is not None:
            mask = mask.unsqueeze(1)
        nbatches = query.size(0)
        query, key, value = [
            lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
            for lin, x in zip(self.linears, (query, key, value))
        ]
        x, _ = attention(query, key, value, mask=mask)
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        return self.linears[-1](x)
        # END SOLUTION
'''
EXAMPLES = '''torch.manual_seed(0)
x = torch.randn(2, 5, 8)
mask = subsequent_mask(5)
q = torch.randn(2, 2, 5, 4)
out, p = attention(q, q, q, mask=mask.unsqueeze(1))
mha = MultiHeadedAttention(2, 8)
y = mha(x, x, x, mask)
print(y.shape)
'''
CELLS = [("raw", CONFIG), ("markdown", "# Attention in PyTorch"), ("code", IMPORTS),
         ("code", MASK), ("code", ATTENTION), ("code", MHA), ("code", EXAMPLES)]


def test_a_torch_master_is_assigned_and_validated_with_no_declaration(tmp_path, monkeypatch):
    path = write_master(tmp_path / "torch_course_master.ipynb", CELLS)
    out = tmp_path / "course"
    code, _, err = run("assign", str(path), "--out", str(out))
    assert (code, err) == (0, "")
    declared = (out / "assignments" / "torch_course.py").read_text()
    assert declared.count("tensors='float32'") == 2  # attention and the module
    assert 'kind="class"' in declared and 'requires=("torch",)' in declared
    assert "init_kwargs={'h': 2, 'd_model': 8}, visibility=PUBLIC" in declared
    assert "init_kwargs={'h': 2, 'd_model': 16}, seed=1" in declared  # d_model x 2, h kept
    assert "'linears.0.weight': (('d_model', 'd_model'), 'float32')" in declared
    # the hidden masks and each exercise's practice mask, in the mask's domain
    assert declared.count("lower_triangular((") == 8
    assert "np.array([[[True, False, False, False, False]" in declared  # a boolean example
    for name, folder in ((layout.ENV_ASSIGNMENTS, "assignments"),
                         (layout.ENV_SOLUTIONS, "solutions"),
                         (layout.ENV_PUBLIC, "references")):
        monkeypatch.setenv(name, str(out / folder))
    registry.assignments.cache_clear()
    assert run("validate", "torch_course")[:2] == (
        0, "torch_course: 3 exercises, 15 cases: no problem found\n")
    assignment = registry.get("torch_course")
    mask_case = assignment.exercise("subsequent_mask").cases
    # the example, the practice case (5 times its size) and the hidden cases
    assert [case.inputs() for case in mask_case] == [(5,), (25,), (10,), (15,), (20,)]
    module = assignment.exercise("MultiHeadedAttention")
    state, x, _, _, mask = module.cases[1].inputs()
    assert mask.dtype == bool and x.dtype.name == "float32" and x.shape[-1] == 16
    assert sorted(state) == sorted(f"linears.{i}.{p}" for i in range(4)
                                   for p in ("weight", "bias"))


def test_a_failed_assign_writes_nothing(tmp_path):
    broken = [(kind, text.replace("y = mha(x, x, x, mask)", "y = mha(x, x, x, mask)\n1 / 0"))
              for kind, text in CELLS]
    path = write_master(tmp_path / "m.ipynb", broken)
    code, out, err = run("assign", str(path), "--out", str(tmp_path / "course"))
    assert code == 1 and "ZeroDivisionError" in err
    assert not (tmp_path / "course").exists()
