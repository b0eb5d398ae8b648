"""Review 22a (eager): tensor creation, conversion and type promotion, numpy scalars and 0-d arrays as operands.

PyTorch's argument parser takes a numpy number where a Python number goes as that Python number (a numpy integer an
int, a numpy float a float, a numpy bool a float too): the tests check coretorch against the same call with the
Python number, or against numpy.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import coretorch as torch
from coretorch import _warn_once


def _np(t):
    return t.cpu().numpy(force=True)


def _same(a, b) -> None:
    assert a.dtype == b.dtype
    assert _np(a).dtype == _np(b).dtype
    np.testing.assert_array_equal(_np(a), _np(b))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("bound", [np.float64(0.1), np.float32(0.1), np.float16(0.1), np.int64(1)])
def test_clamp_with_a_numpy_bound_keeps_the_storage_dtype(device, dtype, bound):
    """PyTorch: clamp(half, min=np.float64(0.1)) is a half tensor as with min=0.1.  Before, the numpy bound went to
    the kernel as a numpy number: numpy's promotion made float64 (float32) storage under a float16 dtype, and the
    range check of the bound warned 'overflow encountered in cast'."""
    x = torch.tensor([-1.5, 0.05, 3.25, 7.0], dtype=dtype, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for r, ref in ((torch.clamp(x, min=bound), torch.clamp(x, min=bound.item())),
                       (x.clamp(max=bound), x.clamp(max=bound.item())),
                       (torch.clamp(x, bound, 2 * bound), torch.clamp(x, bound.item(), 2 * bound.item()))):
            _same(r, ref)
            assert _np(r).dtype == _np(x).dtype


@pytest.mark.parametrize("tdt, s", [(torch.uint8, np.int8(-2)), (torch.int8, np.uint8(200)),
                                    (torch.int8, np.int64(300))])
def test_numpy_integers_before_a_tensor_wrap_as_python_ints(device, tdt, s):
    """PyTorch: np.int8(-2) - uint8_tensor wraps -2 into uint8 as the Python int -2 does (253, 154, 247 for 1, 100,
    7); before, reflected ops and full_like/alpha/value raised 'value cannot be converted to type uint8_t without
    overflow'."""
    a = torch.tensor([1, 100, 7], dtype=tdt, device=device)
    for f in (lambda v: v - a, lambda v: v * a, lambda v: v // a, lambda v: v % a, lambda v: v ** a,
              lambda v: torch.full_like(a, v), lambda v: torch.add(a, a, alpha=v),
              lambda v: torch.addcmul(a, a, a, value=v)):
        try:
            ref = f(int(s))
        except RuntimeError as e:  # (full_like(int8, 200) raises for the Python int too)
            with pytest.raises(RuntimeError, match=str(e)):
                f(s)
        else:
            _same(f(s), ref)
    if tdt is torch.uint8:
        assert (s - a).tolist() == [253, 154, 247]


