"""Regressions found by differential testing against PyTorch: each test pins PyTorch's behaviour (values, dtypes,
exception types) with numpy / hand-computed expectations."""
from __future__ import annotations

import math

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn as nn
import coretorch.nn.functional as F
from coretorch.testing import available_devices


def arr(t):
    return t.detach().numpy()


# ---- creation: PyTorch's checked conversion of Python numbers ----
@pytest.mark.parametrize("data, dtype", [([300.0], torch.int8), ([1e10], torch.uint8), ([-1.0], torch.uint8),
                                         ([256], torch.uint8), (float("nan"), torch.int64),
                                         ([float("inf")], torch.int32), (1e20, torch.int64), ([True, 300], torch.int8),
                                         ([127.5], torch.int8)])
def test_tensor_python_numbers_out_of_range_raise(data, dtype):
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.tensor(data, dtype=dtype)


def test_tensor_python_numbers_in_range_convert():
    assert torch.tensor([-1, 2], dtype=torch.uint8).tolist() == [255, 2]  # a negative int wraps, as fill_
    assert torch.tensor([127.0, -128.0, 3.7], dtype=torch.int8).tolist() == [127, -128, 3]
    assert torch.tensor([-0.5], dtype=torch.int8).tolist() == [0]
    assert torch.tensor([1e5], dtype=torch.float16).tolist() == [math.inf]  # floats are not checked
    # an ndarray is cast, not checked (PyTorch too)
    assert torch.tensor(np.array([300.0]), dtype=torch.int8).tolist() == [44]


def test_tensor_uninferable_types():
    with pytest.raises(RuntimeError, match="Could not infer dtype of NoneType"):
        torch.tensor(None)
    with pytest.raises(RuntimeError, match="Could not infer dtype of NoneType"):
        torch.tensor([1, None])
    with pytest.raises(TypeError, match="Could not infer dtype of str"):
        torch.tensor("abc")


def test_arange_fractional_step_small_int_dtypes():
    # the length comes from the float arguments, the values from the truncated ones (PyTorch's quirk)
    for dt in (torch.int32, torch.int8):
        r = torch.arange(0, 1, 0.3, dtype=dt)
        assert r.dtype is dt and r.tolist() == [0, 0, 0, 0]
    assert torch.arange(1, 2.5, 0.5, dtype=torch.int32).tolist() == [1, 1, 1]
    with pytest.raises(ValueError, match="step must be nonzero"):  # int64 truncates the step first
        torch.arange(0, 1, 0.3, dtype=torch.int64)
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        torch.arange(0, 3, 0)


def test_random_factories_reject_integer_dtypes_with_not_implemented():
    for f in (lambda: torch.rand(2, dtype=torch.int64), lambda: torch.randn(2, dtype=torch.int32),
              lambda: torch.rand_like(torch.zeros(2, dtype=torch.int64))):
        with pytest.raises(NotImplementedError):
            f()


# ---- binary ops with Python scalars ----
def test_true_division_of_integer_tensor_by_scalar_keeps_the_scalar():
    x = torch.tensor([1, 2, 3], dtype=torch.uint8)
    np.testing.assert_allclose(arr(x / -3), np.array([1, 2, 3]) / -3, rtol=1e-6)
    np.testing.assert_allclose(arr(-3 / x), -3 / np.array([1, 2, 3]), rtol=1e-6)
    y = torch.tensor([1, 2, 3], dtype=torch.int8)
    np.testing.assert_allclose(arr(y / 200), np.array([1, 2, 3]) / 200, rtol=1e-6)
    np.testing.assert_allclose(arr(torch.div(y, 1000)), np.array([1, 2, 3]) / 1000, rtol=1e-6)
    assert (x / -3).dtype is torch.float32


def test_scalar_first_int_wraps_like_scalar_second():
    x = torch.tensor([1, 2, 3], dtype=torch.uint8)
    r = 300 - x
    assert r.dtype is torch.uint8 and r.tolist() == [43, 42, 41]
    assert (x - 300).tolist() == [213, 214, 215]


