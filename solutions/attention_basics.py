"""Reference solutions for `attention_basics` (rows are tokens: X has shape (seq_len, d_model))."""

import numpy as np


def softmax(x):
    """Numerically stable softmax over the last axis, for any number of dimensions."""
    x = np.asarray(x, dtype=float)
    shifted = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return shifted / np.sum(shifted, axis=-1, keepdims=True)


def qkv_projections(X, W_q, W_k, W_v):
    """Project the tokens X onto queries, keys and values."""
    return X @ W_q, X @ W_k, X @ W_v


def scaled_dot_product_attention(Q, K, V, mask=None):
    """Return (weights, context) of softmax(Q K^T / sqrt(d_k) + mask) V."""
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        scores = scores + mask
    weights = softmax(scores)
    return weights, weights @ V


def causal_mask(seq_len):
    """Additive mask: 0 on and below the diagonal, -inf above it."""
    return np.triu(np.full((seq_len, seq_len), -np.inf), k=1)


def causal_self_attention(X, W_q, W_k, W_v):
    """Self-attention in which no token attends to a later one; returns (weights, output)."""
    Q, K, V = qkv_projections(X, W_q, W_k, W_v)
    return scaled_dot_product_attention(Q, K, V, mask=causal_mask(X.shape[0]))