def test_numpy_alpha_and_other_are_python_numbers(device):
    """PyTorch: alpha=np.float32(0.1) with integer tensors raises as alpha=0.1 does; sub(int16, np.uint8(200),
    alpha=np.uint8(200)) is -3 - 40000 wrapped to int16 (25533).  Before, a numpy float32 alpha was not seen as a
    float (a float32 result), and np.uint8(200) * np.uint8(200) wrapped in uint8 (-3 - 64 = -67, silently)."""
    i = torch.tensor([1, 2], dtype=torch.int32, device=device)
    for alpha in (np.float32(0.5), np.float16(2.5)):
        with pytest.raises(RuntimeError, match="alpha must not be a floating point number"):
            torch.add(i, i, alpha=alpha)
        with pytest.raises(RuntimeError, match="alpha must not be a floating point number"):
            i.sub(1, alpha=alpha)
    a = torch.tensor([-3, 1000, 7], dtype=torch.int16, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = torch.sub(a, np.uint8(200), alpha=np.uint8(200))
    assert r.dtype == torch.int16
    assert r.tolist() == [int(np.int16(np.int64(v - 40000))) for v in (-3, 1000, 7)] == [25533, 26536, 25543]
    f = torch.tensor([1.0, 2.0], device=device)
    _same(torch.add(f, f, alpha=np.float32(0.1)), torch.add(f, f, alpha=float(np.float32(0.1))))


def test_numpy_integer_exponent_out_of_range_raises(device):
    """PyTorch: int8_tensor ** np.uint8(200) raises as ** 200 does ('value cannot be converted to type int8_t
    without overflow'); before, the numpy exponent was computed (zeros)."""
    a = torch.tensor([-3, 100, 7], dtype=torch.int8, device=device)
    with pytest.raises(RuntimeError, match="without overflow"):
        a ** 200
    with pytest.raises(RuntimeError, match="without overflow"):
        a ** np.uint8(200)
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        a ** np.int64(-1)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_floor_divide_by_a_numpy_float_takes_it_in_float32(device, dtype):
    """PyTorch: half([-1.5, 7]) // np.float32(0.1) is [-15, 69], the divisor taken in float32 as a Python float
    is; before, the numpy float was rounded to half first (0.09998: [-16, 70])."""
    x = torch.tensor([-1.5, 3.25, 7.0], dtype=dtype, device=device)
    for s in (np.float32(0.1), np.float64(0.1)):
        _same(x // s, x // float(s))
        _same(torch.floor_divide(x, s), torch.floor_divide(x, float(s)))


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int64, torch.float16, torch.float32])
def test_a_numpy_bool_is_a_float_number(device, dtype):
    """PyTorch's parser unpacks a numpy bool (not a Python bool) as a double: tensor([True, False]) + np.bool_(True)
    is tensor([2., 1.]), int64 * np.bool_(True) is float32 (as coretorch's torch.full with a numpy bool already
    was); before, it was a Python bool here (a bool / int64 result)."""
    x = torch.tensor([1, 0, 1], dtype=dtype, device=device)
    nb = np.bool_(True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _same(x + nb, x + 1.0)
        _same(nb + x, 1.0 + x)
        _same(x * nb, x * 1.0)
        _same(torch.where(x > 0, x, nb), torch.where(x > 0, x, 1.0))
    assert (torch.tensor([True, False], device=device) + nb).tolist() == [2.0, 1.0]
    assert torch.arange(nb, device=device).dtype == torch.float32  # (arange(True) is int64: a Python bool)


def test_numpy_float16_scalars_do_not_warn(device):
    """PyTorch: np.float16(2.5) - u8, lerp/masked_fill/full_like with np.float16 or np.float32 numbers give no
    numpy warning; before, the range check compared the numpy number with float32's limits in numpy's float16
    ('RuntimeWarning: overflow encountered in cast')."""
    u = torch.tensor([1, 200, 7], dtype=torch.uint8, device=device)
    f = torch.tensor([-1.5, 3.25, 0.1], dtype=torch.float64, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _same(np.float16(2.5) - u, 2.5 - u)
        _same(torch.lerp(f, f, np.float32(0.1)), torch.lerp(f, f, float(np.float32(0.1))))
        _same(f.masked_fill(f > 0, np.float32(0.1)), f.masked_fill(f > 0, float(np.float32(0.1))))
        _same(torch.full_like(f, np.float16(2.5)), torch.full_like(f, 2.5))


def test_asarray_of_a_tensor_takes_requires_grad_as_pytorch(device):
    """PyTorch 2.13: asarray(x, requires_grad=False) sets the flag on x itself (a leaf; no copy) and detaches a
    result in a graph (a non-leaf x, or a conversion); unspecified, it is x's own, with a UserWarning (once per
    process) where x requires grad.  Before, requires_grad=False was ignored (the result still required
    grad, and gradients flowed through it) and no warning was given."""
    x = torch.tensor([1.0, 2.0], device=device, requires_grad=True)
    _warn_once.GIVEN.discard("asarray.requires_grad")
    with pytest.warns(UserWarning, match="unspecified requires_grad now defaults to obj.requires_grad"):
        assert torch.asarray(x) is x
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.asarray(x)  # (once per process, as PyTorch's TORCH_WARN_ONCE)
    _warn_once.GIVEN.discard("asarray.requires_grad")
    with pytest.warns(UserWarning, match="unspecified requires_grad now defaults to obj.requires_grad"):
        torch.asarray(x, dtype=torch.float64)  # (a conversion too)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        u = torch.asarray(x, requires_grad=False)
    assert u is x and not x.requires_grad
    x = torch.tensor([1.0, 2.0], device=device, requires_grad=True)
    y = x * 2
    u = torch.asarray(y, requires_grad=False)
    assert u is not y and not u.requires_grad and u.is_leaf and y.requires_grad
    u = torch.asarray(x, dtype=torch.float64, requires_grad=False)
    assert not u.requires_grad and u.is_leaf and x.requires_grad
    assert torch.asarray(y) is y and torch.asarray(y, requires_grad=True) is y
    assert torch.asarray(x, copy=False) is x
    c = torch.asarray(x, copy=True)
    assert c.requires_grad and c.grad_fn is not None
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex dtype"):
        torch.asarray([1], requires_grad=True, device=device)


def test_promote_types_and_can_cast_take_python_types():
    """PyTorch's dtype arguments take the Python types float, int and bool (float64, int64, bool):
    promote_types(float32, float) is float64, can_cast(float32, int) is False.  Before: TypeError."""
    assert torch.promote_types(torch.float32, float) is torch.float64
    assert torch.promote_types(int, torch.int8) is torch.int64
    assert torch.promote_types(bool, bool) is torch.bool
    assert torch.can_cast(torch.float32, int) is False
    assert torch.can_cast(float, torch.int32) is False
    assert torch.can_cast(int, torch.float16) is True
    with pytest.raises(TypeError):
        torch.promote_types(torch.float32, 1)


_NP_OPS = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide, "//": np.floor_divide,
           "%": np.remainder, "**": np.power}


@pytest.mark.parametrize("tdt, arr", [
    (torch.float32, np.array(2.0)), (torch.float32, np.array([2.0, 4.0])), (torch.int64, np.array([2, 3])),
    (torch.int32, np.array([2.5, 2.0], dtype=np.float32)), (torch.int8, np.array(2)),
    (torch.float16, np.array(2.0, dtype=np.float32)), (torch.int16, np.array([3, 2], dtype=np.uint8)),
    (torch.float16, np.array([3, 2], dtype=np.int64))])
def test_a_numpy_array_operand_gives_numpys_result(device, tdt, arr):
    """PyTorch's Tensor operators leave an ndarray operand (0-d too) to numpy, which computes on the tensor's
    values and returns a tensor: float32 tensor + np.array(2.0) is float64, int64 / int64 array float64, int32 *
    float32 array float64, int8 + np.array(2) int64.  Before, a 0-d array was a Python number (float32, int8) and
    a dimensioned one went by PyTorch's tensor promotion (float32)."""
    t = torch.tensor([3, 5], dtype=tdt, device=device)
    host = _np(t)
    for op, f in _NP_OPS.items():
        r = eval(f"t {op} arr")
        with np.errstate(all="ignore"):
            ref = f(host, arr)
        assert isinstance(r, torch.Tensor) and r.device == t.device
        assert _np(r).dtype == ref.dtype, op
        np.testing.assert_allclose(_np(r), ref, rtol=1e-6 if ref.dtype.itemsize > 2 else 1e-3)
    assert (t & np.array(6)).dtype == torch.int64 if not tdt.is_floating_point else True


def test_comparisons_take_a_0d_array_as_a_number(device):
    """PyTorch: float32_tensor == np.array(0.1) compares in float32 (the 0-d array is a number there): [.., True];
    the arithmetic operators alone go by numpy's dtypes."""
    t = torch.tensor([-1.5, 3.25, 0.1], device=device)
    assert (t == np.array(0.1)).tolist() == [False, False, True]
    assert (t < np.array(0.2)).dtype == torch.bool


def test_setitem_of_a_numpy_integer_checks_the_range(device):
    """PyTorch: x[0] = np.int64(300) on an int8 tensor raises as x[0] = 300 does ('value cannot be converted to
    type int8_t without overflow'); before, the numpy number was stored wrapped (44)."""
    x = torch.tensor([1, 2], dtype=torch.int8, device=device)
    with pytest.raises(RuntimeError, match="without overflow"):
        x[0] = 300
    with pytest.raises(RuntimeError, match="without overflow"):
        x[0] = np.int64(300)
    x[1] = np.int16(-7)
    u = torch.tensor([1, 2], dtype=torch.uint8, device=device)
    u[0] = np.int8(-1)  # (a negative number into uint8 wraps, as the Python int -1 does)
    assert x.tolist() == [1, -7] and u.tolist() == [255, 2]


def test_tensors_in_a_sequence_are_numbers(device):
    """PyTorch reads a tensor inside a sequence as the number it holds: tensor([tensor([1.5]), tensor([[2.5]])]) is
    tensor([1.5, 2.5]) (shape (2,)), its dtype kept (int8 elements: int8); a tensor of several elements raises
    (TypeError for integers, ValueError for floats).  Before, one-element tensors of any shape were stacked
    (shape (2, 1)), silently, and several-element ones too."""
    a, b = torch.tensor([1.5], device=device), torch.tensor([[2.5]], device=device)
    r = torch.tensor([a, b], device=device)
    assert r.shape == (2,) and r.tolist() == [1.5, 2.5] and r.dtype == torch.float32
    assert torch.tensor([a.double(), 1], device=device).dtype == torch.float64
    assert torch.tensor([torch.tensor([3], dtype=torch.int8)]).dtype == torch.int8
    assert torch.tensor([[a]]).shape == (1, 1)
    with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
        torch.tensor([torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])])
    with pytest.raises(TypeError, match="only integer tensors of a single element can be converted to an index"):
        torch.tensor([torch.tensor([1, 2]), 3])


