"""positional_encoding: Positional encodings (numpy, rows are positions).

Replace each `raise NotImplementedError` with your implementation. Check your work with
`grade check positional_encoding.py` (public cases only).
"""

import numpy as np


def sinusoidal_encoding(seq_len, d_model):
    """Return the (seq_len, d_model) sinusoidal position encodings of Vaswani et al. (2017)."""
    raise NotImplementedError("sinusoidal_encoding")


def add_positional_encoding(X):
    """Return the embeddings X (seq_len, d_model) with their position encodings added."""
    raise NotImplementedError("add_positional_encoding")


def causal_attention_with_positions(X, W_q, W_k, W_v):
    """Return (weights, output) of causal scaled dot-product self-attention over X plus its
    sinusoidal position encodings."""
    raise NotImplementedError("causal_attention_with_positions")
