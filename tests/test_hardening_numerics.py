"""Issue 15, silent wrong numbers and dtype/error rules of the pointwise ops: each expectation is PyTorch 2.13's
(checked by hand against it), derived here with numpy or closed forms; every test runs on every device."""
from __future__ import annotations

import math
import warnings

import ml_dtypes
import numpy as np
import pytest

import coretorch as torch

H, BF = torch.float16, torch.bfloat16
NAN, INF = float("nan"), float("inf")


def T(data, device, **kw):
    return torch.tensor(data, device=device, **kw)


def f32(x):
    return np.asarray(x, np.float32)


# ---- 1. float16/bfloat16 with a Python number: computed in float32 (the op math type), rounded once ----
def test_half_times_scalar_beyond_half_range(device):
    assert (T([0.5, 0.25], device, dtype=H) * 65536.0).tolist() == [32768.0, 16384.0]  # loss scaling
    assert (T([1e-3, 60000.0], device, dtype=H) * 2 ** 20).tolist() == [1049.0, INF]


def test_half_with_0d_cpu_tensor_is_a_scalar(device):
    h = T([0.5], device, dtype=H)
    assert (h * torch.tensor(65536.0)).tolist() == [32768.0]  # a 0-d cpu tensor: a scalar, in float32
    assert (h * torch.tensor(65536, dtype=torch.int32)).tolist() == [32768.0]
    assert (h / torch.tensor(1 / 65536.0)).tolist() == [32768.0]
    assert (T([1000.0], device, dtype=H) * torch.tensor(1.0003)).tolist() == [1000.5]
    assert (T([1000.0], device, dtype=BF) * torch.tensor(1.003)).tolist() == [1004.0]
    assert (torch.tensor(65536.0) * T([0.5], "cpu", dtype=H)).tolist() == [INF]  # first operand: cast, as PyTorch
    b = T([1000.0], device, dtype=BF)
    for r in (b - torch.tensor(30000, dtype=torch.int16), b - 30000, b.clone().sub_(30000)):
        assert r.tolist() == [-28928.0]  # add/sub: 30000 is rounded to bfloat16 (29952) first, as PyTorch
    h = T([1.0], device, dtype=H)
    assert (h + 2049.0).tolist() == [2048.0] and h.clone().add_(2049.0).tolist() == [2048.0]


@pytest.mark.parametrize("dt, np_dt", [(H, np.float16), (BF, ml_dtypes.bfloat16)])
@pytest.mark.parametrize("op, s", [("mul", 1.0003), ("add", 0.0003), ("sub", 0.0003), ("div", 1.0003),
                                   ("div", 70000.0), ("mul", 3.0), ("add", 2049.0), ("sub", -30000.0)])
def test_reduced_float_scalar_op_rounds_once(device, dt, np_dt, op, s):
    x = np.array([1000.0, 1.0, 60000.0, -3.5], np_dt)
    r = getattr(torch, op)(T(x.astype(np.float32), device, dtype=dt), s)
    with np.errstate(over="ignore"):
        # PyTorch: mul/div take the scalar in float32; add/sub round it to the tensor's dtype first (half(1) +
        # 2049.0 is 2048, not 2050); either way the result is rounded once from float32
        sc = np.float32(s) if op in ("mul", "div") else np.float32(np_dt(s))
        want = getattr(np, {"div": "divide", "sub": "subtract", "add": "add", "mul": "multiply"}[op])(
            f32(x), sc).astype(np_dt)
    assert r.dtype is dt
    np.testing.assert_array_equal(r.float().cpu().numpy(), want.astype(np.float32))


def test_half_inplace_divide_by_large_scalar(device):
    h = T([60000.0, 1.0], device, dtype=H)
    h /= 70000.0
    assert h.tolist() == [0.85693359375, 1.430511474609375e-05]  # not 0 (70000 rounded to half is inf)
    h = T([1000.0], device, dtype=H)
    h *= 1.0003
    assert h.tolist() == [1000.5]
    h = T([0.5], device, dtype=H)
    h.add_(T([1.0], device, dtype=H), alpha=1000.0)
    assert h.tolist() == [1000.5]


