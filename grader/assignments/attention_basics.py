"""Assignment `attention_basics`: step-by-step numpy attention, rows are tokens.

Built on the course notebooks (seeds) 000, 001 and 003.
"""

from __future__ import annotations

import numpy as np

from grader.assignments import properties as prop
from grader.assignments.inputs import fixed, normal, offset_normal
from grader.assignments.variants import (
    D_V,
    LARGE,
    MASKED,
    MATRIX,
    QK_SWAPPED_ROWS,
    causal,
    hard_weights,
    misconception,
    naive_softmax,
    rows_attention,
    uniform_weights,
    whole_softmax,
)
from grader.assignments.variants import (
    softmax as stable_softmax,
)
from grader.model import PRACTICE_NOTE, Assignment, Case, Exercise, Visibility

PUBLIC = Visibility.PUBLIC
# Scores near 1,500 keep only about 4 significant digits of their differences in float32, so
# the large-scores cases compare loosely: they test overflow, not precision, and a scale or a
# softmax mistake still moves the weights by far more.
LARGE_RTOL, LARGE_ATOL = 1e-3, 1e-6
ONE_TOKEN = ("one token: checks that N = 1 works, worth no points, since any attention over a "
             "single token returns V")

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


def _attention(**mistake):
    """scaled_dot_product_attention with one mistake."""
    return lambda Q, K, V, mask=None: rows_attention(Q, K, V, mask, **mistake)


def _causal_attention(mask=causal, **mistake):
    """causal_self_attention with one mistake in its mask or its attention."""
    return lambda X, W_q, W_k, W_v: rows_attention(X @ W_q, X @ W_k, X @ W_v, mask(len(X)),
                                                   **mistake)


def _weights_transposed(Q, K, V, mask=None):
    """Attention that returns its weights transposed and mixes the values with them."""
    weights, _ = rows_attention(Q, K, V, mask)
    flipped = np.swapaxes(weights, -1, -2)
    return flipped, flipped @ V


ATTENTION_MISTAKES = (
    misconception("missing-scale", _attention(scale=1.0)),
    misconception("wrong-scale", lambda Q, K, V, mask=None: rows_attention(
        Q, K, V, mask, scale=Q.shape[-1])),
    misconception("wrong-scale", lambda Q, K, V, mask=None: rows_attention(
        Q, K, V, mask, scale=np.sqrt(V.shape[-1])),
        "The scores are divided by the square root of d_v, the size of each value: divide "
        "Q @ K.T by the square root of d_k (Q.shape[-1]), the size of each query and key.",
        conditional=D_V),
    misconception("softmax-wrong-axis", _attention(norm=lambda s: stable_softmax(s, axis=-2))),
    misconception("unstable-softmax", _attention(norm=naive_softmax), conditional=LARGE),
    misconception("transposed-weights", _attention(transpose=True)),
    misconception("weights-transposed", _weights_transposed),
    misconception("qk-swapped", _attention(swap=True), QK_SWAPPED_ROWS),
)


