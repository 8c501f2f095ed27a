"""Known wrong variants of attention code, and the catalogue of misconception ids.

A variant is the reference with one well-known mistake made on purpose. When a student's
output fails a check but matches a variant's output on the same inputs, the grader names the
mistake. Variants are trusted code and run in the grader's process, never in the sandbox.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from grader.model import Misconception

CATALOGUE: dict[str, str] = {
    "missing-scale": "The scores are not divided by sqrt(d_k): scale Q K^T by 1/sqrt(d_k) "
                     "before the softmax.",
    "wrong-scale": "The scores are scaled by the wrong amount: divide by the square root of the "
                   "query/key dimension of the head (d_k, or D/H for each of H heads).",
    "softmax-wrong-axis": "The softmax normalises over the wrong axis: each query's weights "
                          "over the keys must sum to 1.",
    "softmax-whole-array": "The softmax normalises over the whole array at once, not over each "
                           "row (or column) separately.",
    "unstable-softmax": "The softmax overflows for large inputs: subtract the maximum before "
                        "exp() (it cancels out, and keeps exp() finite).",
    "transposed-weights": "The attention matrix is applied transposed: each output must mix "
                          "the values with its own query's weights.",
    "weights-transposed": "The weights are transposed: row i must hold query i's weights over "
                          "the keys (each row sums to 1), and the output mixes the values with "
                          "those rows; yours holds them in column i.",
    "missing-bias": "The projection biases (beta) are left out of Q, K and V.",
    "extra-scale": "These scores should not be scaled: this exercise is unscaled dot-product "
                   "attention.",
    "mask-includes-diagonal": "The causal mask also hides each token from itself: mask only "
                              "the positions above the diagonal (k=1).",
    "mask-wrong-direction": "The mask hides the past instead of the future: a token may attend "
                            "to itself and to earlier tokens only.",
    "mask-after-softmax": "Future weights are zeroed after the softmax without renormalising: "
                          "add the mask to the scores before the softmax.",
    "mask-ignored": "The mask argument is ignored: add it to the scaled scores before the "
                    "softmax.",
    "mask-finite": "The mask uses a large finite number instead of -inf.",
    "mask-boolean": "The mask holds 0 and 1 (a boolean pattern); it must be additive: 0 where "
                    "attention is allowed and -inf where it is not.",
    "missing-output-projection": "omega_c is not applied: multiply the stacked heads by "
                                 "omega_c.",
    "head-order": "The heads are stacked in the wrong order: head 1 goes above head 2.",
    "qkv-order": "The projections are returned in the wrong order: return (Q, K, V).",
    "pre-norm": "The block normalises before attention and feed-forward (pre-norm); this "
                "exercise is post-norm: x = norm1(x + attention(x)), then "
                "x = norm2(x + ff(x)).",
    "missing-residual": "A residual connection is missing: add the sub-layer's input to its "
                        "output before each LayerNorm.",
    "weights-not-normalised": "The attention weights do not sum to 1 for every query.",
    "future-leak": "Tokens attend to later positions: the weights above the diagonal must be "
                   "exactly 0.",
    "sin-cos-swapped": "Sine and cosine are swapped: the even columns (2i) hold the sine and "
                       "the odd columns (2i+1) the cosine.",
    "wrong-exponent-base": "The frequencies use the wrong base: pair i turns at "
                           "1 / 10000^(2i/d_model), with 10000 as the base of the power.",
    "exponent-per-column": "Each column gets its own frequency: columns 2i and 2i+1 share one, "
                           "1 / 10000^(2i/d_model), so the exponent uses the pair's even "
                           "index, not the column's.",
    "positions-from-one": "The positions start at 1: the first row is position 0, whose "
                          "encoding is [0, 1, 0, 1, ...].",
    "frequency-wrong-axis": "The frequency varies along the positions instead of the features: "
                            "the angle at row pos and pair i is pos / 10000^(2i/d_model), so "
                            "pos grows down the rows and the frequency falls along the columns.",
    "positions-not-added": "The position encodings are not added to X before the projections: "
                           "attend over X + PE.",
    "qk-swapped": "Queries and keys are swapped: the scores are Q^T K (K Q^T when rows are "
                  "tokens), so the softmax spreads each key over the queries; write K^T Q "
                  "(Q K^T), so that each query's weights over the keys sum to 1.",
    "hard-coded-size": "A size is written as a number in the code (`/ 2`, `range(3)`), which "
                       "fits only the notebook's example: take sizes from the shapes of the "
                       "inputs inside the function.",
}

# The qk-swapped sentence in each layout's own code.
QK_SWAPPED_COLUMNS = ("Queries and keys are swapped: you compute softmax_cols(Q.T @ K), whose "
                      "column n spreads key n over the queries; write softmax_cols(K.T @ Q), "
                      "so that column n holds query n's weights over the keys.")
QK_SWAPPED_ROWS = ("Queries and keys are swapped: you compute softmax(K @ Q.T), whose row i "
                   "spreads key i over the queries; write softmax(Q @ K.T), so that row i "
                   "holds query i's weights over the keys.")


# The inputs that the conditional mistakes show on (see `Misconception.conditional`).
LARGE = "inputs large enough to overflow exp()"
MATRIX = "inputs of two or more dimensions"
MASKED = "calls that pass a mask"
D_V = "inputs where d_v differs from d_k"


def misconception(id: str, variant: Callable[..., Any], message: str = "",
                  conditional: str = "") -> Misconception:
    """A catalogue entry bound to a variant; `message` overrides the catalogue's sentence."""
    return Misconception(id, message or CATALOGUE[id], variant, conditional)


