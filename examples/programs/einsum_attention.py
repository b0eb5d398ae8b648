"""Multi-head attention written with torch.einsum, checked against the same attention written with matmul,
forward and backward, with a causal mask from torch.triu.

A PyTorch program: `python einsum_attention.py [device]` with `import coretorch as torch`.
"""
import math
import sys

import coretorch as torch
import coretorch.nn.functional as F


def attention_einsum(x, w_qkv, w_out, n_head):
    B, T, C = x.shape
    q, k, v = torch.einsum("btc,dc->btd", x, w_qkv).chunk(3, dim=-1)
    q, k, v = (t.reshape(B, T, n_head, C // n_head) for t in (q, k, v))
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(C // n_head)
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
    att = scores.masked_fill(mask, float("-inf")).softmax(dim=-1)
    out = torch.einsum("bhqk,bkhd->bqhd", att, v).reshape(B, T, C)
    return torch.einsum("btc,oc->bto", out, w_out)


def attention_matmul(x, w_qkv, w_out, n_head):
    B, T, C = x.shape
    q, k, v = F.linear(x, w_qkv).split(C, dim=2)
    q, k, v = (t.view(B, T, n_head, C // n_head).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(C // n_head)
    mask = torch.tril(torch.ones(T, T, device=x.device)) == 0
    att = F.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    out = (att @ v).transpose(1, 2).reshape(B, T, C)
    return F.linear(out, w_out)


def main(device):
    torch.manual_seed(0)
    B, T, C, H = 2, 7, 12, 3
    x = torch.randn(B, T, C, dtype=torch.float64, device=device, requires_grad=True)
    w_qkv = (0.3 * torch.randn(3 * C, C, dtype=torch.float64, device=device)).requires_grad_()
    w_out = (0.3 * torch.randn(C, C, dtype=torch.float64, device=device)).requires_grad_()
    a = attention_einsum(x, w_qkv, w_out, H)
    b = attention_matmul(x, w_qkv, w_out, H)
    assert torch.allclose(a, b, atol=1e-12), (a - b).abs().max()
    ga = torch.autograd.grad(a.square().sum(), (x, w_qkv, w_out))
    gb = torch.autograd.grad(b.square().sum(), (x, w_qkv, w_out))
    for u, v in zip(ga, gb):
        assert torch.allclose(u, v, atol=1e-10)
    assert torch.autograd.gradcheck(lambda *t: attention_einsum(*t, H), (x[:1, :4], w_qkv, w_out))
    # the einsum contraction of a whole batch of bilinear forms, against the explicit loop
    A = torch.randn(4, C, C, dtype=torch.float64, device=device)
    forms = torch.einsum("bi,bij,bj->b", x[0, :4], A, x[1, :4])
    loop = torch.stack([x[0, i] @ A[i] @ x[1, i] for i in range(4)])
    assert torch.allclose(forms, loop, atol=1e-12)
    print("einsum attention matches matmul attention:", tuple(a.shape))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ("cuda" if torch.cuda.is_available() else "cpu"))
