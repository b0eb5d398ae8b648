"""Issue 15, "find the rest": classes found by benchmarks/torch_oracle.py on fresh seeds (500000-699999), each
pinned to PyTorch 2.13's behaviour (checked by hand against it) on every installed device."""
from __future__ import annotations

import math

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F


# ---- flatten with start_dim == end_dim returns the tensor itself (a leaf stays a leaf, no ViewBackward0) ----
def test_flatten_of_one_dim_is_the_tensor_itself(device):
    x = torch.tensor([2.5, 0.75], device=device, requires_grad=True)
    for y in (torch.flatten(x), x.flatten(), x.flatten(0), x.flatten(-1, 0)):
        assert y is x and y.is_leaf and y.grad_fn is None
    m = torch.ones((2, 3), device=device, requires_grad=True)
    assert m.flatten(1, 1) is m and m.flatten(1, -1) is m
    f = m.flatten()   # a real flatten is a view with a node
    assert f.shape == (6,) and f.grad_fn is not None and not f.is_leaf
    s = torch.tensor(3.0, device=device, requires_grad=True)
    z = s.flatten()   # 0-d: a (1,) view, as PyTorch
    assert z is not s and z.shape == (1,) and z.grad_fn is not None


# ---- reflect / replicate padding has no bool kernel in PyTorch (circular and constant have) ----
@pytest.mark.parametrize("mode,name", [("reflect", "reflection"), ("replicate", "replication")])
def test_reflect_and_replicate_pad_reject_bool(device, mode, name):
    for shape, pad, n in (((2, 3), (1, 0), 1), ((2, 3, 4), (1, 0, 0, 1), 2), ((1, 2, 3, 4), (1, 0) * 3, 3)):
        x = torch.zeros(shape, dtype=torch.bool, device=device)
        with pytest.raises(NotImplementedError, match=f'"{name}_pad{n}d" not implemented for \'Bool\''):
            F.pad(x, pad, mode=mode)
        assert isinstance(NotImplementedError(), RuntimeError)
        assert F.pad(x, pad, mode="circular").dtype is torch.bool
    y = F.pad(torch.tensor([[1, 2, 3]], dtype=torch.int8, device=device), (1, 1), mode=mode)
    expect = [[2, 1, 2, 3, 2]] if mode == "reflect" else [[1, 1, 2, 3, 3]]
    assert y.dtype is torch.int8 and y.tolist() == expect


# ---- a boolean-mask write of a one-element value of another dtype is masked_fill_ (PyTorch's CPU rule) ----
def test_mask_setitem_and_index_put_take_a_one_element_value_of_any_dtype(device):
    for value in (torch.tensor(2.5, device=device), torch.tensor([2.5], device=device), torch.tensor(2.5),
                  torch.tensor([[2.5]], device=device), torch.tensor(2.5, dtype=torch.float64, device=device)):
        x = torch.tensor([1, -2, 3], dtype=torch.int32, device=device)
        x[x > 0] = value
        assert x.dtype is torch.int32 and x.tolist() == [2, -2, 2]
    x = torch.tensor([1, -2, 3], dtype=torch.int32, device=device)
    x[x > 0] = torch.tensor(True, device=device)
    assert x.tolist() == [1, -2, 1]
    x = torch.tensor([1, -2, 3], dtype=torch.int32, device=device)
    x[1:][x[1:] > 0] = torch.tensor(2.5, device=device)   # through a view
    assert x.tolist() == [1, -2, 2]
    x = torch.tensor([1, -2, 3], dtype=torch.int32, device=device)
    assert x.index_put_((x > 0,), torch.tensor(2.5, device=device)).tolist() == [2, -2, 2]
    # an index list is index_put_ proper: equal dtypes only; so is a value of several elements
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match"):
        x[[0, 1]] = torch.tensor(2.5, device=device)
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match"):
        x[x > 0] = torch.tensor([2.5, 1.5], device=device)
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match"):
        x.index_put_((x > 0,), torch.tensor(2.5, device=device), accumulate=True)