@pytest.mark.parametrize("f", [lambda: torch.ones(3) - torch.ones(3, dtype=torch.bool),
                               lambda: torch.ones(3, dtype=torch.bool) - torch.ones(3),
                               lambda: torch.ones(3, dtype=torch.int64) - True,
                               lambda: True - torch.ones(3),
                               lambda: torch.ones(3, dtype=torch.bool) - 2,
                               lambda: torch.sub(torch.ones(3), torch.zeros(3, dtype=torch.bool)),
                               lambda: torch.ones(3).sub_(True)])
def test_subtraction_with_a_bool_operand_raises(f):
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool tensor"):
        f()


def test_bool_floor_division_and_remainder_not_implemented():
    a = torch.tensor([True, False])
    for f in (lambda: a // a, lambda: a % True, lambda: torch.remainder(a, a),
              lambda: torch.div(a, a, rounding_mode="floor"), lambda: torch.div(a, a, rounding_mode="trunc")):
        with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
            f()


def test_bitwise_on_float_errors():
    x = torch.ones(3)
    for f in (lambda: x & x, lambda: torch.bitwise_xor(x, 1), lambda: torch.bitwise_not(x)):
        with pytest.raises(NotImplementedError):
            f()
    with pytest.raises(TypeError, match="only implemented on integer and Boolean-type tensors"):
        ~x
    with pytest.raises(NotImplementedError):
        torch.tensor([True]) ** torch.tensor([True])


def test_add_sub_alpha_rules():
    i = torch.ones(3, dtype=torch.int64)
    with pytest.raises(RuntimeError, match="alpha must not be a floating point number"):
        torch.add(i, i, alpha=2.5)
    with pytest.raises(RuntimeError, match="alpha must not be a floating point number"):
        torch.sub(i, 1, alpha=0.5)
    with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean results"):
        torch.add(torch.ones(3), 1, alpha=True)
    b = torch.add(torch.tensor([True, False, False]), torch.tensor([False, False, True]), alpha=2)
    assert b.dtype is torch.bool and b.tolist() == [True, False, True]
    assert torch.add(i, i, alpha=3).tolist() == [4, 4, 4]
    np.testing.assert_allclose(arr(torch.sub(torch.ones(2), torch.ones(2), alpha=0.5)), [0.5, 0.5])


# ---- clamp / where / masked_fill on integer tensors ----
def test_clamp_integer_bounds_are_converted_like_fill():
    x = torch.tensor([1, 2, 3], dtype=torch.uint8)
    assert torch.clamp(x, -1, 1).tolist() == [1, 1, 1]  # -1 -> 255, then max(x, 255) clipped to 1
    assert torch.clamp(x, min=-1).tolist() == [255, 255, 255]
    y = torch.tensor([1, 2, 3], dtype=torch.int8)
    for kw in (dict(max=200), dict(min=-200), dict(min=1000, max=2000)):
        with pytest.raises(RuntimeError, match="value cannot be converted to type int8_t without overflow"):
            torch.clamp(y, **kw)
    r = torch.clamp(torch.tensor([True, False]), min=0)
    assert r.dtype is torch.int64 and r.tolist() == [1, 0]
    r = torch.clamp(y, min=1.5)
    assert r.dtype is torch.float32 and r.tolist() == [1.5, 2.0, 3.0]


def test_where_and_masked_fill_check_integer_scalars():
    y = torch.tensor([1, 2, 3], dtype=torch.int8)
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.where(y > 1, y, 200)
    with pytest.raises(RuntimeError, match="without overflow"):
        y.masked_fill(y > 1, 200)
    assert y.masked_fill(y > 1, -5).tolist() == [1, -5, -5]
    assert torch.where(y > 1, y, 2.5).dtype is torch.float32


# ---- unary ops on bool ----
def test_unary_ops_on_bool_tensors():
    b = torch.tensor([True, False, True])
    s = torch.sign(b)
    assert s.dtype is torch.bool and s.tolist() == [True, False, True]
    sq = torch.square(b)
    assert sq.dtype is torch.int64 and sq.tolist() == [1, 0, 1]
    with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool tensor"):
        torch.neg(b)
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        torch.relu(b)
    for f in (torch.abs, torch.floor, torch.ceil, torch.round, torch.trunc):
        with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
            f(b)


