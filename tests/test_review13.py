"""Review of today's compile changes: regressions found (every installed device)."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch


@pytest.mark.parametrize("op", ["copy_", "add_", "setitem"])
def test_arguments_sharing_memory_later_raise_as_eagerly(device, op):
    """A compiled in-place step captured with separate tensors, then called with two overlapping views of one
    tensor (``x[1:]``, ``x[:-1]``): eager raises the partial-overlap error; the replay used to write silently
    (the overlap check ran at the capture only)."""
    def f(a, b):
        if op == "copy_":
            a.copy_(b)
        elif op == "add_":
            a.add_(b, alpha=2.0)
        else:
            a[:] = b
        return a
    fn = torch.compile(f)
    for _ in range(4):
        base = torch.arange(40.0, device=device)
        fn(base[1:21], torch.arange(20.0, device=device))
    assert fn.replays == 3
    want = torch.arange(40.0).numpy()
    want[1:21] = np.arange(20.0) * (2.0 if op == "add_" else 1.0) + (want[1:21] if op == "add_" else 0.0)
    assert np.array_equal(base.cpu().numpy(), want)
    base = torch.arange(40.0, device=device)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        fn(base[1:21], base[0:20])
    assert np.array_equal(base.cpu().numpy(), np.arange(40.0))  # nothing written


def test_arguments_sharing_memory_without_overlap(device):
    """Views of one tensor that do not overlap (x[:20], x[20:]) replay (their own capture), with eager's values."""
    def f(a, b):
        a.add_(b)
        return a * 2
    fn = torch.compile(f)
    for i in range(4):
        base = torch.arange(40.0, device=device)
        out = fn(base[:20], base[20:])
        want = np.arange(40.0)
        want[:20] += want[20:]
        assert np.array_equal(base.cpu().numpy(), want)
        assert np.array_equal(out.cpu().numpy(), want[:20] * 2)
    assert fn.replays == 3


def test_deterministic_mode_switched_on_after_the_capture(device):
    """``torch.use_deterministic_algorithms(True)`` after a step was captured: ``put_`` (no deterministic
    implementation) raises PyTorch's error as eagerly (the replay ran it: the mode was not in the guards)."""
    def f(x, i, v):
        y = x * 1
        y.put_(i, v)
        return y
    fn = torch.compile(f)
    x, i, v = torch.zeros(6, device=device), torch.tensor([1, 3], device=device), torch.ones(2, device=device)
    for _ in range(3):
        fn(x, i, v)
    assert fn.replays == 2
    torch.use_deterministic_algorithms(True)
    try:
        with pytest.raises(RuntimeError, match="put_ does not have a deterministic implementation"):
            fn(x, i, v)
    finally:
        torch.use_deterministic_algorithms(False)
    assert np.array_equal(fn(x, i, v).cpu().numpy(), [0, 1, 0, 1, 0, 0])


def test_default_dtype_changed_after_the_capture(device):
    """``torch.set_default_dtype(torch.float64)`` after a step was captured: the tensors the step makes are float64
    as eagerly (the replay kept making float32 ones: the default dtype was not in the guards)."""
    def f(x):
        return x.sum() + torch.arange(3, device=device) * 0.5 + torch.tensor(1.5, device=device)
    fn = torch.compile(f)
    x = torch.ones(3, device=device)
    for _ in range(3):
        assert fn(x).dtype == torch.float32
    torch.set_default_dtype(torch.float64)
    try:
        out = fn(x)
    finally:
        torch.set_default_dtype(torch.float32)
    assert out.dtype == torch.float64
    assert np.array_equal(out.cpu().numpy(), [4.5, 5.0, 5.5])
    assert fn(x).dtype == torch.float32


@pytest.mark.parametrize("kind", ["function", "module", "pre", "global"])
def test_a_hook_registered_after_the_capture_runs(device, kind):
    """A forward (pre-)hook registered after a step or module was captured, then removed: it changes the result as
    eagerly while it is registered (the replays ignored it: hooks ran at the capture only)."""
    torch.manual_seed(0)
    m = torch.nn.Linear(3, 2).to(device)
    x = torch.ones(4, 3, device=device)

    def f(x):
        with torch.no_grad():
            return m(x).sum()
    fn = torch.compile(f) if kind in ("function", "global") else None
    cm = torch.compile(m)

    def call():
        return float(fn(x)) if fn is not None else float(cm(x).sum())
    for _ in range(3):
        plain = call()
    if kind == "pre":
        h = m.register_forward_pre_hook(lambda mod, inp: (inp[0] * 2,))
    elif kind == "global":
        h = torch.nn.modules.module.register_module_forward_hook(lambda mod, inp, out: out * 10)
    else:
        h = m.register_forward_hook(lambda mod, inp, out: out * 10)
    try:
        want = float(m(x).sum())
        assert want != plain
        assert call() == want and call() == want
    finally:
        h.remove()
    assert call() == plain


@pytest.mark.parametrize("kind", ["tensor", "post_accumulate"])
def test_a_gradient_hook_registered_after_the_capture_runs(device, kind):
    """A hook on a parameter's gradient registered after a training step was captured (then removed): the step's
    gradient is eager's (the replays' backward ran the hooks of the capture only)."""
    torch.manual_seed(0)
    m = torch.nn.Linear(3, 2).to(device)
    x = torch.ones(4, 3, device=device)

    def step(x):
        m.zero_grad()
        loss = m(x).sum()
        loss.backward()
        return loss
    fn = torch.compile(step)
    for _ in range(3):
        fn(x)
    plain = m.weight.grad.cpu().numpy().copy()
    if kind == "tensor":
        h = m.weight.register_hook(lambda g: g * 10)
    else:
        h = m.weight.register_post_accumulate_grad_hook(lambda p: [p.grad.mul_(10)] and None)
    try:
        for _ in range(2):
            fn(x)
            assert np.array_equal(m.weight.grad.cpu().numpy(), plain * 10)
    finally:
        h.remove()
    fn(x)
    assert np.array_equal(m.weight.grad.cpu().numpy(), plain)


def test_default_device_changed_after_the_capture(device):
    """``torch.set_default_device`` after a step was captured: the tensors the step makes without a device go to
    the new default as eagerly (the replay kept making them on the old one)."""
    def f(x):
        return x.sum() + torch.arange(3.0)
    fn = torch.compile(f)
    x = torch.ones(3)
    for _ in range(3):
        fn(x)
    torch.set_default_device(device)
    try:
        out, want = fn(x), f(x)
    finally:
        torch.set_default_device(None)
    assert out.device == want.device
    assert np.array_equal(out.cpu().numpy(), want.cpu().numpy())
    assert fn(x).device == torch.device("cpu")
