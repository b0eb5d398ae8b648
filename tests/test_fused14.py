"""Issue 14's one-node fast paths: layer_norm (NativeLayerNormBackward0), scaled_dot_product_attention (one node
for scores, mask, softmax and the weighted sum), softmax's fused backward, and the LSTM / GRU recurrence of a whole
sequence as one node.  Forward against numpy references (or the step-by-step composite), gradcheck in float64 and
double backward (the create_graph backward re-runs the composite) on every device; the cpu kernels directly against
the composites of primitive kernels."""
from __future__ import annotations

import math

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F
from coretorch import _backend
from coretorch.autograd import gradcheck, gradgradcheck
from coretorch.nn.functional import _fused, _rnn_fused
from coretorch.testing import available_devices

DEVICES = available_devices()


def _t(a, dev, rg=False):
    return torch.tensor(np.asarray(a), device=dev, requires_grad=rg)


def _np(t):
    return t.detach().cpu().numpy()


# ---- layer_norm --------------------------------------------------------------------------------------------------
def _ln_ref(x, k, w, b, eps=1e-5):
    axes = tuple(range(x.ndim - k, x.ndim))
    m = x.mean(axes, keepdims=True)
    v = ((x - m) ** 2).mean(axes, keepdims=True)
    y = (x - m) / np.sqrt(v + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("k,affine", [(1, True), (2, True), (1, False)])
def test_layer_norm_forward_matches_numpy(dev, dtype, k, affine):
    rng = np.random.default_rng(0)
    x = rng.normal(2.0, 3.0, (3, 4, 6)).astype(dtype)
    ns = x.shape[3 - k:]
    w = rng.normal(size=ns).astype(dtype) if affine else None
    b = rng.normal(size=ns).astype(dtype) if affine else None
    out = F.layer_norm(_t(x, dev, True), ns, None if w is None else _t(w, dev), None if b is None else _t(b, dev))
    assert out.grad_fn.name() == "NativeLayerNormBackward0"
    assert out.dtype is getattr(torch, dtype)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(_np(out), _ln_ref(x.astype(np.float64), k, w, b), rtol=tol, atol=tol)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_gradcheck_and_double_backward(dev, affine):
    rng = np.random.default_rng(1)
    x = _t(rng.normal(size=(2, 3, 4)), dev, True)
    w = _t(rng.normal(size=(4,)), dev, True) if affine else None
    b = _t(rng.normal(size=(4,)), dev, True) if affine else None
    args = (x, w, b) if affine else (x,)

    def f(x, w=None, b=None):
        return F.layer_norm(x, (4,), w, b)
    assert gradcheck(f, args)
    assert gradgradcheck(f, args)


@pytest.mark.parametrize("dev", DEVICES)
def test_layer_norm_grad_of_weight_only_and_non_contiguous_input(dev):
    rng = np.random.default_rng(2)
    xa = rng.normal(size=(5, 3))
    x = _t(xa, dev).t()  # (3, 5) non-contiguous, no grad
    w = _t(rng.normal(size=(5,)), dev, True)
    out = F.layer_norm(x, (5,), w)
    g = rng.normal(size=(3, 5))
    out.backward(_t(g, dev))
    np.testing.assert_allclose(_np(w.grad), (g * _ln_ref(xa.T, 1, None, None)).sum(0), rtol=1e-10)


# ---- softmax backward -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("dim", [0, -1, 1])
def test_softmax_backward_matches_closed_form(dev, dim):
    rng = np.random.default_rng(3)
    xa, ga = rng.normal(size=(3, 4, 5)), rng.normal(size=(3, 4, 5))
    x = _t(xa, dev, True)
    F.softmax(x, dim).backward(_t(ga, dev))
    e = np.exp(xa - xa.max(dim, keepdims=True))
    y = e / e.sum(dim, keepdims=True)
    np.testing.assert_allclose(_np(x.grad), y * (ga - (ga * y).sum(dim, keepdims=True)), rtol=1e-10, atol=1e-12)
    assert gradcheck(lambda t: F.softmax(t, dim), (_t(xa[:2, :2, :3], dev, True),))


# ---- scaled_dot_product_attention -------------------------------------------------------------------------------
def _sdpa_ref(q, k, v, mask=None, causal=False, scale=None):
    s = q @ np.swapaxes(k, -1, -2) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("kind", ["plain", "causal", "bool", "float", "scale", "3d"])
def test_sdpa_forward_matches_numpy_and_is_one_node(dev, kind):
    rng = np.random.default_rng(4)
    shape = (3, 5, 4) if kind == "3d" else (2, 3, 5, 4)
    q, k, v = rng.normal(size=shape), rng.normal(size=shape), rng.normal(size=shape[:-1] + (3,))
    mask = None
    if kind == "bool":
        mask = rng.random((5, 5)) > 0.4
        mask[:, 0] = True
    elif kind == "float":
        mask = rng.normal(size=(3, 5, 5))
    scale = 0.3 if kind == "scale" else None
    out = F.scaled_dot_product_attention(_t(q, dev, True), _t(k, dev, True), _t(v, dev, True),
                                         attn_mask=None if mask is None else _t(mask, dev),
                                         is_causal=kind == "causal", scale=scale)
    assert "ScaledDotProductAttentionBackward0" in [c.__name__ for c in type(out.grad_fn).__mro__]
    np.testing.assert_allclose(_np(out), _sdpa_ref(q, k, v, mask, kind == "causal", scale), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("kind", ["plain", "causal", "bool"])
def test_sdpa_gradcheck_and_double_backward(dev, kind):
    rng = np.random.default_rng(5)
    q, k, v = (_t(rng.normal(size=(2, 3, 2)), dev, True) for _ in range(3))
    mask = _t(np.array([[True, False, True], [True, True, False], [False, True, True]]), dev) \
        if kind == "bool" else None

    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=kind == "causal")
    assert gradcheck(f, (q, k, v))
    assert gradgradcheck(f, (q, k, v))


@pytest.mark.parametrize("dev", DEVICES)
def test_sdpa_mask_with_grad_and_broadcast_batch_use_the_composite(dev):
    rng = np.random.default_rng(6)
    q = _t(rng.normal(size=(2, 3, 2)), dev, True)
    k = _t(rng.normal(size=(1, 3, 2)), dev, True)   # batch dims broadcast: the composite
    v = _t(rng.normal(size=(2, 3, 2)), dev, True)
    m = _t(rng.normal(size=(3, 3)), dev, True)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
    assert "ScaledDotProductAttentionBackward0" not in [c.__name__ for c in type(out.grad_fn).__mro__]
    np.testing.assert_allclose(_np(out), _sdpa_ref(_np(q), _np(k), _np(v), _np(m)), rtol=1e-10)
    assert gradcheck(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m), (q, k, v, m))


