"""udl_attention: self-attention as in "Understanding Deep Learning".

Columns are tokens: X has shape (D, N).

Replace each `raise NotImplementedError` with your implementation (`softmax_cols` is given,
as in the book, and not scored). Check your work with
`grade check udl_attention.py` (public cases only), in the folder of this file.
"""

import numpy as np


def softmax(items_in):
    """Return the softmax of a 1-D vector."""
    raise NotImplementedError("softmax")


def softmax_cols(data_in):
    """Return the softmax of each column of a 2-D array (given ready-made, as in the book)."""
    exp_values = np.exp(data_in - np.max(data_in, axis=0, keepdims=True))
    return exp_values / np.sum(exp_values, axis=0, keepdims=True)


def self_attention(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):
    """Return the (D, N) output of unscaled dot-product self-attention."""
    raise NotImplementedError("self_attention")


def scaled_dot_product_self_attention(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):
    """Like self_attention, with the scores divided by the square root of the query dimension."""
    raise NotImplementedError("scaled_dot_product_self_attention")


def multihead_scaled_self_attention(X,
                                    omega_v1, omega_q1, omega_k1, beta_v1, beta_q1, beta_k1,
                                    omega_v2, omega_q2, omega_k2, beta_v2, beta_q2, beta_k2,
                                    omega_c):
    """Two heads of size D/2, each scaled by sqrt(D/2); stack head 1 above head 2, then omega_c."""
    raise NotImplementedError("multihead_scaled_self_attention")