def _no_attention(n_queries: int, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each token attends only to itself: the weights are the identity, the output is V."""
    return np.eye(n_queries, len(values)), values


def _large_scores(n: int, d: int, offset: float):
    """Q, K, V whose scores all share a large offset (each query's first feature and every
    key's first feature equal `offset`), and otherwise vary by about 1. The offset overflows
    exp() unless the maximum is subtracted; the variation keeps the weights far from one-hot,
    so that the scale still changes them."""

    def make(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        Q, K, V = (rng.normal(size=(n, d)) for _ in range(3))
        Q[:, 0] = K[:, 0] = offset
        return Q, K, V

    return make


def _large_tokens(n: int, d: int, offset: float):
    """X, W_q, W_k, W_v of causal self-attention whose scores share a large offset, as above:
    every token's first feature is `offset`, and it reaches the first feature of its query and
    its key alone."""

    def make(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        X = rng.normal(size=(n, d))
        X[:, 0] = offset
        W_q, W_k, W_v = (rng.normal(size=(d, d)) * 0.5 for _ in range(3))
        for W in (W_q, W_k):
            W[0, :] = 0.0
            W[:, 0] = 0.0
            W[0, 0] = 1.0
        return X, W_q, W_k, W_v

    return make


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
        Case("practice", normal((6, 2)), seed=101, visibility=PUBLIC, note=PRACTICE_NOTE),
        Case("three-dims", normal((2, 3, 5)), seed=3),
        # Values near ±1,000 that differ by about 1: exp() overflows unless the maximum is
        # subtracted, and the rows stay far from one-hot, so that an argmax cannot pass.
        # Compared loosely, as the large-scores cases: float32 keeps 4 digits of them.
        Case("large-values", offset_normal((4, 6), 1000.0), seed=4, rtol=LARGE_RTOL,
             atol=LARGE_ATOL,
             note="values near 1,000 overflow exp() unless the maximum is subtracted"),
        Case("one-element", normal((1,)), seed=5, scored=False,
             note="one element: checks that a single value works, worth no points, since any "
                  "normalisation of one value gives [1]"),
    ),
    misconceptions=(
        misconception("unstable-softmax", naive_softmax, conditional=LARGE),
        misconception("softmax-wrong-axis", lambda x: stable_softmax(x, axis=0),
                      conditional=MATRIX),
        misconception("softmax-whole-array", whole_softmax, conditional=MATRIX),
    ),
    properties=(prop.finite_for_large_inputs(), prop.sums_to_one()),
)

qkv_projections = Exercise(
    name="qkv_projections",
    axes={name: ("token", "feature") for name in ("Q", "K", "V")},
    signature="(X, W_q, W_k, W_v)",
    points=2,
    outputs=("Q", "K", "V"),
    summary="Project the tokens onto queries, keys and values.",
    cases=(
        Case("notebook-example", fixed(SEED003_X, SEED003_W_QK, SEED003_W_QK, SEED003_W_V),
             visibility=PUBLIC, note="the example in the notebook"),
        Case("practice", normal((4, 5), (5, 2), (5, 2), (5, 7)), seed=111, visibility=PUBLIC,
             note=PRACTICE_NOTE),
        Case("d_k-differs-from-d_v", normal((5, 6), (6, 3), (6, 3), (6, 2)), seed=11),
        Case("one-token", normal((1, 4), (4, 4), (4, 4), (4, 4)), seed=12),
    ),
    properties=(prop.outputs_in_another_order(),),
)

scaled_dot_product_attention = Exercise(
    name="scaled_dot_product_attention",
    axes={"weights": ("query", "key"), "context": ("query", "feature")},
    signature="(Q, K, V, mask=None)",
    points=3,
    outputs=("weights", "context"),
    summary="softmax(Q K^T / sqrt(d_k) + mask) and its product with V.",
    cases=(
        Case("notebook-example", _seed001_qkv, visibility=PUBLIC,
             note="the example in the notebook"),
        Case("random", normal((4, 8), (4, 8), (4, 8)), seed=21, visibility=PUBLIC),
        Case("practice", normal((6, 5), (7, 5), (7, 2)), seed=121, visibility=PUBLIC,
             note=PRACTICE_NOTE),
        Case("causal-mask", _masked(5, 4, 4), seed=22, note="an additive causal mask"),
        Case("d_k-differs-from-d_v", normal((3, 4), (5, 4), (5, 2)), seed=23,
             note="3 queries over 5 keys, d_k=4 and d_v=2"),
        Case("one-token", normal((1, 3), (1, 3), (1, 3)), seed=24, scored=False,
             note=ONE_TOKEN),
        Case("large-scores", _large_scores(4, 6, 60.0), seed=25, rtol=LARGE_RTOL, atol=LARGE_ATOL,
             note="scores above 1,000 overflow exp() unless the maximum is subtracted"),
    ),
    misconceptions=(
        *ATTENTION_MISTAKES,
        misconception("mask-after-softmax", _attention(after=True), conditional=MASKED),
        misconception("mask-ignored", lambda Q, K, V, mask=None: rows_attention(Q, K, V),
                      conditional=MASKED),
    ),
    trivial=(("return V", lambda Q, K, V, mask=None: _no_attention(len(Q), V)),
             ("uniform attention", _attention(norm=uniform_weights)),
             ("hard attention (an argmax for the softmax)", _attention(norm=hard_weights))),
    properties=(prop.finite_for_large_inputs(), prop.sums_to_one()),
)

causal_mask = Exercise(
    name="causal_mask",
    axes={"output": ("query", "key")},
    signature="(seq_len)",
    points=1,
    summary="A (seq_len, seq_len) additive mask: 0 on and below the diagonal, -inf above.",
    cases=(
        Case("three", fixed(3), visibility=PUBLIC),
        Case("practice", fixed(5), seed=131, visibility=PUBLIC, note=PRACTICE_NOTE),
        Case("one", fixed(1), scored=False,
             note="a 1 x 1 mask is [[0]] whichever way it points: a check, worth no points"),
        Case("six", fixed(6)),
    ),
    misconceptions=(
        misconception("mask-includes-diagonal",
                      lambda n: np.triu(np.full((n, n), -np.inf), k=0)),
        misconception("mask-wrong-direction",
                      lambda n: np.tril(np.full((n, n), -np.inf), k=-1)),
        misconception("mask-boolean", lambda n: np.triu(np.ones((n, n)), k=1)),
    ),
    properties=(prop.large_negative_mask(),),
)

causal_self_attention = Exercise(
    name="causal_self_attention",
    axes={"weights": ("query", "key"), "output": ("query", "feature")},
    signature="(X, W_q, W_k, W_v)",
    points=2,
    outputs=("weights", "output"),
    summary="Self-attention in which no token attends to a later one.",
    cases=(
        Case("notebook-example", fixed(SEED001_MASKED_X, np.eye(3), np.eye(3), np.eye(3)),
             visibility=PUBLIC, note="the masked example in the notebook"),
        Case("practice", normal((6, 5), (5, 2), (5, 2), (5, 7)), seed=141, visibility=PUBLIC,
             note=PRACTICE_NOTE),
        Case("random", normal((5, 4), (4, 3), (4, 3), (4, 2)), seed=31),
        Case("one-token", normal((1, 4), (4, 4), (4, 4), (4, 4)), seed=32, scored=False,
             note=ONE_TOKEN),
        Case("large-scores", _large_tokens(4, 6, 60.0), seed=33, rtol=LARGE_RTOL, atol=LARGE_ATOL,
             note="scores above 1,000 overflow exp() unless the maximum is subtracted"),
    ),
    misconceptions=(
        misconception("mask-includes-diagonal", _causal_attention(
            mask=lambda n: np.triu(np.full((n, n), -np.inf), k=0))),
        misconception("mask-wrong-direction", _causal_attention(
            mask=lambda n: np.tril(np.full((n, n), -np.inf), k=-1))),
        misconception("mask-after-softmax", _causal_attention(after=True)),
        misconception("missing-scale", _causal_attention(scale=1.0)),
        misconception("softmax-wrong-axis", _causal_attention(
            norm=lambda s: stable_softmax(s, axis=-2))),
        misconception("unstable-softmax", _causal_attention(norm=naive_softmax),
                      conditional=LARGE),
        misconception("transposed-weights", _causal_attention(transpose=True)),
        misconception("weights-transposed", lambda X, W_q, W_k, W_v: _weights_transposed(
            X @ W_q, X @ W_k, X @ W_v, causal(len(X)))),
        misconception("qk-swapped", _causal_attention(swap=True), QK_SWAPPED_ROWS),
    ),
    trivial=(("return V", lambda X, W_q, W_k, W_v: _no_attention(len(X), X @ W_v)),
             ("uniform attention", _causal_attention(norm=uniform_weights)),
             ("hard attention (an argmax for the softmax)",
              _causal_attention(norm=hard_weights))),
    properties=(prop.finite_for_large_inputs(), prop.no_future(), prop.sums_to_one()),
)

ASSIGNMENT = Assignment(
    name="attention_basics",
    title="Attention, step by step (numpy, rows are tokens)",
    exercises=(softmax, qkv_projections, scaled_dot_product_attention, causal_mask,
               causal_self_attention),
    layout="rows are tokens, X has shape (seq_len, d_model) and Q = X @ W_q, one row per "
           "token; the scores are Q @ K.T",
)
