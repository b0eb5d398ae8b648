"""Gradients through torch.linalg: kernel ridge regression whose length scale and noise are fitted by gradient
descent through `torch.linalg.solve` (and `cholesky`/`slogdet` for the marginal likelihood), and a layer whose
weight is kept orthogonal through `torch.linalg.qr`.

A PyTorch program: `python linalg_fit.py [device]` with `import coretorch as torch`.
"""
import sys

import numpy as np

import coretorch as torch


def gp_fit(device):
    g = torch.Generator().manual_seed(0)
    x = torch.linspace(-3, 3, 40, dtype=torch.float64).unsqueeze(1)
    y = torch.sin(2 * x).squeeze(1) + 0.05 * torch.randn(40, dtype=torch.float64, generator=g)
    x, y = x.to(device), y.to(device)
    log_ls = torch.tensor(0.5, dtype=torch.float64, device=device, requires_grad=True)
    log_noise = torch.tensor(-1.0, dtype=torch.float64, device=device, requires_grad=True)
    opt = torch.optim.Adam([log_ls, log_noise], lr=0.05)

    def nll():
        d2 = torch.cdist(x, x).pow(2)
        K = torch.exp(-0.5 * d2 / log_ls.exp() ** 2) + log_noise.exp() * torch.eye(len(x), dtype=x.dtype,
                                                                                   device=device)
        alpha = torch.linalg.solve(K, y.unsqueeze(1)).squeeze(1)
        L = torch.linalg.cholesky(K)
        logdet = 2 * torch.log(torch.diagonal(L)).sum()
        assert torch.allclose(logdet, torch.linalg.slogdet(K).logabsdet)
        return 0.5 * (y @ alpha) + 0.5 * logdet

    first = nll().item()
    for _ in range(60):
        opt.zero_grad()
        loss = nll()
        loss.backward()
        opt.step()
    last = nll().item()
    print(f"GP negative log likelihood {first:.2f} -> {last:.2f}, length scale {log_ls.exp().item():.3f}")
    assert last < first - 5

    # the fitted posterior mean interpolates the data (checked against numpy's solver)
    with torch.no_grad():
        K = torch.exp(-0.5 * torch.cdist(x, x).pow(2) / log_ls.exp() ** 2) \
            + log_noise.exp() * torch.eye(len(x), dtype=x.dtype, device=device)
        alpha = torch.linalg.solve(K, y)
        ref = np.linalg.solve(K.cpu().numpy(), y.cpu().numpy())
        assert np.allclose(alpha.cpu().numpy(), ref, rtol=1e-8, atol=1e-10)


class OrthogonalLinear(torch.nn.Module):
    """y = x Q^T with Q the orthogonal factor of a free parameter: gradients flow through linalg.qr."""

    def __init__(self, n):
        super().__init__()
        self.raw = torch.nn.Parameter(torch.randn(n, n, dtype=torch.float64))

    def forward(self, x):
        q, r = torch.linalg.qr(self.raw)
        q = q * torch.sign(torch.diagonal(r)).unsqueeze(0)  # a unique Q: positive diagonal of R
        return x @ q.mT


def orthogonal_fit(device):
    torch.manual_seed(2)
    n = 6
    layer = OrthogonalLinear(n)
    with torch.no_grad():  # the target: another rotation with the layer's determinant sign (a continuous path
        other = OrthogonalLinear(n)  # keeps the sign of det(raw), which is the sign of det Q)
        if torch.linalg.det(other.raw) * torch.linalg.det(layer.raw) < 0:
            other.raw[0] = -other.raw[0]
        target_q = other(torch.eye(n, dtype=torch.float64)).mT
    x = torch.randn(64, n, dtype=torch.float64)
    y = x @ target_q.mT
    x, y, layer = x.to(device), y.to(device), layer.to(device)
    opt = torch.optim.SGD(layer.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(150):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(layer(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    print(f"orthogonal fit mse {losses[0]:.4f} -> {losses[-1]:.2e}")
    assert losses[-1] < 1e-3 * losses[0]
    with torch.no_grad():
        q, r = torch.linalg.qr(layer.raw)
        eye = torch.eye(n, dtype=torch.float64, device=device)
        assert torch.allclose(q.mT @ q, eye, atol=1e-10)  # Q stays orthogonal by construction


if __name__ == "__main__":
    dev = sys.argv[1] if len(sys.argv) > 1 else ("cuda" if torch.cuda.is_available() else "cpu")
    gp_fit(dev)
    orthogonal_fit(dev)