@pytest.mark.parametrize("dev", DEVICES)
def test_sdpa_fully_masked_row_is_zero_as_the_composite(dev):
    """PyTorch 2.13's _safe_softmax: a fully masked row gives zeros, not NaN (review 18d)."""
    q = k = v = torch.ones(1, 2, 2, dtype=torch.float64, device=dev)
    mask = _t(np.array([[False, False], [True, True]]), dev)
    out = _np(F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    assert (out[0, 0] == 0).all() and np.allclose(out[0, 1], 1.0)


# ---- LSTM / GRU sequence nodes ----------------------------------------------------------------------------------
def _run_both(net, inp, monkeypatch):
    fast = net(inp)
    with monkeypatch.context() as mp:
        mp.setattr(_rnn_fused, "usable", lambda *a: False)
        slow = net(inp)
    return fast, slow


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_rnn_sequence_node_matches_the_step_composite(dev, mode, monkeypatch):
    torch.manual_seed(0)
    net = getattr(torch.nn, mode)(3, 4, 2, bidirectional=True, batch_first=True).double().to(dev)
    inp = torch.randn(2, 5, 3, dtype=torch.float64, device=dev, requires_grad=True)
    fast, slow = _run_both(net, inp, monkeypatch)
    flat = [(fast[0], slow[0])] + ([(fast[1], slow[1])] if mode == "GRU" else list(zip(fast[1], slow[1])))
    for a, b in flat:
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12, atol=1e-13)
    grads = []
    for out in (fast, slow):
        inp.grad = None
        net.zero_grad()
        h = out[1] if mode == "GRU" else out[1][0]
        (out[0].sum() + (h * 2).sum()).backward()
        grads.append([_np(inp.grad)] + [_np(p.grad) for p in net.parameters()])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_rnn_sequence_node_gradcheck_and_double_backward(dev, mode):
    rng = np.random.default_rng(7)
    gi = _t(rng.normal(size=(2, 1, (4 if mode == "LSTM" else 3) * 2)), dev, True)
    h0, c0 = _t(rng.normal(size=(1, 2)), dev, True), _t(rng.normal(size=(1, 2)), dev, True)
    w = _t(rng.normal(size=(gi.shape[2], 2)) * 0.5, dev, True)
    b = _t(rng.normal(size=(gi.shape[2],)), dev, True)
    from coretorch.nn.modules.rnn import _sequence_loop

    def f(gi, h0, c0, w, b, reverse=False):
        ys, h, c = _rnn_fused.sequence(mode, gi, h0, c0 if mode == "LSTM" else None, w, b, reverse,
                                       lambda *a: _sequence_loop(mode, *a, reverse=reverse))
        return (ys, h) + ((c,) if mode == "LSTM" else ())
    assert f"{mode.capitalize()}SequenceBackward0" in [c.__name__ for c in type(f(gi, h0, c0, w, b)[0].grad_fn).__mro__]
    args = (gi, h0, c0, w, b) if mode == "LSTM" else (gi, h0, w, b)
    wrap = (lambda gi, h0, c0, w, b: f(gi, h0, c0, w, b, True)) if mode == "LSTM" else \
        (lambda gi, h0, w, b: f(gi, h0, None, w, b, True))
    assert gradcheck(wrap, args)
    assert gradgradcheck(lambda *a: wrap(*a)[0].sum(), args)


