"""Issue 14: the fused GRU cell kernels (gru_cell, gru_cell_backward) on every device: equal to the core's
composite of primitive kernels, and nn.GRU's gradients through them (gradcheck in float64)."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
from coretorch import _backend
from coretorch.autograd import gradcheck
from coretorch.nn.functional import _rnn_fused
from coretorch.testing import available_devices

from _kernel_tables import KernelSpy, PlainTable

DEVICES = available_devices()
_NAMES = ("gru_cell", "gru_cell_backward")


def _table(dev):
    return _backend.get_table(torch.device(dev))


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gru_cell_kernels_match_the_composite(dev, dtype):
    table = _table(dev)
    plain = PlainTable(table, _NAMES)
    assert all(table.has(n) for n in _NAMES)
    rng = np.random.default_rng(0)
    tol = dict(rtol=3e-5, atol=3e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    n, hs = 3, 4

    def up(a):
        return table.from_numpy(np.array(a, dtype))   # a copy: the scratch operand gh must not alias the source

    def close(got, ref):
        for a, r in zip(got, ref):
            np.testing.assert_allclose(table.to_numpy(a), table.to_numpy(r), **tol)

    wide = rng.normal(size=(n, 3 * hs + 5)) * 2
    gi = table.basic_index(up(wide), (slice(None), slice(2, 2 + 3 * hs)))   # a strided view, as gi_all[t]
    gh, h, b = rng.normal(size=(n, 3 * hs)) * 2, up(rng.normal(size=(n, hs))), rng.normal(size=3 * hs)
    dh, dy = up(rng.normal(size=(n, hs))), up(rng.normal(size=(n, hs)))
    for bias in (None, b):
        bb = None if bias is None else up(bias)
        h1, act1 = _rnn_fused._gru_cell(table, gi, up(gh), h, bb)
        h2, act2 = _rnn_fused._gru_cell(plain, gi, up(gh), h, bb)
        close((h1,), (h2,))
        # the reference formula (PyTorch's): r multiplies the hidden n part including b_hn
        ghb = gh + (0 if bias is None else bias)
        gin = np.array(wide[:, 2:2 + 3 * hs], dtype)
        r, z = (1 / (1 + np.exp(-(gin[:, j * hs:(j + 1) * hs] + ghb[:, j * hs:(j + 1) * hs]))) for j in (0, 1))
        nn = np.tanh(gin[:, 2 * hs:] + r * ghb[:, 2 * hs:])
        np.testing.assert_allclose(table.to_numpy(h1), nn + z * (table.to_numpy(h) - nn), **tol)
        for extra in (None, dy):
            close(_rnn_fused._gru_cell_backward(table, dh, h, act1, extra),
                  _rnn_fused._gru_cell_backward(plain, dh, h, act2, extra))
    slots = table.empty((2, n, hs), np.dtype(dtype))          # out= writes into a slot of a sequence buffer
    h3, _ = _rnn_fused._gru_cell(table, gi, up(gh), h, up(b), table.basic_index(slots, (1,)))
    close((table.basic_index(slots, (1,)),), (h3,))
    gslots = table.empty((2, 2, n, 3 * hs), np.dtype(dtype))
    ref = _rnn_fused._gru_cell_backward(plain, dh, h, act2, dy)
    _rnn_fused._gru_cell_backward(table, dh, h, act1, dy, table.basic_index(gslots, (0, 1)),
                                  table.basic_index(gslots, (1, 0)))
    close((table.basic_index(gslots, (0, 1)), table.basic_index(gslots, (1, 0))), ref[:2])


@pytest.mark.parametrize("dev", DEVICES)
def test_gru_cell_kernels_gradcheck_through_nn_gru(dev, monkeypatch):
    spy = KernelSpy(monkeypatch, _table(dev), _NAMES)
    torch.manual_seed(0)
    net = torch.nn.GRU(2, 2, num_layers=2, bidirectional=True, batch_first=True).double().to(dev)
    x = torch.randn(2, 3, 2, dtype=torch.float64, device=dev, requires_grad=True)
    h0 = torch.randn(4, 2, 2, dtype=torch.float64, device=dev, requires_grad=True)
    names = ("weight_hh_l0_reverse", "bias_hh_l1")
    params = [getattr(net, k).detach().clone().requires_grad_() for k in names]
    for k in names:
        delattr(net, k)

    def f(x, h0, w, b):
        setattr(net, names[0], w)
        setattr(net, names[1], b)
        return net(x, h0)
    assert gradcheck(f, (x, h0, *params))
    assert spy.calls["gru_cell"] and spy.calls["gru_cell_backward"]