def test_mask_setitem_of_a_one_element_value_of_another_dtype_is_differentiable(device):
    x0 = torch.tensor([1.0, -2.0, 3.0], device=device, requires_grad=True)
    v = torch.tensor(7.0, dtype=torch.float64, device=device, requires_grad=True)
    x = x0 * 1
    x[x > 0] = v
    (x * torch.tensor([1.0, 2.0, 3.0], device=device)).sum().backward()
    assert x.tolist() == [7.0, -2.0, 7.0] and type(x.grad_fn).__name__ == "IndexPutBackward0"
    assert x0.grad.tolist() == [0.0, 2.0, 0.0]
    assert v.grad.dtype is torch.float64 and v.grad.item() == 4.0   # 1 + 3: the masked positions' gradients


# ---- GELU's backward of a 0-d tensor (the cpu's fused kernel wrote into a numpy scalar: TypeError) ----
def test_gelu_backward_of_a_0d_tensor(device):
    x = torch.tensor(-1.25, device=device, requires_grad=True)
    F.gelu(x).backward()
    phi = math.exp(-1.25 ** 2 / 2) / math.sqrt(2 * math.pi)
    expect = 0.5 * (1 + math.erf(-1.25 / math.sqrt(2))) - 1.25 * phi
    assert x.grad.shape == () and abs(x.grad.item() - expect) < 1e-6


# ---- products save only what a gradient reads: writing in place into an input whose gradient is not needed ----
def test_products_do_not_save_an_operand_no_gradient_reads(device):
    w = torch.ones((3, 3), device=device)   # no grad: the input's gradient reads w, nothing reads the input
    for f in (lambda a: F.linear(a, w), lambda a: a @ w, lambda a: torch.mm(a, w),
              lambda a: torch.addmm(torch.zeros(3, device=device), a, w)):
        x0 = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]], device=device, requires_grad=True)
        x1 = x0 * 2
        y = f(x1)
        x1.sub_(y, alpha=2)   # x1 was an input of the product: PyTorch does not save it, so this is allowed
        x1.sum().backward()   # d/dx0 of (2 x0 - 2 * (2 x0) @ 1) summed: 2 - 4 * 3 per element
        assert x0.grad.tolist() == [[-10.0] * 3] * 2
    # the other way round the saved operand is needed: the in-place write is caught
    x = torch.ones((2, 3), device=device)
    wg = torch.ones((3, 3), device=device, requires_grad=True)
    y = F.linear(x, wg)
    x.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


# ---- reflect / replicate padding: only the batch dim may be empty (PyTorch's shape check) ----
def test_reflect_and_replicate_pad_reject_empty_non_batch_dims(device):
    for mode in ("reflect", "replicate"):
        for shape, pad in (((0, 3), (1, 0)), ((2, 0, 3), (1, 0)), ((2, 3, 0), (1, 0, 0, 0)),
                           ((1, 0, 2, 3), (1, 0) * 3)):
            with pytest.raises(RuntimeError, match="with possibly 0 batch size and other non-zero dimensions"):
                F.pad(torch.zeros(shape, device=device), pad, mode=mode)
        assert F.pad(torch.zeros((0, 2, 3), device=device), (1, 0), mode=mode).shape == (0, 2, 4)
        assert F.pad(torch.zeros((0, 2, 3, 4), device=device), (1, 0, 0, 1), mode=mode).shape == (0, 2, 4, 5)
    assert F.pad(torch.zeros((2, 0, 3), device=device), (1, 0), mode="circular").shape == (2, 0, 4)


# ---- remainder / fmod: an exact multiple keeps the dividend's zero (PyTorch's fmod-based formula) ----
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_remainder_and_fmod_sign_of_zero(device, dtype):
    a = torch.tensor([-4.0, 4.0, -0.0, 0.0, -3.0, 3.0], dtype=dtype, device=device)
    for b in (2.0, -2.0):
        for r in (torch.remainder(a, b), a % torch.tensor(b, dtype=dtype, device=device)):
            v = r.double().tolist()
            assert v[:4] == [0.0] * 4 and [math.copysign(1, z) for z in v[:4]] == [-1, 1, -1, 1]
            assert v[4:] == ([1.0, 1.0] if b > 0 else [-1.0, -1.0])
        f = torch.fmod(a, b).double().tolist()
        assert [math.copysign(1, z) for z in f] == [-1, 1, -1, 1, -1, 1] and f[4:] == [-1.0, 1.0]
    r = torch.remainder(torch.tensor(2.0, dtype=dtype, device=device), torch.tensor([-1.0, 1.0], dtype=dtype,
                                                                                       device=device))
    assert [math.copysign(1, z) for z in r.double().tolist()] == [1, 1]   # fmod(2, -1) is +0: kept


