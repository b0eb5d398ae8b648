"""bfloat16 on the cpu device: arrays of ml_dtypes' ``bfloat16`` numpy dtype.

ml_dtypes registers numpy's elementwise ufuncs for bfloat16 (add, multiply, exp, tanh, comparisons, ...): each
converts its operands to float32, computes and rounds the result to bfloat16 (round to nearest even), which is
what PyTorch does on CPU, so those kernels run natively.  Three kinds of kernels must not: reductions and scans
(numpy would accumulate in bfloat16, rounding at every step; PyTorch accumulates in float32), products (numpy's
matmul of bfloat16 is an unblocked loop that returns float32) and composite kernels that chain several ufuncs
(sigmoid, rsqrt, softmax, ...: PyTorch rounds once).  ``float_compute(table)`` wraps those: for a bfloat16 first
operand they run in float32 and the float32 results are rounded to bfloat16 once; any other dtype goes straight
to the kernel after one dtype check.
"""
from __future__ import annotations

import numpy as np
from coretorch.dtypes import BFLOAT16_NOT_LOADED, on_bfloat16

# ml_dtypes' bfloat16, set when the core loads it on bfloat16's first use (importing ml_dtypes costs about a
# second); until then the core's stand-in, which equals no array's dtype
BF16 = BFLOAT16_NOT_LOADED


def _set_bf16(npd: np.dtype) -> None:
    global BF16
    BF16 = npd


on_bfloat16(_set_bf16)
_F32 = np.dtype(np.float32)
_F16 = np.dtype(np.float16)
_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)
_U8 = np.dtype(np.uint8)
_nd = np.ndarray

KERNELS: dict = {}  # no new primitives: the wrappers below replace existing entries

# kernels whose first array operand decides (the core has already promoted every operand to one dtype)
_FIRST_ARG = ("sum", "prod", "cumsum", "matmul", "linear", "linear_backward", "rsqrt",
              "clamp", "erf", "softmax", "log_softmax", "log_softmax_backward", "nll_loss", "conv2d",
              "conv2d_backward_input", "conv2d_backward_weight")
# kernels of the core that bfloat16 runs natively (exact, or one ufunc rounded once) or that take no array
_NATIVE = frozenset(("from_numpy", "to_numpy", "full", "empty", "eye", "arange", "rand", "randn", "randint",
                     "manual_seed", "uniform_", "normal_", "cast", "contiguous", "is_contiguous", "strides", "view",
                     "permute", "expand", "basic_index", "flip", "tile", "cat", "assign_", "setitem_", "index",
                     "index_put_", "gather", "index_select", "nonzero", "where", "amax", "amin", "any", "all",
                     "argmax", "argmin", "iadd", "isub", "imul", "idiv", "max_pool2d", "max_pool2d_backward",
                     "check_index", "check_values", "scatter_add", "index_add",
                     # memory queries and views: a float32 copy would be another buffer (no write reaches the tensor)
                     "as_strided", "storage_offset", "same_storage", "view_dtype"))


def _to32(a):
    return a.astype(_F32) if a.__class__ is _nd and a.dtype is BF16 else a


def _back(r):
    """float32 results rounded to bfloat16 (tuples element by element; integer results as they are)."""
    if r.__class__ is _nd:
        return r.astype(BF16) if r.dtype == _F32 else r
    if isinstance(r, (tuple, list)):
        return type(r)(_back(x) for x in r)
    return r


def _first(fn):
    def k(x, *args):
        if x.__class__ is _nd and x.dtype is BF16:
            return _back(fn(x.astype(_F32), *[_to32(a) for a in args]))
        return fn(x, *args)
    k.__wrapped__ = fn
    return k


def _any(fn):
    """A family kernel of unknown signature: any bfloat16 array argument sends the call through float32."""
    def k(*args, **kwargs):
        for a in args:
            if a.__class__ is _nd and a.dtype is BF16:
                return _back(fn(*[_to32(x) for x in args], **{n: _to32(v) for n, v in kwargs.items()}))
        return fn(*args, **kwargs)
    k.__wrapped__ = fn
    return k


def _axpy(fn):
    def k(y, a, x):
        if y.dtype is BF16 or y.dtype is _F16:  # y + a * x in float32, rounded once (PyTorch's add_ with alpha)
            a = float(y.dtype.type(a))  # alpha in y's dtype first, as PyTorch's (h.add_(x, alpha=0.3): 0.2999267578125)
            y[...] = (y.astype(_F32) + a * x.astype(_F32)).astype(y.dtype)
            return
        fn(y, a, x)
    return k


def _random(fn):
    def k(shape, dt):
        r = fn(shape, dt)
        if r.dtype is BF16:
            # a float32 draw just below 1 rounds up to 1.0: keep U[0, 1) as PyTorch does
            r[r == 1] = np.nextafter(np.array(1, BF16), np.array(0, BF16))
        return r
    return k


def _sigmoid(fn):
    def k(x):
        if x.dtype is BF16 or x.dtype is _F16:  # in float32, rounded once (PyTorch's op math for reduced floats)
            return fn(x.astype(_F32)).astype(x.dtype)
        return fn(x)
    return k


def _cast(fn):
    def k(x, dt):
        if x.dtype is BF16 and dt.kind in "iu":
            # through float32 as the other floats (ml_dtypes' own bfloat16 -> uint8 gives 0 for -2, PyTorch 254)
            return k(x.astype(_F32), dt)
        if dt is _U8 and x.dtype is _F64:
            # through int64 as c10's float -> uint8 cast (numpy's direct one goes through int32 on x86: 2**31 + 5 is
            # 0, PyTorch's 5); float32/float16 agree either way (no float32 of 2**31 or more has a nonzero low byte)
            return fn(fn(x, _I64), dt)
        if x.dtype is _F64 and (dt is _F16 or dt is BF16):
            # through float32 as c10's double -> Half/BFloat16 conversion (both round from a float): a double just
            # past a half-way point rounds down to it in float32, then to even (PyTorch's value, not numpy's)
            return k(k(x, _F32), dt)
        if dt is BF16 or x.dtype is BF16 or dt is _F16 or dt is _F32 and x.dtype is _F64:
            with np.errstate(invalid="ignore", over="ignore"):  # NaN and overflow convert silently (as PyTorch)
                return fn(x, dt)
        return fn(x, dt)
    return k


def float_compute(table: dict, core: frozenset) -> dict:
    """Wrapped entries of ``table`` (the cpu kernels; ``core`` the names of the kernels there before the op
    families': native unless listed above): float32 compute for bfloat16 where numpy's own bfloat16 loops would
    round more than once."""
    out = {}
    for name in _FIRST_ARG:
        if name in table:
            out[name] = _first(table[name])
    out["axpy_"] = _axpy(table["axpy_"])
    out["sigmoid"] = _sigmoid(table["sigmoid"])
    out["cast"] = _cast(table["cast"])
    out["rand"] = _random(table["rand"])
    for name, fn in table.items():
        if name in out or name in _NATIVE or name.endswith("_") or name in core:
            continue
        out[name] = _any(fn)  # the op families' kernels (scipy's special functions know no bfloat16)
    return out