def test_numpy_numbers_with_an_integer_dtype_are_checked():
    """PyTorch converts a numpy number given with a dtype as a number (checked): tensor(np.int64(300),
    dtype=uint8) raises 'value cannot be converted to type uint8 without overflow' (np.float64(1e10) to int32,
    np.float64(-0.5) to uint8 too); a negative integer into uint8 wraps; a numpy array is cast.  Before: 44,
    -2147483648, 0, silently."""
    for v, d in ((np.int64(300), torch.uint8), (np.uint8(200), torch.int8), (np.float64(1e10), torch.int32),
                 (np.float64(-0.5), torch.uint8), (np.float64(np.nan), torch.int64), (np.int64(-256), torch.uint8)):
        with pytest.raises(RuntimeError, match=f"value cannot be converted to type {str(d).split('.')[-1]} "
                                               "without overflow"):
            torch.tensor(v, dtype=d)
    assert torch.tensor(np.int64(-255), dtype=torch.uint8).item() == 1
    assert torch.tensor(np.float64(2.7), dtype=torch.int8).item() == 2
    assert torch.tensor(np.array(300), dtype=torch.uint8).item() == 44  # (an array: a cast)


def test_python_ints_beyond_int64_in_a_sequence():
    """PyTorch: tensor([1, 2 ** 63]) raises ValueError('Overflow when unpacking long long') (numpy would make it
    float64: before, a float32 tensor); tensor([1.5, 2 ** 70]) is a float tensor (before: RuntimeError 'Could not
    infer dtype of list'), with dtype=int64 the ValueError."""
    for data in ([1, 2 ** 63], [[1], [2 ** 63]], [True, 2 ** 63]):
        with pytest.raises(ValueError, match="Overflow when unpacking long long"):
            torch.tensor(data)
    r = torch.tensor([1.5, 2 ** 70])
    assert r.dtype == torch.float32 and r.tolist() == [1.5, float(np.float32(2.0 ** 70))]
    assert torch.tensor([[1.5], [2 ** 70]], dtype=torch.float64).tolist() == [[1.5], [2.0 ** 70]]
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        torch.tensor([1.5, 2 ** 70], dtype=torch.int64)
    assert torch.tensor([1, 2 ** 63], dtype=torch.float32).tolist() == [1.0, 2.0 ** 63]


