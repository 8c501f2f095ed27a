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
    "missing-scale": "The scores are not scaled: divide Q @ K.T by the square root of d_k "
                     "(Q.shape[-1]) before the softmax.",
    "wrong-scale": "The scores are divided by the wrong amount: divide Q @ K.T by the square "
                   "root of d_k, the size of each query and key (Q.shape[-1]).",
    "softmax-wrong-axis": "The softmax normalises over the wrong axis: take it over the last "
                          "axis (axis=-1), so that each query's weights over the keys sum "
                          "to 1.",
    "softmax-whole-array": "The softmax normalises over the whole array at once: normalise "
                           "each row on its own, with axis=-1 and keepdims=True in the max and "
                           "the sum.",
    "unstable-softmax": "The softmax overflows for large inputs: subtract the maximum before "
                        "exp(). It cancels out, and it keeps exp() finite.",
    "transposed-weights": "The attention matrix is applied transposed: write weights @ V, with "
                          "query i's weights over the keys in row i.",
    "weights-transposed": "The weights are transposed: yours hold query i's weights in column "
                          "i. Return them with row i holding query i's weights over the keys "
                          "(each row sums to 1), and mix the values with those rows: "
                          "weights @ V.",
    "missing-bias": "The projection biases (beta) are left out: add them to Q, K and V.",
    "extra-scale": "These scores should not be scaled: this exercise is unscaled dot-product "
                   "attention, so leave out the division.",
    "mask-includes-diagonal": "The causal mask also hides each token from itself: mask only "
                              "the positions above the diagonal, with np.triu(..., k=1).",
    "mask-wrong-direction": "The mask hides the past instead of the future: a token may attend "
                            "to itself and to earlier tokens only, so mask the positions "
                            "above the diagonal.",
    "mask-after-softmax": "Future weights are zeroed after the softmax without renormalising: "
                          "add the mask to the scores before the softmax.",
    "mask-ignored": "The mask argument is ignored: add it to the scaled scores before the "
                    "softmax.",
    "mask-finite": "The mask uses a large finite number instead of -inf: use -np.inf.",
    "mask-boolean": "The mask holds 0 and 1 (a boolean pattern), but it must be additive: "
                    "write 0 where attention is allowed and -inf where it is not.",
    "missing-output-projection": "The output projection is not applied: multiply the stacked "
                                 "heads by the output weights.",
    "head-order": "The heads are stacked in the wrong order: put head 1 above head 2.",
    "qkv-order": "The projections are returned in the wrong order: return (Q, K, V).",
    "pre-norm": "The block normalises before attention and feed-forward (pre-norm), but this "
                "exercise is post-norm: write x = norm1(x + attention(x)), then "
                "x = norm2(x + ff(x)).",
    "missing-residual": "A residual connection is missing: add the sub-layer's input to its "
                        "output before each LayerNorm.",
    "weights-not-normalised": "The attention weights do not sum to 1 for every query: take a "
                              "softmax over the keys.",
    "future-leak": "Tokens attend to later positions: the weights above the diagonal must be "
                   "exactly 0, so add the causal mask before the softmax.",
    "sin-cos-swapped": "Sine and cosine are swapped: put the sine in the even columns (2i) and "
                       "the cosine in the odd columns (2i+1).",
    "wrong-exponent-base": "The frequencies use the wrong base: pair i turns at "
                           "1 / 10000^(2i/d_model), so write 10000 as the base of the power.",
    "exponent-per-column": "Each column gets its own frequency, but columns 2i and 2i+1 share "
                           "one, 1 / 10000^(2i/d_model): use the pair's even index in the "
                           "exponent, not the column's.",
    "positions-from-one": "The positions start at 1: start them at 0, so that the first row "
                          "is [0, 1, 0, 1, ...].",
    "frequency-wrong-axis": "The frequency varies along the positions instead of the features. "
                            "The angle at row pos and pair i is pos / 10000^(2i/d_model): let "
                            "pos grow down the rows and the frequency fall along the columns.",
    "positions-not-added": "The position encodings are not added to X before the projections: "
                           "attend over X + PE.",
    "qk-swapped": "Queries and keys are swapped: you compute softmax(K @ Q.T), whose row i "
                  "spreads key i over the queries. Write softmax(Q @ K.T), so that row i holds "
                  "query i's weights over the keys.",
    "hard-coded-size": "A size is written as a number in the code (`/ 2`, `range(3)`), which "
                       "fits only the notebook's example: take sizes from the shapes of the "
                       "inputs inside the function.",
}
"""Each mistake's sentence where rows are tokens (`Q = X @ W_q`, scores `Q @ K.T`). A unit
whose columns are tokens speaks its own layout: `COLUMNS`."""

COLUMNS: dict[str, str] = {
    "missing-scale": "The scores are not scaled: divide K.T @ Q by np.sqrt(D_q) before "
                     "softmax_cols, where D_q = omega_q.shape[0] is the size of each query.",
    "wrong-scale": "The scores are divided by the wrong amount: divide K.T @ Q by "
                   "np.sqrt(D_q), where D_q = omega_q.shape[0] is the size of each query.",
    "softmax-wrong-axis": "The softmax normalises each row of K.T @ Q, over the queries: write "
                          "softmax_cols(K.T @ Q), so that column n holds query n's weights "
                          "over the keys.",
    "softmax-whole-array": "The softmax normalises over the whole array at once: normalise "
                           "each column on its own, with axis=0 in the sum.",
    "transposed-weights": "The attention matrix is applied transposed: write V @ A, with "
                          "A = softmax_cols(K.T @ Q), whose column n holds query n's weights.",
    "missing-bias": "The projection biases are left out: write Q = omega_q @ X + beta_q, and "
                    "likewise K and V.",
    "extra-scale": "These scores should not be scaled: this exercise is unscaled dot-product "
                   "attention, so write softmax_cols(K.T @ Q) with no division.",
    "missing-output-projection": "omega_c is not applied: return omega_c @ np.vstack([head_1, "
                                 "head_2]).",
    "head-order": "The heads are stacked in the wrong order: write np.vstack([head_1, "
                  "head_2]), head 1 above head 2.",
}
"""Each mistake's sentence where columns are tokens (`Q = omega_q @ X + beta_q`, scores
`K.T @ Q`, "Understanding Deep Learning"), where it differs from `CATALOGUE`'s."""

# The qk-swapped sentence in each layout's own code.
QK_SWAPPED_COLUMNS = ("Queries and keys are swapped: you compute softmax_cols(Q.T @ K), whose "
                      "column n spreads key n over the queries. Write softmax_cols(K.T @ Q), "
                      "so that column n holds query n's weights over the keys.")
QK_SWAPPED_ROWS = CATALOGUE["qk-swapped"]


# The inputs that the conditional mistakes show on (see `Misconception.conditional`).
LARGE = "inputs large enough to overflow exp()"
MATRIX = "inputs of two or more dimensions"
MASKED = "calls that pass a mask"
D_V = "inputs where d_v differs from d_k"


def misconception(id: str, variant: Callable[..., Any], message: str = "",
                  conditional: str = "", columns: bool = False) -> Misconception:
    """A catalogue entry bound to a variant; `message` overrides the catalogue's sentence, and
    `columns` takes it from `COLUMNS` (a unit whose columns are tokens) where it has one."""
    said = message or (COLUMNS.get(id) if columns else None) or CATALOGUE[id]
    return Misconception(id, said, variant, conditional)


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
