"""LSTM with ``proj_size`` (PyTorch's weight_hr_l{k} parameters): shapes, a numpy reference of the projected
recurrence, bidirectional and multi-layer runs, PackedSequence, gradcheck and PyTorch's errors, on every device."""
import numpy as np
import pytest

import coretorch as torch
from coretorch import nn
from coretorch.autograd import gradcheck
from coretorch.nn.utils.rnn import pack_sequence, pad_packed_sequence
from coretorch.testing import available_devices


@pytest.fixture(params=available_devices())
def device(request):
    return request.param


def N(t):
    return t.detach().cpu().numpy()


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def _np_lstm_proj(m, x, h0, c0):
    """numpy reference: x (L, N, H_in); h0 (D*layers, N, P); c0 (D*layers, N, H)."""
    nd = 2 if m.bidirectional else 1
    inp = x
    hs, cs = [], []
    for layer in range(m.num_layers):
        outs = []
        for d in range(nd):
            sfx = "_reverse" if d else ""
            w_ih, w_hh, w_hr = (N(getattr(m, f"{w}_l{layer}{sfx}")) for w in ("weight_ih", "weight_hh", "weight_hr"))
            b = N(getattr(m, f"bias_ih_l{layer}{sfx}")) + N(getattr(m, f"bias_hh_l{layer}{sfx}"))
            h, c = h0[layer * nd + d], c0[layer * nd + d]
            ys = [None] * len(inp)
            for t in (range(len(inp) - 1, -1, -1) if d else range(len(inp))):
                i, f, g, o = np.split(inp[t] @ w_ih.T + h @ w_hh.T + b, 4, axis=1)
                c = _sig(f) * c + _sig(i) * np.tanh(g)
                h = (_sig(o) * np.tanh(c)) @ w_hr.T
                ys[t] = h
            outs.append(np.stack(ys))
            hs.append(h)
            cs.append(c)
        inp = np.concatenate(outs, axis=2)
    return inp, np.stack(hs), np.stack(cs)


def test_parameters_shapes_and_repr():
    m = nn.LSTM(3, 5, num_layers=2, proj_size=2, bidirectional=True)
    shapes = {n: tuple(p.shape) for n, p in m.named_parameters()}
    assert list(shapes)[:5] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_hr_l0"]
    assert shapes["weight_hh_l0"] == (20, 2) and shapes["weight_hr_l0_reverse"] == (2, 5)
    assert shapes["weight_ih_l1"] == (20, 4) and shapes["weight_hr_l1"] == (2, 5)
    assert len(shapes) == 20
    assert repr(m) == "LSTM(3, 5, proj_size=2, num_layers=2, bidirectional=True)"
    assert len(m.all_weights) == 4 and len(m.all_weights[0]) == 5


def test_errors_as_pytorch():
    with pytest.raises(ValueError, match="proj_size should be a positive integer or zero"):
        nn.LSTM(3, 5, proj_size=-1)
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 5, proj_size=5)
    with pytest.raises(ValueError, match="only supported for LSTM, not RNN or GRU"):
        nn.GRU(3, 5, proj_size=2)
    m = nn.LSTM(3, 5, proj_size=2)
    x = torch.zeros(4, 2, 3)
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(1, 2, 2\), got \[1, 2, 5\]"):
        m(x, (torch.zeros(1, 2, 5), torch.zeros(1, 2, 5)))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[1\] size \(1, 2, 5\), got \[1, 2, 2\]"):
        m(x, (torch.zeros(1, 2, 2), torch.zeros(1, 2, 2)))


@pytest.mark.parametrize("bidirectional", [False, True])
def test_forward_matches_numpy(device, bidirectional):
    torch.manual_seed(0)
    m = nn.LSTM(3, 5, num_layers=2, proj_size=2, bidirectional=bidirectional).double().to(device)
    nd = 2 if bidirectional else 1
    x = torch.randn(4, 2, 3, dtype=torch.float64)
    h0 = torch.randn(2 * nd, 2, 2, dtype=torch.float64)
    c0 = torch.randn(2 * nd, 2, 5, dtype=torch.float64)
    out, (h, c) = m(x.to(device), (h0.to(device), c0.to(device)))
    assert out.shape == (4, 2, 2 * nd) and h.shape == (2 * nd, 2, 2) and c.shape == (2 * nd, 2, 5)
    ro, rh, rc = _np_lstm_proj(m, N(x), N(h0), N(c0))
    np.testing.assert_allclose(N(out), ro, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(N(h), rh, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(N(c), rc, rtol=1e-10, atol=1e-12)
    # default zero state, batch_first and unbatched input
    out0, (h0_, _) = m(x.to(device))
    assert h0_.shape == (2 * nd, 2, 2)
    np.testing.assert_allclose(N(out0), _np_lstm_proj(m, N(x), np.zeros((2 * nd, 2, 2)),
                                                       np.zeros((2 * nd, 2, 5)))[0], rtol=1e-10, atol=1e-12)
    o1, (h1, c1) = m(x[:, 0].to(device))
    assert o1.shape == (4, 2 * nd) and h1.shape == (2 * nd, 2) and c1.shape == (2 * nd, 5)
    np.testing.assert_allclose(N(o1), N(out0[:, 0]), rtol=1e-10, atol=1e-12)


def test_packed_sequence_and_gradcheck(device):
    torch.manual_seed(1)
    m = nn.LSTM(3, 4, proj_size=2, bidirectional=True, batch_first=True).double().to(device)
    seqs = [torch.randn(n, 3, dtype=torch.float64).to(device) for n in (3, 5, 2)]
    out, (h, c) = m(pack_sequence(seqs, enforce_sorted=False))
    padded, lens = pad_packed_sequence(out, batch_first=True)
    assert padded.shape == (3, 5, 4) and h.shape == (2, 3, 2) and c.shape == (2, 3, 4)
    for i, s in enumerate(seqs):
        o_i, (h_i, c_i) = m(s)
        np.testing.assert_allclose(N(padded[i, :len(s)]), N(o_i), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(N(h[:, i]), N(h_i), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(N(c[:, i]), N(c_i), rtol=1e-10, atol=1e-12)
    x = torch.randn(2, 1, 3, dtype=torch.float64).to(device).requires_grad_()

    def g(inp):
        o, (hn, cn) = m(inp)
        return o, hn, cn

    assert gradcheck(g, (x,))


def test_weight_hr_gradient_matches_finite_differences(device):
    torch.manual_seed(2)
    m = nn.LSTM(2, 3, proj_size=2).double().to(device)
    x = torch.randn(3, 2, 2, dtype=torch.float64)
    zh, zc = np.zeros((1, 2, 2)), np.zeros((1, 2, 3))
    m(x.to(device))[0].sum().backward()
    grad = N(m.weight_hr_l0.grad)
    w = N(m.weight_hr_l0).copy()
    num = np.zeros_like(w)
    eps = 1e-6
    for idx in np.ndindex(*w.shape):
        vals = []
        for sgn in (1, -1):
            with torch.no_grad():
                wp = w.copy()
                wp[idx] += sgn * eps
                m.weight_hr_l0.copy_(torch.tensor(wp, device=device))
            vals.append(_np_lstm_proj(m, N(x), zh, zc)[0].sum())
        num[idx] = (vals[0] - vals[1]) / (2 * eps)
    np.testing.assert_allclose(grad, num, rtol=1e-6, atol=1e-8)
