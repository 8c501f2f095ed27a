"""Reference solutions for `udl_attention` (columns are tokens: X has shape (D, N))."""

import numpy as np


def softmax(items_in):
    """Softmax of a 1-D vector."""
    items_in = np.asarray(items_in, dtype=float)
    e_x = np.exp(items_in - np.max(items_in))
    return e_x / e_x.sum()


def softmax_cols(data_in):
    """Softmax of each column."""
    exp_values = np.exp(data_in - np.max(data_in, axis=0, keepdims=True))
    return exp_values / np.sum(exp_values, axis=0, keepdims=True)


def _attend(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k, scale):
    Q = omega_q @ X + beta_q
    K = omega_k @ X + beta_k
    V = omega_v @ X + beta_v
    # Column n of the attention matrix holds query n's weights over the keys.
    attention = softmax_cols((K.T @ Q) / scale)
    return V @ attention


def self_attention(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):
    """Unscaled dot-product self-attention; returns shape (D, N)."""
    return _attend(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k, 1.0)


def scaled_dot_product_self_attention(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):
    """Self-attention with scores divided by the square root of the query dimension."""
    scale = np.sqrt(omega_q.shape[0])
    return _attend(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k, scale)


def multihead_scaled_self_attention(X,
                                    omega_v1, omega_q1, omega_k1, beta_v1, beta_q1, beta_k1,
                                    omega_v2, omega_q2, omega_k2, beta_v2, beta_q2, beta_k2,
                                    omega_c):
    """Two heads of size D/2, stacked head 1 above head 2, then mixed by omega_c."""
    head1 = scaled_dot_product_self_attention(X, omega_v1, omega_q1, omega_k1,
                                              beta_v1, beta_q1, beta_k1)
    head2 = scaled_dot_product_self_attention(X, omega_v2, omega_q2, omega_k2,
                                              beta_v2, beta_q2, beta_k2)
    return omega_c @ np.vstack((head1, head2))
