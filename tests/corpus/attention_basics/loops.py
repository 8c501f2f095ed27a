import math
import numpy as np


def softmax(x):
    x = np.asarray(x, dtype=np.float32)
    out = np.empty_like(x)
    flat_in = x.reshape(-1, x.shape[-1])
    flat_out = out.reshape(-1, x.shape[-1])
    for r in range(flat_in.shape[0]):
        m = max(flat_in[r])
        exps = [math.exp(v - m) for v in flat_in[r]]
        total = sum(exps)
        for c, e in enumerate(exps):
            flat_out[r, c] = e / total
    return out.astype(np.float64)


def qkv_projections(X, W_q, W_k, W_v):
    def matmul(A, B):
        return np.array([[sum(A[i, k] * B[k, j] for k in range(A.shape[1]))
                          for j in range(B.shape[1])] for i in range(A.shape[0])])
    return matmul(X, W_q), matmul(X, W_k), matmul(X, W_v)


def scaled_dot_product_attention(Q, K, V, mask=None):
    n, m = Q.shape[0], K.shape[0]
    scores = np.zeros((n, m))
    for i in range(n):
        for j in range(m):
            scores[i, j] = np.dot(Q[i], K[j]) / math.sqrt(Q.shape[1])
    if mask is not None:
        scores += mask
    weights = np.array([softmax(row) for row in scores])
    context = np.zeros((n, V.shape[1]))
    for i in range(n):
        for j in range(m):
            context[i] += weights[i, j] * V[j]
    return weights, context


def causal_mask(seq_len):
    mask = np.zeros((seq_len, seq_len))
    for i in range(seq_len):
        for j in range(i + 1, seq_len):
            mask[i, j] = -np.inf
    return mask


def causal_self_attention(X, W_q, W_k, W_v):
    Q, K, V = qkv_projections(X, W_q, W_k, W_v)
    return scaled_dot_product_attention(Q, K, V, mask=causal_mask(X.shape[0]))
