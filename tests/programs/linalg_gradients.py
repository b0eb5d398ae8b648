"""A linear-algebra script as a PyTorch user writes it: gradients through solve, qr, cholesky, slogdet and svd.

1. Gaussian-process regression: fit the kernel's length scale and noise by gradient descent on the negative log
   marginal likelihood (cholesky, cholesky-based solve, logdet).
2. Ridge regression whose penalty is tuned by gradient descent on a validation loss (gradients through
   torch.linalg.solve), checked against the QR least-squares solution (torch.linalg.qr).
3. Orthogonal Procrustes (torch.linalg.svd) and a rotation learnt through matrix_exp of a skew matrix.

Run: python linalg_gradients.py [cpu|opencl]; prints one line per part and exits non-zero on a failed check.
"""
import sys

import coretorch as torch

device = sys.argv[1] if len(sys.argv) > 1 else "cpu"
dtype = torch.float64 if device == "cpu" else torch.float32
torch.manual_seed(0)


def gp_fit() -> float:
    x = torch.linspace(-3, 3, 40, dtype=dtype, device=device).unsqueeze(-1)
    y = torch.sin(2 * x).squeeze(-1) + 0.05 * torch.randn(40, dtype=dtype, device=device)
    log_ls = torch.tensor(0.8, dtype=dtype, device=device, requires_grad=True)
    log_noise = torch.tensor(-1.0, dtype=dtype, device=device, requires_grad=True)
    opt = torch.optim.Adam([log_ls, log_noise], lr=0.08)
    eye = torch.eye(40, dtype=dtype, device=device)
    first = None
    for _ in range(80):
        opt.zero_grad()
        d2 = (x - x.mT) ** 2
        K = torch.exp(-0.5 * d2 / torch.exp(2 * log_ls)) + torch.exp(2 * log_noise) * eye
        L = torch.linalg.cholesky(K)
        alpha = torch.linalg.solve(L.mT, torch.linalg.solve(L, y))
        nll = 0.5 * (y * alpha).sum() + 0.5 * torch.logdet(K)
        nll.backward()
        opt.step()
        first = float(nll) if first is None else first
    ls = float(torch.exp(log_ls))
    print(f"gp: length scale {ls:.3f}, noise {float(torch.exp(log_noise)):.4f}, nll {float(nll):.3f}")
    assert float(nll) < first - 20 and 0.3 < ls < 2.0, (first, float(nll), ls)
    return float(nll)


def ridge_tuning() -> float:
    n, d = 60, 8
    X = torch.randn(n, d, dtype=dtype, device=device)
    w_true = torch.randn(d, dtype=dtype, device=device)
    y = X @ w_true + 0.3 * torch.randn(n, dtype=dtype, device=device)
    Xt, yt, Xv, yv = X[:40], y[:40], X[40:], y[40:]
    log_lam = torch.tensor(2.0, dtype=dtype, device=device, requires_grad=True)
    opt = torch.optim.SGD([log_lam], lr=0.5)
    eye = torch.eye(d, dtype=dtype, device=device)
    for _ in range(40):
        opt.zero_grad()
        w = torch.linalg.solve(Xt.mT @ Xt + torch.exp(log_lam) * eye, Xt.mT @ yt)
        val = ((Xv @ w - yv) ** 2).mean()
        val.backward()
        opt.step()
    Q, R = torch.linalg.qr(Xt)
    w_ls = torch.linalg.solve(R, Q.mT @ yt)
    gap = float((w_ls - torch.linalg.lstsq(Xt, yt.unsqueeze(-1)).solution.squeeze(-1)).abs().max())
    print(f"ridge: lambda {float(torch.exp(log_lam)):.4f}, validation mse {float(val):.4f}, qr-lstsq gap {gap:.1e}")
    assert float(val) < 0.3 and gap < 1e-3
    return float(val)


def procrustes() -> float:
    A = torch.randn(30, 3, dtype=dtype, device=device)
    skew = torch.tensor([[0.0, -0.4, 0.3], [0.4, 0.0, -0.2], [-0.3, 0.2, 0.0]], dtype=dtype, device=device)
    R_true = torch.linalg.matrix_exp(skew)
    B = A @ R_true
    U, S, Vh = torch.linalg.svd(A.mT @ B)
    R_svd = U @ Vh
    p = torch.zeros(3, 3, dtype=dtype, device=device, requires_grad=True)
    opt = torch.optim.Adam([p], lr=0.08)
    for _ in range(120):
        opt.zero_grad()
        R = torch.linalg.matrix_exp(p - p.mT)  # a rotation for any p
        loss = torch.linalg.matrix_norm(A @ R - B) ** 2
        loss.backward()
        opt.step()
    err_svd = float(torch.linalg.matrix_norm(R_svd - R_true))
    err_exp = float(torch.linalg.matrix_norm(R.detach() - R_true))
    print(f"procrustes: svd error {err_svd:.1e}, learnt rotation error {err_exp:.1e}, det {float(torch.det(R)):.4f}")
    assert err_svd < 1e-3 and err_exp < 1e-2
    return err_exp


gp_fit()
ridge_tuning()
procrustes()
print("ok")