# --------------------------------------------------------------------------- building blocks


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """The correct, stable softmax."""
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def naive_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """A softmax that does not subtract the maximum."""
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(x)
        return e / e.sum(axis=axis, keepdims=True)


def uniform_weights(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    """A degenerate softmax: equal weights over every key that the scores allow (a masked,
    -inf score gets none), whatever the scores say."""
    allowed = np.isfinite(scores).astype(float)
    with np.errstate(all="ignore"):
        return allowed / allowed.sum(axis=axis, keepdims=True)


def hard_weights(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    """A degenerate softmax: all the weight on the highest score (an argmax, one-hot)."""
    hot = np.zeros_like(scores, dtype=float)
    index = np.expand_dims(np.argmax(np.where(np.isnan(scores), -np.inf, scores), axis=axis),
                           axis)
    np.put_along_axis(hot, index, 1.0, axis=axis)
    return hot


def whole_softmax(x: np.ndarray) -> np.ndarray:
    """A softmax over every element at once."""
    e = np.exp(x - np.max(x))
    return e / e.sum()


def rows_attention(Q: np.ndarray, K: np.ndarray, V: np.ndarray, mask: Any = None, *,
                   scale: float | None = None, norm: Callable[..., np.ndarray] = softmax,
                   transpose: bool = False, after: bool = False,
                   swap: bool = False) -> tuple[np.ndarray, ...]:
    """Attention with rows as tokens, with one mistake switched on by a keyword; `swap`
    exchanges queries and keys (K Q^T: a row per key)."""
    d_k = Q.shape[-1]
    if swap:
        Q, K = K, Q
    scores = Q @ np.swapaxes(K, -1, -2) / (np.sqrt(d_k) if scale is None else scale)
    if mask is not None and not after:
        scores = scores + mask
    weights = norm(scores)
    if mask is not None and after:
        weights = np.where(np.isinf(mask), 0.0, weights)
    context = (np.swapaxes(weights, -1, -2) if transpose else weights) @ V
    return weights, context


def causal(n: int) -> np.ndarray:
    """The correct additive causal mask."""
    return np.triu(np.full((n, n), -np.inf), k=1)


def cols_attention(X: np.ndarray, omega_v: np.ndarray, omega_q: np.ndarray,
                   omega_k: np.ndarray, beta_v: np.ndarray, beta_q: np.ndarray,
                   beta_k: np.ndarray, *, scale: float = 1.0, bias: bool = True,
                   axis: int = 0, transpose: bool = False, swap: bool = False,
                   norm: Callable[..., np.ndarray] = softmax) -> np.ndarray:
    """Attention with columns as tokens (Understanding Deep Learning), one mistake on request;
    `swap` exchanges queries and keys (Q^T K: a column per key)."""
    keep = 1.0 if bias else 0.0
    Q = omega_q @ X + keep * beta_q
    K = omega_k @ X + keep * beta_k
    V = omega_v @ X + keep * beta_v
    if swap:
        Q, K = K, Q
    attention = norm((K.T @ Q) / scale, axis=axis)
    return V @ (attention.T if transpose else attention)
