"""Issue 14's fused kernels on every device: layer_norm forward/backward, softmax backward, GELU backward and the
LSTM cell forward/backward (the opencl backend's ``coretorch_opencl/fused.py``, the cpu backend's
``coretorch_cpu/fused.py``).  Each kernel against the core's composite of primitive kernels (float32 and float64,
strided operands), and gradcheck in float64 through the op that calls it, checking that the kernel ran."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F
from coretorch import _backend
from coretorch.autograd import gradcheck
from coretorch.nn.functional import _fused, _rnn_fused
from coretorch.testing import available_devices

from _kernel_tables import KernelSpy, PlainTable

DEVICES = available_devices()
_NAMES = ("layer_norm", "layer_norm_backward", "softmax_backward", "gelu_backward", "lstm_cell", "lstm_cell_backward")


def _table(dev):
    return _backend.get_table(torch.device(dev))


@pytest.mark.parametrize("dev", DEVICES)
def test_every_device_has_the_fused_kernels(dev):
    table = _table(dev)
    assert all(table.has(n) for n in _NAMES)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_kernels_match_the_kernel_composites(dev, dtype):
    table = _table(dev)
    plain = PlainTable(table, _NAMES + ("softmax",))
    rng = np.random.default_rng(0)
    tol = dict(rtol=3e-5, atol=3e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)

    def up(a):
        return table.from_numpy(np.array(a, dtype))   # a copy: a scratch operand must not alias the source

    def down(a):
        return table.to_numpy(a)

    def close(got, ref):
        for a, r in zip(got, ref):
            assert (a is None) == (r is None)
            if a is not None:
                assert down(a).shape == tuple(r.shape) and down(a).dtype == dtype
                np.testing.assert_allclose(down(a), down(r), **tol)
    x = up(rng.normal(1.5, 2.0, (3, 4, 6)))
    xt = table.permute(up(rng.normal(size=(4, 6, 3))), (2, 0, 1))          # a non-contiguous (3, 4, 6) view
    w, b, g = up(rng.normal(size=(4, 6))), up(rng.normal(size=(4, 6))), up(rng.normal(size=(3, 4, 6)))
    for xx in (x, xt):
        fwd = _fused._ln_forward(table, xx, w, b, 1e-5, 2)
        close(fwd, _fused._ln_forward(plain, xx, w, b, 1e-5, 2))
        _, mean, rstd = fwd
        for ww, need in ((w, (True, True, True)), (None, (True, False, True)), (w, (False, True, False))):
            close(_fused._ln_backward(table, g, xx, mean, rstd, ww, 2, *need),
                  _fused._ln_backward(plain, g, xx, mean, rstd, ww, 2, *need))
    for dim in (0, 1, 2, -1):
        y = table.softmax(x, dim % 3)   # (the core passes softmax kernels non-negative dims)
        ref = table.mul(y, table.sub(g, table.expand(table.sum(table.mul(g, y), (dim % 3,), True), (3, 4, 6))))
        close([table.softmax_backward(g, y, dim)], [ref])
    p = _fused._softmax_last(plain, xt)
    close([_fused._softmax_back_last(table, g, p)], [_fused._softmax_back_last(plain, g, p)])
    # LSTM cell: the gates as a column slice of a wider array, the cell state transposed (strided views)
    wide, gi = rng.normal(size=(5, 20)), up(rng.normal(size=(5, 16)))
    c = table.permute(up(rng.normal(size=(4, 5))), (1, 0))
    dh, dc = table.permute(up(rng.normal(size=(4, 5))), (1, 0)), up(rng.normal(size=(5, 4)))
    for add in (None, gi):   # with gi the gates are scratch: each call gets its own copy
        h1, c1, act1 = _rnn_fused._lstm_cell(table, table.basic_index(up(wide), (slice(None), slice(2, 18))), c, add)
        h2, c2, act2 = _rnn_fused._lstm_cell(plain, table.basic_index(up(wide), (slice(None), slice(2, 18))), c, add)
        close((h1, c1), (h2, c2))
    slot = table.full((5, 4), 0.0, np.dtype(dtype))
    h3, _, _ = _rnn_fused._lstm_cell(table, up(wide[:, 2:18]), c, gi, slot)
    close((slot,), (h2,))
    for dcc in (dc, None):
        for dy in (None, dc):
            close(_rnn_fused._lstm_cell_backward(table, dh, dcc, c, act1, dy),
                  _rnn_fused._lstm_cell_backward(plain, dh, dcc, c, act2, dy))
    out = table.full((5, 16), 0.0, np.dtype(dtype))
    _rnn_fused._lstm_cell_backward(table, dh, dc, c, act1, None, out)
    close((out,), (_rnn_fused._lstm_cell_backward(plain, dh, dc, c, act2)[0],))


def _t(a, dev, rg=False):
    return torch.tensor(np.asarray(a), device=dev, requires_grad=rg)


@pytest.mark.parametrize("dev", DEVICES)
def test_layer_norm_kernels_gradcheck(dev, monkeypatch):
    spy = KernelSpy(monkeypatch, _table(dev), ("layer_norm", "layer_norm_backward"))
    rng = np.random.default_rng(1)
    x = _t(rng.normal(size=(2, 3, 4)), dev, True)
    w, b = _t(rng.normal(size=(3, 4)), dev, True), _t(rng.normal(size=(3, 4)), dev, True)
    assert gradcheck(lambda x, w, b: F.layer_norm(x, (3, 4), w, b), (x, w, b))
    assert gradcheck(lambda x: F.layer_norm(x, (4,)), (x,))
    assert spy.calls["layer_norm"] and spy.calls["layer_norm_backward"]


@pytest.mark.parametrize("dev", DEVICES)
def test_softmax_and_gelu_backward_kernels_gradcheck(dev, monkeypatch):
    spy = KernelSpy(monkeypatch, _table(dev), ("softmax_backward", "gelu_backward"))
    rng = np.random.default_rng(2)
    x = _t(rng.normal(size=(3, 4)), dev, True)
    assert gradcheck(lambda t: F.softmax(t, 0), (x,))
    assert gradcheck(lambda t: F.softmax(t.t(), -1), (x,))
    assert gradcheck(F.gelu, (_t(np.array([-6.0, -2.5, -0.3, 0.0, 0.4, 1.7, 7.0]), dev, True),))
    assert spy.calls["softmax_backward"] and spy.calls["gelu_backward"]


@pytest.mark.parametrize("dev", DEVICES)
def test_lstm_cell_kernels_gradcheck(dev, monkeypatch):
    spy = KernelSpy(monkeypatch, _table(dev), ("lstm_cell", "lstm_cell_backward"))
    torch.manual_seed(0)
    net = torch.nn.LSTM(2, 3, batch_first=True).double().to(dev)
    x = torch.randn(2, 4, 2, dtype=torch.float64, device=dev, requires_grad=True)
    h0 = torch.randn(1, 2, 3, dtype=torch.float64, device=dev, requires_grad=True)
    c0 = torch.randn(1, 2, 3, dtype=torch.float64, device=dev, requires_grad=True)

    def f(x, h0, c0, w):
        net.weight_hh_l0 = w
        y, (h, c) = net(x, (h0, c0))
        return y, h, c
    w = net.weight_hh_l0.detach().clone().requires_grad_()
    del net.weight_hh_l0
    assert gradcheck(f, (x, h0, c0, w))
    assert _table(dev).has("lstm_sequence") or (spy.calls["lstm_cell"] and spy.calls["lstm_cell_backward"])


def test_cpu_backend_keeps_large_temporaries_in_the_heap(monkeypatch):
    """glibc's thresholds set once at start-up (coretorch_cpu/memory.py); the opt-out and the user's own
    MALLOC_* settings leave the allocator alone."""
    from coretorch_cpu import memory
    assert memory.MMAP_THRESHOLD == 32 << 20 and memory.TRIM_THRESHOLD == 2 * memory.MMAP_THRESHOLD
    if memory._glibc():
        assert memory.tune_malloc() is True
    monkeypatch.setenv("CORETORCH_CPU_MALLOC", "0")
    assert memory.tune_malloc() is False
    monkeypatch.delenv("CORETORCH_CPU_MALLOC")
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "1000")
    assert memory.tune_malloc() is False


def test_softmax_kernels_take_a_negative_dim(device):
    """The kernel contract's dim may be negative (the opencl kernel wrote out of bounds for one)."""
    table = _backend.get_table(torch.device(device))
    x = torch.randn(3, 4, 5, device=device)
    for name in ("softmax", "log_softmax"):
        for d in (-1, -2, -3):
            got = table.to_numpy(getattr(table, name)(x._data, d))
            want = table.to_numpy(getattr(table, name)(x._data, d % 3))
            np.testing.assert_array_equal(got, want)