@pytest.mark.parametrize("dt", [H, BF])
def test_reduced_float_setitem_out_of_range_is_inf(device, dt):
    x = torch.zeros(3, dtype=dt, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and silently, as PyTorch
        x[...] = 2 ** 40 if dt is H else 1e39
        x[1] = -1e300
    assert x.tolist() == [INF, -INF, INF]


@pytest.mark.parametrize("dt", [H, BF, torch.float32])
def test_fill_and_alpha_out_of_range_still_raise(device, dt):
    big = 1e39 if dt is not torch.float32 else 1e300
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.zeros(2, dtype=dt, device=device).fill_(big)
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.add(torch.ones(1, dtype=dt, device=device), torch.ones(1, dtype=dt, device=device), alpha=big)
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.ones(2, dtype=dt, device=device).masked_fill(T([True, False], device), big)


# ---- 2. alpha: promote first, then scale ----
def test_add_alpha_promotes_before_scaling(device):
    x = T([5.5], device)
    x.add_(T([8], device, dtype=torch.uint8), alpha=-1)
    assert x.tolist() == [-2.5]
    a, b = T([1, 2], device, dtype=torch.int32), T([-78, 100], device, dtype=torch.int8)
    r = torch.add(a, b, alpha=2)
    assert r.dtype is torch.int32 and r.tolist() == [-155, 202]
    assert torch.sub(a, b, alpha=2).tolist() == [157, -198]
    f, u = T([5.5], device), T([200], device, dtype=torch.uint8)
    assert torch.add(f, u, alpha=1.5).tolist() == [305.5]
    assert torch.sub(f, T([8], device, dtype=torch.uint8), alpha=-1).tolist() == [13.5]
    # same dtype: wraps as PyTorch (uint8 1 + 2 * 200 = 401 = 145 mod 256)
    assert torch.add(T([1, 2], device, dtype=torch.uint8), T([200, 100], device, dtype=torch.uint8),
                     alpha=2).tolist() == [145, 202]
    assert torch.add(T([1], device, dtype=torch.int8), 100, alpha=2).tolist() == [-55]
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.add(T([1], device, dtype=torch.int8), T([1], device, dtype=torch.int8), alpha=300)


def test_add_alpha_gradient_keeps_dtype(device):
    a = T([1.0, 2.0], device, dtype=torch.float64, requires_grad=True)
    b = T([3.0, 4.0], device, requires_grad=True)
    torch.add(a, b, alpha=3).sum().backward()
    assert a.grad.tolist() == [1.0, 1.0] and b.grad.tolist() == [3.0, 3.0] and b.grad.dtype is torch.float32


# ---- 3. true division of integers ----
def test_true_division_by_0d_integer_tensor(device):
    u = T([200, 7], device, dtype=torch.uint8)
    for d in (T(-1, device), T(-1, device, dtype=torch.int8)):
        r = u / d
        assert r.dtype is torch.float32 and r.tolist() == [-200.0, -7.0]
    assert (u / T(300, device)).tolist() == f32([200 / 300, 7 / 300]).tolist()
    assert (T(300, device) / u).tolist() == f32([1.5, 300 / 7]).tolist()


# ---- 4. masked_fill converts the value to the input's dtype first ----
def test_masked_fill_integer_keeps_unmasked_exact(device):
    x = T([1530042770, 3], device, dtype=torch.int32)
    m = T([False, True], device)
    assert x.masked_fill(m, 0.5).tolist() == [1530042770, 0]
    assert x.masked_fill(m, -2.7).tolist() == [1530042770, -2]
    assert T([2 ** 62 + 1, 3], device).masked_fill(m, 1.5).tolist() == [2 ** 62 + 1, 1]
    assert T([1, 3], device, dtype=torch.uint8).masked_fill(m, -1).tolist() == [1, 255]
    assert T([True, False], device).masked_fill(m, 2).tolist() == [True, True]
    assert T([1, 3], device, dtype=torch.int8).masked_fill(m, T(1.5, device)).tolist() == [1, 1]
    assert T([1, 3], device, dtype=torch.int32).masked_fill(m, True).tolist() == [1, 1]


@pytest.mark.parametrize("dt, v", [(torch.int8, 300), (torch.int8, 300.0), (torch.int8, 127.5),
                                   (torch.uint8, -300), (torch.uint8, -1.0), (torch.int32, NAN),
                                   (torch.int32, INF), (H, 1e5)])
def test_masked_fill_out_of_range_raises(device, dt, v):
    x = T([1, 3], device, dtype=dt)
    for m in ([False, True], [False, False]):  # checked whatever the mask holds
        with pytest.raises(RuntimeError, match="without overflow"):
            x.masked_fill(T(m, device), v)
    with pytest.raises(RuntimeError, match="without overflow"):
        T([1, 3], device, dtype=torch.int8).masked_fill(T([False, True], device), T(300, device))


# ---- 5. sigmoid keeps relative precision for negative inputs ----
def test_sigmoid_float32_negative_inputs(device):
    xs = [-25.0, -88.0, -104.0, -10.0, -1.0, 0.0, 3.0, 25.0, NAN, INF, -INF]
    r = torch.sigmoid(T(xs, device)).cpu().numpy()
    with np.errstate(over="ignore"):
        want = (1 / (1 + np.exp(-np.array(xs, np.float64)))).astype(np.float32)
    np.testing.assert_allclose(r, want, rtol=1e-6, atol=0)
    assert r[2] == 0.0 and r[1] > 0  # exp(104) overflows float32: 0, as PyTorch; sigmoid(-88) is subnormal
    assert math.isclose(torch.log(torch.sigmoid(T([-25.0], device))).item(), -25.0, rel_tol=1e-6)


@pytest.mark.parametrize("dt, np_dt", [(H, np.float16), (BF, ml_dtypes.bfloat16)])
def test_sigmoid_reduced_float_rounds_once(device, dt, np_dt):
    xs = np.array([-25.0, -17.0, -10.0, -100.0, 2.0], np.float32)
    with np.errstate(over="ignore"):
        want = (1 / (1 + np.exp(-xs.astype(np.float64)))).astype(np.float32).astype(np_dt).astype(np.float32)
    r = torch.sigmoid(T(xs, device, dtype=dt)).float().cpu().numpy()
    np.testing.assert_allclose(r, want, rtol=1e-2, atol=0)
    assert (r[1] > 0) == (want[1] > 0)  # half: 4.1e-8 rounds to the smallest subnormal, not 0


# ---- 6. NaN, ties and overflow conventions ----
def test_sign_nan_is_zero(device):
    for dt in (torch.float32, H, BF, torch.float64):
        r = torch.sign(T([NAN, -0.0, 0.0, 2.0, -3.0], device, dtype=dt)).float().cpu().numpy()
        assert r.tolist() == [0.0, 0.0, 0.0, 1.0, -1.0] and not np.signbit(r[1])
    assert torch.sign(T([-3, 0, 2], device)).tolist() == [-1, 0, 1]


def test_relu_gradient_at_nan_passes(device):
    x = T([NAN, 0.0, 1.0, -1.0], device, requires_grad=True)
    torch.relu(x).backward(torch.ones(4, device=device))
    assert x.grad.tolist() == [1.0, 0.0, 1.0, 0.0]
    x = T([NAN, 0.0, 2.0], device, requires_grad=True)
    torch.relu(x).sum().backward(create_graph=True)  # the differentiable branch too
    assert x.grad.tolist() == [1.0, 0.0, 1.0]


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_maximum_minimum_gradient_ties_and_nan(device, op):
    a_v = [1.0, 2.0, NAN, 1.0, NAN, 3.0]
    b_v = [1.0, 1.0, 1.0, NAN, NAN, 3.0]
    a = T(a_v, device, requires_grad=True)
    b = T(b_v, device, requires_grad=True)
    getattr(torch, op)(a, b).backward(torch.ones(6, device=device))
    # PyTorch: halved at ties, masked where an operand loses; NaN compares false, so both get the gradient
    ga = [0.5, 1.0, 1.0, 1.0, 1.0, 0.5] if op == "maximum" else [0.5, 0.0, 1.0, 1.0, 1.0, 0.5]
    gb = [0.5, 0.0, 1.0, 1.0, 1.0, 0.5] if op == "maximum" else [0.5, 1.0, 1.0, 1.0, 1.0, 0.5]
    assert a.grad.tolist() == ga and b.grad.tolist() == gb


def test_clamp_nan_bounds_and_min_above_max(device):
    x = T([NAN, 1.0, 5.0], device)
    for kw in (dict(min=NAN), dict(max=NAN), dict(min=NAN, max=2.0), dict(min=0.0, max=NAN)):
        assert np.isnan(x.clamp(**kw).cpu().numpy()).all(), kw
    assert T([0.0, 1.5, 5.0], device).clamp(min=2.0, max=1.0).tolist() == [1.0, 1.0, 1.0]
    assert T([0, 1, 5], device).clamp(min=3, max=1).tolist() == [1, 1, 1]
    assert T([NAN, 1.0], device).clamp(0.0, 2.0).cpu().numpy()[0] != 0  # a NaN input stays NaN
    g = T([NAN, 0.0, 1.0, 2.0, 3.0], device, requires_grad=True)
    g.clamp(1.0, 2.0).backward(torch.ones(5, device=device))
    assert g.grad.tolist() == [0.0, 0.0, 1.0, 1.0, 0.0]


def test_std_var_accumulate_without_overflow(device):
    x = T([1e30, 1e30, 3e30], device)
    want = np.std(np.array([1e30, 1e30, 3e30]), ddof=1)
    assert math.isclose(x.std().item(), want, rel_tol=1e-6)  # finite, as PyTorch
    assert x.var().item() == INF  # 1.3e60 does not fit float32
    s, m = torch.std_mean(x)
    assert math.isclose(s.item(), want, rel_tol=1e-6) and math.isclose(m.item(), 5e30 / 3, rel_tol=1e-6)
    assert math.isclose(T([1e20, 3e20], device).std().item(), math.sqrt(2) * 1e20, rel_tol=1e-6)
    y = T([1e18, -1e18] * 500, device)  # the squares' sum overflows float32, the variance does not
    assert math.isclose(y.var().item(), 1e36 * 1000 / 999, rel_tol=1e-6)
    assert y.var().dtype is torch.float32
    assert math.isclose(T([[1e30, 3e30]], device).std(dim=1).item(), math.sqrt(2) * 1e30, rel_tol=1e-6)
    # norm squares in float32 as PyTorch: inf for 1e30 (PyTorch does not scale)
    with np.errstate(over="ignore"):
        assert T([1e30, 1e30], device).norm().item() == INF


def test_std_gradient_unchanged(device):
    x = T([1.0, 2.0, 4.0], device, requires_grad=True)
    y = x.std()
    y.backward()
    assert type(y.grad_fn).__name__ == "StdBackward0" and y.dtype is torch.float32
    v = np.array([1.0, 2.0, 4.0])
    np.testing.assert_allclose(x.grad.cpu().numpy(), (v - v.mean()) / (2 * np.std(v, ddof=1)), rtol=1e-5)


# ---- 7. errors and dtypes ----
def test_lerp_rules(device):
    i = T([1, 2], device)
    with pytest.raises(NotImplementedError, match="lerp_kernel_scalar"):
        torch.lerp(i, T([3, 4], device), 0.5)
    with pytest.raises(NotImplementedError, match="lerp_kernel_tensor"):
        torch.lerp(i, T([3, 4], device), T([1, 1], device))
    with pytest.raises(NotImplementedError):
        torch.lerp(T([True], device), T([False], device), 0.5)
    with pytest.raises(RuntimeError, match="expected dtype"):
        torch.lerp(T([1.0], device), T([3], device), 0.5)
    with pytest.raises(NotImplementedError):
        i.clone().lerp_(T([3, 4], device), 0.5)
    # PyTorch's formula from `end` for |weight| >= 0.5: weight 1 gives `end` exactly
    assert torch.lerp(T([1e8], device), T([1.0], device), 1.0).tolist() == [1.0]
    assert torch.lerp(T([1e8, 1e8], device), T([1.0, 1.0], device), T([1.0, 0.25], device)).tolist() == \
        [1.0, 75000000.0]
    x = T([2.0, 3.0], device, requires_grad=True)
    torch.lerp(x, T([5.0, 7.0], device), 0.75).sum().backward()
    assert x.grad.tolist() == [0.25, 0.25]


def test_sub_with_bool_raises(device):
    for a, b in ((T([True], device), T([1], device)), (T([1], device), T([True], device)),
                 (T([True], device), 1), (1, T([True], device)), (T([1.0], device), True)):
        with pytest.raises(RuntimeError, match="logical_not"):
            torch.sub(a, b) if isinstance(a, torch.Tensor) else a - b
    with pytest.raises(RuntimeError, match="logical_xor"):
        T([True], device) - T([True], device)


@pytest.mark.parametrize("call", [
    lambda z: z.sum(1), lambda z: z.sum(-2), lambda z: z.softmax(1), lambda z: z.unsqueeze(2),
    lambda z: z.squeeze(1), lambda z: z.transpose(0, 1), lambda z: z.flatten(1), lambda z: z.cumsum(1),
    lambda z: z.argmax(1), lambda z: z.max(1), lambda z: z.mean(1), lambda z: z.flip(1), lambda z: z.std(dim=1),
    lambda z: z.norm(dim=1), lambda z: z.logsumexp(1), lambda z: z.any(1), lambda z: z.prod(1),
    lambda z: z.amax(1), lambda z: torch.stack([z, z], 2), lambda z: z.var(1), lambda z: z.movedim(1, 0),
    lambda z: z.roll(1, 0), lambda z: z.roll(1, 1), lambda z: z.stride(0), lambda z: z.size(-1),
    lambda z: z.size(0)])
def test_zero_dim_out_of_range_dims_raise_index_error(device, call):
    with pytest.raises(IndexError):
        call(T(3.0, device))


def test_zero_dim_shape_ops_that_work(device):
    z = T(3.0, device)
    assert z.sum(0).item() == 3.0 and z.sum(-1).item() == 3.0 and z.flip(0).item() == 3.0
    assert z.flatten().shape == (1,) and z.flatten(0, -1).shape == (1,)
    for r in (z.movedim(0, 0), z.movedim(-1, 0), z.permute([])):
        assert r.shape == () and r.item() == 3.0
    with pytest.warns(UserWarning, match="deprecated on 0-D"):
        assert z.mT.shape == () and z.mT.item() == 3.0
    with pytest.raises(RuntimeError, match="only supported on matrices"):
        T([1.0, 2.0], device).mT
    x = T([[1.0, 2.0]], device)
    assert x.mT.shape == (2, 1)


def test_permute_without_dims_is_type_error(device):
    for x in (T(3.0, device), T([1.0, 2.0], device)):
        with pytest.raises(TypeError, match="dims"):
            x.permute()
        with pytest.raises(TypeError, match="dims"):
            torch.permute(x)
    with pytest.raises(RuntimeError):
        T(3.0, device).permute(0)


def test_bool_and_mixed_matmul(device):
    b = lambda *s: torch.zeros(*s, dtype=torch.bool, device=device)  # noqa: E731
    r = b(0, 3) @ b(3, 2)
    assert r.dtype is torch.bool and r.shape == (0, 2)
    r = b(2, 0) @ b(0, 2)  # k = 0: the empty sum, all False
    assert r.dtype is torch.bool and r.tolist() == [[False, False], [False, False]]
    assert (b(0, 2, 2) @ b(0, 2, 2)).shape == (0, 2, 2)
    assert torch.mm(b(0, 3), b(3, 2)).shape == (0, 2)
    with pytest.raises(NotImplementedError):
        b(2, 3) @ b(3, 2)
    with pytest.raises(NotImplementedError):
        b(0) @ b(0)
    for x, y in ((torch.ones(0, 2, device=device), torch.ones(2, 2, dtype=torch.int64, device=device)),
                 (torch.ones(2, 0, device=device), torch.ones(0, 2, dtype=torch.float64, device=device)),
                 (torch.ones(0, device=device), torch.ones(0, dtype=torch.float64, device=device))):
        with pytest.raises(RuntimeError):
            x @ y
    i = torch.ones(2, 2, dtype=torch.int32, device=device)
    assert (i @ i).dtype is torch.int32 and (i @ i).tolist() == [[2, 2], [2, 2]]


def test_empty_integer_floor_division(device):
    e = torch.zeros(0, dtype=torch.int64, device=device)
    for r in (e // e, e // 0, e % 0, torch.div(e, 0, rounding_mode="trunc"), torch.div(e, 0, rounding_mode="floor")):
        assert r.shape == (0,) and r.dtype is torch.int64
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        (torch.ones(1, dtype=torch.int64, device=device) // 0).tolist()


def test_cat_legacy_empty_takes_part_in_the_dtype(device):
    i = T([1, 2], device, dtype=torch.int32)
    e = T([], device)
    for parts in ([i, e], [e, i]):
        r = torch.cat(parts)
        assert r.dtype is torch.float32 and r.tolist() == [1.0, 2.0]
    assert torch.cat([i, T([], device, dtype=torch.int64)]).dtype is torch.int64
    assert torch.cat([i, T([], device, dtype=torch.float16)]).dtype is torch.float16
    assert torch.cat([T([[1, 2]], device, dtype=torch.int32), e]).dtype is torch.float32
    assert torch.cat([T([True], device), e]).dtype is torch.float32
    assert torch.cat([T([True], device), T([], device, dtype=torch.uint8)]).dtype is torch.uint8
    assert torch.cat([T([], device, dtype=torch.int32), e]).dtype is torch.float32


def test_integer_addmm_family_truncates_float_scalars(device):
    ii = T([[1, 2], [3, 4]], device, dtype=torch.int32)
    p = np.array([[7, 10], [15, 22]])
    m = np.array([[1, 2], [3, 4]])
    for beta, alpha in ((0.5, 1), (1.5, 2.5), (2.0, 1), (2, 3), (0.0, 1), (True, 1)):
        r = torch.addmm(ii, ii, ii, beta=beta, alpha=alpha)
        assert r.dtype is torch.int32
        assert r.tolist() == (int(beta) * m + int(alpha) * p).tolist()
    assert torch.addmm(ii, ii, ii, alpha=0.5).tolist() == m.tolist()
    assert torch.addmv(ii[0], ii, ii[0], beta=0.5).tolist() == [5, 11]
    assert torch.baddbmm(ii[None], ii[None], ii[None], beta=0.5).tolist() == [p.tolist()]
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.addmm(ii, ii, ii, beta=NAN)


def test_number_divided_by_tensor_is_reciprocal_times_number(device):
    x = T([7.0, 3.0, 11.0, 13.0], device)
    want = (np.float32(1) / f32([7.0, 3.0, 11.0, 13.0])) * np.float32(3.0)  # PyTorch's __rtruediv__, its rounding
    assert (3.0 / x).tolist() == want.tolist()
    assert (3 / T([7, 2], device)).tolist() == [want[0].item(), 1.5]
    assert (1e5 / T([4.0], device, dtype=H)).tolist() == [24992.0]  # 0.25 * 1e5 in float32, rounded to half
    x = T([7.0, 3.0], device, requires_grad=True)
    (3.0 / x).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), -3.0 / np.array([49.0, 9.0]), rtol=1e-6)


def test_fmod_casts_before_abs(device):
    a = T([-128, -1, 100, 7], device, dtype=torch.int8)
    assert torch.fmod(a, 70000.0).tolist() == [-128.0, -1.0, 100.0, 7.0]  # abs(int8 -128) must not wrap
    assert torch.fmod(a, T([3.0, 1000.0, -0.5, 1e30], device, dtype=BF)).tolist() == [-2.0, -1.0, 0.0, 7.0]
    want = np.fmod(f32([-128, -1, 100, 7]), np.float32(-0.0003))
    np.testing.assert_array_equal(torch.fmod(a, -0.0003).cpu().numpy(), want)
    assert torch.fmod(T([3.0, -0.5], device), T([True, True], device)).tolist() == [0.0, -0.5]
    r = torch.fmod(T([True, False], device), 3)
    assert r.dtype is torch.int64 and r.tolist() == [1, 0]
    r = torch.fmod(T([True, False, True], device), T([7, 2, -3], device, dtype=torch.int8))
    assert r.dtype is torch.int8 and r.tolist() == [1, 0, 1]


@pytest.mark.parametrize("dt", [H, BF])
def test_reduced_float_pow_exponent_is_checked(device, dt):
    x = T([1.0, 2.0], device, dtype=dt)
    with pytest.raises(RuntimeError, match="without overflow"):
        x ** 1e39
    assert (x ** 2.0).tolist() == [1.0, 4.0]
    if dt is H:
        with pytest.raises(RuntimeError, match="without overflow"):
            x ** 70000.0


@pytest.mark.parametrize("dt, np_dt", [(H, np.float16), (BF, ml_dtypes.bfloat16)])
def test_reduced_float_scalar_rounded_for_other_ops(device, dt, np_dt):
    x = np.array([1e4, -0.5, 1000.0, 3.0], np_dt)
    t = T(x.astype(np.float32), device, dtype=dt)
    for s in (70000.0 if dt is BF else 3000.7, -0.0003):
        sc = np.float32(np_dt(s))
        for op, npf in (("remainder", np.remainder), ("fmod", np.fmod)):
            want = npf(f32(x), sc).astype(np_dt).astype(np.float32)
            np.testing.assert_allclose(getattr(torch, op)(t, s).float().cpu().numpy(), want, rtol=1e-2, atol=0)
    assert (T([65504.0], device, dtype=H) == 65505.0).tolist() == [True]  # 65505 rounds to half 65504
    assert (T([1.0], device, dtype=H) == 1.0001).tolist() == [True]
    assert (T([1000.0], device, dtype=H) ** 1.0003).tolist() == [1000.0]  # the exponent is half(1.0003) = 1