# ---- median / nanmedian / kthvalue of bool: an empty reduced dim is an IndexError first, then no bool kernel ----
def test_median_and_kthvalue_of_bool_check_the_size_first(device):
    for shape, d in (((0,), 0), ((2, 0), 1), ((0, 3), 0)):
        x = torch.zeros(shape, dtype=torch.bool, device=device)
        for f in (lambda: x.median(d), lambda: x.nanmedian(d, keepdim=True), lambda: x.kthvalue(1, d)):
            with pytest.raises(IndexError, match="Expected reduction dim"):
                f()
    x = torch.zeros((0, 3), dtype=torch.bool, device=device)
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        x.median(1)
    with pytest.raises(RuntimeError, match="selected number k out of range"):
        torch.zeros(3, dtype=torch.bool, device=device).kthvalue(4)
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        torch.zeros(3, dtype=torch.bool, device=device).kthvalue(1)
    v, i = torch.tensor(True, device=device).kthvalue(1)   # a 0-d bool is its own k-th value
    assert v.dtype is torch.bool and v.item() is True and i.item() == 0


# ---- quantile / nanquantile take float32 and float64 only (PyTorch has no float16/bfloat16 kernel) ----
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int32])
def test_quantile_rejects_reduced_float_and_integer_inputs(device, dtype):
    x = torch.ones(3, dtype=dtype, device=device)
    for f in (torch.quantile, torch.nanquantile):
        with pytest.raises(RuntimeError, match="input tensor must be either float or double dtype"):
            f(x, 0.5)
    assert torch.quantile(torch.tensor([1.0, 3.0], device=device), 0.5).item() == 2.0


# ---- piecewise-constant ops: the gradient is zeros, also where the incoming gradient is NaN or inf ----
def test_piecewise_constant_ops_give_zero_gradients_for_nan_and_inf(device):
    x = torch.tensor([1.5, -2.0, 0.5], device=device, requires_grad=True)
    g = torch.tensor([float("nan"), float("inf"), 1.0], device=device)
    for f in (torch.sign, torch.sgn, torch.floor, torch.ceil, torch.round, torch.trunc):
        gx, = torch.autograd.grad(f(x), x, g)
        assert gx.tolist() == [0.0, 0.0, 0.0]
    gx, = torch.autograd.grad(torch.frac(x), x, g)   # frac passes the gradient through unchanged
    assert math.isnan(gx[0].item()) and gx[1:].tolist() == [math.inf, 1.0]


# ---- searchsorted / bucketize have no bool kernel (in the operands' common dtype) ----
def test_searchsorted_and_bucketize_of_bool(device):
    b = torch.tensor([False, True], device=device)
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        torch.searchsorted(b, torch.tensor([True], device=device))
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        torch.bucketize(torch.tensor(True, device=device), b)
    assert torch.searchsorted(torch.tensor([1, 2], device=device), torch.tensor([True], device=device)).tolist() == [0]
    assert torch.searchsorted(b, torch.tensor([1], device=device)).tolist() == [1]


