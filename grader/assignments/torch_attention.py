"""Assignment `torch_attention`: attention and an encoder block in PyTorch (seeds 000 and 004)."""

from __future__ import annotations

import numpy as np

from grader.assignments import properties as prop
from grader.assignments.attention_basics import SEED003_X
from grader.assignments.inputs import normal
from grader.assignments.variants import (
    QK_SWAPPED_ROWS,
    hard_weights,
    misconception,
    rows_attention,
    uniform_weights,
)
from grader.assignments.variants import softmax as stable_softmax
from grader.model import PRACTICE_NOTE, Assignment, Case, Exercise, Visibility

PUBLIC = Visibility.PUBLIC

# Seed 000's input: three words with 4-dimensional embeddings.
SEED000_X = [[0.2, 0.8, 0.5, 0.1], [0.9, 0.4, 0.7, 0.3], [0.5, 0.1, 0.2, 0.9]]


def seed000(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Seed 000's X with uniform weights, as `torch.rand` draws them."""
    return (np.array(SEED000_X), *(rng.random(size=(4, 4)) for _ in range(3)))


def encoder_state(embed_dim: int, ff_dim: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A state_dict for SimpleEncoderBlock, with PyTorch's parameter names and shapes."""
    E, F = embed_dim, ff_dim

    def init(*shape: int) -> np.ndarray:
        return (rng.normal(size=shape) / np.sqrt(shape[-1])).astype(np.float32)

    return {
        "self_attn.in_proj_weight": init(3 * E, E),
        "self_attn.in_proj_bias": init(3 * E) * 0.1,
        "self_attn.out_proj.weight": init(E, E),
        "self_attn.out_proj.bias": init(E) * 0.1,
        "ff.0.weight": init(F, E),
        "ff.0.bias": init(F) * 0.1,
        "ff.2.weight": init(E, F),
        "ff.2.bias": init(E) * 0.1,
        "norm1.weight": 1 + init(E) * 0.1,
        "norm1.bias": init(E) * 0.1,
        "norm2.weight": 1 + init(E) * 0.1,
        "norm2.bias": init(E) * 0.1,
    }


def encoder_inputs(embed_dim: int, ff_dim: int, batch: int, seq_len: int):
    """A state_dict to load and a (batch, seq_len, embed_dim) input to run forward on."""

    def make(rng: np.random.Generator) -> tuple[object, ...]:
        state = encoder_state(embed_dim, ff_dim, rng)
        return state, rng.normal(size=(batch, seq_len, embed_dim)).astype(np.float32)

    return make


def _attention(**mistake):
    """torch_self_attention with one mistake, computed in numpy."""
    return lambda X, W_q, W_k, W_v: rows_attention(X @ W_q, X @ W_k, X @ W_v, **mistake)


def _encoder(pre_norm: bool = False, residual: bool = True, attend: str = "softmax"):
    """SimpleEncoderBlock's forward pass with one mistake, computed with torch. `attend`
    "identity" or "uniform" replaces the attention weights, as a block that never looks at
    the scores would: each token takes its own value, or the mean of all values."""

    def variant(state, x, embed_dim=64, num_heads=4, ff_dim=256):
        import torch
        from torch import nn

        attention = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)
        ff = nn.Sequential(nn.Linear(embed_dim, ff_dim), nn.ReLU(), nn.Linear(ff_dim, embed_dim))
        norm1, norm2 = nn.LayerNorm(embed_dim), nn.LayerNorm(embed_dim)
        parts = {"self_attn": attention, "ff": ff, "norm1": norm1, "norm2": norm2}
        for name, module in parts.items():
            module.load_state_dict({key.split(".", 1)[1]: torch.tensor(value)
                                    for key, value in state.items() if key.startswith(name)})
        keep = 1.0 if residual else 0.0

        def attend_to(h):
            if attend == "softmax":
                return attention(h, h, h)[0]
            v_weight = attention.in_proj_weight[2 * embed_dim:]
            v_bias = attention.in_proj_bias[2 * embed_dim:]
            v = h @ v_weight.T + v_bias
            if attend == "uniform":
                v = v.mean(dim=1, keepdim=True).expand_as(v)
            return attention.out_proj(v)

        with torch.no_grad():
            h = torch.tensor(x)
            if pre_norm:
                y = norm1(h)
                h = keep * h + attend_to(y)
                return (keep * h + ff(norm2(h))).numpy()
            h = norm1(keep * h + attend_to(h))
            return norm2(keep * h + ff(h)).numpy()

    return variant


torch_self_attention = Exercise(
    name="torch_self_attention",
    axes={"weights": ("query", "key"), "output": ("query", "feature")},
    signature="(X, W_q, W_k, W_v)",
    points=2,
    outputs=("weights", "output"),
    tensors="float64",
    summary="Scaled dot-product self-attention on tensors, differentiable.",
    cases=(
        Case("notebook-example", seed000, seed=1, visibility=PUBLIC,
             note="the example input in the notebook"),
        Case("practice", normal((6, 5), (5, 2), (5, 2), (5, 7)), seed=5, visibility=PUBLIC,
             note=PRACTICE_NOTE),
        Case("d_k-differs-from-d_v", normal((5, 6), (6, 3), (6, 3), (6, 2)), seed=2),
        Case("one-token", normal((1, 4), (4, 4), (4, 4), (4, 4)), seed=3, scored=False,
             note="one token: checks that N = 1 works, worth no points, since any attention "
             "over a single token returns V"),
        Case("notebook-input",
             lambda rng: (np.array(SEED003_X), *normal((4, 4), (4, 4), (4, 4))(rng)), seed=4),
    ),
    misconceptions=(
        misconception("missing-scale", _attention(scale=1.0)),
        misconception("wrong-scale", lambda X, W_q, W_k, W_v: rows_attention(
            X @ W_q, X @ W_k, X @ W_v, scale=W_q.shape[1])),
        misconception("softmax-wrong-axis", _attention(norm=lambda s: stable_softmax(s, -2))),
        misconception("transposed-weights", _attention(transpose=True)),
        misconception("qk-swapped", _attention(swap=True), QK_SWAPPED_ROWS),
    ),
    trivial=(("return V", lambda X, W_q, W_k, W_v: (np.eye(len(X)), X @ W_v)),
             ("uniform attention", _attention(norm=uniform_weights)),
             ("hard attention (an argmax for the softmax)", _attention(norm=hard_weights))),
    properties=(prop.sums_to_one(),),
)

SimpleEncoderBlock = Exercise(
    name="SimpleEncoderBlock",
    signature="(self, embed_dim=64, num_heads=4, ff_dim=256)",
    points=3,
    kind="class",
    tensors="float32",
    summary="A post-norm Transformer encoder block; loads a reference state_dict, runs forward.",
    cases=(
        Case("small", encoder_inputs(16, 32, 2, 5), seed=11, visibility=PUBLIC,
             init_kwargs={"embed_dim": 16, "num_heads": 4, "ff_dim": 32},
             rtol=1e-4, atol=1e-5, note="embed_dim=16, 4 heads, batch of 2"),
        Case("practice", encoder_inputs(24, 40, 3, 7), seed=15, visibility=PUBLIC,
             init_kwargs={"embed_dim": 24, "num_heads": 3, "ff_dim": 40},
             rtol=1e-4, atol=1e-5, note=PRACTICE_NOTE),
        Case("defaults", encoder_inputs(64, 256, 2, 10), seed=12,
             rtol=1e-4, atol=1e-5, note="the default sizes"),
        Case("two-heads", encoder_inputs(32, 64, 3, 4), seed=14,
             init_kwargs={"embed_dim": 32, "num_heads": 2, "ff_dim": 64},
             rtol=1e-4, atol=1e-5, note="embed_dim=32, 2 heads, batch of 3"),
        Case("one-token", encoder_inputs(16, 32, 1, 1), seed=13,
             init_kwargs={"embed_dim": 16, "num_heads": 2, "ff_dim": 32},
             rtol=1e-4, atol=1e-5, scored=False,
             note="one token: checks that a sequence of one works, worth no points, since a "
                  "block that never attends gives the same output"),
    ),
    misconceptions=(
        misconception("pre-norm", _encoder(pre_norm=True)),
        misconception("missing-residual", _encoder(residual=False)),
    ),
    trivial=(("a block that never attends (each token takes its own value)",
              _encoder(attend="identity")),
             ("uniform attention", _encoder(attend="uniform"))),
)

ASSIGNMENT = Assignment(
    name="torch_attention",
    title="Attention and an encoder block in PyTorch",
    exercises=(torch_self_attention, SimpleEncoderBlock),
    requires=("torch",),
    layout="rows are tokens, X has shape (seq_len, d_model) (with the batch first in the "
           "encoder block) and Q = X @ W_q; the scores are Q @ K.T",
)