def test_malformed_sequences_raise_pytorchs_error_types():
    """PyTorch: a number where a sequence is expected (or the reverse) is a TypeError; a str first a ValueError
    ("too many dimensions 'str'"), a str after a number a TypeError ("new(): invalid data type 'str'").  Before:
    ValueError, RuntimeError('Could not infer dtype of list')."""
    for data in ([[1, 2], 3], [1, [2, 3]], [[1, 2], "ab"]):
        with pytest.raises(TypeError):
            torch.tensor(data)
    with pytest.raises(ValueError, match="too many dimensions 'str'"):
        torch.tensor(["a", "b"])
    with pytest.raises(TypeError, match="new\\(\\): invalid data type 'str'"):
        torch.tensor([1, "a"])
    with pytest.raises(TypeError, match="new\\(\\): invalid data type 'bytes'"):
        torch.tensor([b"a"])
    with pytest.raises(ValueError, match="expected sequence of length 2 at dim 1 \\(got 1\\)"):
        torch.tensor([[1, 2], [3]])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_nan_to_num_casts_replacements_beyond_the_dtype(device, dtype):
    """PyTorch casts nan/posinf/neginf to the tensor's dtype: nan_to_num(half, posinf=1e6) leaves inf (1e6 is inf
    in half), float32 with nan=1e300 gives inf.  Before: RuntimeError 'value cannot be converted to type
    c10::Half without overflow' (its clamp's check of the bounds)."""
    x = torch.tensor([1.0, float("inf"), -float("inf"), float("nan")], dtype=dtype, device=device)
    r = torch.nan_to_num(x, nan=1e300, posinf=1e39, neginf=-1e39)
    assert r.dtype == dtype
    assert r.tolist() == [1.0, float("inf"), -float("inf"), float("inf")]
    big = float(torch.finfo(dtype).max)
    r = torch.nan_to_num(x, posinf=1e6).tolist()
    assert r[1] == torch.tensor(1e6, dtype=dtype).item() and r[2] == -big


