"""torch_attention: attention and an encoder block in PyTorch. Rows are tokens.

Replace each `raise NotImplementedError` with your implementation. Check your work with
`grade check torch_attention.py` (public cases only), in the folder of this file.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


def torch_self_attention(X, W_q, W_k, W_v):
    """Return differentiable (weights, output) of scaled dot-product self-attention."""
    raise NotImplementedError("torch_self_attention")


class SimpleEncoderBlock(nn.Module):
    """Post-norm encoder block with submodules self_attn (batch_first), ff, norm1 and norm2."""

    def __init__(self, embed_dim=64, num_heads=4, ff_dim=256):
        super().__init__()
        raise NotImplementedError("SimpleEncoderBlock.__init__")

    def forward(self, x):
        raise NotImplementedError("SimpleEncoderBlock.forward")