# ---- a subscript list holding a list, tensor, slice, None or Ellipsis is a tuple (PyTorch's treatSequenceAsTuple);
#      a list of bools is a mask (a one-element value of any dtype is masked_fill_) ----
def test_subscript_lists_read_as_pytorch_does(device):
    x = torch.tensor([[1, -2, 3], [4, 5, 6]], device=device)
    assert x[[[0, 1]]].shape == (2, 3) and x[[[0, 1], [1, 1]]].tolist() == [-2, 5]
    assert x[[[True, False]]].tolist() == [[1, -2, 3]]
    assert x[[0, slice(None)]].tolist() == [1, -2, 3] and x[[0, None]].shape == (1, 3)
    assert x[[torch.tensor(1, device=device), 2]].item() == 6 and x[[0, ...]].tolist() == [1, -2, 3]
    assert x[[0, 1]].shape == (2, 3) and x[[True, False]].shape == (1, 3)   # plain lists: one index tensor
    y = x.clone()
    y[[[0, 1]]] = 9
    assert y.tolist() == [[9, 9, 9], [9, 9, 9]]
    y = x.clone()
    y[[0, slice(None)]] = 7
    assert y.tolist() == [[7, 7, 7], [4, 5, 6]]
    z = torch.tensor([1, -2, 3], dtype=torch.int32, device=device)
    z[[True, False, True]] = torch.tensor(2.5, device=device)
    assert z.tolist() == [2, -2, 2]
    b = torch.tensor([False], device=device)
    b[[True]] = b[[True]].flip(0) * 2   # an int64 one-element value into bool through a list mask
    assert b.dtype is torch.bool and b.tolist() == [False]
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match"):
        z[[True, 0]] = torch.tensor(2.5, device=device)


# ---- copysign saves its first operand (and output) only for that operand's gradient ----
def test_copysign_saves_only_what_its_gradients_read(device):
    a = torch.tensor([[0, 2], [-2, -4]], device=device)
    s = torch.tensor([[[1.69]]], device=device, requires_grad=True)
    y = torch.copysign(a, s)
    a.add_(1)                       # a was never saved: the sign's gradient (zero) reads nothing
    y.sum().backward()
    assert s.grad.tolist() == [[[0.0]]]
    x = torch.tensor([1.5, -2.0, 0.0], device=device, requires_grad=True)
    w = torch.tensor([-1.0, 1.0, -1.0], device=device, requires_grad=True)
    (torch.copysign(x, w) * torch.tensor([1.0, math.inf, 2.0], device=device)).sum().backward()
    assert x.grad.tolist() == [-1.0, -math.inf, 0.0] and w.grad.tolist() == [0.0, 0.0, 0.0]
    x2 = torch.tensor([1.5, -2.0], device=device, requires_grad=True)
    y = torch.copysign(x2, torch.tensor([1.0, -1.0], device=device))
    y.mul_(2)                       # the output is saved for x2's gradient: caught
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


# ---- amax / amin of an empty dim: the size error (each dim as given) comes before the repeated-dim error ----
def test_amax_amin_check_empty_dims_before_repeats(device):
    for f in (torch.amax, torch.amin):
        for x, dims in ((torch.zeros(0, device=device), (-1, 0)), (torch.zeros((0, 2), device=device), (0, 0))):
            with pytest.raises(IndexError, match=f"Expected reduction dim {dims[0]} to have non-zero size"):
                f(x, dim=dims)
        with pytest.raises(RuntimeError, match="appears multiple times"):
            f(torch.zeros(3, device=device), dim=(0, -1))
    with pytest.raises(RuntimeError, match="appears multiple times"):
        torch.sum(torch.zeros(0, device=device), dim=(0, -1))