# ---- fmod ----
def test_fmod_is_exact_and_handles_infinities():
    x = torch.tensor([1e10, 123456789.0, -7.0, 7.0, 2.5, -1.0], dtype=torch.float32)
    d = torch.tensor([3.0, 3.0, 2.0, -2.0, math.inf, -math.inf], dtype=torch.float32)
    np.testing.assert_array_equal(arr(torch.fmod(x, d)), np.fmod(arr(x), arr(d)))
    np.testing.assert_array_equal(arr(x.fmod(3.0)), np.fmod(arr(x), np.float32(3.0)))
    assert np.isnan(arr(torch.fmod(torch.tensor([1.0, math.inf]), torch.tensor([0.0, 2.0])))).all()
    assert torch.tensor([-7, 7, -3]).fmod(2).tolist() == [-1, 1, -1]
    g = torch.tensor([2.0, -3.7], requires_grad=True)
    torch.fmod(g, 1.5).sum().backward()
    np.testing.assert_allclose(arr(g.grad), [1.0, 1.0])
    assert torch.tensor([-1.5, 1.5]).fix().tolist() == [-1.0, 1.0]


# ---- reductions ----
def test_reduction_errors_on_empty_inputs():
    e = torch.ones(0, 3)
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        torch.amax(e)
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        torch.amin(e, 0)
    with pytest.raises(IndexError, match="Expected reduction dim to be specified"):
        torch.argmax(torch.ones(0))
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        torch.argmin(e, 0)
    assert torch.argmax(e, 1).shape == (0,)
    with pytest.raises(RuntimeError, match="does not support bool input"):
        torch.tensor([True, False]).argmax()


def test_all_any_over_no_dims_are_elementwise():
    x = torch.tensor([[1, 0], [2, 3]])
    assert torch.all(x, ()).tolist() == [[True, False], [True, True]]
    u = torch.any(x.to(torch.uint8), dim=())
    assert u.dtype is torch.uint8 and u.tolist() == [[1, 0], [1, 1]]
    assert torch.all(x).item() is False


def test_nansum_of_integers_is_int64():
    r = torch.nansum(torch.tensor([1, 2, 3], dtype=torch.int8))
    assert r.dtype is torch.int64 and r.item() == 6
    assert torch.nansum(torch.tensor([True, True])).dtype is torch.int64


def test_max_min_dim_return_types():
    r = torch.max(torch.tensor([[1.0, 3.0]]), 1)
    assert type(r).__name__ == "max" and (r.values, r.indices) == tuple(r)
    assert repr(r).startswith("coretorch.return_types.max(\nvalues=tensor([3.])")
    assert type(torch.min(torch.ones(2, 2), 0)).__name__ == "min"


def test_float16_reductions_accumulate_in_float32():
    rng = np.random.default_rng(0)
    x = (rng.random(20000) * 0.1 + 0.3).astype(np.float16)
    ref = np.cumsum(x.astype(np.float64))
    np.testing.assert_allclose(arr(torch.from_numpy(x).cumsum(0)).astype(np.float64), ref, rtol=2e-3)
    X = rng.random((50, 4000)).astype(np.float16)
    t = torch.from_numpy(X)
    np.testing.assert_allclose(float(t.std()), X.astype(np.float64).std(ddof=1), rtol=2e-3)
    np.testing.assert_allclose(float(t.norm()), np.linalg.norm(X.astype(np.float64)), rtol=2e-3)
    np.testing.assert_allclose(arr(t.var(1)).astype(np.float64), X.astype(np.float64).var(1, ddof=1), rtol=3e-3)
    np.testing.assert_allclose(float(torch.from_numpy(x).sum()), x.astype(np.float64).sum(), rtol=2e-3)
    np.testing.assert_allclose(float(t.mean()), X.astype(np.float64).mean(), rtol=2e-3)
    assert t.std().dtype is torch.float16 and t.cumsum(1).dtype is torch.float16


def test_float32_cumsum_does_not_drift():
    r = torch.full((10 ** 6,), 0.1).cumsum(0)
    assert abs(float(r[-1]) - 1e5) < 1.0  # a float32 running sum ends near 100958


def test_std_gradient_is_zero_where_std_is_zero():
    x = torch.tensor([[1.0, 1.0, 1.0], [1.0, 2.0, 4.0]], dtype=torch.float64, requires_grad=True)
    x.std(1).sum().backward()
    g = arr(x.grad)
    assert np.all(g[0] == 0)
    v = np.array([1.0, 2.0, 4.0])
    np.testing.assert_allclose(g[1], (v - v.mean()) / (2 * v.std(ddof=1)) * 2 / 2, rtol=1e-12)


