"""A super-resolution net (ESPCN-style): training images are augmented by random rotations (F.affine_grid and
F.grid_sample with reflection padding), low-resolution inputs are made with F.interpolate(antialias=True), the
net predicts a residual over the bicubic upsampling (F.interpolate, mode="bicubic") through convolutions and a
PixelShuffle(2) sub-pixel layer, trained with Adam until the loss falls below the bicubic baseline's.

A PyTorch program: `python super_resolution.py [device]` with `import coretorch as torch`.
"""
import math
import sys

import coretorch as torch
import coretorch.nn as nn
import coretorch.nn.functional as F


class ESPCN(nn.Module):
    def __init__(self, r=2, width=16):
        super().__init__()
        self.r = r
        self.body = nn.Sequential(nn.Conv2d(1, width, 5, padding=2), nn.Tanh(),
                                  nn.Conv2d(width, width // 2, 3, padding=1), nn.Tanh(),
                                  nn.Conv2d(width // 2, r * r, 3, padding=1), nn.PixelShuffle(r))

    def forward(self, low):
        up = F.interpolate(low, scale_factor=self.r, mode="bicubic", align_corners=False)
        return up + self.body(low)


def images(n, size, device):
    """Smooth random patterns: sums of a few oriented sinusoids."""
    ys, xs = torch.meshgrid(torch.linspace(0, 1, size), torch.linspace(0, 1, size), indexing="ij")
    k = torch.rand(n, 3, 2) * 10 + 2
    phase = torch.rand(n, 3, 1, 1) * 2 * math.pi
    waves = torch.sin(k[..., 0, None, None] * xs + k[..., 1, None, None] * ys + phase)
    return waves.mean(1, keepdim=True).to(device)


def rotate(x, max_angle=0.5):
    """Rotate each image by a random angle about its centre."""
    a = (torch.rand(x.shape[0], device=x.device) * 2 - 1) * max_angle
    cos, sin, zero = torch.cos(a), torch.sin(a), torch.zeros_like(a)
    theta = torch.stack([torch.stack([cos, -sin, zero], 1), torch.stack([sin, cos, zero], 1)], 1)
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="reflection", align_corners=False)


def main(device):
    torch.manual_seed(0)
    high = rotate(images(16, 16, device))
    low = F.interpolate(high, size=(8, 8), mode="bilinear", antialias=True)
    baseline = F.mse_loss(F.interpolate(low, scale_factor=2, mode="bicubic"), high).item()
    model = ESPCN().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(20):
        loss = F.mse_loss(model(low), high)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.8 * losses[0], losses
    assert losses[-1] < baseline, (losses[-1], baseline)
    print(f"super-resolution x2: mse {losses[0]:.4f} -> {losses[-1]:.4f} (bicubic alone {baseline:.4f})")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ("cuda" if torch.cuda.is_available() else "cpu"))