# ---- float16/bfloat16 rounding division by a Python number: in float32, the divisor not rounded first ----
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_reduced_float_rounding_division_by_a_number(device, dtype):
    vals = [-0.018, 2.5, 0.201, -0.211, 1.5]
    x = torch.tensor(vals, dtype=dtype, device=device)
    xs = x.float().tolist()   # the values as stored
    floor = [math.floor(float(np.float32(v) / np.float32(0.001))) for v in xs]
    trunc = [math.trunc(float(np.float32(v) / np.float32(0.001))) for v in xs]
    for r in (x // 0.001, torch.floor_divide(x, 0.001), torch.div(x, 0.001, rounding_mode="floor")):
        assert r.dtype is dtype and r.tolist() == torch.tensor(floor, dtype=dtype).tolist()
    t = torch.div(x, 0.001, rounding_mode="trunc")
    assert t.dtype is dtype and t.tolist() == torch.tensor(trunc, dtype=dtype).tolist()
    assert (x // torch.tensor(0.001, dtype=torch.float64)).tolist() == torch.tensor(floor, dtype=dtype).tolist()


# ---- softplus of float16/bfloat16 in float32 (exp(12) overflows float16; softplus(12) is 12, not inf) ----
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_softplus_of_reduced_floats_does_not_overflow(device, dtype):
    vals = [12.0, 30.0, -30.0, 1.0]
    x = torch.tensor(vals, dtype=dtype, device=device, requires_grad=True)
    y = F.softplus(x)
    expect = [v if v > 20 else math.log1p(math.exp(v)) for v in vals]
    assert y.dtype is dtype and y.float().tolist() == torch.tensor(expect, dtype=dtype).float().tolist()
    y.sum().backward()
    assert x.grad.dtype is dtype and abs(x.grad[0].item() - 1.0) < 1e-3


# ---- quantile of an empty tensor raises, with or without dim ----
def test_quantile_of_empty_input_raises(device):
    for kw in ({}, {"dim": 0}, {"dim": 1}):
        for f in (torch.quantile, torch.nanquantile):
            with pytest.raises(RuntimeError, match=r"quantile\(\) input tensor must be non-empty"):
                f(torch.zeros((3, 0), device=device), 0.5, **kw)


# ---- inf / negative-order norms of empty input: PyTorch's no-identity error, only for an empty reduced dim ----
def test_norm_without_identity_over_empty_dims(device):
    e = torch.zeros(0, device=device)
    for p in (float("inf"), -float("inf"), -1):
        with pytest.raises(RuntimeError, match="on the dimension 0because this dimension is empty"):
            torch.norm(e, p=p, dim=0)
        with pytest.raises(RuntimeError, match="norm on an empty tensor because the operation does not have"):
            torch.linalg.vector_norm(e, p)
    assert torch.linalg.vector_norm(torch.zeros((2, 0), device=device), float("inf"), dim=0).shape == (0,)
    assert torch.norm(torch.zeros((0, 2), device=device), p=float("inf"), dim=1).shape == (0,)
    assert torch.norm(e, p=2, dim=0).item() == 0.0


# ---- bfloat16 to integer casts wrap as the other floats' (through int64), and empty bool searchsorted works ----
def test_bfloat16_to_integer_casts_and_empty_bool_searchsorted(device):
    x = torch.tensor([-2.0, 2.75, -1.0, 300.0], device=device).to(torch.bfloat16)
    assert x.to(torch.uint8).tolist() == [254, 2, 255, 44]   # PyTorch's wrap of the truncated value
    assert x.to(torch.int8).tolist() == [-2, 2, -1, 44] and x.long().tolist() == [-2, 2, -1, 300]
    e = torch.zeros(0, dtype=torch.bool, device=device)
    assert torch.searchsorted(e, e).shape == (0,)
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        torch.searchsorted(e, torch.zeros(2, dtype=torch.bool, device=device))


# ---- addcmul promotes its three operands together (PyTorch's TensorIterator), not pairwise ----
def test_addcmul_promotes_all_operands_together(device):
    x2 = torch.tensor([[5, 4], [-3, 2]], dtype=torch.int32, device=device)
    r = torch.addcmul(torch.tensor(1.0, dtype=torch.float64, device=device), x2, x2, value=0.5)
    assert r.dtype is torch.float64  # int32 factors, a 0-d float64 input: float64 (pairwise gave float32)
    np.testing.assert_array_equal(r.cpu().numpy(), 1.0 + 0.5 * x2.cpu().numpy().astype(np.float64) ** 2)
    r = torch.addcmul(torch.tensor(2.0, device=device), x2.half(), x2.half(), value=0.5)
    assert r.dtype is torch.float16
    x = torch.tensor([1.0, 2.0], dtype=torch.float16, device=device, requires_grad=True)
    w = torch.tensor([[3.0, 1.0], [2.0, 4.0]], device=device, requires_grad=True)
    r = torch.addcmul(x, w, x2, value=0.5)
    assert r.dtype is torch.float32
    r.sum().backward()
    assert x.grad.dtype is torch.float16 and w.grad.dtype is torch.float32
    np.testing.assert_array_equal(w.grad.cpu().numpy(), 0.5 * x2.cpu().numpy())
