"""Multi-head self-attention written with einsum, trained to reverse short token sequences.

PyTorch code with `import coretorch as torch`: the projections, the attention scores and the weighted sum are
`torch.einsum` calls (the contraction order and the lowering to batched matmul are einsum's); nn.Parameter,
F.cross_entropy and optim.SGD do the rest.  `python examples/einsum_attention.py [--device opencl]`.
"""
from __future__ import annotations

import argparse
import math
import time

import coretorch as torch
import coretorch.nn as nn
import coretorch.nn.functional as F

VOCAB, T, D, HEADS = 8, 8, 32, 2


class EinsumAttention(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads, self.dh = heads, d // heads
        scale = 1 / math.sqrt(d)
        self.wq = nn.Parameter(torch.randn(heads, d, self.dh) * scale)
        self.wk = nn.Parameter(torch.randn(heads, d, self.dh) * scale)
        self.wv = nn.Parameter(torch.randn(heads, d, self.dh) * scale)
        self.wo = nn.Parameter(torch.randn(heads, self.dh, d) * scale)

    def forward(self, x):
        q = torch.einsum("btc,hcd->bhtd", x, self.wq)
        k = torch.einsum("btc,hcd->bhtd", x, self.wk)
        v = torch.einsum("btc,hcd->bhtd", x, self.wv)
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.dh)
        att = scores.softmax(dim=-1)
        ctx = torch.einsum("bhqk,bhkd->bhqd", att, v)
        return torch.einsum("bhtd,hdc->btc", ctx, self.wo)


class Reverser(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Parameter(torch.randn(VOCAB, D) * 0.5)
        self.pos = nn.Parameter(torch.randn(T, D) * 0.5)
        self.attn = EinsumAttention(D, HEADS)
        self.out = nn.Linear(D, VOCAB)

    def forward(self, tokens):
        x = self.tok[tokens] + self.pos          # (B, T, D)
        return self.out(self.attn(x))             # (B, T, VOCAB)


def batch(n: int, device: str):
    x = torch.randint(0, VOCAB, (n, T), device=device)
    return x, x.flip(1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()
    torch.manual_seed(0)
    model = Reverser().to(args.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        x, y = batch(64, args.device)
        loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0:
            print(f"step {step}: loss {loss.item():.4f}")
    with torch.no_grad():
        x, y = batch(512, args.device)
        acc = (model(x).argmax(-1) == y).float().mean().item()
    print(f"held-out accuracy {acc:.3f}; {time.perf_counter() - start:.1f} s on {args.device}")


if __name__ == "__main__":
    main()