def test_ldexp_of_an_integer_input_is_a_float32_product(device):
    """PyTorch: ldexp of an integer (or bool) input is input * 2.0 ** other in float32, its exponent not wrapped
    to int32 (ldexp(int64 [-3, 2**40, 7], itself) is [-0.375, inf, 896]; bool ** bool works: [2, 0, 2]).  Before:
    the exponent 2**40 wrapped to 0 (2**40, silently), and a bool exponent raised."""
    i = torch.tensor([-3, 2 ** 40, 7], device=device)
    r = torch.ldexp(i, i)
    assert r.dtype == torch.float32 and r.tolist() == [-0.375, float("inf"), 896.0]
    b = torch.tensor([True, False, True], device=device)
    assert torch.ldexp(b, b).tolist() == [2.0, 0.0, 2.0]
    assert torch.ldexp(i, b).tolist() == [-6.0, 2.0 ** 40, 14.0]
    x = torch.tensor([1.5, 2.0, 3.0], device=device)  # (a float input: C's ldexp, the exponent as int32)
    assert torch.ldexp(x, torch.tensor([2 ** 32, 2 ** 32 + 1, 1], device=device)).tolist() == [1.5, 4.0, 6.0]
    with pytest.raises(NotImplementedError):
        torch.ldexp(x, b)


@pytest.mark.parametrize("dtype, tie", [(torch.float16, 1 + 2 ** -11 + 2 ** -40),
                                        (torch.bfloat16, 1 + 2 ** -8 + 2 ** -40)])
def test_a_python_float_into_half_goes_through_float32(device, dtype, tie):
    """c10 converts a double to half/bfloat16 through float: 1 + 2**-11 + 2**-40 is a tie once in float32 and
    rounds to even (1.0) in half, as PyTorch's full, fill_, x[i] = v, masked_fill, where, clamp and half + v give.
    Before, numpy rounded the double to half at once (1.000977, the next half up)."""
    want = float(np.float32(tie).astype(torch.zeros(1, dtype=dtype).numpy(force=True).dtype))
    assert want == 1.0
    z = torch.zeros(2, dtype=dtype, device=device)
    t = z.clone()
    t.fill_(tie)
    u = z.clone()
    u[0] = tie
    for r in (torch.full((2,), tie, dtype=dtype, device=device), t, u[:1], z.masked_fill(z == 0, tie),
              torch.where(z == 0, tie, z), z.clamp(min=tie), z + tie, tie + z, torch.tensor([tie], dtype=dtype)):
        assert r.dtype == dtype and r.tolist()[0] == want, r


