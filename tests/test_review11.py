"""Review of the axpy/BLAS, multi-tensor optimizer and split changes: regressions found (values derived by hand and
checked against PyTorch 2.13)."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_add_alpha_zero_still_propagates_inf_and_nan(device, dtype):
    # y + 0 * x is NaN where x is +-inf or NaN (PyTorch: [nan, nan, nan, 2]); BLAS's axpy returns at once for
    # alpha == 0, and padded tails / chunks must not change that: sizes around the block of 64
    for n in (4, 67):
        x = np.zeros(n)
        x[:3] = [np.inf, -np.inf, np.nan]
        y = torch.full((n,), 2.0, dtype=dtype, device=device)
        y.add_(torch.tensor(x, dtype=dtype, device=device), alpha=0)
        got = y.cpu().numpy()
        assert np.isnan(got[:3]).all() and (got[3:] == 2).all()


def test_sgd_lr_zero_with_infinite_gradient_gives_nan(device):
    # the update p += -lr * g with lr = 0 (PyTorch: nan where g is inf), through the optimizers' axpy paths
    for foreach in (None, False):
        p = torch.ones(70, device=device, requires_grad=True)
        g = torch.zeros(70, device=device)
        g[0] = float("inf")
        p.grad = g
        torch.optim.SGD([p], lr=0.0, foreach=foreach).step()
        got = p.detach().cpu().numpy()
        assert np.isnan(got[0]) and (got[1:] == 1).all()


def test_add_alpha_into_a_view_of_an_expanded_tensor_rounds_as_elsewhere(device):
    # a (read-only, on cpu) view of an expanded tensor written through its alias: the same result as a plain tensor
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal(70).astype(np.float32), device=device)
    y = rng.standard_normal((1, 70)).astype(np.float32)
    v = torch.tensor(y, device=device).expand(3, 70)[0]
    v.add_(x, alpha=0.1234567)
    plain = torch.tensor(y[0], device=device).add_(x, alpha=0.1234567)
    assert np.array_equal(v.cpu().numpy(), plain.cpu().numpy())


def test_compiled_per_tensor_adam_over_float32_and_float64_parameters(device):
    # Adam(foreach=False) launches one adam_step_ per parameter; a compiled replay merges them into one multi-tensor
    # launch, which takes one dtype: the float32 and float64 parameters must still be updated as eagerly
    def train(compiled):
        rng = np.random.default_rng(0)
        ps = [torch.tensor(rng.standard_normal(5), dtype=dt, device=device, requires_grad=True)
              for dt in (torch.float32, torch.float64)]
        xs = [torch.tensor(rng.standard_normal(5), dtype=p.dtype, device=device) for p in ps]
        opt = torch.optim.Adam(ps, lr=0.1, foreach=False)

        def step(xs):
            opt.zero_grad()
            loss = sum((p * x).tanh().sum() for p, x in zip(ps, xs))
            loss.backward()
            opt.step()
            return loss
        f = torch.compile(step) if compiled else step
        for _ in range(4):
            f(xs)
        return [p.detach().cpu().numpy() for p in ps]
    for a, b in zip(train(False), train(True)):
        np.testing.assert_array_equal(a, b)


def _upd_add(x, y):
    a = x * 2
    a.view(12).add_(y)   # the group's value updated through a view of it
    return a * 2


def _upd_nested(x, y):
    a = x + 1
    a.view(2, 6).view(12).mul_(y)
    return a * 3


def _upd_copy(x, y):
    a = x * 2
    a.view(12).copy_(y)
    return a + 1


def _upd_then_norm(x, y):
    a = x * 2
    a.view(12).add_(y)
    return torch.nn.functional.layer_norm(a, (4,))


@pytest.mark.parametrize("fn", [_upd_add, _upd_nested, _upd_copy, _upd_then_norm], ids=lambda f: f.__name__)
def test_compiled_update_through_a_view_of_a_fused_value(device, fn):
    # fusion reads through contiguous views of a group's values; a view updated in place must not be read through
    # (the fused kernel's value of the base would miss the update)
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((3, 4)).astype(np.float32), device=device)
    y = torch.tensor(rng.standard_normal(12).astype(np.float32), device=device)
    ref = fn(x, y).cpu().numpy()
    g = torch.compile(fn)
    for _ in range(3):   # capture, then replays
        np.testing.assert_allclose(g(x, y).cpu().numpy(), ref, rtol=1e-6, atol=1e-6)


def test_accelerator_synchronize_checks_the_device():
    # PyTorch: a device of another type than the accelerator raises ValueError; an index it lacks raises
    if not torch.accelerator.is_available():
        with pytest.raises(RuntimeError):
            torch.accelerator.synchronize()
        return
    acc = torch.accelerator.current_accelerator().type
    torch.accelerator.synchronize(acc)
    torch.accelerator.synchronize(f"{acc}:0")
    with pytest.raises(ValueError, match="doesn't match the current accelerator"):
        torch.accelerator.synchronize("cpu")
    with pytest.raises(RuntimeError):
        torch.accelerator.synchronize(f"{acc}:{torch.accelerator.device_count()}")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("op", ["add_", "sub_"])
def test_half_add_alpha_rounds_alpha_to_the_tensor_dtype(device, dtype, op):
    # PyTorch's add_/sub_ on float16/bfloat16 convert alpha to the tensor's dtype (alpha=0.3 -> 0.2999267578125 in
    # float16), then compute in float32: with float32's alpha ~14% of these elements came out one unit off
    npt = dtype.np.type
    rng = np.random.default_rng(0)
    y = rng.standard_normal(200).astype(npt)
    x = rng.standard_normal(200).astype(npt)
    sign = 1.0 if op == "add_" else -1.0
    t = torch.tensor(y.astype(np.float32), device=device).to(dtype)
    getattr(t, op)(torch.tensor(x.astype(np.float32), device=device).to(dtype), alpha=0.3)
    a = float(npt(0.3))
    ref = (y.astype(np.float64) + sign * a * x.astype(np.float64)).astype(np.float32).astype(npt)
    np.testing.assert_array_equal(t.float().cpu().numpy(), ref.astype(np.float32))
    # SGD's foreach update of a float16/bfloat16 parameter is the same add_
    p = torch.tensor(y.astype(np.float32), device=device).to(dtype)
    torch._foreach_add_([p], [torch.tensor(x.astype(np.float32), device=device).to(dtype)], alpha=0.3)
    ref = (y.astype(np.float64) + a * x.astype(np.float64)).astype(np.float32).astype(npt)
    np.testing.assert_array_equal(p.float().cpu().numpy(), ref.astype(np.float32))


def test_compiled_half_parameter_updates_equal_eager(device):
    # alpha in the tensor's dtype is applied by the kernel, so a compiled step (lr a symbolic input) rounds it too
    def train(compiled):
        rng = np.random.default_rng(0)
        ps = [torch.tensor(rng.standard_normal(40), dtype=dt, device=device, requires_grad=True)
              for dt in (torch.float16, torch.bfloat16)]
        opt = torch.optim.SGD(ps, lr=0.3, momentum=0.9, dampening=0.3)

        def step():
            opt.zero_grad()
            sum((p.float().sin() * 3).sum() for p in ps).backward()
            opt.step()
        f = torch.compile(step) if compiled else step
        for _ in range(4):
            f()
            opt.param_groups[0]["lr"] *= 0.9
        return [p.detach().float().cpu().numpy() for p in ps]
    for a, b in zip(train(False), train(True)):
        np.testing.assert_array_equal(a, b)
