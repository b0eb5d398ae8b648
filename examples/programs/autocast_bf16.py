"""Mixed precision on the CPU as PyTorch does it: a classifier trained under torch.autocast with bfloat16
(linear layers run in bfloat16, the loss in float32, the weights stay float32).

A PyTorch program: `python autocast_bf16.py [device]` with `import coretorch as torch`.
"""
import sys

import coretorch as torch
import coretorch.nn as nn
import coretorch.nn.functional as F


def main(device_name):
    device = torch.device(device_name)
    torch.manual_seed(0)
    x = torch.randn(256, 10)
    y = (x[:, 0] + x[:, 1] * x[:, 2] > 0).long()
    x, y = x.to(device), y.to(device)
    model = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 2)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    losses = []
    for epoch in range(40):
        opt.zero_grad()
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
            logits = model(x)
            loss = F.cross_entropy(logits, y)
        assert logits.dtype == torch.bfloat16 and loss.dtype == torch.float32
        loss.backward()
        assert all(p.grad.dtype == torch.float32 for p in model.parameters())
        opt.step()
        losses.append(loss.item())
    with torch.no_grad():
        acc = (model(x).argmax(1) == y).float().mean().item()
    print(f"bfloat16 autocast: loss {losses[0]:.3f} -> {losses[-1]:.3f}, train accuracy {acc:.2f}")
    assert losses[-1] < 0.6 * losses[0] and acc > 0.85
    assert model(x).dtype == torch.float32  # outside autocast, float32 again


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ("cuda" if torch.cuda.is_available() else "cpu"))
