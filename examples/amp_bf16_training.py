"""Mixed precision training as PyTorch's AMP recipe writes it, with `import coretorch as torch`.

The model and optimizer stay in float32; the forward pass and the loss run under ``torch.autocast``, so the
linear layers compute in bfloat16 (PyTorch's CPU default) and the loss in float32.  With ``--fp16`` the region
runs in float16 instead, with a ``torch.amp.GradScaler`` scaling the loss (the recipe for float16 on a GPU).

    python examples/amp_bf16_training.py [--device cpu|opencl] [--fp16]
"""
from __future__ import annotations

import argparse
import math

import coretorch as torch
import coretorch.nn.functional as F
from coretorch import nn


def rings(n: int, device: str):
    """Points in the plane labelled by which of three rings around the origin they fall in."""
    r = torch.rand(n) * 3
    a = torch.rand(n) * (2 * math.pi)
    x = torch.stack([r * a.cos(), r * a.sin()], dim=1)
    y = r.floor().long().clamp(max=2)
    return x.to(device), y.to(device)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cpu")
    p.add_argument("--fp16", action="store_true", help="float16 autocast with a GradScaler")
    p.add_argument("--steps", type=int, default=150)
    args = p.parse_args()
    torch.manual_seed(0)
    dtype = torch.float16 if args.fp16 else torch.bfloat16
    x, y = rings(512, args.device)
    model = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 3)).to(args.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.3, momentum=0.9)
    scaler = torch.amp.GradScaler(args.device, enabled=args.fp16)
    first = None
    for step in range(args.steps):
        opt.zero_grad()
        with torch.autocast(device_type=args.device, dtype=dtype):
            logits = model(x)                  # linear layers: run in the low precision dtype
            loss = F.cross_entropy(logits, y)  # losses: run in float32
        assert logits.dtype is dtype and loss.dtype is torch.float32
        scaler.scale(loss).backward()          # (scale() returns the loss itself when the scaler is disabled)
        scaler.step(opt)
        scaler.update()
        first = loss.item() if first is None else first
        if step % 50 == 0:
            print(f"step {step:4d}  loss {loss.item():.4f}  scale {scaler.get_scale():g}")
    with torch.no_grad(), torch.autocast(device_type=args.device, dtype=dtype):
        acc = (model(x).argmax(1) == y).float().mean().item()
    print(f"first loss {first:.4f}; final loss {loss.item():.4f}; accuracy {acc:.3f}; parameters "
          f"{next(model.parameters()).dtype}")


if __name__ == "__main__":
    main()