def test_logsumexp_double_backward():
    x0 = np.array([[0.3, -1.2, 2.0], [0.5, 0.1, -0.4]])
    x = torch.tensor(x0, requires_grad=True)
    (g,) = torch.autograd.grad(x.logsumexp(1).sum(), x, create_graph=True)
    s = np.exp(x0) / np.exp(x0).sum(1, keepdims=True)
    np.testing.assert_allclose(arr(g), s, rtol=1e-12)
    (gg,) = torch.autograd.grad((g * g).sum(), x)
    # d/dx sum_j s_j^2 = 2 s_i (s_i - sum_j s_j^2)
    expect = 2 * s * (s - (s * s).sum(1, keepdims=True))
    np.testing.assert_allclose(arr(gg), expect, rtol=1e-10)


# ---- shapes, tensor methods ----
def test_shape_helpers():
    assert isinstance(torch.broadcast_shapes((3, 1), (4,)), torch.Size)
    assert torch.broadcast_shapes((3, 1), (4,)) == (3, 4)
    x = torch.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(arr(x.flip(0, 2)), np.flip(arr(x), (0, 2)))
    np.testing.assert_array_equal(arr(x.flip([1])), np.flip(arr(x), 1))
    with pytest.raises(ValueError, match="expected a non-empty list of Tensors"):
        torch.cat([])


def test_tensor_softmax_methods_and_sizes():
    x = torch.tensor([[1.0, 2.0, 3.0]])
    e = np.exp([1.0, 2.0, 3.0])
    np.testing.assert_allclose(arr(x.softmax(1))[0], e / e.sum(), rtol=1e-6)
    np.testing.assert_allclose(arr(x.log_softmax(-1))[0], np.log(e / e.sum()), rtol=1e-6)
    assert x.softmax(1, dtype=torch.float64).dtype is torch.float64
    h = torch.ones(2, 3, dtype=torch.float16)
    assert h.itemsize == 2 and h.nbytes == 12


def test_nonzero_of_a_0d_tensor_as_tuple():
    (r,) = torch.nonzero(torch.tensor(3), as_tuple=True)
    assert r.tolist() == [0]
    (r,) = torch.nonzero(torch.tensor(0), as_tuple=True)
    assert r.tolist() == []


def test_scatter_add_and_index_add_in_place_methods():
    x = torch.zeros(2, 3)
    out = x.scatter_add_(1, torch.tensor([[0, 0], [2, 1]]), torch.ones(2, 2))
    assert out is x and x.tolist() == [[2.0, 0.0, 0.0], [0.0, 1.0, 1.0]]
    y = torch.zeros(3, 2)
    assert y.index_add_(0, torch.tensor([0, 0]), torch.ones(2, 2), alpha=3) is y
    assert y.tolist() == [[6.0, 6.0], [0.0, 0.0], [0.0, 0.0]]


# ---- nn ----
def test_norm_layers_bias_argument_and_repr():
    bn = nn.BatchNorm2d(3, bias=False)
    assert bn.bias is None and sorted(bn.state_dict()) == ["num_batches_tracked", "running_mean", "running_var",
                                                            "weight"]
    assert repr(bn) == "BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=False, track_running_stats=True)"
    x = torch.randn(2, 3, 4, 4)
    m = arr(x).mean((0, 2, 3), keepdims=True)
    v = arr(x).var((0, 2, 3), keepdims=True)
    np.testing.assert_allclose(arr(bn(x)), (arr(x) - m) / np.sqrt(v + 1e-5), rtol=1e-4, atol=1e-5)
    gn = nn.GroupNorm(1, 3, bias=False)
    assert gn.bias is None and repr(gn) == "GroupNorm(1, 3, eps=1e-05, affine=True, bias=False)"
    assert gn(x).shape == (2, 3, 4, 4)
    assert repr(nn.LayerNorm(4, bias=False)) == "LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=False)"
    assert repr(nn.BatchNorm1d(2, affine=False)) == ("BatchNorm1d(2, eps=1e-05, momentum=0.1, affine=False, "
                                                     "bias=False, track_running_stats=True)")
    assert F.softmax(torch.zeros(2), 0).tolist() == [0.5, 0.5]