# ---- the cpu kernels against the composites of primitive kernels ------------------------------------------------
class _NoFused:
    """The cpu kernel table without the fused kernels: the core's kernel composites run."""

    def __init__(self, table):
        self._t = table

    def has(self, name):
        return name not in ("layer_norm", "layer_norm_backward", "softmax_backward", "softmax", "lstm_cell",
                            "lstm_cell_backward") and self._t.has(name)

    def __getattr__(self, name):
        return getattr(self._t, name)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cpu_fused_kernels_match_the_kernel_composites(dtype):
    cpu = _backend.get_table(torch.device("cpu"))
    plain = _NoFused(cpu)
    rng = np.random.default_rng(8)
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    x, w, b = (rng.normal(size=s).astype(dtype) for s in ((4, 3, 8), (3, 8), (3, 8)))
    g = rng.normal(size=x.shape).astype(dtype)
    for tab_out, ref_out in zip(_fused._ln_forward(cpu, x, w, b, 1e-5, 2), _fused._ln_forward(plain, x, w, b, 1e-5, 2)):
        assert tab_out.dtype == dtype and tab_out.shape == ref_out.shape
        np.testing.assert_allclose(tab_out, ref_out, **tol)
    y, mean, rstd = _fused._ln_forward(cpu, x, w, b, 1e-5, 2)
    for a, r in zip(_fused._ln_backward(cpu, g, x, mean, rstd, w, 2, True, True, True),
                    _fused._ln_backward(plain, g, x, mean, rstd, w, 2, True, True, True)):
        assert a.dtype == dtype
        np.testing.assert_allclose(a, r, **tol)
    p = _fused._softmax_last(plain, x)
    np.testing.assert_allclose(_fused._softmax_back_last(cpu, g, p), _fused._softmax_back_last(plain, g, p), **tol)
    gates, c, dh, dc = (rng.normal(size=s).astype(dtype) for s in ((5, 16), (5, 4), (5, 4), (5, 4)))
    h1, c1, act1 = _rnn_fused._lstm_cell(cpu, gates, c)
    h2, c2, act2 = _rnn_fused._lstm_cell(plain, gates, c)
    np.testing.assert_allclose(h1, h2, **tol)
    np.testing.assert_allclose(c1, c2, **tol)
    for a, r in zip(_rnn_fused._lstm_cell_backward(cpu, dh, dc, c, act1),
                    _rnn_fused._lstm_cell_backward(plain, dh, dc, c, act2)):
        np.testing.assert_allclose(a, r, **tol)


