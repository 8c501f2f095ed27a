import numpy as np

def softmax(x):
    z = np.exp(x)
    return z / z.sum(axis=-1, keepdims=True)

def qkv_projections(X, W_q, W_k, W_v):
    return X @ W_q, X @ W_k, X @ W_v

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.T / np.sqrt(K.shape[-1])
    if mask is not None:
        scores = scores + mask
    weights = softmax(scores)
    return weights, weights @ V

def causal_mask(seq_len):
    return np.triu(np.full((seq_len, seq_len), -np.inf), k=1)

def causal_self_attention(X, W_q, W_k, W_v):
    Q, K, V = qkv_projections(X, W_q, W_k, W_v)
    return scaled_dot_product_attention(Q, K, V, causal_mask(len(X)))
