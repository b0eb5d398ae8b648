"""The operand checks of integer ``//``, ``%`` (a zero divisor) on 'opencl' stay on the device (the optional
'check_values' primitive): no host read inside the op; a bad operand raises PyTorch's RuntimeError at the next host
read or at ``synchronize()``; the kernels themselves never trap (PoCL's x / 0 and INT_MIN / -1 are SIGFPE on x86) and
give numpy's results for valid operands.  Integer ``**`` with a tensor exponent has no check (as PyTorch): a negative
exponent gives powi's truncated integral value; only a negative Python-int exponent raises, at the call."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch
import coretorch.nn.functional as F
import coretorch_opencl
from coretorch_opencl import STATS

_BE = coretorch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")

ZERO = "ZeroDivisionError"
NEG_POW = "Integers to negative integer powers are not allowed."
INT_DTYPES = (np.int64, np.int32)

OPS = {  # name -> (coretorch op, numpy reference, the operand check's message)
    "floordiv": (lambda a, b: a // b, np.floor_divide, ZERO),
    "mod": (lambda a, b: a % b, np.remainder, ZERO),
    "floor_divide": (coretorch.floor_divide, np.floor_divide, ZERO),
    "remainder": (coretorch.remainder, np.remainder, ZERO),
    "div_floor": (lambda a, b: a.div(b, rounding_mode="floor"), np.floor_divide, ZERO),
    "div_trunc": (lambda a, b: a.div(b, rounding_mode="trunc"), lambda a, b: _trunc_div(a, b), ZERO),
    "fmod": (lambda a, b: a.fmod(b), np.fmod, ZERO),
}
INPLACE = {  # name -> (in-place op (returns the tensor), numpy reference, message)
    "ifloordiv": (lambda x, b: _iop(x, "__ifloordiv__", b), np.floor_divide, ZERO),
    "imod": (lambda x, b: _iop(x, "__imod__", b), np.remainder, ZERO),
    "floor_divide_": (lambda x, b: x.floor_divide_(b), np.floor_divide, ZERO),
    "remainder_": (lambda x, b: x.remainder_(b), np.remainder, ZERO),
}
POW = {  # name -> integer ** with a tensor exponent (the in-place forms return their tensor)
    "pow": lambda a, b: a ** b,
    "torch_pow": coretorch.pow,
    "ipow": lambda x, b: _iop(x, "__ipow__", b),
    "pow_": lambda x, b: x.pow_(b),
}


def _iop(x, name, b):
    y = getattr(x, name)(b)
    assert y is x
    return y


def _t(a):
    return coretorch.tensor(a, device="opencl")


def _trunc_div(a, b):
    """C's integer division (toward zero) in Python ints, wrapped to the dtype (INT_MIN / -1 == INT_MIN)."""
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    bits = a.dtype.itemsize * 8
    out = []
    for x, y in zip(a.ravel().tolist(), b.ravel().tolist()):
        q = abs(x) // abs(y)
        q = q if (x < 0) == (y < 0) else -q
        out.append((q + 2 ** (bits - 1)) % 2 ** bits - 2 ** (bits - 1))
    return np.array(out, a.dtype).reshape(a.shape)


def _powi(a, b):
    """numpy's power, with PyTorch's powi where the exponent is negative: 1, +-1 for base -1 (by parity), else 0."""
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    with np.errstate(all="ignore"):
        r = np.power(a, np.where(b < 0, 0, b))
    neg = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
    return np.where(b < 0, neg, r).astype(r.dtype)