# ---- binary_cross_entropy: PyTorch's dedicated backward, finite at a 0 or 1 prediction ----
def host(t):
    return t.detach().cpu().numpy()


_BCE_X = np.array([[0.0, 1.0, 0.3], [1.0, 0.0, 0.999]])
_BCE_Y = np.array([[0.2, 0.7, 1.0], [1.0, 0.0, 0.0]])
_BCE_W = np.array([2.0, 0.5, 1.0])


def _bce_expect(x, y, w, reduction):
    """numpy reference: forward with each log clamped at -100; d/dx = (x - y) / max(x (1 - x), EPSILON) (PyTorch's
    EPSILON: 1e-12 as a C float),
    d/dy = -logit(x); times the weight, over numel for 'mean' (the incoming gradient is ones)."""
    with np.errstate(divide="ignore"):
        lx, l1x = np.maximum(np.log(x), -100.0), np.maximum(np.log1p(-x), -100.0)
        gy = np.log1p(-x) - np.log(x)
    loss = -(y * lx + (1 - y) * l1x) * w
    scale = w / x.size if reduction == "mean" else w
    gx = (x - y) / np.maximum(x * (1 - x), float(np.float32(1e-12))) * scale
    out = loss if reduction == "none" else loss.mean() if reduction == "mean" else loss.sum()
    return out, gx, gy * scale


@pytest.mark.parametrize("device", available_devices())
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy_gradients_finite_at_0_and_1(device, reduction, weighted):
    x = torch.tensor(_BCE_X, device=device, requires_grad=True)
    y = torch.tensor(_BCE_Y, device=device, requires_grad=True)
    w = torch.tensor(_BCE_W, device=device) if weighted else None
    loss = F.binary_cross_entropy(x, y, weight=w, reduction=reduction)
    assert type(loss.grad_fn).__name__ == "BinaryCrossEntropyBackward0"
    out, gx, gy = _bce_expect(_BCE_X, _BCE_Y, _BCE_W if weighted else 1.0, reduction)
    np.testing.assert_allclose(host(loss), out, rtol=1e-12)  # the forward still clamps each log at -100
    loss.sum().backward()
    assert np.isfinite(host(x.grad)).all()
    np.testing.assert_allclose(host(x.grad), gx, rtol=1e-12)
    np.testing.assert_allclose(host(y.grad), gy, rtol=1e-12)  # +-inf where x is 0 or 1, as PyTorch
    assert np.isinf(host(y.grad)[[0, 0, 1, 1], [0, 1, 0, 1]]).all()


@pytest.mark.parametrize("device", available_devices())
def test_binary_cross_entropy_zero_prediction_mean_backward(device):
    q = np.linspace(0.05, 0.95, 20).reshape(4, 5).astype(np.float32)
    x = torch.zeros(4, 5, device=device, requires_grad=True)
    F.binary_cross_entropy(x, torch.tensor(q, device=device)).backward()
    assert x.grad.dtype is torch.float32
    np.testing.assert_allclose(host(x.grad), -q / np.float32(1e-12) / 20, rtol=1e-6)


@pytest.mark.parametrize("device", available_devices())
def test_binary_cross_entropy_double_backward(device):
    xv = np.array([[0.3, 0.6], [0.9, 0.05]])
    yv = np.array([[0.2, 1.0], [0.5, 0.0]])
    x = torch.tensor(xv, device=device, requires_grad=True)
    y = torch.tensor(yv, device=device, requires_grad=True)
    (gx,) = torch.autograd.grad(F.binary_cross_entropy(x, y, reduction="sum"), x, create_graph=True)
    np.testing.assert_allclose(host(gx), (xv - yv) / (xv * (1 - xv)), rtol=1e-12)
    ggx, ggy = torch.autograd.grad(gx.sum(), (x, y))
    # PyTorch's binary_cross_entropy_double_backward(_target): (x^2 - 2xy + y) / (x(1-x))^2 and -1 / (x(1-x))
    np.testing.assert_allclose(host(ggx), (xv * xv - 2 * xv * yv + yv) / (xv * (1 - xv)) ** 2, rtol=1e-10)
    np.testing.assert_allclose(host(ggy), -1 / (xv * (1 - xv)), rtol=1e-12)


