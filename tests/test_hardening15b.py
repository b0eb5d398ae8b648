"""Issue 15, the divergences from PyTorch 2.13 left open by the first hardening pass: integer dtype= under autograd,
integer scalars of the fused products, masked_fill broadcasting, NaN-gradient conventions, mixed-device where,
Tensor-only second operands, numpy warnings, take_along_dim wrapping, 0-d shape ops.  Each expectation is
PyTorch 2.13's (checked by hand against it), derived here with numpy or closed forms; every test runs on every
device."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import coretorch as torch

NAN, INF = float("nan"), float("inf")


def T(data, device, **kw):
    return torch.tensor(data, device=device, **kw)


# ---- 1. an integer dtype= on a tensor that requires grad -----------------------------------------------------------
_REDUCE = [lambda x, d: torch.sum(x, dtype=d), lambda x, d: x.sum(0, dtype=d), lambda x, d: torch.prod(x, dtype=d),
           lambda x, d: x.prod(0, dtype=d), lambda x, d: torch.nansum(x, dtype=d)]
_SCAN = [lambda x, d: torch.cumsum(x, 0, dtype=d), lambda x, d: x.cumprod(0, dtype=d)]
_CASES = [(c, d, n) for c in _REDUCE + _SCAN for d, n in ((torch.int64, "Long"), (torch.int32, "Int"))] + \
         [(c, torch.bool, "Bool") for c in _REDUCE]


@pytest.mark.parametrize("call, dtype, name", _CASES)
def test_integer_dtype_of_a_grad_tensor_raises(device, call, dtype, name):
    x = T([1.0, 2.0, 3.0], device, requires_grad=True)
    with pytest.raises(RuntimeError, match=f"Autograd not support dtype: {name}"):
        call(x, dtype)
    with torch.no_grad():  # no graph to record: the cast is allowed
        assert call(x, dtype).dtype is dtype
    assert call(x.detach(), dtype).dtype is dtype
    r = call(x, torch.float64)  # a floating dtype stays differentiable
    assert r.dtype is torch.float64 and r.requires_grad


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_bool_dtype_scans_are_not_implemented(device, op):
    for x in (T([1.0, 2.0], device, requires_grad=True), T([1, 0], device)):
        with pytest.raises(NotImplementedError, match=f"{op}.* not implemented for 'Bool'"):
            getattr(torch, op)(x, 0, dtype=torch.bool)


def test_mean_integer_dtype_names_the_argument(device):
    with pytest.raises(RuntimeError, match="Optional dtype must be .* Got: Int"):
        torch.mean(T([1.0, 2.0], device), dtype=torch.int32)
    with pytest.raises(RuntimeError, match="Input dtype must be .* Got: Long"):
        torch.mean(T([1, 2], device))


# ---- 2. integer fused products with a fractional scalar: truncated (checked), addr raises ---------------------------
def test_addcmul_integer_truncates_value(device):
    a, b, c = T([1, 2, 3], device), T([2, 3, 4], device), T([1, 1, 2], device)
    prod = np.array([2, 3, 8])
    for value, k in ((0.5, 0), (-0.5, 0), (-1.5, -1), (2.7, 2), (True, 1)):
        r = torch.addcmul(a, b, c, value=value)
        assert r.dtype is torch.int64 and r.tolist() == (np.array([1, 2, 3]) + k * prod).tolist()
    y = a.clone()
    y.addcmul_(b, c, value=2.9)
    assert y.tolist() == (np.array([1, 2, 3]) + 2 * prod).tolist()
    u = T([1, 2, 3], device, dtype=torch.uint8)
    assert torch.addcmul(u, u, u, value=-1).tolist() == ((np.array([1, 2, 3]) - np.array([1, 4, 9])) % 256).tolist()
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8_t without overflow"):
        torch.addcmul(u, u, u, value=300)
    with pytest.raises(RuntimeError, match="int64_t without overflow"):
        torch.addcmul(a, b, c, value=1e20)
    assert torch.addcmul(a.float(), b, c, value=0.5).tolist() == [2.0, 3.5, 7.0]  # a float result keeps it


def test_integer_products_truncate_alpha_beta(device):
    m = T([[1, 2], [3, 4]], device)
    v = T([1, 2], device)
    mm = np.array([[7, 10], [15, 22]])
    assert torch.addmm(m, m, m, alpha=0.5).tolist() == [[1, 2], [3, 4]]
    assert torch.addmm(m, m, m, alpha=-1.5, beta=-0.5).tolist() == (-mm).tolist()
    assert torch.addmv(v, m, v, alpha=2.0, beta=1.5).tolist() == (v.tolist() + 2 * np.array([5, 11])).tolist()
    b = torch.ones(2, 2, 2, dtype=torch.int64, device=device)
    assert torch.baddbmm(b, b, b, beta=0.5, alpha=1.9).tolist() == np.full((2, 2, 2), 2).tolist()
    assert torch.addbmm(m, b, b, beta=2.0).tolist() == (2 * np.array([[1, 2], [3, 4]]) + 4).tolist()


def test_addr_scalar_checks(device):
    m, v = T([[1, 2], [3, 4]], device), T([1, 2], device)
    with pytest.raises(RuntimeError, match="argument alpha must not be a floating point number"):
        torch.addr(m, v, v, alpha=0.5)
    with pytest.raises(RuntimeError, match="argument beta must not be a floating point number"):
        torch.addr(m, v, v, beta=1.5, alpha=1.5)  # beta is checked first
    with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean results"):
        torch.addr(m, v, v, alpha=True)
    with pytest.raises(RuntimeError, match="Boolean beta only supported for Boolean results"):
        torch.addr(m.float(), v.float(), v.float(), beta=False)
    assert torch.addr(m, v, v, beta=0).tolist() == [[1, 2], [2, 4]]


# ---- 6. the input of a fused product must expand to the product's shape, whatever beta is ---------------------------
@pytest.mark.parametrize("beta", [1, 0, 2])
def test_addmm_input_must_expand(device, beta):
    a, b = torch.ones(2, 4, device=device), torch.ones(4, 3, device=device)
    for shape in ((3,), (1, 3), (2, 1), (), (1,)):
        r = torch.addmm(torch.ones(shape, device=device), a, b, beta=beta)
        assert r.shape == (2, 3) and r.tolist() == np.full((2, 3), 4.0 + beta).tolist()
    for shape in ((4,), (2,), (2, 2), (3, 3)):
        with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(\d\) must match the existing size"):
            torch.addmm(torch.ones(shape, device=device), a, b, beta=beta)
    with pytest.raises(RuntimeError, match="the number of sizes provided"):
        torch.addmm(torch.ones(1, 1, 3, device=device), a, b, beta=beta)


def test_fused_products_input_must_expand(device):
    o = lambda *s: torch.ones(s, device=device)  # noqa: E731
    with pytest.raises(RuntimeError, match="The expanded size of the tensor"):
        torch.baddbmm(o(4, 2, 3), o(5, 2, 4), o(5, 4, 3), beta=0)
    with pytest.raises(RuntimeError, match="The expanded size of the tensor"):
        torch.addbmm(o(2, 2), o(5, 2, 4), o(5, 4, 3))
    with pytest.raises(RuntimeError, match="The expanded size of the tensor"):
        torch.addr(o(2), o(2), o(3), beta=0)
    with pytest.raises(RuntimeError, match=r"size mismatch, got input \(3\), mat \(2x4\), vec \(4\)"):
        torch.addmv(o(3), o(2, 4), o(4))
    with pytest.raises(RuntimeError, match="vector \\+ matrix @ vector expected, got 2, 2, 1"):
        torch.addmv(o(2, 1), o(2, 4), o(4))
    assert torch.baddbmm(o(3), o(5, 2, 4), o(5, 4, 3)).shape == (5, 2, 3)
    assert torch.addmv(o(), o(2, 4), o(4), beta=0).tolist() == [4.0, 4.0]


# ---- 3. masked_fill: out of place self broadcasts with the mask, in place it must not grow ------------------------
def test_masked_fill_broadcasts_self_out_of_place(device):
    mask = T([[True, False, True], [False, False, True]], device)
    want = np.where(np.array(mask.tolist()), 1.0, 0.0).tolist()
    assert torch.zeros(3, device=device).masked_fill(mask, 1.0).tolist() == want
    assert torch.masked_fill(torch.zeros(2, 1, device=device), mask, 1.0).tolist() == want
    assert torch.zeros((), device=device).masked_fill(T([True, False], device), 1.0).tolist() == [1.0, 0.0]
    assert torch.zeros(3, device=device).masked_fill(mask, T(1.0, device)).tolist() == want
    x = torch.zeros(3, device=device, requires_grad=True)
    x.masked_fill(mask, 1.0).sum().backward()  # the gradient sums back over the broadcast rows
    assert x.grad.tolist() == [1.0, 2.0, 0.0]
    for self_shape in ((3,), (2, 1), ()):
        with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
            torch.zeros(self_shape, device=device).masked_fill_(mask if self_shape else mask[0, :2], 1.0)
    with pytest.raises(RuntimeError, match="must match the size"):
        torch.zeros(2, device=device).masked_fill(T([True, False, True], device), 1.0)
    y = torch.zeros(2, 3, device=device)
    y.masked_fill_(T([True, False, True], device), 2.0)  # a smaller mask broadcasts in place too
    assert y.tolist() == [[2.0, 0.0, 2.0]] * 2


def test_masked_fill_integer_value_conversion(device):
    m = T([True, False, True], device)
    i = T([1, 2, 3], device)
    assert i.masked_fill(m, 2.7).tolist() == [2, 2, 2]  # truncated toward zero
    assert i.masked_fill(m, -2.7).tolist() == [-2, 2, -2]
    assert i.masked_fill(m, T(-2.7, device)).tolist() == [-2, 2, -2]
    assert i.to(torch.uint8).masked_fill(m, -1).tolist() == [255, 2, 255]
    for dt, v in ((torch.uint8, 255.5), (torch.uint8, -0.5), (torch.int8, 127.9), (torch.int64, NAN),
                  (torch.int32, 2 ** 31), (torch.float32, 1j)):
        with pytest.raises(RuntimeError, match="without overflow"):
            i.to(dt).masked_fill(m, v)


# ---- 9. take_along_dim: with a dim the indices wrap (Python modulo), without one they are checked ------------------
def test_take_along_dim_wraps_indices_along_dim(device):
    xs = np.arange(6.0).reshape(2, 3)
    x = T(xs.tolist(), device)
    for i in (3, 4, 5, 7, 100, -1, -4, -5, -7, -100):
        idx = T([[i]], device)
        assert torch.take_along_dim(x, idx, 1).tolist() == np.take_along_axis(xs, np.array([[i % 3]]), 1).tolist()
        assert torch.take_along_dim(x, idx, 0).tolist() == np.take_along_axis(xs, np.array([[i % 2]]), 0).tolist()
        assert x.take_along_dim(idx, dim=-1).tolist() == np.take_along_axis(xs, np.array([[i % 3]]), 1).tolist()
    xr = torch.arange(6.0, device=device, dtype=torch.float64, requires_grad=True)
    torch.take_along_dim(xr.view(2, 3), T([[3], [-4]], device), 1).sum().backward()
    assert xr.grad.tolist() == [1.0, 0.0, 0.0, 0.0, 0.0, 1.0]  # rows pick column 0 and column 2


def test_take_along_dim_errors(device):
    x = torch.arange(6.0, device=device).reshape(2, 3)
    for i in (6, -1, -7):  # flattened: a plain gather, negative indices refused too (a device checks on reading)
        with pytest.raises(RuntimeError, match=f"index {i} is out of bounds for dimension 0 with size 6"):
            torch.take_along_dim(x, T([i], device)).tolist()
    s = T(5.0, device)
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        torch.take_along_dim(s, T(0, device), 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.take_along_dim(s, T(0, device), 1)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.take_along_dim(torch.zeros(2, 0, device=device), torch.zeros(2, 1, dtype=torch.int64, device=device), 1)
    e = torch.take_along_dim(torch.zeros(2, 0, device=device), torch.zeros(2, 0, dtype=torch.int64, device=device), 1)
    assert e.shape == (2, 0)


# ---- 10. 0-d tensors in the shape ops ------------------------------------------------------------------------------
def test_zero_dim_shape_op_errors(device):
    s = T(3.0, device)
    for call, exc, msg in ((lambda: s.narrow(0, 0, 1), RuntimeError, r"narrow\(\) cannot be applied to a 0-dim"),
                           (lambda: s.narrow(1, 0, 1), RuntimeError, r"narrow\(\) cannot be applied to a 0-dim"),
                           (lambda: s.chunk(2), RuntimeError, "chunk expects at least a 1-dimensional tensor"),
                           (lambda: s.chunk(0), RuntimeError, "chunk expects at least a 1-dimensional tensor"),
                           (lambda: torch.chunk(s, 1, -1), RuntimeError, "chunk expects at least a 1-dimensional"),
                           (lambda: s.split(1), RuntimeError, "split expects at least a 1-dimensional tensor"),
                           (lambda: s.split([1]), RuntimeError, "split expects at least a 1-dimensional tensor"),
                           (lambda: s.unbind(), IndexError, "Dimension specified as 0 but tensor has no dimensions"),
                           (lambda: s.select(0, 0), IndexError, r"select\(\) cannot be applied to a 0-dim tensor"),
                           (lambda: s.unflatten(0, (1,)), RuntimeError, "Dimension specified as 0 but tensor has no"),
                           (lambda: s.unflatten(1, (1,)), IndexError, "Dimension out of range")):
        with pytest.raises(exc, match=msg):
            call()


# ---- 7. ops without a Scalar overload take Tensors only ------------------------------------------------------------
_TENSOR_ONLY = {"maximum": "other", "minimum": "other", "fmax": "other", "fmin": "other", "atan2": "other",
                "arctan2": "other", "logical_and": "other", "logical_or": "other", "logical_xor": "other",
                "hypot": "other", "ldexp": "other", "logaddexp": "other", "logaddexp2": "other", "dist": "other",
                "isclose": "other", "equal": "other", "allclose": "other", "kron": "other", "inner": "other",
                "heaviside": "values", "dot": "tensor", "outer": "vec2"}


@pytest.mark.parametrize("op", sorted(_TENSOR_ONLY))
def test_tensor_only_ops_refuse_python_numbers(device, op):
    x = T([1.0, 2.0], device)
    name = _TENSOR_ONLY[op]
    for v, tn in ((2, "int"), (2.5, "float"), (True, "bool")):
        with pytest.raises(TypeError, match=rf"^{op}\(\): argument '{name}' \(position 2\) must be Tensor, not {tn}$"):
            getattr(torch, op)(x, v)
        with pytest.raises(TypeError, match=rf"^{op}\(\): argument '{name}' \(position 1\) must be Tensor, not {tn}$"):
            getattr(x, op)(v)
    with pytest.raises(TypeError, match=rf"^{op}\(\): argument 'input' \(position 1\) must be Tensor, not int$"):
        getattr(torch, op)(2, x)


def test_tensor_only_ops_still_work_with_tensors(device):
    x, y = T([1.0, -2.0], device), T([0.5, 3.0], device)
    assert torch.maximum(x, y).tolist() == [1.0, 3.0]
    assert x.minimum(other=y).tolist() == [0.5, -2.0]
    assert torch.atan2(x, T(1.0, device)).tolist() == pytest.approx(np.arctan2([1.0, -2.0], 1.0).tolist())
    assert torch.logical_and(x, T(True, device)).tolist() == [True, True]
    z = x.clone()
    z.atan2_(y)
    assert z.tolist() == pytest.approx(np.arctan2([1.0, -2.0], [0.5, 3.0]).tolist())
    with pytest.raises(TypeError, match=r"atan2_\(\): argument 'other' \(position 1\) must be Tensor, not int"):
        z.atan2_(1)
    with pytest.raises(TypeError, match="argument 'other' must be Tensor, not float"):
        torch.maximum(x, other=1.0)
    assert torch.copysign(x, -1.0).tolist() == [-1.0, -2.0]  # ops with a Scalar overload keep accepting numbers
    assert torch.xlogy(T([2.0], device), 1.0).tolist() == [0.0]


# ---- 4. NaN / zero / infinity gradient conventions ----------------------------------------------------------------
def _grads(device, fn, *vals):
    xs = [T(v, device, dtype=torch.float64, requires_grad=True) for v in vals]
    fn(*xs).sum().backward()
    return [x.grad.tolist() for x in xs]


def _same(got, want):
    """Equal lists where NaN equals NaN."""
    np.testing.assert_array_equal(np.array(got, dtype=float), np.array(want, dtype=float))


def test_atan2_gradient_at_the_origin_is_zero(device):
    a, b = [0.0, 0.0, -0.0, 1.0, NAN, 1.0], [0.0, -0.0, 0.0, 0.0, 1.0, INF]
    ga, gb = _grads(device, torch.atan2, a, b)
    # PyTorch: g * b / (a^2 + b^2), g * -a / (a^2 + b^2) with 1 / 0 masked to 0
    _same(ga, [0.0, 0.0, 0.0, 0.0, NAN, NAN])
    _same(gb, [0.0, 0.0, 0.0, -1.0, NAN, 0.0])
    assert [math.copysign(1, v) for v in ga[:3]] == [1, -1, 1]  # the zeros keep b's sign, as PyTorch
    x = T([0.0], device, dtype=torch.float64, requires_grad=True)
    torch.atan2(x, T(0.0, device, dtype=torch.float64)).sum().backward()
    assert x.grad.tolist() == [0.0]


@pytest.mark.parametrize("op", ["floor", "ceil", "trunc", "round", "sign"])
def test_step_functions_have_zero_gradient_everywhere(device, op):
    (g,) = _grads(device, getattr(torch, op), [NAN, INF, -INF, 1.5, 0.0])
    assert g == [0.0] * 5


def test_frac_gradient_is_one_everywhere(device):
    assert _grads(device, torch.frac, [NAN, INF, -INF, 1.5, 0.0]) == [[1.0] * 5]


def test_prod_gradient_with_zeros_and_infinities(device):
    # no zero anywhere: out / x (an infinite element gets nan); a zero anywhere: the product of the others
    _same(_grads(device, torch.prod, [-INF, 2.0, 3.0])[0], [NAN, -INF, -INF])
    _same(_grads(device, torch.prod, [-INF, 0.0, 3.0])[0], [0.0, -INF, NAN])
    _same(_grads(device, torch.prod, [NAN, 0.0, 3.0])[0], [0.0, NAN, NAN])
    assert _grads(device, torch.prod, [0.0, 2.0, 3.0]) == [[6.0, 0.0, 0.0]]
    assert _grads(device, torch.prod, [INF, 0.0, 0.0]) == [[0.0, 0.0, 0.0]]  # two zeros: zeros (plain backward)
    # along a dim the rule is decided on the whole input: a zero in another row switches every row
    _same(_grads(device, lambda x: torch.prod(x, 1), [[-INF, 2.0, 3.0], [0.0, 1.0, 2.0], [0.0, 0.0, 1.0]])[0],
          [[6.0, -INF, -INF], [2.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    _same(_grads(device, lambda x: torch.prod(x, 1), [[-INF, 2.0, 3.0], [1.0, 1.0, 2.0]])[0],
          [[NAN, -INF, -INF], [2.0, 2.0, 1.0]])
    _same(_grads(device, lambda x: torch.prod(x, 0, keepdim=True), [[-INF, 2.0], [0.0, 1.0], [3.0, 0.0]])[0],
          [[0.0, 0.0], [-INF, 0.0], [NAN, 2.0]])


def test_prod_gradient_twice_without_zeros(device):
    x = T([2.0, 3.0, 4.0], device, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(torch.prod(x), x, create_graph=True)
    assert g.tolist() == [12.0, 8.0, 6.0]
    (h,) = torch.autograd.grad(g.sum(), x)
    assert h.tolist() == [7.0, 6.0, 5.0]  # d/dx_i of sum_j prod_{k != j} x_k


def test_max_of_a_tensor_with_nan_shares_the_gradient_among_the_nans(device):
    assert _grads(device, torch.max, [1.0, NAN, 1.0, NAN]) == [[0.0, 0.5, 0.0, 0.5]]
    assert _grads(device, torch.min, [1.0, NAN, 3.0]) == [[0.0, 1.0, 0.0]]
    assert _grads(device, torch.max, [1.0, 1.0, 0.0]) == [[0.5, 0.5, 0.0]]  # ties share it too
    _same(_grads(device, torch.amax, [1.0, NAN])[0], [NAN, NAN])  # amax keeps plain equality, as PyTorch


def test_pow_gradient_at_zero_exponent(device):
    ga, gb = _grads(device, torch.pow, [0.0, 0.0, 2.0, 0.0], [0.0, 2.0, 3.0, -1.0])
    _same(ga, [0.0, 0.0, 12.0, -INF])
    _same(gb, [0.0, 0.0, 8.0 * math.log(2.0), -INF])


def test_fmod_gradients(device):
    ga, gb = _grads(device, torch.fmod, [1.0, NAN, 1.0, 5.0, -7.0], [0.0, 1.0, INF, -3.0, 2.0])
    assert ga == [1.0] * 5  # the dividend's gradient is 1 everywhere, NaN included
    _same(gb, [-INF, NAN, -0.0, 1.0, 3.0])  # -trunc(a / b)
    x = T([NAN, 5.5], device, dtype=torch.float64, requires_grad=True)
    r = torch.fmod(x, 2.0)
    assert type(r.grad_fn).__name__ == "FmodBackward0"
    r.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    _same(r.tolist(), [NAN, 1.5])


# ---- 5. where with 0-d CPU tensors beside device tensors ---------------------------------------------------------
def test_where_with_0d_cpu_operands(device):
    x, y = T([1.0, 2.0], device), T([3.0, 4.0], device)
    yes, no = torch.tensor(True), torch.tensor(False)  # 0-d, on the CPU
    for cond, want in ((yes, [1.0, 2.0]), (no, [3.0, 4.0])):
        r = torch.where(cond, x, y)
        assert r.device == x.device and r.tolist() == want
    r = torch.where(yes, torch.tensor(5, dtype=torch.int64), y)  # condition and input on the CPU, other on device
    assert r.device == y.device and r.dtype is torch.float32 and r.tolist() == [5.0, 5.0]
    r = torch.where(yes, x, torch.tensor(7.0))
    assert r.device == x.device and r.tolist() == [1.0, 2.0]
    r = torch.where(T([True, False], device), torch.tensor(5.0), x)
    assert r.device == x.device and r.tolist() == [5.0, 2.0]
    assert x.where(no, torch.tensor(0.5)).tolist() == [0.5, 0.5]
    if x.device.type != "cpu":  # a CPU condition with dims is not a scalar: PyTorch's device error
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            torch.where(torch.tensor([True, False]), x, y)


# ---- 8. no numpy RuntimeWarning from IEEE edge cases (PyTorch is silent) -------------------------------------------
_EDGE = [0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, 1e38, -1e38, 100.0]


@pytest.mark.parametrize("op, ref", [("exp", np.exp), ("expm1", np.expm1), ("sin", np.sin), ("cos", np.cos),
                                     ("log", np.log), ("sqrt", np.sqrt), ("rsqrt", lambda a: 1 / np.sqrt(a)),
                                     ("reciprocal", np.reciprocal)])
def test_unary_edge_values_do_not_warn(device, op, ref):
    x = T(_EDGE, device)
    with np.errstate(all="ignore"):
        want = ref(np.array(_EDGE, np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = getattr(torch, op)(x).tolist()
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_scans_and_products_of_edge_values_do_not_warn(device):
    x = T([INF, -INF, 0.0, 2.0], device)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        s, p, pr = torch.cumsum(x, 0).tolist(), torch.cumprod(x, 0).tolist(), torch.prod(x).item()
        q = (x / T([0.0, 0.0, 0.0, 0.0], device)).tolist()
    _same(s, [INF, NAN, NAN, NAN])
    _same(p, [INF, -INF, NAN, NAN])
    assert math.isnan(pr)
    _same(q, [INF, -INF, NAN, INF])


@pytest.mark.parametrize("fn", [lambda a, b: torch.atan2(a, b), lambda a, b: a / b, lambda a, b: a ** b,
                                lambda a, b: torch.logaddexp(a, b), lambda a, b: torch.asin(a) + torch.erf(b),
                                lambda a, b: torch.sinc(a) * torch.logit(b)])
def test_backward_through_edge_values_does_not_warn(device, fn):
    a = T([1e38, 0.0, INF, -INF, NAN, 0.5], device, requires_grad=True)
    b = T([1e-38, 0.0, INF, 1.0, 2.0, 0.25], device, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        fn(a, b).backward(torch.ones(6, device=device))
    assert a.grad.shape == (6,) and b.grad.shape == (6,)
    with warnings.catch_warnings():  # the switch is local to the pass: numpy warns again afterwards
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(RuntimeWarning):
            np.log(np.zeros(1))


def test_acosh_and_logit_gradients_at_domain_edges(device):
    (g,) = _grads(device, torch.acosh, [-INF, -1.0, -2.5, 1.0, 2.0, 0.5])
    _same(g, [0.0, INF, 1 / math.sqrt(5.25), INF, 1 / math.sqrt(3.0), NAN])  # 1 / sqrt(x^2 - 1)
    (g,) = _grads(device, torch.logit, [0.0, 1.0, -1.0, 0.25, 2.0])
    _same(g, [INF, INF, NAN, 1 / (0.25 * 0.75), NAN])  # g / (x (1 - x)), nan outside [0, 1]
    (g,) = _grads(device, lambda x: torch.logit(x, eps=0.1), [0.0, 0.5, 0.95])
    _same(g, [0.0, 4.0, 0.0])  # clamped: no gradient outside [eps, 1 - eps]
    x = T([0.25], device, dtype=torch.float64, requires_grad=True)
    (d,) = torch.autograd.grad(torch.logit(x), x, create_graph=True)
    (dd,) = torch.autograd.grad(d, x)
    assert type(torch.logit(x).grad_fn).__name__ == "LogitBackward0"
    assert dd.tolist() == pytest.approx([-(1 - 2 * 0.25) / (0.25 * 0.75) ** 2])  # twice differentiable


def test_median_of_a_tensor_shares_the_gradient_among_ties(device):
    assert _grads(device, torch.median, [1.0, 1.0, 2.0]) == [[0.5, 0.5, 0.0]]
    assert _grads(device, torch.median, [1.0, NAN, 2.0, NAN]) == [[0.0, 0.5, 0.0, 0.5]]  # NaN result: the NaNs
    assert _grads(device, torch.nanmedian, [1.0, 1.0, 2.0, NAN]) == [[0.5, 0.5, 0.0, 0.0]]
    assert _grads(device, lambda x: torch.median(x, 0)[0], [1.0, 3.0, 2.0]) == [[0.0, 0.0, 1.0]]  # dim: its index
    assert type(torch.median(T([1.0], device, requires_grad=True)).grad_fn).__name__ == "MedianBackward0"


@pytest.mark.parametrize("op", ["var", "std", "var_mean", "std_mean"])
def test_var_std_warn_when_no_degrees_of_freedom(device, op):
    x = T([1.0], device)
    with pytest.warns(UserWarning, match=rf"^{op}\(\): degrees of freedom is <= 0"):
        r = getattr(torch, op)(x)
    r = r[0] if isinstance(r, tuple) else r
    assert math.isnan(r.item())
    with pytest.warns(UserWarning, match="degrees of freedom"):
        getattr(torch, op)(T([1.0, 2.0], device), correction=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        getattr(torch, op)(T([1.0, 2.0], device))  # enough elements: silent


def test_cumprod_gradient_stops_at_the_next_zero(device):
    # d/dx_i sum_k prod_{j<=k} x_j, with the terms past the next zero left out (PyTorch: no inf * 0 = nan from them)
    for v, want in (([0.0, -0.0, INF, 2.0], [1.0, 0.0, 0.0, 0.0]), ([2.0, 0.0, INF], [1.0, INF, 0.0]),
                    ([0.0, 2.0, 0.0, INF], [3.0, 0.0, 0.0, 0.0]), ([2.0, 3.0, 0.0, 4.0, 0.0, 5.0],
                                                                     [4.0, 2.0, 30.0, 0.0, 0.0, 0.0]),
                    ([1.0, 0.0, NAN], [1.0, NAN, 0.0]), ([INF, 0.0, 3.0], [NAN, INF, 0.0])):
        _same(_grads(device, lambda x: torch.cumprod(x, 0), v)[0], want)
    x = T([2.0, 0.0, 3.0], device, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(torch.cumprod(x, 0).sum(), x, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), x)
    # sum_k prod_{j<=k}: x0 + x0 x1 + x0 x1 x2; grad [1 + x1 + x1 x2, x0 + x0 x2, x0 x1]; its column sums
    assert g.tolist() == [1.0, 8.0, 0.0] and h.tolist() == [4.0, 6.0, 2.0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_pow_half_exponents_are_sqrt_and_rsqrt(device, dtype):
    v = [-INF, -1.0, -0.0, 0.0, NAN, INF, 4.0]
    x = T(v, device, dtype=dtype)
    with np.errstate(all="ignore"):
        a = np.array(v)
        _same((x ** 0.5).tolist(), np.sqrt(a))  # (-inf) ** 0.5 is nan as sqrt, not C pow's inf
        _same((x ** -0.5).tolist(), 1 / np.sqrt(a))  # and (-inf) ** -0.5 nan, not 0
        _same(torch.pow(x, 1.5).tolist()[-2:], [INF, 8.0])
    y = T([4.0, 9.0], device, dtype=torch.float64, requires_grad=True)
    (y ** -0.5).sum().backward()
    assert y.grad.tolist() == pytest.approx([-0.5 * 4.0 ** -1.5, -0.5 * 9.0 ** -1.5])
