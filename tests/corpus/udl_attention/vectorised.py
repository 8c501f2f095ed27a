import numpy as np


def softmax(items_in):
    e = np.exp(items_in - np.max(items_in))
    return e / np.sum(e)


def softmax_cols(data_in):
    e = np.exp(data_in - data_in.max(axis=0))
    return e / e.sum(axis=0)


def self_attention(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):
    Q, K, V = omega_q @ X + beta_q, omega_k @ X + beta_k, omega_v @ X + beta_v
    return V @ softmax_cols(K.T @ Q)


def scaled_dot_product_self_attention(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k):
    Q, K, V = omega_q @ X + beta_q, omega_k @ X + beta_k, omega_v @ X + beta_v
    return V @ softmax_cols(K.T @ Q / np.sqrt(Q.shape[0]))


def multihead_scaled_self_attention(X, omega_v1, omega_q1, omega_k1, beta_v1, beta_q1, beta_k1,
                                    omega_v2, omega_q2, omega_k2, beta_v2, beta_q2, beta_k2,
                                    omega_c):
    h1 = scaled_dot_product_self_attention(X, omega_v1, omega_q1, omega_k1, beta_v1, beta_q1, beta_k1)
    h2 = scaled_dot_product_self_attention(X, omega_v2, omega_q2, omega_k2, beta_v2, beta_q2, beta_k2)
    return omega_c @ np.concatenate([h1, h2], axis=0)
