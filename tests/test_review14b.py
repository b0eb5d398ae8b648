"""Review 14b of coretorch.compile: the kernel-level machinery (fusion, planned temporaries, lowered replays, host
fusion) and the state a replay writes or reads besides them (every installed device).  Each test runs the same calls
eagerly and compiled and compares the results: bitwise on cpu, within float32 rounding where a device's fused or
hosted kernels differ in evaluation order."""
from __future__ import annotations

import pytest

import coretorch as torch

from _compile_helpers import close as _close, rand as _rand


@pytest.mark.parametrize("owner", ["closure", "argument"])
def test_grad_assigned_to_a_tensor_without_requires_grad(device, owner):
    """``w.grad = u`` in the step where ``w`` does not require grad (a closure tensor or an argument): eager leaves
    a new ``w.grad`` each call; the replay used to leave the capture's tensor there (only tensors with
    requires_grad had their ``.grad`` written back)."""
    grads = []
    for compiled in (False, True):
        w = _rand(device, 2, 3, seed=99)

        def fn(x, w_):
            t = w if owner == "closure" else w_
            u = (x * 2).exp()
            t.grad = u
            return u.sin().sum()
        f = torch.compile(fn) if compiled else fn
        kept = []
        for i in range(6):
            f(_rand(device, 2, 3, seed=i), w)
            kept.append(w.grad)
        grads.append(kept)
    for i, (e, c) in enumerate(zip(*grads)):
        _close(device, e, c)


def test_grad_of_a_tensor_without_requires_grad_read_after_it_changed(device):
    """A step reading ``w.grad`` of a closure tensor without requires_grad, then ``w.grad`` replaced (and updated
    in place): the replay used to keep reading the capture's ``.grad`` tensor."""
    outs = []
    for compiled in (False, True):
        w = _rand(device, 2, 3, seed=99)
        w.grad = _rand(device, 2, 3, seed=98)

        def fn(x):
            return x * w.grad + 1
        f = torch.compile(fn) if compiled else fn
        res = []
        for i in range(6):
            if i == 3:
                w.grad = _rand(device, 2, 3, seed=50)
            if i == 4:
                w.grad.mul_(2)
            if i == 5:
                w.grad = None
                w.grad = _rand(device, 2, 3, seed=51)
            res.append(f(_rand(device, 2, 3, seed=i)))
        outs.append(res)
    for e, c in zip(*outs):
        _close(device, e, c)


@pytest.mark.parametrize("owner", ["closure", "parameter"])
def test_persistent_tensor_replaced_by_another_layout(device, owner):
    """``w.data = other.t()`` (same shape and dtype, another layout) for a tensor the step reads without taking it as
    an argument: eager's ``w * b`` then has w's layout and the full sum over it adds in that order; the cpu replay
    wrote ``w * b`` into its planned buffer of the capture's layout and summed in the capture's order (not bitwise
    eager).  The guard keys a persistent tensor's strides as an argument's."""
    import coretorch.nn as nn
    outs = []
    for compiled in (False, True):
        w, b = _rand(device, 64, 64, seed=50), _rand(device, 64, seed=51)
        lin = nn.Linear(64, 64).to(device)
        t = w if owner == "closure" else lin.weight

        def fn(x):
            return x * 2 + (t * b).sum()
        f = torch.compile(fn) if compiled else fn
        res = []
        for i in range(6):
            if i == 2:
                t.data = _rand(device, 64, 64, seed=60).t()
            if i == 4:
                t.data = _rand(device, 200 * 64, seed=61)[64:64 + 64 * 64].view(64, 64)
            with torch.no_grad():
                res.append(f(_rand(device, 64, seed=i)))
        outs.append(res)
    for e, c in zip(*outs):
        _close(device, e, c)


def test_module_parameter_replaced_by_another_layout(device):
    """A compiled module whose weight gets ``.data`` of another layout (same shape): forward and backward as eager
    (bitwise on cpu: the planned buffers of the capture's layout are not used for it; the module captures again)."""
    import coretorch.nn as nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(64, 64))

        def forward(self, x):
            return x * (self.w * 2).sum() + (x * (self.w.exp() + 1).sum(0)).tanh()
    res = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = M().to(device)
        mc = torch.compile(m) if compiled else m
        outs = []
        for i in range(6):
            if i == 2:
                m.w.data = _rand(device, 64, 64, seed=60).t()
            x = _rand(device, 64, seed=i)
            y = mc(x)
            (y * y).sum().backward()
            outs.append([y.detach(), m.w.grad.clone()])
            m.zero_grad()
        res.append(outs)
    for e, c in zip(*res):
        for a, b in zip(e, c):
            _close(device, a, b)


@pytest.mark.parametrize("case", ["read through a view", "two updates"])
def test_persistent_tensors_that_share_memory_after_the_capture(device, case):
    """``w1.add_(w2.t() * 2 + x)`` (or ``w1.add_(x); w2.add_(x * 2)``) fused into one kernel on opencl, then
    ``w2.data = w1.data``: the fused kernel read w2's transposed view of the memory it was writing (a race), or
    wrote both updates from the values loaded before either; eager materialises the right side first / updates in
    order.  The replay checks that the loaded arrays a fused in-place update was legal for are still apart, and
    captures again where not."""
    res = []
    for compiled in (False, True):
        w1, w2 = _rand(device, 64, 64, seed=2), _rand(device, 64, 64, seed=3)

        def fn(x):
            if case == "two updates":
                w1.add_(x)
                w2.add_(x * 2)
                return w1 * 1 + w2
            w1.add_(w2.t() * 2 + x)
            return w1 * 1
        f = torch.compile(fn) if compiled else fn
        outs = []
        for i in range(8):
            if i == 5:
                w2.data = w1.data
            outs.append(f(_rand(device, 64, 64, seed=10 + i)))
            outs.append(w1.clone())
        res.append(outs)
    for e, c in zip(*res):
        _close(device, e, c)


def test_in_place_op_on_persistent_tensors_that_overlap_after_the_capture_raises_as_eager():
    """cpu: after ``w2.data = w1.data`` eager ``w1.add_(w2.t())`` raises 'unsupported operation' (the core's overlap
    check, at the op level), while the replay ran numpy's buffered add.  The replay now checks that the persistent
    arrays an in-place launch reads and writes are still apart, and captures again (the eager op) where not."""
    w1, w2 = _rand("cpu", 8, 8, seed=2), _rand("cpu", 8, 8, seed=3)

    def fn(x):
        w1.add_(w2.t())
        return w1 * x
    f = torch.compile(fn)
    for i in range(3):
        f(_rand("cpu", 8, 8, seed=i))
    w2.data = w1.data
    with pytest.raises(RuntimeError, match="unsupported operation"):
        fn(_rand("cpu", 8, 8, seed=9))   # eager
    with pytest.raises(RuntimeError, match="unsupported operation"):
        f(_rand("cpu", 8, 8, seed=9))    # compiled
