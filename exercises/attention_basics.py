"""attention_basics: attention step by step in numpy.

Rows are tokens: X has shape (seq_len, d_model).

Replace each `raise NotImplementedError` with your implementation. Check your work with
`grade check attention_basics.py` (public cases only), in the folder of this file.
"""

import numpy as np


def softmax(x):
    """Numerically stable softmax over the last axis, for any number of dimensions."""
    raise NotImplementedError("softmax")


def qkv_projections(X, W_q, W_k, W_v):
    """Return (Q, K, V) = (X W_q, X W_k, X W_v)."""
    raise NotImplementedError("qkv_projections")


def scaled_dot_product_attention(Q, K, V, mask=None):
    """Return (weights, context): weights = softmax(Q K^T / sqrt(d_k) + mask), context = weights V.

    `mask` is additive (0 or -inf) and is broadcast onto the scores.
    """
    raise NotImplementedError("scaled_dot_product_attention")


def causal_mask(seq_len):
    """Return a (seq_len, seq_len) float array: 0 on and below the diagonal, -inf above it."""
    raise NotImplementedError("causal_mask")


def causal_self_attention(X, W_q, W_k, W_v):
    """Return (weights, output) of self-attention in which no token attends to a later one."""
    raise NotImplementedError("causal_self_attention")