def _operands(name, dt):
    """(a, b) valid for op ``name``: negative operands both sides for division, INT_MIN // -1 (wraps, as numpy);
    for pow, exponents in [-4, 6) (negative ones too: powi) and powers that wrap."""
    info = np.iinfo(dt)
    rng = np.random.default_rng(3)
    if "pow" in name:
        a = rng.integers(-9, 10, (3, 8)).astype(dt)
        b = rng.integers(-4, 6, (3, 8)).astype(dt)
        a[0, :8], b[0, :8] = (2, -3, info.min, 1, -1, -1, 0, 2), (info.bits - 2, 7, 1, -3, -3, -2, -1, info.bits)
        return a, b
    a = rng.integers(-1000, 1000, (3, 8)).astype(dt)
    b = rng.integers(1, 40, (3, 8)).astype(dt) * rng.choice(np.array([-1, 1], dt), (3, 8))
    a[0, :5], b[0, :5] = (info.min, info.min, info.max, info.min + 1, 0), (-1, 1, -1, -1, -1)
    a[1, :3], b[1, :3] = (info.max, info.min + 3, 2 ** 25 + 1), (2, 2, 1)  # past float32's (and int64: double's) digits
    return a, b


def _bad(name, b):
    """b with one bad element: a zero divisor."""
    b = b.copy()
    b[1, 5] = 0
    return b


def _ref(fn, a, b):
    with np.errstate(all="ignore"):
        return fn(a, b)