# ---- GELU's fused backward --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gelu_backward_matches_closed_form(dev, dtype):
    import scipy.special as sp
    xa = np.concatenate([np.linspace(-9, 9, 301), [0.0, -0.0, 1e-30, -1e-30, 40.0, -40.0]]).astype(dtype)
    ga = np.random.default_rng(9).normal(size=xa.shape).astype(dtype)
    x = _t(xa, dev, True)
    F.gelu(x).backward(_t(ga, dev))
    xd = xa.astype(np.float64)
    ref = ga * (sp.ndtr(xd) + xd * np.exp(-xd * xd / 2) / math.sqrt(2 * math.pi))
    tol = dict(rtol=2e-6, atol=2e-7) if dtype == "float32" else dict(rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(_np(x.grad), ref, **tol)
    xs = _t(np.array([-2.0, -0.3, 0.0, 0.7, 3.0]), dev, True)
    assert gradcheck(F.gelu, (xs,)) and gradgradcheck(F.gelu, (xs,))


@pytest.mark.parametrize("dev", DEVICES)
def test_gelu_forward_is_the_same_with_and_without_a_graph(dev):
    xa = np.concatenate([np.linspace(-12, 12, 997), [np.inf, -np.inf, np.nan, 0.0]]).astype(np.float32)
    with_graph = F.gelu(_t(xa, dev, True))
    assert with_graph.grad_fn.name() == "GeluBackward0"
    np.testing.assert_array_equal(_np(with_graph), _np(F.gelu(_t(xa, dev))))


# ---- conv2d's cpu kernels: one GEMM over the batch on small maps, per-sample products on large ones ------------
@pytest.mark.parametrize("hw,stride,pad", [(6, 1, 1), (9, 2, 1), (20, 1, 0), (40, 2, 3)])
def test_cpu_conv2d_kernels_match_a_direct_sum(hw, stride, pad):
    from numpy.lib.stride_tricks import sliding_window_view
    cpu = _backend.get_table(torch.device("cpu"))
    rng = np.random.default_rng(10)
    x, w = rng.normal(size=(2, 3, hw, hw)), rng.normal(size=(4, 3, 3, 3))
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = sliding_window_view(xp, (3, 3), axis=(2, 3))[:, :, ::stride, ::stride]   # (N, C, OH, OW, 3, 3)
    ref = np.einsum("ncijkl,ockl->noij", win, w)
    args = ((stride, stride), (pad, pad), (1, 1), 1)
    np.testing.assert_allclose(cpu.conv2d(x, w, *args), ref, rtol=1e-12, atol=1e-12)
    gy = rng.normal(size=ref.shape)
    np.testing.assert_allclose(cpu.conv2d_backward_weight(x, gy, w.shape, *args),
                               np.einsum("ncijkl,noij->ockl", win, gy), rtol=1e-12, atol=1e-12)
