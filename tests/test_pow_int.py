"""Integer ``pow`` with a tensor exponent follows PyTorch's powi on every available device: a negative exponent
gives the truncated integral result (1 ** -n == 1, (-1) ** -n == -1 for odd n else 1, any other base 0, 0 too),
positive powers wrap (two's complement); only a negative Python-int exponent raises."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch
from coretorch.testing import available_devices

DEVICES = available_devices()
SIGNED = (np.int8, np.int16, np.int32, np.int64)
NEG_POW = "Integers to negative integer powers are not allowed."


def _powi_one(a: int, e: int, dt) -> int:
    """The rule, element by element in Python ints, wrapped to ``dt`` (two's complement)."""
    if e < 0:
        return 1 if a == 1 else ((-1 if e % 2 else 1) if a == -1 else 0)
    info = np.iinfo(dt)
    span = int(info.max) - int(info.min) + 1
    return (a ** e - int(info.min)) % span + int(info.min)


def powi_ref(a, e, dt):
    a, e = np.broadcast_arrays(np.asarray(a, dtype=np.int64), np.asarray(e, dtype=np.int64))
    out = [_powi_one(int(x), int(y), dt) for x, y in zip(a.ravel(), e.ravel())]
    return np.array(out, dtype=np.int64).astype(dt).reshape(a.shape)


def _t(a, dev, dt=None):
    return coretorch.tensor(np.asarray(a, dtype=dt), device=dev)


def _check(out, want, dt):
    assert out.dtype == coretorch.tensor(np.zeros(1, dt)).dtype
    np.testing.assert_array_equal(out.cpu().numpy(), want)


@pytest.mark.parametrize("dt", SIGNED, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("dev", DEVICES)
def test_grid_broadcast_and_layouts(dev, dt):
    base = np.arange(-2, 3, dtype=dt)                      # -2 .. 2
    exp = np.arange(-3, 4, dtype=dt)                       # -3 .. 3
    want = powi_ref(base[:, None], exp[None, :], dt)
    a, e = _t(base[:, None], dev), _t(exp, dev)
    _check(a ** e, want, dt)                               # broadcasting (5, 1) ** (7,)
    _check(coretorch.pow(a, e), want, dt)
    _check(a.expand(5, 7) ** _t(np.ascontiguousarray(np.broadcast_to(exp, (5, 7)).T), dev).t(), want, dt)
    strided = _t(np.repeat(exp, 2), dev)[::2]              # a non-contiguous (step 2) exponent
    assert not strided.is_contiguous()
    _check(a ** strided, want, dt)
    _check(_t(base, dev)[:, None] ** e[None, :], want, dt)
    for k, v in enumerate(exp):                            # a 0-d exponent tensor and a 0-d base tensor
        _check(_t(base, dev) ** _t(v, dev), want[:, k], dt)
    for i, v in enumerate(base):
        _check(_t(v, dev) ** e, want[i], dt)
        _check(_t(v, dev) ** _t(exp[0], dev), want[i, 0], dt)


@pytest.mark.parametrize("dt", SIGNED, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("dev", DEVICES)
def test_scalar_base_inplace_and_overflow(dev, dt):
    exp = np.arange(-3, 4, dtype=dt)
    e = _t(exp, dev)
    for s in (-2, -1, 0, 1, 2):                            # Python scalar base: 2 ** t, torch.pow(2, t)
        want = powi_ref(s, exp, dt)
        _check(s ** e, want, dt)
        _check(coretorch.pow(s, e), want, dt)
    base = np.array([-2, -1, 0, 1, 2, 3, -3], dt)
    ex = np.array([-1, -3, -2, -5, 3, 2, -1], dt)
    x = _t(base, dev)
    assert x.pow_(_t(ex, dev)) is x
    _check(x, powi_ref(base, ex, dt), dt)
    x = _t(base, dev)
    x **= _t(ex, dev)
    _check(x, powi_ref(base, ex, dt), dt)
    bits = np.iinfo(dt).bits                               # positive powers wrap as two's complement
    base = np.array([2, 2, 3, -3, 7, -1, 0], dt)
    ex = np.array([bits - 1, bits, bits, bits - 1, bits + 3, bits + 1, 0], dt)
    _check(_t(base, dev) ** _t(ex, dev), powi_ref(base, ex, dt), dt)


@pytest.mark.parametrize("dev", DEVICES)
def test_uint8(dev):
    base = np.array([0, 1, 2, 3, 255, 16], np.uint8)[:, None]
    exp = np.arange(0, 4, dtype=np.uint8)
    want = powi_ref(base, exp, np.uint8)
    _check(_t(base, dev) ** _t(exp, dev), want, np.uint8)
    _check(coretorch.pow(2, _t(exp, dev)), powi_ref(2, exp, np.uint8), np.uint8)
    _check(_t(base, dev) ** _t(np.array([9, 8, 7, 5], np.uint8), dev)[::2], powi_ref(base, [9, 7], np.uint8),
           np.uint8)


@pytest.mark.parametrize("dev", DEVICES)
def test_mixed_dtypes_promote_then_powi(dev):
    a = _t(np.array([2, -1, 1, 0], np.int8), dev)
    e = _t(np.array([-1, -3, -4, -2], np.int64), dev)
    _check(a ** e, np.array([0, -1, 1, 0], np.int64), np.int64)
    assert (a ** e).dtype == coretorch.int64
    f = a ** _t(np.array([-1.0, -3.0, 2.0, 1.0], np.float32), dev)   # float exponent: float result, no powi
    np.testing.assert_allclose(f.cpu().numpy(), [0.5, -1.0, 1.0, 0.0])


@pytest.mark.parametrize("dt", SIGNED + (np.uint8,), ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("dev", DEVICES)
def test_python_int_negative_exponent_still_raises(dev, dt):
    x = _t(np.array([2, 3], dt), dev)
    for call in (lambda: x ** -1, lambda: coretorch.pow(x, -2), lambda: x.pow_(-1), lambda: x.pow(-3)):
        with pytest.raises(RuntimeError) as info:
            call()
        assert str(info.value) == NEG_POW
    assert x.tolist() == [2, 3]
    _check(x ** 0, np.array([1, 1], dt), dt)
    _check(x ** 2, np.array([4, 9], dt), dt)


@pytest.mark.parametrize("dt", SIGNED + (np.uint8,), ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("dev", DEVICES)
def test_python_int_exponent_out_of_the_dtype_range_raises(dev, dt):
    """As PyTorch: the Python-int exponent is converted to the tensor's integer type first, so int8 ** 200 raises
    (it does not wrap the exponent); the largest exponent that fits still computes (wrapping the power)."""
    x = _t(np.array([2, 1], dt), dev)
    hi = int(np.iinfo(dt).max)
    name = coretorch.dtypes._C_NAMES[np.dtype(dt).name]  # PyTorch's C++ type names: int8_t, int, long int, ...
    for call in (lambda: x ** (hi + 1), lambda: coretorch.pow(x, hi + 73), lambda: x.pow_(hi + 1)):
        with pytest.raises(RuntimeError, match=f"value cannot be converted to type {name} without overflow"):
            call()
    assert x.tolist() == [2, 1]
    e = min(hi, 1000)  # int8/uint8: the largest exponent that fits
    _check(x ** e, np.array([_powi_one(2, e, dt), 1], dt), dt)
