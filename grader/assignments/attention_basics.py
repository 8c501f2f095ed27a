"""Assignment `attention_basics`: step-by-step numpy attention, rows are tokens.

Built on the course notebooks (seeds) 000, 001 and 003.
"""

from __future__ import annotations

import numpy as np

from grader.assignments.inputs import fixed, normal
from grader.model import Assignment, Case, Exercise, Visibility

PUBLIC = Visibility.PUBLIC

# Seed 001, first example: three 3-d embeddings and hand-made projections.
SEED001_X = [[1.0, 0.0, 0.5], [0.0, 1.0, 0.3], [1.0, 1.0, 0.2]]
SEED001_W_Q = [[1.0, 0.0, 0.5], [0.0, 1.0, 0.5], [0.0, 1.0, 0.5]]
SEED001_W_V = [[0.5, 1.0, 0.2], [1.0, 0.5, 0.3], [1.0, 0.5, 0.1]]
# Seed 001, masked example: identity projections.
SEED001_MASKED_X = [[1.0, 0.0, 1.0], [0.0, 1.0, 1.0], [1.0, 1.0, 0.0]]
# Seed 003: "she likes coffee".
SEED003_X = [[0.2, 0.9, 0.1, 0.5], [0.8, 0.3, 0.7, 0.2], [0.4, 0.6, 0.3, 0.9]]
SEED003_W_QK = [[0.9, 0.1, 0.1, 0.1], [0.1, 0.9, 0.1, 0.1], [0.1, 0.1, 0.9, 0.1],
                [0.1, 0.1, 0.1, 0.9]]
SEED003_W_V = [[0.8, 0.2, 0.1, 0.1], [0.2, 0.8, 0.2, 0.1], [0.1, 0.2, 0.8, 0.1],
               [0.1, 0.1, 0.1, 0.9]]


def _seed001_qkv(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    X = np.array(SEED001_X)
    W_q = np.array(SEED001_W_Q)
    return X @ W_q, X @ W_q, X @ np.array(SEED001_W_V)


def _masked(n: int, d_k: int, d_v: int):
    def make(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        Q, K, V = (rng.normal(size=(n, d)) for d in (d_k, d_k, d_v))
        return Q, K, V, np.triu(np.full((n, n), -np.inf), k=1)

    return make


softmax = Exercise(
    name="softmax",
    signature="(x)",
    points=2,
    summary="Numerically stable softmax over the last axis, for any number of dimensions.",
    cases=(
        Case("vector", normal((5,)), seed=1, visibility=PUBLIC),
        Case("matrix", normal((3, 4)), seed=2, visibility=PUBLIC),
        Case("three-dims", normal((2, 3, 5)), seed=3),
        Case("large-values", normal((4, 6), scale=1000.0), seed=4,
             note="scores in the thousands overflow exp() unless the maximum is subtracted"),
        Case("one-element", normal((1,)), seed=5),
    ),
)

qkv_projections = Exercise(
    name="qkv_projections",
    signature="(X, W_q, W_k, W_v)",
    points=2,
    outputs=("Q", "K", "V"),
    summary="Project the tokens onto queries, keys and values.",
    cases=(
        Case("seed-003", fixed(SEED003_X, SEED003_W_QK, SEED003_W_QK, SEED003_W_V),
             visibility=PUBLIC, note="the example of seed 003"),
        Case("d_k-differs-from-d_v", normal((5, 6), (6, 3), (6, 3), (6, 2)), seed=11),
        Case("one-token", normal((1, 4), (4, 4), (4, 4), (4, 4)), seed=12),
    ),
)

scaled_dot_product_attention = Exercise(
    name="scaled_dot_product_attention",
    signature="(Q, K, V, mask=None)",
    points=3,
    outputs=("weights", "context"),
    summary="softmax(Q K^T / sqrt(d_k) + mask) and its product with V.",
    cases=(
        Case("seed-001", _seed001_qkv, visibility=PUBLIC, note="the example of seed 001"),
        Case("random", normal((4, 8), (4, 8), (4, 8)), seed=21, visibility=PUBLIC),
        Case("causal-mask", _masked(5, 4, 4), seed=22, note="an additive causal mask"),
        Case("d_k-differs-from-d_v", normal((3, 4), (5, 4), (5, 2)), seed=23,
             note="3 queries over 5 keys, d_k=4 and d_v=2"),
        Case("one-token", normal((1, 3), (1, 3), (1, 3)), seed=24),
        Case("large-scores", normal((4, 6), (4, 6), (4, 6), scale=40.0), seed=25,
             note="scores in the hundreds overflow exp() unless the maximum is subtracted"),
    ),
)

causal_mask = Exercise(
    name="causal_mask",
    signature="(seq_len)",
    points=1,
    summary="A (seq_len, seq_len) additive mask: 0 on and below the diagonal, -inf above.",
    cases=(
        Case("three", fixed(3), visibility=PUBLIC),
        Case("one", fixed(1)),
        Case("six", fixed(6)),
    ),
)

causal_self_attention = Exercise(
    name="causal_self_attention",
    signature="(X, W_q, W_k, W_v)",
    points=2,
    outputs=("weights", "output"),
    summary="Self-attention in which no token attends to a later one.",
    cases=(
        Case("seed-001-masked", fixed(SEED001_MASKED_X, np.eye(3), np.eye(3), np.eye(3)),
             visibility=PUBLIC, note="the masked example of seed 001"),
        Case("random", normal((5, 4), (4, 3), (4, 3), (4, 2)), seed=31),
        Case("one-token", normal((1, 4), (4, 4), (4, 4), (4, 4)), seed=32),
        Case("large-scores", normal((4, 6), (6, 6), (6, 6), (6, 6), scale=8.0), seed=33,
             note="large scores overflow exp() unless the maximum is subtracted"),
    ),
)

ASSIGNMENT = Assignment(
    name="attention_basics",
    title="Attention, step by step (numpy, rows are tokens)",
    exercises=(softmax, qkv_projections, scaled_dot_product_attention, causal_mask,
               causal_self_attention),
)