def test_binary_cross_entropy_argument_checks():
    x = torch.full((2,), 0.5, requires_grad=True)
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        F.binary_cross_entropy(x, torch.ones(2, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'weight'"):
        F.binary_cross_entropy(x, torch.ones(2), weight=torch.ones(2, requires_grad=True))
    with torch.no_grad():  # no graph: a weight that requires grad is fine
        assert F.binary_cross_entropy(x, torch.ones(2), weight=torch.ones(2, requires_grad=True)).item() == \
            pytest.approx(math.log(2.0))


# ---- kl_div: xlogy(target, target) - target * input ----
@pytest.mark.parametrize("device", available_devices())
@pytest.mark.parametrize("reduction", ["sum", "batchmean"])
def test_kl_div_zero_targets(device, reduction):
    xv = np.array([[-1.2, -0.3, -2.0], [-0.5, -0.7, -1.5]])
    tv = np.array([[0.0, 0.3, 0.7], [0.5, 0.0, 0.5]])
    x = torch.tensor(xv, device=device, requires_grad=True)
    t = torch.tensor(tv, device=device, requires_grad=True)
    loss = F.kl_div(x, t, reduction=reduction)
    pos = tv > 0
    safe = np.where(pos, tv, 1.0)
    pointwise = np.where(pos, tv * np.log(safe), 0.0) - tv * xv  # 0 log 0 = 0
    n = 2 if reduction == "batchmean" else 1
    np.testing.assert_allclose(host(loss), pointwise.sum() / n, rtol=1e-12)
    loss.backward()
    np.testing.assert_allclose(host(x.grad), -tv / n, rtol=1e-12)
    # d/dt (t log t - t x) = log t + 1 - x where t > 0.  (Where t == 0 PyTorch's xlogy backward gives 0/0 = nan;
    # coretorch keeps its finite masked value there, so those entries are not pinned.)
    np.testing.assert_allclose(host(t.grad)[pos], ((np.log(safe) + 1 - xv) / n)[pos], rtol=1e-12)


# ---- torch.Size keeps its type through slicing, + and * ----
def test_size_slicing_and_concatenation_give_size():
    s = torch.Size([2, 3, 4])
    for v, expect in ((s[1:], (3, 4)), (s[::-1], (4, 3, 2)), (s[:0], ()), (s + (5,), (2, 3, 4, 5)),
                      ((5,) + s, (5, 2, 3, 4)), (s + s, (2, 3, 4, 2, 3, 4)), (s * 2, (2, 3, 4) * 2),
                      (2 * s, (2, 3, 4) * 2), (sum((s,), ()), (2, 3, 4))):
        assert type(v) is torch.Size and v == expect
    assert type(s[0]) is int and s[0] == 2 and s[-1] == 4 and s[np.int64(1)] == 3
    assert type(torch.zeros(2, 3).shape[1:]) is torch.Size
    assert repr(torch.zeros(2, 3, 4).shape[1:]) == "coretorch.Size([3, 4])"
    with pytest.raises(TypeError):
        s + [5]
    with pytest.raises(TypeError):
        [5] + s
    with pytest.raises(IndexError):
        s[3]


# ---- lr_scheduler state_dict: PyTorch 2.13's keys (``_is_initial``; no ``verbose``) ----
def _sched_opt():
    from coretorch.optim import SGD
    a, b = torch.zeros(2, requires_grad=True), torch.zeros(3, requires_grad=True)
    return SGD([{"params": [a]}, {"params": [b], "lr": 0.05}], lr=0.1, momentum=0.9)


_BASE_KEYS = {"_get_lr_called_within_step", "_is_initial", "_last_lr", "_step_count", "base_lrs", "last_epoch"}
_SCHEDULER_KEYS = {
    "LambdaLR": (lambda S, o: S.LambdaLR(o, lambda e: 0.9 ** e), _BASE_KEYS | {"lr_lambdas"}),
    "MultiplicativeLR": (lambda S, o: S.MultiplicativeLR(o, lambda e: 0.9), _BASE_KEYS | {"lr_lambdas"}),
    "StepLR": (lambda S, o: S.StepLR(o, 2, 0.5), _BASE_KEYS | {"gamma", "step_size"}),
    "MultiStepLR": (lambda S, o: S.MultiStepLR(o, [2, 4], 0.5), _BASE_KEYS | {"gamma", "milestones"}),
    "ConstantLR": (lambda S, o: S.ConstantLR(o, 0.5, 3), _BASE_KEYS | {"factor", "total_iters"}),
    "LinearLR": (lambda S, o: S.LinearLR(o, 0.2, 1.0, 4), _BASE_KEYS | {"start_factor", "end_factor", "total_iters"}),
    "ExponentialLR": (lambda S, o: S.ExponentialLR(o, 0.9), _BASE_KEYS | {"gamma"}),
    "PolynomialLR": (lambda S, o: S.PolynomialLR(o, 4, 2.0), _BASE_KEYS | {"power", "total_iters"}),
    "CosineAnnealingLR": (lambda S, o: S.CosineAnnealingLR(o, 4), _BASE_KEYS | {"T_max", "eta_min"}),
    "OneCycleLR": (lambda S, o: S.OneCycleLR(o, max_lr=0.5, total_steps=12),
                   _BASE_KEYS | {"_anneal_func_type", "_schedule_phases", "cycle_momentum", "total_steps",
                                 "use_beta1"}),
    "SequentialLR": (lambda S, o: S.SequentialLR(o, [S.ConstantLR(o, 0.5, 3), S.ExponentialLR(o, 0.9)], [2]),
                     {"_last_lr", "_milestones", "_schedulers", "last_epoch"}),
    "ChainedScheduler": (lambda S, o: S.ChainedScheduler([S.ConstantLR(o, 0.5, 3), S.ExponentialLR(o, 0.9)]),
                         {"_last_lr", "_schedulers"}),
    "ReduceLROnPlateau": (lambda S, o: S.ReduceLROnPlateau(o, patience=0),
                          {"_last_lr", "best", "cooldown", "cooldown_counter", "default_min_lr", "eps", "factor",
                           "last_epoch", "min_lrs", "mode", "mode_worse", "num_bad_epochs", "patience", "threshold",
                           "threshold_mode"}),
}


@pytest.mark.parametrize("name", sorted(_SCHEDULER_KEYS))
def test_lr_scheduler_state_dict_keys(name):
    import warnings
    from coretorch.optim import lr_scheduler as S
    build, keys = _SCHEDULER_KEYS[name]
    opt = _sched_opt()
    sched = build(S, opt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            opt.step()
            sched.step(5.0) if name == "ReduceLROnPlateau" else sched.step()
    sd = sched.state_dict()
    assert set(sd) == keys
    if "_is_initial" in sd:
        assert sd["_is_initial"] is False and sd["_step_count"] == 4 and sd["last_epoch"] == 3
    for sub in sd.get("_schedulers", ()):
        assert "verbose" not in sub and sub["_is_initial"] is False


def test_lr_scheduler_sequential_milestone_and_resume_like_pytorch():
    import warnings
    from coretorch.optim import lr_scheduler as S
    opt = _sched_opt()
    sched = S.SequentialLR(opt, [S.ExponentialLR(opt, 0.9), S.MultiplicativeLR(opt, lambda e: 0.8)], [3])
    lrs = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the milestone switch does not warn (no deprecated step(epoch))
        for _ in range(4):
            opt.step()
            sched.step()
            lrs.append(opt.param_groups[0]["lr"])
    # at the milestone the multiplicative scheduler is restarted at epoch 0 and applies lambda(0) (not initial)
    np.testing.assert_allclose(lrs, [0.09, 0.081, 0.081 * 0.8, 0.081 * 0.8 * 0.8], rtol=1e-12)
    subs = sched.state_dict()["_schedulers"]
    assert [s["_step_count"] for s in subs] == [3, 2] and [s["last_epoch"] for s in subs] == [2, 1]
    # resuming (last_epoch given): the construction step leaves the rates alone
    for build in (lambda o, e: S.ExponentialLR(o, 0.9, last_epoch=e),
                  lambda o, e: S.CosineAnnealingLR(o, 10, last_epoch=e),
                  lambda o, e: S.PolynomialLR(o, 8, last_epoch=e),
                  lambda o, e: S.MultiplicativeLR(o, lambda k: 0.9, last_epoch=e)):
        o = _sched_opt()
        build(o, -1)
        for g in o.param_groups:
            g["lr"] = 0.02
        s = build(o, 4)
        assert s.last_epoch == 5 and [g["lr"] for g in o.param_groups] == [0.02, 0.02]


def test_lr_scheduler_loads_a_state_dict_of_the_previous_layout():
    from coretorch.optim import lr_scheduler as S
    opt = _sched_opt()
    sched = S.StepLR(opt, 2, 0.5)
    old = dict(sched.state_dict(), verbose=False, last_epoch=3, _step_count=4)
    del old["_is_initial"]
    sched.load_state_dict(old)
    assert sched.last_epoch == 3 and not hasattr(sched, "verbose") and sched._is_initial is False
    assert "verbose" not in sched.state_dict()
    seq = S.SequentialLR(opt, [S.ConstantLR(opt, 0.5, 3), S.ExponentialLR(opt, 0.9)], [2])
    sd = seq.state_dict()
    sd["verbose"] = False
    for sub in sd["_schedulers"]:
        sub["verbose"] = False
    seq.load_state_dict(sd)
    assert "verbose" not in seq.state_dict() and all("verbose" not in s for s in seq.state_dict()["_schedulers"])
    plateau = S.ReduceLROnPlateau(opt)
    plateau.load_state_dict(dict(plateau.state_dict(), verbose=False))
    assert "verbose" not in plateau.state_dict()


# ---- ParameterDict / ParameterList repr: the dict names the tensor type, the list the dtype (as PyTorch) ----
def test_parameter_dict_and_list_repr():
    pd = nn.ParameterDict({"a": nn.Parameter(torch.zeros(1)), "b": torch.zeros(2, 3, dtype=torch.float64),
                           "c": nn.Parameter(torch.zeros(()))})
    pd["h"] = nn.Parameter(torch.zeros(2, dtype=torch.float16), requires_grad=False)
    pd["n"] = 3
    assert repr(pd) == ("ParameterDict(\n"
                        "    (a): Parameter containing: [torch.FloatTensor of size 1]\n"
                        "    (b): Parameter containing: [torch.DoubleTensor of size 2x3]\n"
                        "    (c): Parameter containing: [torch.FloatTensor of size ]\n"
                        "    (h): Parameter containing: [torch.HalfTensor of size 2]\n"
                        "    (n): Object of type: int\n)")
    pl = nn.ParameterList([nn.Parameter(torch.zeros(1)), torch.zeros(2, 3, dtype=torch.float64), 3])
    assert repr(pl) == ("ParameterList(\n"
                        "    (0): Parameter containing: [coretorch.float32 of size 1]\n"
                        "    (1): Parameter containing: [coretorch.float64 of size 2x3]\n"
                        "    (2): Object of type: int\n)")


@pytest.mark.parametrize("device", available_devices())
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("create_graph", [False, True])
def test_cross_entropy_ignored_targets_get_zero_gradient(device, reduction, weighted, create_graph):
    """As PyTorch: an ignored sample's row of the input gradient is 0, also when every target is ignored (the
    'mean' loss is then NaN, but its gradient is 0, not NaN); the other rows keep softmax - onehot scaled."""
    rng = np.random.default_rng(9)
    xv = rng.standard_normal((4, 3))
    wv = np.array([0.5, 2.0, 1.5])
    for tv in ([-100, -100, -100, -100], [2, -100, 0, -100]):
        x = torch.tensor(xv, device=device, requires_grad=True)
        w = torch.tensor(wv, device=device) if weighted else None
        t = torch.tensor(tv, device=device)
        loss = F.cross_entropy(x, t, weight=w, reduction=reduction)
        (g,) = torch.autograd.grad(loss.sum(), x, create_graph=create_graph)
        keep = np.array(tv) != -100
        ws = np.where(keep, (wv if weighted else np.ones(3))[np.where(keep, tv, 0)], 0.0)
        p = np.exp(xv - xv.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        onehot = np.eye(3)[np.where(keep, tv, 0)]
        scale = ws / ws.sum() if reduction == "mean" and ws.sum() else ws
        want = (p - onehot) * scale[:, None]
        got = g.detach().cpu().numpy()
        assert not np.isnan(got).any()
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
        assert not np.signbit(got[~keep]).any()  # +0, as PyTorch leaves unwritten rows
