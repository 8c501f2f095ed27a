import numpy as np


def softmax(x):  # hangs, ignoring signals
    import signal
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGTERM})
    while True:
        pass


def qkv_projections(X, W_q, W_k, W_v):  # kills its interpreter
    import os
    os._exit(3)


def causal_mask(seq_len):  # corrupts numpy, then crashes
    np.triu = None
    np.exp = None
    import ctypes
    ctypes.string_at(0)


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.T / np.sqrt(Q.shape[-1]) + (0 if mask is None else mask)
    weights = _softmax(scores)
    return weights, weights @ V


def causal_self_attention(X, W_q, W_k, W_v):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    mask = np.triu(np.full((len(X), len(X)), -np.inf), k=1)
    return scaled_dot_product_attention(Q, K, V, mask)