@pytest.mark.parametrize("dt", INT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", list(OPS))
def test_valid_operands_match_numpy_without_host_read(name, dt):
    fn, ref, _ = OPS[name]
    a, b = _operands(name, dt)
    for layout in ("c", "strided", "broadcast", "scalar_first"):
        if layout == "c":
            x, y, want = _t(a), _t(b), _ref(ref, a, b)
        elif layout == "strided":                     # transposed views of both operands
            x, y = _t(np.ascontiguousarray(a.T)).t(), _t(np.ascontiguousarray(b.T)).t()
            want = _ref(ref, a, b)
        elif layout == "broadcast":                   # b's first row against every row of a
            x, y, want = _t(a), _t(b[:1]), _ref(ref, a, b[:1])
        else:
            if name in ("div_floor", "div_trunc", "fmod"):
                continue
            x, y, want = int(a[0, 5]), _t(b), _ref(ref, a[0, 5], b)
        before = STATS["to_host"]
        out = fn(x, y)
        assert STATS["to_host"] == before, f"{name} [{layout}] read the host inside the op"
        assert out.dtype == coretorch.tensor(want).dtype
        np.testing.assert_array_equal(out.cpu().numpy(), want, err_msg=f"{name} [{layout}]")
        assert STATS["to_host"] == before + 1, "the check took a read of its own"


@pytest.mark.parametrize("dt", INT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", list(OPS))
@pytest.mark.parametrize("reader", ["item", "numpy", "tolist", "str", "cpu", "synchronize"])
def test_bad_operand_raises_at_the_next_host_read(name, dt, reader):
    fn, _, msg = OPS[name]
    a, b = _operands(name, dt)
    x, y = _t(a), _t(_bad(name, b))
    before = STATS["to_host"]
    out = fn(x, y)                                    # never raises (nor traps) at the call
    assert STATS["to_host"] == before, f"{name} read the host inside the op"
    read = {"item": lambda: out[0, 0].item(), "numpy": lambda: out.cpu().numpy(), "tolist": out.tolist,
            "str": lambda: str(out), "cpu": out.cpu, "synchronize": coretorch_opencl.synchronize}[reader]
    with pytest.raises(RuntimeError) as info:
        read()
    assert str(info.value) == msg
    coretorch_opencl.synchronize()                    # reported once
    assert out.cpu().numpy().shape == a.shape         # the result holds some values: the kernel ran on bad input
    assert x.tolist() == a.tolist(), "the failed op changed its input"
    good = fn(x, _t(b)).cpu().numpy()                 # the device is usable afterwards
    np.testing.assert_array_equal(good, _ref(OPS[name][1], a, b))


@pytest.mark.parametrize("dt", INT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_forms(name, dt):
    fn, ref, msg = INPLACE[name]
    a, b = _operands(name, dt)
    x = _t(a)
    before = STATS["to_host"]
    fn(x, _t(b))
    assert STATS["to_host"] == before
    np.testing.assert_array_equal(x.cpu().numpy(), _ref(ref, a, b))
    x = _t(a)
    fn(x, _t(_bad(name, b)))                          # never raises at the call, never traps
    assert STATS["to_host"] == before + 1
    with pytest.raises(RuntimeError) as info:
        coretorch_opencl.synchronize()
    assert str(info.value) == msg
    fn(x, _t(_bad(name, b)))
    with pytest.raises(RuntimeError) as info:
        x.tolist()
    assert str(info.value) == msg


@pytest.mark.parametrize("dt", INT_DTYPES + (np.int16, np.int8), ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", list(POW))
def test_pow_negative_tensor_exponent_is_powi_without_check(name, dt):
    """No operand check for integer ** with a tensor exponent (as PyTorch): negative exponents give powi's values,
    nothing is left pending, the op makes no host read and launches no 'check_values' kernel."""
    fn = POW[name]
    a, b = _operands(name, dt)
    assert (b < 0).any()
    inplace = name in ("ipow", "pow_")
    for layout in ("c", "strided", "broadcast", "0d", "scalar_first"):
        if layout == "c":
            x, y, want = _t(a), _t(b), _powi(a, b)
        elif layout == "strided":
            x, y = _t(np.ascontiguousarray(a.T)).t(), _t(np.ascontiguousarray(b.T)).t()
            want = _powi(a, b)
        elif layout == "broadcast":
            x, y, want = _t(a), _t(b[:1]), _powi(a, b[:1])
        elif layout == "0d":
            x, y, want = _t(a), _t(b[0, 3]), _powi(a, b[0, 3])
        else:
            if inplace:
                continue
            x, y, want = int(a[0, 4]), _t(b), _powi(np.array(a[0, 4]), b)
        if inplace and layout == "strided":
            x = x.clone()
        before, launches = STATS["to_host"], STATS["launches"]
        out = fn(x, y)
        assert STATS["to_host"] == before, f"{name} [{layout}] read the host inside the op"
        expect = 1 + (inplace or layout == "scalar_first")  # pow (+ the copy back / the scalar base's fill)
        assert STATS["launches"] - launches == expect, f"{name} [{layout}] launched a check"
        coretorch_opencl.synchronize()                # nothing pending
        assert out.dtype == coretorch.tensor(want).dtype
        np.testing.assert_array_equal(out.cpu().numpy(), want, err_msg=f"{name} [{layout}]")


def test_bad_values_do_not_crash_and_give_defined_values():
    """The kernels on a zero divisor / negative exponent: 0 for x // 0 and x % 0, PyTorch's powi for x ** -n (valid,
    no error), and INT_MIN // -1 wraps (a process still alive afterwards is the point: these trap on x86
    unguarded)."""
    for dt in (np.int64, np.int32, np.int16, np.int8, np.uint8):
        lo = int(np.iinfo(dt).min)
        signed = lo < 0
        a = np.array([7, lo, 0, 1, 5] if signed else [7, 0, 1, 200, 5], dt)
        b = np.array([0, 0, 0, 0, 0], dt)
        out = [_t(a) // _t(b), _t(a) % _t(b)]
        with pytest.raises(RuntimeError, match=f"^{ZERO}$"):
            coretorch_opencl.synchronize()
        assert [o.tolist() for o in out] == [[0] * 5, [0] * 5]
        if signed:
            e = np.array([-1, -1, -3, -2, -1, -4, -2], dt)
            p = _t(np.array([1, -1, -1, 2, 0, -1, lo], dt)) ** _t(e)
            assert p.tolist() == [1, -1, -1, 0, 0, 1, 0]
            m = _t(np.array([lo, lo + 1, 3], dt))
            neg1 = _t(np.array([-1, -1, -1], dt))
            assert (m // neg1).tolist() == [lo, -(lo + 1), -3] and (m % neg1).tolist() == [0, 0, 0]


def test_scalar_operands_are_checked_at_once():
    x = _t(np.array([4, -3, 0]))
    for call, msg in ((lambda: x // 0, ZERO), (lambda: x % 0, ZERO), (lambda: x ** -1, NEG_POW),
                      (lambda: x.div(0, rounding_mode="trunc"), ZERO), (lambda: x.floor_divide_(0), ZERO)):
        with pytest.raises(RuntimeError) as info:
            call()
        assert str(info.value) == msg


def test_first_failure_wins_with_index_checks():
    x = coretorch.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3), device="opencl")
    a, z = _t(np.array([3, 4])), _t(np.array([1, 0]))
    a // z
    x.gather(1, _t(np.array([[0, 7]])))
    with pytest.raises(RuntimeError, match=f"^{ZERO}$"):
        x.sum().item()
    x.index_select(0, _t(np.array([9])))
    a % z
    a ** _t(np.array([-1, 2]))                      # valid (powi): no check
    with pytest.raises(IndexError, match=r"^index_select\(\): index 9 out of range in self"):
        coretorch_opencl.synchronize()
    F.nll_loss(x, _t(np.array([0, 1])))             # valid: nothing pending afterwards
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def _strided(table, a):
    rev = tuple(range(a.ndim))[::-1]
    return table.permute(table.from_numpy(np.ascontiguousarray(np.transpose(a, rev))), rev)


def test_kernel_many_dims_dtypes_and_layouts():
    """The primitive itself: one launch, any rank, non-contiguous views, integer and bool dtypes, the message as
    is (braces too); nothing to check is no launch; a float array or an unknown kind is refused."""
    table = coretorch.ones(1, device="opencl")._be
    assert table.has("check_values")
    rng = np.random.default_rng(0)
    for dt in (np.int64, np.int32, np.int16, np.int8, np.uint8, np.bool_):
        a = rng.integers(1, 7, (3, 2, 4, 2, 3, 2)).astype(dt)
        arr = table.basic_index(_strided(table, a), (slice(None),) * 3 + (slice(None, None, 2),))
        assert not table.is_contiguous(arr)
        before = STATS["launches"]
        table.check_values(arr, "nonzero", "bad {}")
        assert STATS["launches"] == before + 1
        _BE.synchronize()
        bad = a.copy()
        if np.dtype(dt).kind == "i":
            bad[2, 1, 0, 0, 1, 1] = -1                # negative is not zero
            table.check_values(_strided(table, bad), "nonzero", "never")
            _BE.synchronize()
        bad[1, 0, 3, 1, 2, 0] = 0
        table.check_values(_strided(table, bad), "nonzero", "zero in {x}")
        with pytest.raises(RuntimeError, match=r"^zero in \{x\}$"):
            _BE.synchronize()
    before = STATS["launches"]
    table.check_values(table.from_numpy(np.zeros((0, 3), np.int64)), "nonzero", "bad")
    assert STATS["launches"] == before
    for kind in ("positive", "nonnegative"):          # 'nonzero' is the only kind
        with pytest.raises(ValueError):
            table.check_values(table.from_numpy(np.ones(3, np.int64)), kind, "bad")
    with pytest.raises(TypeError):
        table.check_values(table.from_numpy(np.ones(3, np.float32)), "nonzero", "bad")


def test_integer_division_loop_makes_no_host_read():
    a, b = _t(np.arange(1, 65)), _t(np.arange(64, 0, -1))
    acc = coretorch.zeros(64, dtype=coretorch.int64, device="opencl")
    before = STATS["to_host"]
    for _ in range(20):
        acc = acc + a // b + a % b + b ** _t(np.full(64, 2))
    assert STATS["to_host"] == before
    na, nb = np.arange(1, 65), np.arange(64, 0, -1)
    np.testing.assert_array_equal(acc.cpu().numpy(), 20 * (na // nb + na % nb + nb ** 2))
    assert len(_BE.device(0)._codes) == 0
