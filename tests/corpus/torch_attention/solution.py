"""Reference solutions for `torch_attention` (PyTorch; rows are tokens)."""

import math

import torch.nn as nn
import torch.nn.functional as F


def torch_self_attention(X, W_q, W_k, W_v):
    """Scaled dot-product self-attention on tensors; returns differentiable (weights, output)."""
    Q = X @ W_q
    K = X @ W_k
    V = X @ W_v
    scores = (Q @ K.transpose(-2, -1)) / math.sqrt(Q.shape[-1])
    weights = F.softmax(scores, dim=-1)
    return weights, weights @ V


class SimpleEncoderBlock(nn.Module):
    """A post-norm Transformer encoder block: attention, add & norm, feed-forward, add & norm."""

    def __init__(self, embed_dim=64, num_heads=4, ff_dim=256):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)
        self.ff = nn.Sequential(
            nn.Linear(embed_dim, ff_dim),
            nn.ReLU(),
            nn.Linear(ff_dim, embed_dim),
        )
        self.norm1 = nn.LayerNorm(embed_dim)
        self.norm2 = nn.LayerNorm(embed_dim)

    def forward(self, x):
        attn_output, _ = self.self_attn(x, x, x)
        x = self.norm1(x + attn_output)
        return self.norm2(x + self.ff(x))
