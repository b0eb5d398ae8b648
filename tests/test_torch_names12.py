"""PyTorch's top-level names added for parity (coretorch/_aten_nn.py, _flags.py, ops/bits.py, copies.py,
histogram.py, misc.py): constants, torch-level in-place forms, the ATen-signature nn functions, and the small ops
and switches.  The computing ops are also in the op table (coretorch/testing_ops/names12.py); expectations here are
numpy's or values worked out by hand (and checked against PyTorch 2.13 once)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn as nn
import coretorch.nn.functional as F


def arr(t):
    return t.detach().cpu().numpy()


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(arr(a) if isinstance(a, torch.Tensor) else a,
                               arr(b) if isinstance(b, torch.Tensor) else b, rtol=tol, atol=tol)


def test_constants():
    assert torch.inf == math.inf and math.isnan(torch.nan) and torch.e == math.e and torch.pi == math.pi
    assert torch.newaxis is None
    assert torch.ones(2)[:, torch.newaxis].shape == (2, 1)


INPLACE = {  # name -> (input, extra args): torch.X_(x, *args) is x.X_(*args), in place, returning x
    "abs_": ([-1.5, 2.0], ()), "acos_": ([0.5, -0.2], ()), "arccosh_": ([1.5, 2.0], ()), "asinh_": ([0.5, 2.0], ()),
    "arctan_": ([0.5, 2.0], ()), "atanh_": ([0.5, -0.2], ()), "ceil_": ([0.5, -1.5], ()),
    "clamp_": ([-1.0, 3.0], (0.0, 1.0)), "clamp_max_": ([-1.0, 3.0], (1.0,)), "clip_": ([-1.0, 3.0], (0.0, 2.0)),
    "cosh_": ([0.5, 2.0], ()), "deg2rad_": ([90.0, 180.0], ()), "rad2deg_": ([1.0, 2.0], ()),
    "erf_": ([0.5, 2.0], ()), "erfc_": ([0.5, 2.0], ()), "exp2_": ([0.5, 2.0], ()), "expm1_": ([0.5, 2.0], ()),
    "fix_": ([-1.5, 2.5], ()), "frac_": ([-1.5, 2.25], ()), "i0_": ([0.5, 2.0], ()), "log10_": ([0.5, 2.0], ()),
    "logit_": ([0.25, 0.5], ()), "negative_": ([0.5, 2.0], ()), "reciprocal_": ([0.5, 2.0], ()),
    "relu_": ([-0.5, 2.0], ()), "round_": ([0.5, 2.6], ()), "sigmoid_": ([0.5, 2.0], ()),
    "sinc_": ([0.5, 2.0], ()), "square_": ([0.5, 2.0], ()), "trunc_": ([-1.5, 2.5], ()), "xlogy_": ([0.0, 2.0], (3.0,)),
    "ldexp_": ([1.0, 3.0], (2.0,)), "nan_to_num_": ([math.nan, 2.0], ()), "zero_": ([1.0, 2.0], ()),
    "fill_": ([1.0, 2.0], (7.0,)), "detach_": ([1.0, 2.0], ()),
}


def test_torch_inplace_forms(device):
    for name, (vals, args) in INPLACE.items():
        x = torch.tensor(vals, device=device)
        want = getattr(x.clone(), name)(*(torch.tensor(a, device=device) if name == "ldexp_" else a for a in args))
        args = tuple(torch.tensor(a, device=device) if name == "ldexp_" else a for a in args)
        got = getattr(torch, name)(x, *args)
        assert got is x, name
        np.testing.assert_array_equal(arr(x), arr(want), err_msg=name)
    x = torch.tensor([-1.0, 2.0], device=device)
    assert torch.threshold_(x, 0.0, 5.0) is x and x.tolist() == [5.0, 2.0]
    x = torch.tensor([-1.0, 2.0], device=device)
    assert torch.celu_(x, 2.0) is x
    close(x, [2 * math.expm1(-0.5), 2.0])
    x = torch.tensor([-1.0, 2.0], device=device)
    assert torch.selu_(x) is x
    close(x, [1.0507009873554805 * 1.6732632423543772 * math.expm1(-1.0), 2 * 1.0507009873554805])
    x = torch.tensor([-1.0, 2.0], device=device)
    assert torch.rrelu_(x, 0.1, 0.3) is x  # evaluation: the mean slope
    close(x, [-0.2, 2.0])
    x = torch.ones(3, device=device)
    for fn in (torch.dropout_, torch.alpha_dropout_, torch.feature_alpha_dropout_):
        assert fn(x, 0.5, False) is x and x.tolist() == [1.0] * 3
    assert torch.feature_dropout_(torch.ones(2, 3, device=device), 0.5, False).tolist() == [[1.0] * 3] * 2
    f = torch.fill(x, torch.tensor(4.0, device=device))
    assert f is not x and f.tolist() == [4.0] * 3 and x.tolist() == [1.0] * 3
    with pytest.raises(RuntimeError, match="0-dimension"):
        torch.fill(x, torch.tensor([4.0], device=device))


def test_aten_signature_functions_match_functional(device):
    g = np.random.default_rng(0)

    def t(*shape):
        return torch.tensor(g.standard_normal(shape).astype(np.float32), device=device)
    x1, w1, x2, w2, x3, w3 = t(2, 3, 7), t(4, 3, 2), t(1, 2, 5, 5), t(3, 2, 3, 3), t(1, 1, 3, 4, 4), t(2, 1, 2, 2, 2)
    b, w, rm, rv = t(3), t(3), t(3), t(3).abs() + 0.5
    pairs = [
        (torch.conv1d(x1, w1, None, 2, 1), F.conv1d(x1, w1, None, 2, 1)),
        (torch.conv2d(x2, w2, None, 1, "same"), F.conv2d(x2, w2, None, 1, "same")),
        (torch.conv3d(x3, w3), F.conv3d(x3, w3)),
        (torch.convolution(x2, w2, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1), F.conv2d(x2, w2, None, 2, 1)),
        (torch.convolution(x1, w1.transpose(0, 1), None, [2], [1], [1], True, [1], 1),
         F.conv_transpose1d(x1, w1.transpose(0, 1), None, 2, 1, 1)),
        (torch.conv_transpose2d(x2, w2.transpose(0, 1), None, 2), F.conv_transpose2d(x2, w2.transpose(0, 1), None, 2)),
        (torch.layer_norm(x1, [7], None, None, 1e-3), F.layer_norm(x1, [7], eps=1e-3)),
        (torch.group_norm(x1, 3), F.group_norm(x1, 3)),
        (torch.batch_norm(x1, w, b, rm, rv, False, 0.1, 1e-5, False), F.batch_norm(x1, rm, rv, w, b, False)),
        (torch.instance_norm(x1, w, b, None, None, True, 0.1, 1e-5, False), F.instance_norm(x1, weight=w, bias=b)),
        (torch.embedding(t(5, 2), torch.tensor([[0, 4]], device=device)), None),
        (torch.max_pool1d(x1, 2), F.max_pool1d(x1, 2)), (torch.max_pool2d(x2, [2, 2], []), F.max_pool2d(x2, 2)),
        (torch.max_pool3d(x3, 2, 1), F.max_pool3d(x3, 2, 1)), (torch.avg_pool1d(x1, 3, 2), F.avg_pool1d(x1, 3, 2)),
        (torch.adaptive_avg_pool1d(x1, 3), F.adaptive_avg_pool1d(x1, 3)),
        (torch.constant_pad_nd(x1, [1, 2], 3.0), F.pad(x1, (1, 2), value=3.0)),
        (torch.grid_sampler(x2, t(1, 3, 3, 2).tanh(), 1, 1, True),
         F.grid_sample(x2, t(1, 3, 3, 2).tanh() * 0 + torch.tensor(0.0, device=device), "nearest", "border", True)),
        (torch.celu(x1, 2.0), F.celu(x1, 2.0)), (torch.selu(x1), F.selu(x1)), (torch.hardshrink(x1), F.hardshrink(x1)),
        (torch.threshold(x1, 0.1, -2.0), F.threshold(x1, 0.1, -2.0)), (torch.rrelu(x1), F.rrelu(x1)),
        (torch.pixel_shuffle(t(1, 4, 2, 2), 2).shape, (1, 1, 4, 4)),
    ]
    for k, (a, want) in enumerate(pairs):
        if k == 10:  # embedding(weight, indices): weight first, padding_idx -1 = none
            assert a.shape == (1, 2, 2)
            continue
        if k == 17:  # grid_sampler's int modes: compare with the same grid
            gr = t(1, 3, 3, 2).tanh()
            close(torch.grid_sampler(x2, gr, 1, 1, True), F.grid_sample(x2, gr, "nearest", "border", True))
            close(torch.grid_sampler_2d(x2, gr, 0, 2, False), F.grid_sample(x2, gr, "bilinear", "reflection", False))
            continue
        if isinstance(want, tuple):
            assert tuple(a) == want
            continue
        close(a, want, 1e-4)
    v, i = torch.max_pool1d_with_indices(x1, 2)
    v2, i2 = F.max_pool1d(x1, 2, return_indices=True)
    close(v, v2)
    assert i.tolist() == i2.tolist()
    v, i = torch.adaptive_max_pool1d(x1, 3)
    assert v.shape == i.shape == (2, 3, 3)
    with pytest.raises(RuntimeError, match="5D input"):
        torch.grid_sampler_3d(x2, t(1, 3, 3, 2), 0, 0, False)


def test_integer_reduction_losses(device):
    x = torch.tensor([-1.0, -2.0], device=device)
    tgt = torch.tensor([0.3, 0.7], device=device)
    pointwise = [0.3 * (math.log(0.3) + 1), 0.7 * (math.log(0.7) + 2)]
    close(torch.kl_div(x, tgt), pointwise)  # the Python binding's default: no reduction
    close(torch.kl_div(x, tgt, 1), sum(pointwise) / 2)
    close(torch.kl_div(x, tgt, 2), sum(pointwise))
    with pytest.raises(TypeError, match="reduction"):
        torch.kl_div(x, tgt, "mean")
    a, b, y = torch.tensor([1.0, 2.0], device=device), torch.tensor([1.0, 0.0], device=device), \
        torch.tensor([1.0, -1.0], device=device)
    close(torch.margin_ranking_loss(a, b, y), [0.0, 2.0])
    close(torch.hinge_embedding_loss(a, y, 1.0, 2), 1.0)
    close(torch.binary_cross_entropy_with_logits(a, b, None, None, 1),
          F.binary_cross_entropy_with_logits(a, b))
    close(torch.binary_cross_entropy_with_logits(a, b, None, torch.tensor([2.0, 3.0], device=device), 2),
          F.binary_cross_entropy_with_logits(a, b, reduction="sum", pos_weight=torch.tensor([2.0, 3.0], device=device)))
    close(torch.poisson_nll_loss(a, a, True, False, 1e-8, 1), np.mean(np.exp([1.0, 2.0]) - np.array([1.0, 4.0])))
    m = torch.ones(2, 3, device=device)
    close(torch.cosine_embedding_loss(m, m, y), [0.0, 1.0])
    close(torch.triplet_margin_loss(m, m * 0, m), [1 + math.sqrt(3) - 1e-6 * 0, 1 + math.sqrt(3)], 1e-4)
    lp = torch.arange(15.0, device=device).view(5, 1, 3).log_softmax(2)
    tg = torch.tensor([[1, 2]], device=device)
    close(torch.ctc_loss(lp, tg, [5], [2], 0, 1), F.ctc_loss(lp, tg, [5], [2]))
    assert torch.ctc_loss(lp, tg, [5], [2]).shape == (1,)


def test_native_norms_and_dropout(device):
    g = np.random.default_rng(1)
    xn = g.standard_normal((2, 6, 4))
    x = torch.tensor(xn, device=device)
    out, mean, rstd = torch.native_layer_norm(x, [4], None, None, 1e-5)
    close(mean, xn.mean(-1, keepdims=True))
    close(rstd, 1 / np.sqrt(xn.var(-1, keepdims=True) + 1e-5))
    close(out, F.layer_norm(x, [4]))
    out, mean, rstd = torch.native_group_norm(x, None, None, 2, 6, 4, 3, 1e-5)
    gn = xn.reshape(2, 3, -1)
    close(mean, gn.mean(-1))
    close(rstd, 1 / np.sqrt(gn.var(-1) + 1e-5))
    close(out, F.group_norm(x, 3))
    out, sm, si = torch.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)
    close(sm, xn.mean((0, 2)))
    close(si, 1 / np.sqrt(xn.var((0, 2)) + 1e-5))
    _, sm, si = torch.native_batch_norm(x, None, None, torch.zeros(6, dtype=x.dtype, device=device),
                                       torch.ones(6, dtype=x.dtype, device=device), False, 0.1, 1e-5)
    assert sm.shape == si.shape == (0,)
    ones = torch.ones(40, 30, device=device)
    y, mask = torch.native_dropout(ones, 0.25, True)
    assert mask.dtype is torch.bool
    close(y, arr(mask) / 0.75)
    y, mask = torch.native_dropout(ones, 0.25, False)
    assert bool(mask.all()) and y.tolist() == ones.tolist()
    y = torch.feature_dropout(ones.view(40, 30, 1).expand(40, 30, 3).contiguous(), 0.5, True)
    ya = arr(y)
    assert np.all(ya == ya[:, :, :1]) and set(np.unique(ya)) <= {0.0, 2.0}  # whole channels
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        torch.feature_dropout(torch.ones(3, device=device), 0.5, True)
    y = torch.alpha_dropout(ones, 0.5, True)
    assert len(np.unique(arr(y))) == 2


def test_recurrent_cells_match_modules(device):
    torch.manual_seed(0)
    x = torch.randn(3, 4, device=device)
    for mod, fn in ((nn.LSTMCell(4, 5), torch.lstm_cell), (nn.GRUCell(4, 5), torch.gru_cell),
                    (nn.RNNCell(4, 5), torch.rnn_tanh_cell), (nn.RNNCell(4, 5, nonlinearity="relu"),
                                                             torch.rnn_relu_cell)):
        mod = mod.to(device)
        h = torch.randn(3, 5, device=device)
        ws = (mod.weight_ih, mod.weight_hh, mod.bias_ih, mod.bias_hh)
        if fn is torch.lstm_cell:
            c = torch.randn(3, 5, device=device)
            for a, b in zip(fn(x, (h, c), *ws), mod(x, (h, c))):
                close(a, b)
        else:
            close(fn(x, h, *ws), mod(x, h))


def test_pdist_errors(device):
    with pytest.raises(RuntimeError, match="2D"):
        torch.pdist(torch.ones(3, device=device))
    with pytest.raises(RuntimeError, match="floating"):
        torch.pdist(torch.ones(3, 2, dtype=torch.int64, device=device))
    with pytest.raises(RuntimeError, match="non-negative"):
        torch.pdist(torch.ones(3, 2, device=device), -1.0)
    assert torch.pdist(torch.ones(1, 2, device=device)).shape == (0,)
    close(torch.pdist(torch.tensor([[0.0, 0], [3, 4], [6, 8]], device=device), math.inf), [4.0, 8.0, 4.0])


def test_integer_ops_edges(device):
    i8 = torch.tensor([-128, -128, 6], dtype=torch.int8, device=device)
    assert torch.gcd(i8, torch.tensor([0, -1, 4], dtype=torch.int8, device=device)).tolist() == [-128, 1, 2]
    assert torch.gcd(torch.tensor([-2 ** 63], device=device), torch.tensor([0], device=device)).tolist() == [-2 ** 63]
    big = torch.tensor([2 ** 40, 3], device=device)
    assert torch.lcm(big, torch.tensor([2 ** 40 + 1, 0], device=device)).tolist() == [2 ** 40, 0]  # wraps (PyTorch)
    with pytest.raises(TypeError, match="must be Tensor"):
        torch.gcd(i8, 4)
    with pytest.raises(NotImplementedError, match="Bool"):
        torch.gcd(i8 > 0, i8 > 0)
    x = torch.tensor([1, 2], dtype=torch.int8, device=device)
    assert x.lcm_(torch.tensor([3, 4], device=device)) is x and x.tolist() == [3, 4] and x.dtype is torch.int8
    assert x.gcd_(torch.tensor([6, 6], dtype=torch.int8, device=device)).tolist() == [3, 2]
    i32 = torch.tensor([-1, 3], dtype=torch.int32, device=device)
    assert torch.bitwise_left_shift(i32, torch.tensor([31, 32], dtype=torch.int32, device=device)).tolist() \
        == [-2 ** 31, 0]
    assert (i32 >> 40).tolist() == [-1, 0] and (i32 >> -1).tolist() == [-1, 0]
    assert (3 << torch.tensor([1, 2], device=device)).tolist() == [6, 12]
    b = torch.tensor([True], device=device) << 1
    assert b.dtype is torch.int64 and b.tolist() == [2]
    y = torch.tensor([1, 2], device=device)
    y <<= 2
    assert y.tolist() == [4, 8]
    y >>= torch.tensor([1, 3], device=device)
    assert y.tolist() == [2, 1]
    u8 = torch.tensor([1, 200], dtype=torch.uint8, device=device)
    assert (u8 << 200).tolist() == [0, 0] and (u8 >> 9).tolist() == [0, 0] and (u8 >> 7).tolist() == [0, 1]
    assert u8.bitwise_right_shift_(torch.tensor([0, 1], dtype=torch.uint8, device=device)).tolist() == [1, 100]
    with pytest.raises(NotImplementedError, match="lshift"):
        torch.tensor([1.5], device=device) << 1
    with pytest.raises(NotImplementedError, match="Bool"):
        torch.tensor([True], device=device) << torch.tensor([True], device=device)
    out = torch.empty(2, dtype=torch.int64, device=device)
    assert torch.gcd(torch.tensor([4, 9], device=device), torch.tensor([6, 6], device=device), out=out) is out
    assert out.tolist() == [2, 3]


@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16", "float64"])
def test_nextafter_edges(device, dt):
    d = getattr(torch, dt)
    x = torch.tensor([0.0, -0.0, 1.0, 1.0, -2.0, math.inf, math.nan, 1.0, 3.0e38 if dt != "float16" else 6.0e4,
                      1e-40 if dt in ("float32", "float64") else 1e-7], device=device).to(d)
    y = torch.tensor([-1.0, 1.0, 2.0, 0.0, -3.0, 0.0, 1.0, 1.0, math.inf, 0.0], device=device).to(d)
    r = torch.nextafter(x, y)
    if dt == "bfloat16":  # numpy has no bfloat16: the steps written out (8 significant bits)
        want = [-2.0 ** -133, 2.0 ** -133, 1 + 2 ** -7, 1 - 2 ** -8, -2 - 2 ** -6, 3.3895313892515355e38, math.nan,
                1.0, float(x[8].float()) + 2.0 ** (127 - 7), float(x[9].float()) - 2.0 ** -31]
        np.testing.assert_array_equal(arr(r.float()), np.array(want, np.float32))
        return
    npd = np.dtype(dt)
    want = np.nextafter(arr(x).astype(npd), arr(y).astype(npd))
    np.testing.assert_array_equal(arr(r), want)
    assert np.signbit(arr(r)[:2]).tolist() == [True, False]


def test_nextafter_grad_and_errors(device):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, device=device, requires_grad=True)
    y = torch.tensor([2.0, 0.0], dtype=torch.float64, device=device, requires_grad=True)
    r = torch.nextafter(x, y)
    assert type(r.grad_fn).__name__ == "NextafterBackward0"
    r.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0] and y.grad.tolist() == [0.0, 0.0]
    with pytest.raises(NotImplementedError, match="Long"):
        torch.nextafter(torch.tensor([1], device=device), torch.tensor([2], device=device))
    with pytest.raises(TypeError, match="must be Tensor"):
        torch.nextafter(x, 2.0)
    z = torch.tensor([1.0], device=device)
    assert z.nextafter_(torch.tensor([2.0], device=device)) is z and z.item() == 1 + 2 ** -23


def test_real_tensor_complex_views_and_predicates(device):
    x = torch.tensor([1.0, -2.0], device=device)
    for fn in (torch.conj, torch.conj_physical, torch.conj_physical_, torch.resolve_conj, torch.resolve_neg,
               torch.real, torch.positive):
        assert fn(x) is x
    assert x.real is x and x.conj() is x and not torch.is_conj(x) and not x.is_neg()
    with pytest.raises(RuntimeError, match="non-complex"):
        torch.imag(x)
    with pytest.raises(RuntimeError, match="non-complex"):
        x.imag
    with pytest.raises(RuntimeError, match="bool"):
        torch.positive(x > 0)
    assert [torch.is_signed(t) for t in (x, x.to(torch.int8), x.to(torch.uint8), x > 0)] == [True, True, False, False]
    assert torch.is_same_size(x, x * 2) and not x.is_same_size(x[:1])
    assert torch.get_device(x) == (-1 if device == "cpu" else 0) == x.get_device()
    xg = x.clone().requires_grad_()
    a = torch.angle(xg)
    close(a, [0.0, math.pi])
    a.sum().backward()
    assert xg.grad.tolist() == [0.0, 0.0] and type(a.grad_fn).__name__ == "AngleBackward0"
    assert torch.angle(torch.tensor([1, -2], device=device)).dtype is torch.float32
    assert math.isnan(torch.angle(torch.tensor([math.nan], device=device)).item())


def test_creation_functions(device):
    s = torch.scalar_tensor(True, device=device)
    assert s.shape == () and s.dtype is torch.float32 and s.item() == 1.0
    assert torch.scalar_tensor(3, dtype=torch.int64, device=device).dtype is torch.int64
    e = torch.empty_strided((2, 3), (1, 2), dtype=torch.float64, device=device)
    assert e.shape == (2, 3) and e.stride() == (1, 2) and e.dtype is torch.float64
    p = torch.empty_permuted((2, 3, 4), (0, 2, 1), device=device, requires_grad=True)
    assert p.shape == (2, 3, 4) and p.stride() == (12, 1, 3) and p.requires_grad
    with pytest.raises(RuntimeError, match="physical_layout"):
        torch.empty_permuted((2, 3, 4), (0, 2), device=device)
    ba = bytearray(np.array([1, 2, 3], np.int32).tobytes())
    t = torch.frombuffer(ba, dtype=torch.int32, count=2, offset=4)
    assert t.tolist() == [2, 3]
    t[0] = 9  # shares the buffer, as PyTorch's
    assert np.frombuffer(ba, np.int32).tolist() == [1, 9, 3]
    with pytest.warns(UserWarning, match="not writable"):
        assert torch.frombuffer(b"\x01\x00\x00\x00", dtype=torch.int32).tolist() == [1]
    with pytest.raises(ValueError, match="multiple of element size"):
        torch.frombuffer(bytearray(3), dtype=torch.int32)


def test_window_functions(device):
    n = 7
    sym = {"hann_window": np.hanning, "blackman_window": np.blackman, "bartlett_window": np.bartlett,
           "hamming_window": np.hamming, "kaiser_window": lambda m: np.kaiser(m, 12.0)}
    for name, ref in sym.items():
        f = getattr(torch, name)
        close(f(n, False, device=device), ref(n), 1e-5)
        close(f(n, device=device, dtype=torch.float64), ref(n + 1)[:-1], 1e-9)  # periodic by default
        assert f(0, device=device).shape == (0,) and f(1, device=device).tolist() == [1.0]
    close(torch.hamming_window(5, False, alpha=0.5, beta=0.3, device=device),
          0.5 - 0.3 * np.cos(2 * np.pi * np.arange(5) / 4))
    close(torch.kaiser_window(5, False, 5.0, device=device), np.kaiser(5, 5.0))
    with pytest.raises(RuntimeError, match="floating point"):
        torch.hann_window(4, dtype=torch.int64)
    with pytest.raises(RuntimeError, match="non-negative"):
        torch.hann_window(-1)


def test_copy_ops_are_copies(device):
    x = torch.arange(24.0, device=device).view(2, 3, 4)
    cases = [(torch.view_copy(x, [6, 4]), x.view(6, 4)), (torch.permute_copy(x, [2, 0, 1]), x.permute(2, 0, 1)),
             (torch.t_copy(x[0]), x[0].t()), (torch.transpose_copy(x, 0, 2), x.transpose(0, 2)),
             (torch.unsqueeze_copy(x, 1), x.unsqueeze(1)), (torch.squeeze_copy(x[:1], 0), x[0]),
             (torch.squeeze_copy(x[:1, :1], [0, 1]), x[0, 0]), (torch.select_copy(x, 1, -1), x[:, -1]),
             (torch.slice_copy(x, 2, 1, None, 2), x[:, :, 1::2]), (torch.unfold_copy(x, 2, 2, 2), x.unfold(2, 2, 2)),
             (torch.expand_copy(x[:, :1], [2, 3, 4]), x[:, :1].expand(2, 3, 4)),
             (torch.diagonal_copy(x, 1, 1, 2), x.diagonal(1, 1, 2)), (torch.alias_copy(x), x),
             (torch.detach_copy(x), x), (torch.as_strided_copy(x, [2, 2], [1, 3], 2), x.as_strided((2, 2), (1, 3), 2))]
    for k, (c, v) in enumerate(cases):
        np.testing.assert_array_equal(arr(c), arr(v), err_msg=str(k))
        c.zero_()
    assert x.sum().item() == sum(range(24))  # no copy shared x's memory
    for got, want in ((torch.split_copy(x, 1, 0), x.split(1, 0)), (torch.unbind_copy(x, 1), x.unbind(1)),
                      (torch.split_with_sizes_copy(x, [1, 3], 2), x.split([1, 3], 2)),
                      (torch.split_with_sizes(x, [2, 1], 1), x.split([2, 1], 1))):
        assert len(got) == len(want)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(arr(a), arr(b))
    with pytest.raises(RuntimeError, match="sum exactly"):
        torch.split_with_sizes(x, [1, 1], 1)
    r = torch.as_strided_scatter(torch.zeros(6, device=device), torch.ones(2, 2, device=device), [2, 2], [1, 2], 1)
    assert r.tolist() == [0.0, 1.0, 1.0, 1.0, 1.0, 0.0]


def test_histogramdd_matches_numpy(device):
    g = np.random.default_rng(3)
    pts = g.uniform(-1, 1, (30, 2))
    w = g.uniform(0, 1, 30)
    x = torch.tensor(pts, device=device)
    h = torch.histogramdd(x, [3, 4], weight=torch.tensor(w, device=device), density=True)
    want, edges = np.histogramdd(pts, [3, 4], weights=w, density=True)
    assert type(h).__name__ == "histogramdd" and len(h.bin_edges) == 2
    close(h.hist, want, 1e-9)
    for a, b in zip(h.bin_edges, edges):
        close(a, b, 1e-12)
    h = torch.histogramdd(x, [torch.tensor([-1.0, 0.0, 0.5], dtype=torch.float64, device=device),
                              torch.tensor([-0.5, 0.5], dtype=torch.float64, device=device)])
    close(h.hist, np.histogramdd(pts, [[-1.0, 0.0, 0.5], [-0.5, 0.5]])[0])
    h = torch.histogramdd(x, 2, range=[0.0, 1.0, 0.0, 1.0])
    close(h.hist, np.histogramdd(pts, 2, range=[(0, 1), (0, 1)])[0])
    hh = torch.histogram(torch.tensor([1.0, 1.0], device=device), 2)
    close(hh.bin_edges, [0.5, 1.0, 1.5])  # an empty range widened by a half each side
    with pytest.raises(RuntimeError, match="not finite"):
        torch.histogram(torch.tensor([1.0, math.nan], device=device), 3)
    with pytest.raises(NotImplementedError, match="Long"):
        torch.histogram(torch.tensor([1, 2], device=device), 3)
    xr = torch.tensor([1.0, 2.0], device=device, requires_grad=True)
    hg = torch.histogram(xr, 2)
    assert hg.hist.requires_grad
    with pytest.raises(RuntimeError, match="not implemented"):
        hg.hist.sum().backward()


def test_numeric_helpers(device):
    y = torch.tensor([1.0, 2.0, 4.0], device=device)
    assert torch.trapz(y, dx=2).item() == 9.0 and torch.trapezoid(y[:1]).item() == 0.0
    assert torch.trapezoid(torch.tensor([1, 2, 4], device=device)).item() == 4.5
    assert torch.cumulative_trapezoid(y[:1]).shape == (0,)
    with pytest.raises(TypeError, match="invalid combination"):
        torch.trapezoid(y, 2.0)
    assert torch.vander(torch.tensor([1, 2, 3], dtype=torch.int32, device=device)).dtype is torch.int64
    assert torch.vander(y, 0).shape == (3, 0)
    with pytest.raises(RuntimeError, match="one-dimensional"):
        torch.vander(y.view(1, 3))
    m = torch.tensor([[3.0, 4.0], [1.0, 2.0]], device=device)
    with pytest.warns(UserWarning, match="deprecated"):
        close(torch.frobenius_norm(m, [0, 1], True), [[math.sqrt(30)]])
    with pytest.warns(UserWarning, match="deprecated"):
        close(torch.nuclear_norm(m), np.linalg.norm(arr(m), "nuc"))
    with pytest.warns(UserWarning, match="deprecated"):
        assert torch.nuclear_norm(m, True).shape == (1, 1)


def test_switches():
    try:
        torch.set_anomaly_enabled(True, False)
        assert torch.is_anomaly_enabled() and torch.autograd.is_anomaly_enabled()
        assert not torch.is_anomaly_check_nan_enabled()
    finally:
        torch.set_anomaly_enabled(False)
    assert not torch.autograd.is_anomaly_enabled()
    prev = torch.is_warn_always_enabled()
    torch.set_warn_always(True)
    assert torch.is_warn_always_enabled()
    torch.set_warn_always(prev)
    with pytest.raises(RuntimeError, match="expects a bool"):
        torch.set_warn_always(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DeprecationWarning, match="get_autocast_dtype"):
            torch.get_autocast_cpu_dtype()
    with pytest.warns(DeprecationWarning):
        before = torch.get_autocast_cpu_dtype()
    assert before is torch.get_autocast_dtype("cpu")
    with pytest.warns(DeprecationWarning):
        torch.set_autocast_cpu_enabled(True)
    try:
        assert torch.is_autocast_enabled("cpu")
        with pytest.warns(DeprecationWarning):
            assert torch.is_autocast_cpu_enabled()
    finally:
        torch.set_autocast_enabled("cpu", False)
    assert torch.GradScaler is torch.amp.GradScaler
    assert torch.init_num_threads() is None and torch.set_flush_denormal(True) is False