def test_linear_bias_and_class_target_dtypes_are_checked(device):
    """PyTorch: F.linear with a bias of another dtype raises ('self and mat2 must have the same dtype, but got Double
    and Float'), it is not promoted; nll_loss/cross_entropy targets must be int64 or uint8 ('expected target dtype
    to be Long or Byte, but got Int').  Before: a float64 result, and int32/int16/int8 targets accepted."""
    F = torch.nn.functional
    x, w = torch.ones(2, 2, device=device), torch.ones(1, 2, device=device)
    for inp in (x, x[0], torch.ones(2, 3, 2, device=device)):
        with pytest.raises(RuntimeError, match="self and mat2 must have the same dtype, but got Double and Float"):
            F.linear(inp, w, torch.ones(1, dtype=torch.float64, device=device))
    assert F.linear(x, w, torch.ones(1, device=device)).tolist() == [[3.0], [3.0]]
    logits = torch.tensor([[1.0, 2.0]], device=device)
    for d, name in ((torch.int32, "Int"), (torch.int16, "Short"), (torch.int8, "Char"), (torch.bool, "Bool"),
                    (torch.float32, "Float")):
        t = torch.tensor([1], dtype=d, device=device)
        with pytest.raises(RuntimeError, match=f"expected target dtype to be Long or Byte, but got {name}"):
            F.nll_loss(logits, t)
        if d is not torch.float32:  # (a float target of the input's shape is probabilities)
            with pytest.raises(RuntimeError, match=f"expected target dtype to be Long or Byte, but got {name}"):
                F.cross_entropy(logits, t)
    for d in (torch.int64, torch.uint8):
        assert F.cross_entropy(logits, torch.tensor([1], dtype=d, device=device)).shape == ()


def test_np_array_of_a_tensor_is_a_copy():
    """numpy 2's np.array(t) asks __array__ for a copy: PyTorch's array is a copy (writing to it leaves t as it
    was), np.asarray(t) shares t's memory.  Before, np.array(t) shared it too (a write changed t, silently)."""
    t = torch.arange(4.0)
    a = np.array(t)
    a[0] = 9.0
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
    b = np.asarray(t)
    b[1] = 7.0
    assert t.tolist() == [0.0, 7.0, 2.0, 3.0]
    c = np.array(t, dtype=np.float64)
    c[2] = 5.0
    assert t[2].item() == 2.0 and c.dtype == np.float64
    assert np.array(t, dtype=np.float32, copy=True) is not np.asarray(t)


def test_bfloat16_tensor_legacy_constructor():
    """PyTorch has torch.BFloat16Tensor beside HalfTensor: the legacy constructor and isinstance type of bfloat16
    tensors (t.type() names it).  Before: AttributeError."""
    t = torch.BFloat16Tensor([1.00390625, 2])
    assert t.dtype == torch.bfloat16 and t.tolist() == [1.0, 2.0]
    assert isinstance(t, torch.BFloat16Tensor) and not isinstance(torch.ones(1), torch.BFloat16Tensor)
    assert t.type() == "torch.BFloat16Tensor" and torch.ones(1).type(torch.BFloat16Tensor).dtype == torch.bfloat16
    assert torch.BFloat16Tensor(2, 3).shape == (2, 3)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.int32, torch.uint8])
def test_clamp_with_numpy_bounds_keeps_its_dtype(device, dtype):
    """PyTorch: clamp(int32, min=np.float64(2.5)) is a float32 tensor (the bound a Python float); a float tensor
    clamped by 0-d arrays keeps its dtype.  Before, numpy's clip promoted the storage to float64 under a float32
    (float16) dtype: a tensor whose values were not of its dtype."""
    t = torch.arange(6, device=device).to(dtype)
    for lo, hi in ((np.float64(2.5), None), (np.array(2.0), np.array(4.0)), (np.int64(2), np.float32(4.5)),
                   (np.array(2), None)):
        r = torch.clamp(t, min=lo, max=hi)
        ref = torch.clamp(t, min=torch.as_tensor(lo, device=device) if isinstance(lo, np.ndarray) else lo.item(),
                          max=None if hi is None else
                          torch.as_tensor(hi, device=device) if isinstance(hi, np.ndarray) else hi.item())
        _same(r, ref)
        assert _np(r).dtype == _np(torch.empty(0, dtype=r.dtype)).dtype


def test_numpy_eps_and_delta_are_python_floats(device):
    """PyTorch takes logit's eps and huber_loss's delta as doubles: a numpy number gives what the Python float
    does, without numpy arithmetic on it.  Before, 1 - np.uint8(2) wrapped (a RuntimeWarning) and the loss's
    delta terms were computed in numpy's float32."""
    x = torch.tensor([0.0, 0.3, 1.0], device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for eps in (np.float32(0.1), np.float64(0.25), np.uint8(2)):
            _same(torch.logit(x, eps=eps), torch.logit(x, eps=float(eps)))
        for delta in (np.float32(0.1), np.float64(2.5), np.int64(1)):
            _same(torch.nn.functional.huber_loss(x, x * 3, delta=delta),
                  torch.nn.functional.huber_loss(x, x * 3, delta=float(delta)))
