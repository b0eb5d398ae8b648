"""Train a tiny network on a synthetic two-spirals problem with raw tensor ops (no nn, no optim).

Written as PyTorch code with `import coretorch as torch`: tensors, autograd and a hand-written SGD step
with momentum; `python examples/train_tiny.py`.  (`make demo` runs `coretorch demo`, the digits CNN.)
"""
from __future__ import annotations

import math
import time

import coretorch as torch


def spirals(n_per_class: int = 200, noise: float = 0.5):
    t = torch.linspace(0.25, 3.5 * math.pi / 2, n_per_class)
    xs, ys = [], []
    for label in (0, 1):
        angle = t + label * math.pi
        r = t / (3.5 * math.pi / 2)
        pts = torch.stack([r * angle.cos(), r * angle.sin()], dim=1) + noise * torch.randn(n_per_class, 2) * 0.2
        xs.append(pts)
        ys.append(torch.full((n_per_class,), label))
    return torch.cat(xs), torch.cat(ys)


def main() -> None:
    torch.manual_seed(0)
    x, y = spirals()
    hidden = 64
    w1 = (torch.randn(2, hidden) * (2 / 2) ** 0.5).requires_grad_()
    b1 = torch.zeros(hidden, requires_grad=True)
    w2 = (torch.randn(hidden, hidden) * (2 / hidden) ** 0.5).requires_grad_()
    b2 = torch.zeros(hidden, requires_grad=True)
    w3 = (torch.randn(hidden, 2) * (1 / hidden) ** 0.5).requires_grad_()
    b3 = torch.zeros(2, requires_grad=True)
    params = [w1, b1, w2, b2, w3, b3]
    lr, momentum = 0.1, 0.9
    velocity = [torch.zeros_like(p) for p in params]
    start = time.perf_counter()
    for step in range(1, 601):
        h = (x @ w1 + b1).tanh()
        h = (h @ w2 + b2).relu()
        logits = h @ w3 + b3
        log_probs = logits - logits.logsumexp(dim=1, keepdim=True)
        loss = -log_probs.gather(1, y.unsqueeze(1)).mean()
        loss.backward()
        with torch.no_grad():
            for p, v in zip(params, velocity):
                v.mul_(momentum).add_(p.grad)
                p.sub_(v, alpha=lr)
                p.grad = None
        if step % 100 == 0 or step == 1:
            acc = (logits.argmax(dim=1) == y).float().mean().item()
            print(f"step {step:4d}  loss {loss.item():.4f}  train accuracy {acc:.3f}")
    x_test, y_test = spirals()  # fresh noise: held-out points
    with torch.no_grad():
        pred = (torch.relu(torch.tanh(x_test @ w1 + b1) @ w2 + b2) @ w3 + b3).argmax(1)
    acc = (pred == y_test).float().mean().item()
    print(f"held-out accuracy {acc:.3f}; trained in {time.perf_counter() - start:.2f} s on {x.device}")
    if acc < 0.9:
        raise SystemExit("demo: the network did not learn the spirals (accuracy < 0.9)")


if __name__ == "__main__":
    main()
