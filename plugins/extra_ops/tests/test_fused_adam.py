"""Adam/AdamW through the backends' fused ``adam_step_`` kernel (one launch per parameter on opencl, numpy ufuncs
into the state on cpu) give the composite tensor-op path's parameters and state bit for bit, for every variant
(AMSGrad, maximize, decoupled and L2 weight decay, beta1 < 0.5), on every device; the composite still serves what
the kernel does not take."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch
from coretorch.plugins import get_kernel, to_array
from coretorch.testing import available_devices
from coretorch_extra_ops import optimizers

DEVICES = available_devices()
VARIANTS = [("Adam", {}), ("Adam", {"amsgrad": True}), ("Adam", {"maximize": True, "weight_decay": 0.1}),
            ("AdamW", {}), ("AdamW", {"amsgrad": True, "maximize": True}), ("Adam", {"betas": (0.3, 0.9)}),
            ("AdamW", {"weight_decay": 0.5, "betas": (0.5, 0.99), "eps": 1e-3})]


def _launches() -> int:
    try:
        from coretorch_opencl.device import STATS
    except ImportError:
        return 0
    return STATS["launches"]


def _run(device, dtype, name, hp, fused: bool, monkeypatch, steps=4):
    """Parameters and state after ``steps`` steps of a small least-squares problem."""
    rng = np.random.default_rng(0)
    w = coretorch.tensor(rng.normal(size=(5, 3)), dtype=dtype, device=device, requires_grad=True)
    dev = w.device  # (the parameters' device: 'opencl:0', the key the optimizer looks up)
    if not fused:
        monkeypatch.setitem(optimizers._OWN_KERNELS, ("adam_step_", dev), None)  # the composite path on this device
    launches = 0
    b = coretorch.tensor(rng.normal(size=(3,)), dtype=dtype, device=device, requires_grad=True)
    c = coretorch.tensor(0.7, dtype=dtype, device=device, requires_grad=True)  # a 0-d parameter
    x = coretorch.tensor(rng.normal(size=(4, 5)), dtype=dtype, device=device)
    opt = getattr(optimizers, name)([w, b, c], lr=0.05, **hp)
    for _ in range(steps):
        opt.zero_grad()
        ((x @ w + b) ** 2 * c).sum().backward()
        n0 = _launches()
        opt.step()
        launches += _launches() - n0
    monkeypatch.delitem(optimizers._OWN_KERNELS, ("adam_step_", dev), raising=False)
    if dev.type == "opencl" and steps:  # one launch per parameter and step fused, about a dozen composite
        assert launches <= steps * 3 + 9 if fused else launches > 8 * steps * 3  # (+ the state's zeros)
    if not steps:
        return [w.detach().cpu().numpy()]
    st = [opt.state[p] for p in (w, b, c)]
    return [t.detach().cpu().numpy() for t in (w, b, c)] + \
        [s[k].cpu().numpy() for s in st for k in sorted(s) if k != "step"] + [st[0]["step"].item()]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name, hp", VARIANTS)
def test_fused_step_equals_the_composite(device, name, hp, monkeypatch):
    dtypes = (coretorch.float32, coretorch.float64)
    for dtype in dtypes:
        fused = _run(device, dtype, name, hp, True, monkeypatch)
        ref = _run(device, dtype, name, hp, False, monkeypatch)
        assert len(fused) == len(ref) and fused[-1] == ref[-1] == 4
        for a, r in zip(fused[:-1], ref[:-1]):
            np.testing.assert_array_equal(a, r)  # bit for bit (assert_array_equal: NaNs would count as equal)
        assert not np.array_equal(fused[0], _run(device, dtype, name, hp, True, monkeypatch, steps=0)[0])


@pytest.mark.parametrize("device", DEVICES)
def test_the_kernel_is_found_once_and_declines_what_it_does_not_take(device):
    dev = coretorch.zeros(1, device=device).device
    optimizers._OWN_KERNELS.pop(("adam_step_", dev), None)
    k = optimizers._own_kernel("adam_step_", dev)
    assert k is not None and k is get_kernel("adam_step_", dev) and optimizers._OWN_KERNELS["adam_step_", dev] is True
    assert optimizers._own_kernel("adam_step_", dev) is k  # whether it has one is cached: no backend query per call
    p = coretorch.ones(4, 2, device=device).t()  # a transposed view (opencl: contiguous arrays only)
    g16 = coretorch.ones(2, 4, dtype=coretorch.float16, device=device)
    z = [coretorch.zeros(2, 4, dtype=coretorch.float16, device=device) for _ in range(2)]
    # float16: the composite's job (nothing written)
    assert k(to_array(g16), to_array(g16), to_array(z[0]), to_array(z[1]), None, 1, 0.1, 0.9, 0.999, 1e-8, 0.0,
             False, False) is False
    assert z[0].float().sum().item() == 0
    # a float16 parameter still steps (through the composite)
    p16 = coretorch.ones(3, dtype=coretorch.float16, device=device, requires_grad=True)
    opt = optimizers.AdamW([p16, p], lr=0.1)
    p16.grad = coretorch.ones(3, dtype=coretorch.float16, device=device)
    p.grad = coretorch.ones(2, 4, device=device)
    opt.step()
    np.testing.assert_allclose(p16.detach().float().cpu().numpy(), 1 - 0.1 * 0.01 - 0.1, rtol=1e-3)
    np.testing.assert_allclose(p.detach().cpu().numpy(), 1 - 0.1 * 0.01 - 0.1, rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_fused_step_bumps_versions_and_tensor_hyper_parameters_use_the_composite(device):
    p = coretorch.ones(3, device=device, requires_grad=True)
    saved = p * p  # saves p for its backward
    opt = optimizers.Adam([p], lr=0.1)
    p.grad = coretorch.ones(3, device=device)
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        saved.sum().backward()
    q = coretorch.ones(3, device=device, requires_grad=True)
    opt = optimizers.Adam([q], lr=coretorch.tensor(0.1))
    q.grad = coretorch.ones(3, device=device)
    opt.step()
    np.testing.assert_allclose(q.detach().cpu().numpy(), 0.9, rtol=1e-6)
