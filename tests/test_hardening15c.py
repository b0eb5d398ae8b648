"""Issue 15, "find the rest": classes the PyTorch oracle (benchmarks/torch_oracle.py) found in random programs,
each pinned to PyTorch 2.13's behaviour (checked by hand against it) on every installed device."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
from coretorch.testing import available_devices

DEVICES = available_devices()


def arr(t):
    return t.detach().cpu().numpy()


# ---- gather / scatter / scatter_add / scatter_reduce check nothing about an index without elements ----
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("index", [
    lambda d: torch.tensor([], device=d),                              # float32, 1-D (torch.tensor([]))
    lambda d: torch.zeros((0, 1, 1), device=d),                        # more dims than the input
    lambda d: torch.zeros((0, 3), dtype=torch.bool, device=d),
    lambda d: torch.zeros((1, 0), dtype=torch.int16, device=d)])
def test_gather_scatter_take_an_empty_index_of_any_dtype(device, index):
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=device, requires_grad=True)
    i = index(device)
    g = torch.gather(x, 0, i)
    assert g.shape == i.shape and g.dtype is torch.float32 and g.requires_grad
    g.sum().backward()
    assert arr(x.grad).tolist() == [[0.0] * 3] * 2
    src = torch.ones(2, 3, device=device)
    for r in (torch.scatter(x.detach(), 1, i, 7.0), x.detach().scatter_add(0, i, src),
              torch.scatter(x.detach(), 0, i, src), x.detach().scatter_reduce(0, i, src, "sum")):
        np.testing.assert_array_equal(arr(r), arr(x))


@pytest.mark.parametrize("device", DEVICES)
def test_gather_scatter_still_check_a_nonempty_index(device):
    x = torch.ones(2, 3, device=device)
    with pytest.raises(RuntimeError, match="int32/int64"):
        torch.gather(x, 0, torch.tensor([[1.0]], device=device))
    with pytest.raises(RuntimeError, match="int32/int64"):
        x.scatter_add(0, torch.tensor([[1.0]], device=device), x)
    with pytest.raises(RuntimeError, match="int32/int64"):
        torch.index_select(x, 0, torch.tensor([], device=device))  # index_select checks even an empty index


# ---- index_fill of a zero-size tensor: PyTorch reads no index there ----
@pytest.mark.parametrize("device", DEVICES)
def test_index_fill_of_an_empty_tensor(device):
    idx = torch.tensor([0, 0], device=device)
    # nothing to fill, no check: the result is the empty tensor (in the graph)
    for shape, dim in (((0, 0), -1), ((0, 0), -2), ((0, 3), 1)):
        x = torch.zeros(shape, device=device, requires_grad=True)
        r = x.index_fill(dim, torch.tensor([5], device=device), 2.0)
        assert tuple(r.shape) == shape and r.requires_grad
    # an index into an empty dim while the other dims hold elements: RuntimeError (PyTorch's class), not IndexError
    for shape, dim in (((0, 3), 0), ((3, 0), -1), ((0,), 0)):
        with pytest.raises(RuntimeError, match="out of bounds"):
            torch.zeros(shape, device=device).index_fill(dim, idx, 1.0)
        try:
            torch.zeros(shape, device=device).index_fill(dim, idx, 1.0)
        except RuntimeError as e:
            assert not isinstance(e, IndexError)
    # a non-empty tensor keeps PyTorch's IndexError; a float index is an IndexError for index_fill
    with pytest.raises(IndexError, match="out of bounds"):  # (on a device: at the next host read)
        torch.zeros(2, 3, device=device).index_fill(1, torch.tensor([3], device=device), 1.0).tolist()
    with pytest.raises(IndexError, match="int64"):
        torch.zeros(2, device=device).index_fill(0, torch.tensor([0.0], device=device), 1.0)
    r = torch.zeros(2, 3, device=device).index_fill(1, torch.tensor([2, 0], device=device), 1.5)
    np.testing.assert_array_equal(arr(r), [[1.5, 0, 1.5], [1.5, 0, 1.5]])


# ---- subtraction with a bool: checked before alpha scales the operand ----
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("call", [
    lambda x, b: torch.sub(x, True, alpha=0.5),
    lambda x, b: torch.sub(x, b, alpha=2),
    lambda x, b: x.clone().sub_(False, alpha=2),
    lambda x, b: x.clone().sub_(True),
    lambda x, b: torch.sub(x.long(), b, alpha=2),
    lambda x, b: torch.sub(x.to(torch.uint8)[:0], b[:0], alpha=2)])
def test_sub_with_a_bool_raises_with_alpha_too(device, call):
    x = torch.tensor([1.5, -2.0], device=device)
    b = torch.tensor([True, False], device=device)
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool tensor"):
        call(x, b)
    assert torch.sub(x, 1, alpha=2).tolist() == [-0.5, -4.0]
    with pytest.raises(RuntimeError, match="two bool tensors"):
        torch.sub(b, b, alpha=2)


# ---- median of an empty tensor stays in the graph ----
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op, name", [(torch.median, "MedianBackward0"), (torch.nanmedian, "NanmedianBackward0")])
def test_median_of_empty_requires_grad(device, op, name):
    x = torch.zeros(0, device=device, requires_grad=True)
    m = op(x)
    assert m.requires_grad and type(m.grad_fn).__name__ == name and np.isnan(m.item())
    m.backward()
    assert x.grad.shape == (0,)


# ---- fmod_ exists as PyTorch's Tensor.fmod_ (fmod's gradients are issue 15's NaN/zero conventions, elsewhere) ----
@pytest.mark.parametrize("device", DEVICES)
def test_fmod_inplace_method(device):
    xv = np.array([0.0, -0.0, 2.5, -3.5], dtype=np.float32)
    z = torch.tensor(xv, device=device)
    assert z.fmod_(2.0) is z
    np.testing.assert_array_equal(arr(z), np.fmod(xv, 2.0))
    i = torch.tensor([5, -7], device=device)
    i.fmod_(3)
    assert i.tolist() == [2, -1] and i.dtype is torch.int64


# ---- autograd saves only what the needed gradients read (as PyTorch): no spurious version errors ----
@pytest.mark.parametrize("device", DEVICES)
def test_mul_div_remainder_do_not_save_unneeded_operands(device):
    x = torch.tensor([0.75, -0.1], device=device, requires_grad=True)
    c = torch.tensor(0.25, dtype=torch.float64, device=device)
    v = torch.roll(x, -1, -1)
    y = torch.mul(c, v)   # only v requires grad: c is saved, v is not
    v.exp_()              # so modifying v afterwards is fine
    y.sum().backward()
    np.testing.assert_allclose(arr(x.grad), [0.25, 0.25])
    x.grad = None
    v = x * 1.0
    y = (v % 0.25) + torch.div(torch.ones(2, device=device), torch.tensor([2.0, 4.0], device=device) + 0 * v)
    v.relu_()             # remainder by a number saves nothing; div(const, t) saves t only
    y.sum().backward()
    np.testing.assert_allclose(arr(x.grad), [1.0, 1.0])
    # a saved operand that is modified still raises
    v = x * 1.0
    w = torch.ones(2, device=device, requires_grad=True)
    y = v * w
    v.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


@pytest.mark.parametrize("device", DEVICES)
def test_mul_div_remainder_gradients_still_right(device):
    a = torch.tensor([0.3, -1.2, 2.1], dtype=torch.float64, device=device, requires_grad=True)
    b = torch.tensor([1.7, 1.1, 1.3], dtype=torch.float64, device=device, requires_grad=True)
    c = torch.tensor([0.5, -2.0, 4.0], dtype=torch.float64, device=device)  # needs no gradient
    for f in (lambda a, b: a * b, lambda a, b: a / b, lambda a, b: a % b, lambda a, b: 2.0 * a * b,
              lambda a, b: a / 3 + b, lambda a, b: a % 0.55 + b, lambda a, b: c * b + a / c + c % b):
        assert torch.autograd.gradcheck(f, (a, b))
        assert torch.autograd.gradgradcheck(f, (a, b))


# ---- a 1-D matmul result is not a view: in-place ops on it are recorded ----
@pytest.mark.parametrize("device", DEVICES)
def test_inplace_on_a_vector_product(device):
    x = torch.tensor([-1.25, 2.0], dtype=torch.float64, device=device, requires_grad=True)
    d = x @ x
    d.pow_(2)
    d.backward()
    s = float((arr(x) ** 2).sum())
    np.testing.assert_allclose(arr(x.grad), 2 * s * 2 * arr(x))
    m = torch.ones(3, 2, dtype=torch.float64, device=device, requires_grad=True)
    y = m @ x
    y.exp_()
    y.sum().backward()
    np.testing.assert_allclose(arr(m.grad), np.exp(arr(x).sum()) * np.tile(arr(x), (3, 1)))


# ---- a saved output is version-checked: after an in-place op too (PyTorch saves the modified tensor itself) ----
@pytest.mark.parametrize("device", DEVICES)
def test_inplace_change_of_a_saved_output_raises_at_backward(device):
    x = torch.tensor([-1.5, -1.0, 2.5, 0.5], device=device, requires_grad=True)
    b = torch.tensor(-2.0, dtype=torch.float64, device=device, requires_grad=True)
    cases = [
        lambda: torch.copysign(x, b).mul_(3),            # copysign saves its output
        lambda: torch.hypot(x, b).add_(1),               # hypot too
        lambda: x.clone().relu_().div_(x),               # relu_ saves its output: x.clone() itself, at version 1
        lambda: x.clone().relu_().mul_(2.0),             # (whatever the next in-place op is)
        lambda: x.clone().exp_().sigmoid_(),             # exp_'s output is sigmoid_'s input and is overwritten
    ]
    for make in cases:
        y = make()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


@pytest.mark.parametrize("device", DEVICES)
def test_inplace_ops_on_saved_outputs_keep_right_gradients(device):
    xv = np.array([-1.5, -1.0, 2.5, 0.5], dtype=np.float32)
    x = torch.tensor(xv, device=device, requires_grad=True)
    y = x.clone().relu_()
    (y.mul(2.0) + y).sum().backward()
    np.testing.assert_allclose(arr(x.grad), 3.0 * (xv > 0))
    x.grad = None
    y = x.clone().exp_()
    (y * y).sum().backward()  # exp_ saved y itself (version 1): no change since, no error
    np.testing.assert_allclose(arr(x.grad), 2 * np.exp(2 * xv), rtol=1e-5)
    x.grad = None
    z = torch.copysign(x, torch.tensor(-1.0, device=device))
    z.sum().backward()
    np.testing.assert_allclose(arr(x.grad), -np.sign(xv))


# ---- F.linear has no bool kernel either (PyTorch's addmm_impl_cpu_), an empty product needs none ----
@pytest.mark.parametrize("device", DEVICES)
def test_linear_on_bool_tensors(device):
    a = torch.ones(4, 3, dtype=torch.bool, device=device)
    w = torch.ones(2, 3, dtype=torch.bool, device=device)
    for bias in (None, torch.ones(2, dtype=torch.bool, device=device)):
        with pytest.raises(NotImplementedError, match="addmm_impl_cpu_"):
            torch.nn.functional.linear(a, w, bias)
    r = torch.nn.functional.linear(a[:0], w, torch.ones(2, dtype=torch.bool, device=device))
    assert r.dtype is torch.bool and tuple(r.shape) == (0, 2)
    r = torch.nn.functional.linear(a[:, :0], w[:, :0])
    assert r.dtype is torch.bool and r.tolist() == [[False, False]] * 4


# ---- in-place ops on views of tensors that require grad rebase the base (PyTorch's CopySlices) ----
_W = np.arange(6.0).reshape(2, 3)
_X = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("write, value, grad", [
    # (in-place write through a view of y = x * 1, y's value, d sum(y * W) / dx), derived by hand
    (lambda y, x: y[0].mul_(2), [[2, 4, 6], [4, 5, 6]], [[0, 2, 4], [3, 4, 5]]),
    (lambda y, x: y.t().add_(1), _X + 1, _W),
    (lambda y, x: y.diagonal().zero_(), [[0, 2, 3], [4, 0, 6]], [[0, 1, 2], [3, 0, 5]]),
    (lambda y, x: y[:, 1].exp_(), [[1, np.exp(2), 3], [4, np.exp(5), 6]], [[0, np.exp(2), 2], [3, 4 * np.exp(5), 5]]),
    (lambda y, x: y[1].copy_(x[0] * 3), [[1, 2, 3], [3, 6, 9]], [[9, 13, 17], [0, 0, 0]]),
    (lambda y, x: y.unsqueeze(0).clamp_(min=2.5), [[2.5, 2.5, 3], [4, 5, 6]], [[0, 0, 2], [3, 4, 5]]),
    (lambda y, x: y[::2, ::2].neg_(), [[-1, 2, -3], [4, 5, 6]], [[0, 1, -2], [3, 4, 5]]),
    (lambda y, x: y[0].__setitem__(1, x[1, 1] * 2), [[1, 10, 3], [4, 5, 6]], [[0, 0, 2], [3, 6, 5]]),
    (lambda y, x: y.diagonal().fill_(x[1, 2]), [[6, 2, 3], [4, 6, 6]], [[0, 1, 2], [3, 0, 9]]),
])
def test_inplace_through_a_view_flows_gradients_to_the_base(device, write, value, grad):
    x = torch.tensor(_X, device=device, requires_grad=True)
    y = x * 1
    write(y, x)
    assert type(y.grad_fn).__name__ == "CopySlices"
    np.testing.assert_allclose(arr(y), value, rtol=1e-6)
    (g,) = torch.autograd.grad((y * torch.tensor(_W, device=device)).sum(), x)
    np.testing.assert_allclose(arr(g), grad, rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_view_after_rebase_and_errors(device):
    x = torch.tensor(_X, device=device, requires_grad=True)
    y = x.clone()
    v = y[0]
    v.mul_(3)
    v.add_(1)
    assert type(v.grad_fn).__name__ == "AsStridedBackward0"
    (g,) = torch.autograd.grad(v.sum(), x)
    np.testing.assert_allclose(arr(g), [[3, 3, 3], [0, 0, 0]])
    assert torch.autograd.gradcheck(lambda t: (lambda c: (c[1:].mul_(c[0] * 1), c)[1])(t * 1),
                                    (torch.tensor(_X, device=device, requires_grad=True),))
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[0].mul_(2)
    w = torch.ones(3, device=device, requires_grad=True)
    y = x.clone()
    y[0].add_(w)
    y.sum().backward()   # both the base's old graph and the written operand get their gradients
    np.testing.assert_allclose(arr(x.grad), np.ones((2, 3)))
    np.testing.assert_allclose(arr(w.grad), np.ones(3))


@pytest.mark.parametrize("device", DEVICES)
def test_inplace_write_through_an_empty_view(device):
    x = torch.zeros((4, 1, 0), device=device, requires_grad=True)
    y = x.clone()
    y[...][...] = 2.0
    y.movedim(0, -1)[...] = -1.25
    assert type(y.grad_fn).__name__ == "CopySlices" and tuple(y.shape) == (4, 1, 0)
    y.sum().backward()
    assert tuple(x.grad.shape) == (4, 1, 0)


# ---- max()/min() of all elements: the gradient (a NaN one too) lands only on the elements equal to the result ----
@pytest.mark.parametrize("device", DEVICES)
def test_max_min_all_elements_gradient_stays_on_the_selected_elements(device):
    xv = np.array([-2.153, 0.529, -2.75, -0.247, -2.75])
    x = torch.tensor(xv, dtype=torch.float64, device=device, requires_grad=True)
    (g,) = torch.autograd.grad(x.min() * 3, x)
    np.testing.assert_array_equal(arr(g), [0, 0, 1.5, 0, 1.5])  # ties share the gradient
    m = x.min()
    with np.errstate(all="ignore"):
        s = m.std(dim=0)  # one element: NaN, and a NaN gradient into min's backward
    (g,) = torch.autograd.grad(s + x.sum(), x)
    np.testing.assert_array_equal(np.isnan(arr(g)), [False, False, True, False, True])
    y = torch.tensor([1.0, float("nan"), 3.0, float("nan")], device=device, requires_grad=True)
    y.max().backward()
    np.testing.assert_array_equal(arr(y.grad), [0, 0.5, 0, 0.5])   # the NaNs are the maximum
    z = torch.tensor([1.0, 3.0, 2.0], dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: t.max(), (z,))
    assert torch.autograd.gradgradcheck(lambda t: t.min() ** 2, (z,))
    (g,) = torch.autograd.grad(x.amin(), x)   # amin keeps PyTorch's multiply-by-mask form
    np.testing.assert_array_equal(arr(g), [0, 0, 0.5, 0, 0.5])


@pytest.mark.parametrize("device", DEVICES)
def test_arange_has_no_bool_kernel(device):
    for args in ((0, 4, 1), (3,), (0,)):
        with pytest.raises(NotImplementedError, match="arange_cpu"):
            torch.arange(*args, dtype=torch.bool, device=device)
    assert torch.arange(3, dtype=torch.uint8, device=device).tolist() == [0, 1, 2]


# ---- var's gradient is PyTorch's var_backward, also where N <= correction (+-inf, not NaN) ----
@pytest.mark.parametrize("device", DEVICES)
def test_var_gradient_formula_and_zero_degrees_of_freedom(device):
    xv = np.array([[1.25], [2.75]])
    x = torch.tensor(xv, dtype=torch.float32, device=device, requires_grad=True)
    mu = xv.mean()
    cases = [(dict(dim=(0, 1), correction=2), np.inf * np.sign(xv - mu)),   # 2 / 0 * (x - mean)
             (dict(correction=2), np.full((2, 1), np.inf)),                    # no dim: grad * inf
             (dict(dim=0), 2.0 / 1 * (xv - mu)),
             (dict(dim=(0, 1), correction=3), 2.0 / -1 * (xv - mu)),
             (dict(dim=1, correction=0, keepdim=True), np.zeros((2, 1)))]
    for kw, want in cases:
        with np.errstate(all="ignore"):
            v = torch.var(x, **kw)
        assert type(v.grad_fn).__name__ == "VarBackward0"
        (g,) = torch.autograd.grad(v.sum(), x)
        np.testing.assert_allclose(arr(g), want, rtol=1e-6)
    t = torch.tensor([[0.3, -1.2, 2.1], [0.5, 0.7, -0.2]], dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a: torch.var(a, 1), (t,))
    assert torch.autograd.gradgradcheck(lambda a: torch.var(a, (0, 1), correction=0), (t,))
    assert torch.autograd.gradgradcheck(lambda a: torch.var(a, keepdim=True), (t,))
    h = torch.tensor([1.0, 2.0, 4.0], dtype=torch.float16, device=device, requires_grad=True)
    v = torch.var(h)
    v.backward()
    assert v.dtype is torch.float16 and h.grad.dtype is torch.float16
    np.testing.assert_allclose(arr(h.grad).astype(np.float64), (np.array([1, 2, 4]) - 7 / 3), rtol=2e-3)


@pytest.mark.parametrize("device", DEVICES)
def test_copy_of_a_python_float_is_not_rounded_to_float32(device):
    for dtype, npdt in ((torch.float64, np.float64), (torch.float32, np.float32), (torch.float16, np.float16)):
        y = torch.zeros(2, dtype=dtype, device=device)
        y.copy_(0.001)
        assert arr(y).tolist() == np.full(2, 0.001, dtype=npdt).tolist()  # one rounding, to x's dtype
    x = torch.tensor([-2.25, 0.5], dtype=torch.float64, device=device, requires_grad=True)
    z = x.clone()
    z.copy_(0.001)
    assert arr(z).tolist() == [0.001, 0.001] and z.requires_grad
    i = torch.zeros(2, dtype=torch.int8, device=device)
    i.copy_(2.7)
    assert i.tolist() == [2, 2]


@pytest.mark.parametrize("device", DEVICES)
def test_clamp_of_bool_with_bool_bounds_has_no_kernel(device):
    b = torch.tensor([True, False], device=device)
    for kw, kind in ((dict(min=False), "clamp_min"), (dict(max=True), "clamp_max"),
                     (dict(min=False, max=True), "clamp")):
        with pytest.raises(NotImplementedError, match=f'"{kind}_scalar_cpu"'):
            torch.clamp(b, **kw)
    r = torch.clamp(b, min=0)  # an int bound promotes to int64, a float bound to the default float
    assert r.dtype is torch.int64 and r.tolist() == [1, 0]
    assert torch.clamp(b, min=0.5).tolist() == [1.0, 0.5]


@pytest.mark.parametrize("device", DEVICES)
def test_integer_division_of_an_empty_broadcast_by_zero(device):
    e = torch.zeros(0, dtype=torch.int64, device=device)
    z = torch.tensor([[-1], [0]], dtype=torch.int8, device=device)
    for r in (torch.div(e, z, rounding_mode="trunc"), e // z, torch.remainder(e, z),
              torch.div(e, z, rounding_mode="floor")):
        assert tuple(r.shape) == (2, 0) and r.dtype is torch.int64
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        (torch.ones(2, dtype=torch.int64, device=device) // torch.tensor([0, 1], device=device)).tolist()
