"""Rprop, ASGD and Adafactor against hand-written numpy implementations of PyTorch's update rules, on every device;
state_dict layout and PyTorch's hyper-parameter errors."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch
from coretorch.testing import available_devices

optim = coretorch.optim
DEVICES = available_devices()
RNG = np.random.default_rng(4321)
W0, V0, B = RNG.standard_normal((2, 3)), RNG.standard_normal(3), RNG.standard_normal(2)


def grads(W, v):
    r = W @ v - B
    return [2 * np.outer(r, v) + W, 2 * W.T @ r + v]


def ct_loss(W, v):
    r = W @ v - coretorch.tensor(B, dtype=W.dtype, device=W.device)
    return (r * r).sum() + 0.5 * (W * W).sum() + 0.5 * (v * v).sum()


def ref_rprop(p, g, s, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False):
    g = -g if maximize else g
    prev = s.get("prev", np.zeros_like(p))
    size = s.get("size", np.full_like(p, lr))
    sign = np.sign(g * prev)
    size = np.clip(size * np.where(sign > 0, etas[1], np.where(sign < 0, etas[0], 1.0)), *step_sizes)
    g = np.where(sign < 0, 0.0, g)
    s["prev"], s["size"] = g, size
    return p - np.sign(g) * size


def ref_asgd(p, g, s, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0):
    # eta and mu are 0-d float32 tensors in PyTorch's state: their values are rounded to float32
    t = s["t"] = s.get("t", 0) + 1
    eta, mu = float(np.float32(s.get("eta", lr))), float(np.float32(s.get("mu", 1.0)))
    g = g + weight_decay * p
    p = p * (1 - lambd * eta) - eta * g
    s["ax"] = s.get("ax", 0) + (p - s.get("ax", 0)) * mu if mu != 1 else p
    s["eta"] = lr / (1 + lambd * lr * t) ** alpha
    s["mu"] = 1 / max(1, t - t0)
    return p


def ref_adafactor(p, g, s, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0):
    t = s["t"] = s.get("t", 0) + 1
    e1 = np.finfo(np.float64).eps if eps[0] is None else eps[0]
    b = t ** beta2_decay
    alpha = max(eps[1], np.sqrt((p * p).mean())) * min(lr, 1 / np.sqrt(t))
    p = p * (1 - lr * weight_decay)
    if g.ndim > 1:
        r = s["r"] = s.get("r", 0) + b * ((g * g).mean(-1, keepdims=True) - s.get("r", 0))
        c = s["c"] = s.get("c", 0) + b * ((g * g).mean(-2, keepdims=True) - s.get("c", 0))
        var = (r @ c) / np.maximum(r.mean(-2, keepdims=True), e1)
    else:
        var = s["v"] = s.get("v", 0) + b * (g * g - s.get("v", 0))
    update = g / np.sqrt(np.maximum(var, e1 * e1))
    denom = max(1.0, np.sqrt((update * update).mean()) / d)
    return p - alpha / denom * update


SETTINGS = [("Rprop", ref_rprop, {}), ("Rprop", ref_rprop, dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2))),
            ("Rprop", ref_rprop, dict(maximize=True)),
            ("ASGD", ref_asgd, {}), ("ASGD", ref_asgd, dict(lr=0.05, t0=3, weight_decay=0.1, lambd=0.01)),
            ("Adafactor", ref_adafactor, {}),
            ("Adafactor", ref_adafactor, dict(lr=0.05, weight_decay=0.1, d=1.5, beta2_decay=-0.5, eps=(1e-20, 1e-2)))]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,ref,hp", SETTINGS, ids=lambda v: v if isinstance(v, str) else "")
def test_matches_reference(name, ref, hp, device):
    params = [coretorch.tensor(a, dtype=coretorch.float64, device=device, requires_grad=True) for a in (W0, V0)]
    opt = getattr(optim, name)(params, **hp)
    want, states = [W0.copy(), V0.copy()], [{}, {}]
    for step in range(8):
        opt.zero_grad()
        ct_loss(*params).backward()
        opt.step()
        want = [ref(p, g, s, **hp) for p, g, s in zip(want, grads(*want), states)]
        for got, w in zip(params, want):
            np.testing.assert_allclose(got.detach().cpu().numpy(), w, rtol=1e-10, atol=1e-12,
                                       err_msg=f"{name}({hp}) step {step + 1} on {device}")


def test_state_keys_and_errors():
    keys = {"Rprop": {"step", "prev", "step_size"}, "ASGD": {"step", "eta", "mu", "ax"},
            "Adafactor": {"step", "row_var", "col_var"}}
    for name, want in keys.items():
        p = coretorch.tensor(W0, requires_grad=True)
        opt = getattr(optim, name)([p])
        ct_loss(p, coretorch.tensor(V0, dtype=p.dtype)).backward()
        opt.step()
        sd = opt.state_dict()
        assert set(sd["state"][0]) == want and sd["state"][0]["step"].dtype is coretorch.float32
    p = [coretorch.zeros(2, requires_grad=True)]
    for cls, kw, msg in [(optim.Rprop, dict(etas=(1.5, 1.2)), "Invalid eta values: 1.5, 1.2"),
                         (optim.ASGD, dict(lr=-1), "Invalid learning rate: -1"),
                         (optim.Adafactor, dict(beta2_decay=0.5), "beta2_decay should be <= 0 but is: 0.5"),
                         (optim.Adafactor, dict(d=0.5), "Clipping threshold d should be >= 1 but is: 0.5")]:
        with pytest.raises(ValueError, match=msg):
            cls(p, **kw)
