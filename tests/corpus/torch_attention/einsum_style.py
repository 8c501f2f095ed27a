import torch
from torch import nn


def torch_self_attention(X, W_q, W_k, W_v):
    q = torch.einsum("nd,dk->nk", X, W_q)
    k = torch.einsum("nd,dk->nk", X, W_k)
    v = torch.einsum("nd,dv->nv", X, W_v)
    scores = torch.einsum("ik,jk->ij", q, k) * q.shape[-1] ** -0.5
    weights = torch.softmax(scores, dim=1)
    return weights, torch.einsum("ij,jv->iv", weights, v)


class SimpleEncoderBlock(nn.Module):
    def __init__(self, embed_dim=64, num_heads=4, ff_dim=256):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(embed_dim, ff_dim), nn.ReLU(),
                                nn.Linear(ff_dim, embed_dim))
        self.norm1 = nn.LayerNorm(embed_dim)
        self.norm2 = nn.LayerNorm(embed_dim)

    def forward(self, x):
        attended, _weights = self.self_attn(query=x, key=x, value=x, need_weights=False)
        hidden = self.norm1(attended + x)
        return self.norm2(self.ff(hidden) + hidden)
