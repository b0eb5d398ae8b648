"""The 'cpu' device: coretorch's primitive kernel table on numpy arrays.

Views (view/permute/expand/basic indexing) are numpy views, so they cost no copy; every kernel is one
vectorised numpy call, never a Python loop over elements.
"""
from __future__ import annotations

import math
import platform

import numpy as np

from coretorch._fpquiet import quiet_call as _quiet_call

from . import dtypes as _dtypes  # (its BF16 is rebound when bfloat16 loads: read it as an attribute)
from . import memory, sampling  # the allocator set-up; the random family: generator states and sampling kernels
from .blas1 import axpy as _blas_axpy
from . import pairwise as _pairwise
from .pairwise import outer_sum as _outer_sum
from .rows import colsum as _colsum
from .rows import rowop as _rowop
from .shaping import _OVERLAP, _writable

nd = np.ndarray
_asarray = np.asarray


def _arr(fn):
    """numpy returns scalars for 0-d results; the kernel contract is arrays (so they stay writable)."""
    def k(*args):
        r = fn(*args)
        return r if r.__class__ is nd else _asarray(r)
    return k


def _quiet(fn):
    """Ops whose edge cases (log(0), x/0, exp(1000), sin(inf), inf - inf in a scan) are IEEE results in PyTorch,
    not warnings: numpy's error state off for the call (coretorch._fpquiet: a prebuilt state, ~0.2 us)."""
    def k(*args):
        r = _quiet_call(fn, *args)
        return r if r.__class__ is nd else _asarray(r)
    return k


_F16, _F32, _F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)


def _reduce(fn, short: int, wraps: bool = False, blocked: bool = False):
    """``fn`` is a ufunc's reduce.  numpy reduces a short contiguous last axis one row at a time (128 rows of
    10: ~12 us for max); copied transposed, the same reduction is one vectorised pass over rows (~3 us).
    ``short`` is the longest last axis for which the copy pays (measured: 16 for sum, 32 for max/min).
    ``wraps``: an integer input reduces in its own dtype (numpy's add/multiply reduce an int8..int32 array in
    int64: ``sum(dtype=torch.int8)`` held 228 in an int8 tensor where PyTorch wraps to -28).
    ``blocked`` (sum): a float reduction that keeps the last axis is summed in blocks (pairwise.outer_sum), where
    numpy would add row after row; float16 is summed in float32 and rounded once, as PyTorch (numpy adds half to
    half: a (20000, 3) bias gradient of 0.1 summed to 1993 through sum_to, not 2000)."""
    def k(x, axes, keepdim):
        if blocked and x.dtype.kind == "f":
            if x.dtype == _F16:
                return k(x.astype(_F32), axes, keepdim).astype(_F16)
            if axes is not None and x.ndim > 1 and x.size > _pairwise.MIN_ROWS:
                r = _outer_sum(x, axes, keepdim)
                if r is not None:
                    return r
        dt = x.dtype if wraps and x.dtype.kind in "iu" else None
        if x.size >= 512 and axes is not None and len(axes) == 1 and x.ndim > 1 and x.shape[-1] <= short \
                and (axes[0] == -1 or axes[0] == x.ndim - 1) and x.flags.c_contiguous:
            n = x.ndim
            r = fn(np.ascontiguousarray(x.T if n == 2 else x.transpose((n - 1,) + tuple(range(n - 1)))), axis=0,
                   dtype=dt)
            return r[..., None] if keepdim else r
        r = fn(x, axis=axes, keepdims=keepdim, dtype=dt)
        if r.__class__ is not nd:
            return _asarray(r)
        return r if r.flags.c_contiguous else np.ascontiguousarray(r)  # (row-major as PyTorch's; numpy keeps x's)
    return k


def _view(x, shape):
    try:
        return np.reshape(x, shape, copy=False)
    except ValueError:
        return None


def _expand(x, shape):
    """A read-only broadcast view.  np.broadcast_to costs ~5 us of Python per call; for a contiguous
    source the same view is one ndarray constructor with zero strides on the broadcast dims."""
    if not x.flags.c_contiguous or x.size == 0:
        r = np.broadcast_to(x, shape)
        lead = len(shape) - x.ndim
        if 1 in x.shape and any(s == 1 == t and d for s, t, d in zip(x.shape, shape[lead:], x.strides)):
            # (a size-1 dim left at size 1 keeps its stride, as PyTorch's expand; numpy's is 0)
            st = r.strides[:lead] + tuple(d if s == 1 == t else e for s, t, d, e in
                                          zip(x.shape, shape[lead:], x.strides, r.strides[lead:]))
            r = np.lib.stride_tricks.as_strided(x, shape, st, writeable=False)
        return r
    lead = len(shape) - x.ndim
    st = (0,) * lead + tuple(0 if s == 1 and t != 1 else d for s, t, d in zip(x.shape, shape[lead:], x.strides))
    r = np.ndarray(shape, x.dtype, x, 0, st)
    r.flags.writeable = False
    return r


def _sigmoid(x):
    """1 / (1 + exp(-x)), PyTorch's formula: full relative precision for x << 0 (sigmoid(-25) = 1.4e-11, where
    the tanh form rounds to 0), 0 once exp(-x) overflows (x < -88.7 in float32), as PyTorch."""
    r = np.negative(x, out=np.empty_like(x))  # (an out array: numpy returns scalars for 0-d inputs; x's layout)
    with np.errstate(over="ignore"):
        np.exp(r, out=r)
    r += 1
    return np.reciprocal(r, out=r)


def _sign(x):
    """np.sign, with PyTorch's sign(NaN) = 0 and sign(-0.0) = +0.0 for floats."""
    r = np.sign(x, out=np.empty_like(x))
    if r.dtype.kind in "fV":  # (ml_dtypes' bfloat16 is kind "V")
        r[r != r] = 0
        r += 0  # -0.0 + 0 is +0.0
    return r


def _relu(x):
    return np.maximum(0, x, dtype=x.dtype)  # (0 first: a tie gives x, so relu(-0.0) is -0.0 as PyTorch's)


def _rsqrt(x):
    if x.dtype == _F16:  # in float32, rounded once (PyTorch's op math; the half sqrt rounded first: 1 ulp off)
        return np.reciprocal(np.sqrt(x.astype(_F32))).astype(_F16)
    return np.reciprocal(np.sqrt(x))


def _pow(a, b):
    """np.power with PyTorch's integer powi: a negative exponent of an integer base gives the truncated integral
    result (1 ** -n == 1, (-1) ** -n == -1 for odd n else 1, any other base 0) where numpy raises ValueError;
    positive powers wrap as numpy's.  One np.power call unless an exponent of an integer base is negative."""
    if a.dtype.kind in "iu" and (b < 0 if b.__class__ is int else
                                 b.__class__ is nd and b.dtype.kind == "i" and b.size and b.min() < 0):
        neg = b < 0
        r = np.power(a, np.maximum(b, 0))
        small = np.where(a == -1, 1 - 2 * (b & 1), a == 1)  # the value of a ** b where b < 0
        return np.where(neg, small, r).astype(r.dtype, copy=False)
    r = np.power(a, b)
    if b.__class__ is nd and b.size == 1 and b.dtype.kind == "f" and a.dtype.kind == "f" and b.flat[0] == 0.5:
        # a tensor exponent is C's pow in PyTorch: (-inf) ** tensor(0.5) is inf, (-0.) ** tensor(0.5) is 0.;
        # numpy's loop takes sqrt for a scalar 0.5 (nan, -0.), as PyTorch does only for a Python number (which the
        # core passes as a float)
        r = np.where(a == -np.inf, np.inf, np.where(a == 0, 0, r)).astype(r.dtype, copy=False)
    return r


def _int_identity(uf):
    def k(x):
        if x.dtype.kind in "iub":
            return x.copy()
        return uf(x)
    return k


def _cast(x, dt):
    """x as dtype ``dt`` in PyTorch's layout for a new result: numpy's order 'K' makes a stride-0 (expanded) dim the
    fastest (an expanded (3, 6) row cast to float64 came out column-major), where PyTorch's TensorIterator lets a
    zero stride decide nothing; the other dims keep their memory order."""
    if 0 not in x.strides or x.ndim < 2:
        return x.astype(dt)
    from coretorch.ops._memfmt import inverse, order  # (on use: the core loads this plugin while importing)
    o = order(x.shape, x.strides)
    if o is None:
        return x.astype(dt, order="C")
    return x.transpose(o).astype(dt, order="C").transpose(inverse(o))


def _assign(dst, src):
    try:
        dst[...] = src
    except ValueError as e:
        if dst.flags.writeable:
            raise RuntimeError(f"in-place write failed: {e}") from None
        _writable(dst)[...] = src


def _write_failed(x, e: ValueError):
    """An in-place write into ``x`` raised: a read-only view gets its writable alias (or PyTorch's error for an
    overlapping write), any other failure goes on as it was (the write is tried first: the flags are read only on
    failure)."""
    if x.flags.writeable:
        raise e
    return _writable(x)


def _inplace(uf):
    def k(x, y):
        try:
            uf(x, y, out=x)
        except ValueError as e:
            w = _write_failed(x, e)
            uf(w, y, out=w)
    return k


def _axpy(y, a, x):
    try:
        _blas_axpy(y, a, x)
    except ValueError as e:
        w = _write_failed(y, e)
        _blas_axpy(w, a, x)  # (the writable alias of a view of an expanded tensor: the same rounding)


_iadd = _inplace(np.add)


def _setitem(x, key, value):
    if not x.flags.writeable:
        if any(k.__class__ is nd for k in (key if key.__class__ is tuple else (key,))):
            raise RuntimeError(_OVERLAP)  # (index_put_ on an expanded tensor: deprecated in PyTorch, refused here)
        x = _writable(_basic_index(x, key))  # x.expand(3, 2)[0] = v writes the one row they share, as PyTorch
        key = Ellipsis
    if x.itemsize == 2 and (value.__class__ is float or value.__class__ is int) and x.dtype.kind in "fV":
        with np.errstate(over="ignore"):  # a number out of float16's range is inf, silently (as PyTorch)
            x[key] = value
        return
    x[key] = value


def _basic_index(x, key):
    """x[key] as a view: numpy gives a scalar copy for a key that selects one element; with an Ellipsis after the
    ints the same element is a 0-d view (writes through it reach x, as PyTorch's x[0])."""
    r = x[key]
    if r.__class__ is nd:
        return r
    return x[(key if key.__class__ is tuple else (key,)) + (Ellipsis,)]


def _index_put(x, key, values, accumulate):
    if accumulate:
        np.add.at(x, key, values)
    else:
        x[key] = values


_FULL = slice(None)


def _index(x, key):
    """x[key] for a key of full slices and index arrays.  One integer array after full slices on a row-major x
    (``x[i]``, ``x[:, i]``): ndarray.take, row-major as PyTorch's result and 2-3x faster than fancy indexing
    (whose result puts the index dims outermost in memory)."""
    n = len(key)
    if n and x.flags.c_contiguous:
        a = key[-1]
        if a.__class__ is nd and a.dtype.kind in "iu" and all(k.__class__ is slice and k == _FULL for k in key[:-1]):
            return x.take(a, axis=n - 1)
    return x[key]


def _gather(x, dim, index):
    """Row-major as PyTorch's (numpy's fancy indexing follows a transposed index's order)."""
    if x.ndim == 0:
        return x[()].reshape(()).copy() if index.ndim == 0 else np.full(index.shape, x)
    if x.ndim == 2 and index.ndim == 2:  # one fancy index, half the cost of take_along_axis's Python
        if dim == 1:
            r = x[np.arange(index.shape[0])[:, None], index]
        else:
            r = x[index, np.arange(index.shape[1])]
    else:
        sl = tuple(slice(0, s) if d != dim else slice(None) for d, s in enumerate(index.shape))
        r = np.take_along_axis(x[sl], index, axis=dim)
    return r if r.flags.c_contiguous else np.ascontiguousarray(r)


def _scatter_index(dim, index):
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim] = index
    return tuple(grids)


def _scatter_add(x, dim, index, src):
    out = np.array(x, copy=True)
    if x.ndim == 0:
        if out.dtype == np.bool_:  # bool + bool is or (numpy's sum would give an int)
            out |= src.any()
        else:
            out += src.sum()
        return out
    src = src[tuple(slice(0, s) for s in index.shape)]
    np.add.at(out, _scatter_index(dim, index), src)
    return out


def _index_add(x, dim, index, src):
    out = np.array(x, copy=True)
    if src.size == 0:  # nothing to add (np.add.at would still check the indices)
        return out
    if x.ndim == 0:
        if out.dtype == np.bool_:  # bool + bool is or (numpy's sum would give an int)
            out |= src.any()
        else:
            out += src.sum()
        return out
    if dim == 0 and out.ndim > 1 and src.size >= 1024 and out.flags.c_contiguous and index.ndim == 1 \
            and src.shape == index.shape + out.shape[1:]:
        # whole rows (embedding's backward): numpy's ufunc.at on a flat array with one index per element is 3-4x
        # faster than on rows, and adds in the same order (bitwise the same result)
        d = out.size // out.shape[0]
        flat = (index.reshape(-1, 1) * d + np.arange(d)).reshape(-1)
        np.add.at(out.reshape(-1), flat, src.reshape(-1))
        return out
    np.add.at(np.moveaxis(out, dim, 0), index, np.moveaxis(src, dim, 0))
    return out


def _cumsum(x, axis):  # (an integer input in its own dtype, as _reduce's ``wraps``)
    if x.ndim == 0:
        return x.copy()
    # (np.cumsum scans small integers in int64, and wraps this call; the result row-major, as PyTorch's)
    return np.add.accumulate(x, axis, x.dtype, np.empty(x.shape, x.dtype))


def _cumprod(x, axis):
    """float32 accumulates in float64, float16 and bfloat16 in float32: PyTorch's CPU acc_type (a float32 running
    product of 300000 values of 1.000001 was 0.12% off; a half product past float32's range stays inf in PyTorch,
    where a float64 one came back finite).  bfloat16 arrives here as it is (not in dtypes._FIRST_ARG)."""
    if x.ndim == 0:
        return x.copy()
    acc = _F64 if x.dtype == _F32 else _F32 if x.dtype == _F16 or x.dtype is _dtypes.BF16 else None
    if acc is not None:
        return np.multiply.accumulate(x, axis, acc).astype(x.dtype, order="C")  # (row-major, as the others)
    return np.multiply.accumulate(x, axis, x.dtype, np.empty(x.shape, x.dtype))


def _arg(fn):
    def k(x, axis, keepdim):
        if x.ndim == 0:
            return np.zeros((), np.int64)
        r = fn(x, axis=axis, keepdims=keepdim) if axis is not None else fn(x)
        return np.asarray(r, dtype=np.int64)
    return k


_INT_OF = {2: np.int16, 4: np.int32, 8: np.int64}


def _where(c, x, y):
    """np.where branches per element and is ~10x slower than arithmetic on random masks; for floats the
    same selection is exact as bit masking: (x & m) | (y & ~m) with m = -cond."""
    xa, ya = x.__class__ is nd, y.__class__ is nd
    if xa and x.dtype.kind == "f" and c.size >= 4096:
        if ya and y.dtype == x.dtype:
            it = _INT_OF[x.itemsize]
            m = c.view(np.int8).astype(it)
            np.negative(m, out=m)
            r = np.bitwise_and(x.view(it), m)
            np.invert(m, out=m)
            np.bitwise_and(y.view(it), m, out=m)
            np.bitwise_or(r, m, out=r)
            return r.view(x.dtype)
        if not ya and y == 0 and not (isinstance(y, float) and np.signbit(y)):
            it = _INT_OF[x.itemsize]
            m = c.view(np.int8).astype(it)
            np.negative(m, out=m)
            return np.bitwise_and(x.view(it), m, out=m).view(x.dtype)
    if ya and y.dtype.kind == "f" and not xa and x == 0 and c.size >= 4096 and \
            not (isinstance(x, float) and np.signbit(x)):
        return _where(np.logical_not(c), y, x)
    r = np.where(c, x, y)
    if not xa and ya and r.dtype is not y.dtype and y.dtype.kind == "V":
        r = r.astype(y.dtype)  # (ml_dtypes: a Python number before a bfloat16 array gives float32)
    return r if r.__class__ is nd else _asarray(r)


def _linear(x, w, b):
    if x.dtype == _F16:  # float32 op math: the bias added before the one rounding, as PyTorch's addmm
        return _linear(x.astype(_F32), w.astype(_F32), None if b is None else b.astype(_F32)).astype(_F16)
    out = np.matmul(x, w.T)  # 2-D operands: always a fresh array, so the bias is added in place
    if b is not None:
        _rowop(np.add, out, b, out)
    return out


def _remainder(a, b):
    """Python-style modulo; an exact multiple gives the dividend's zero (PyTorch: fmod's zero, which it only
    moves by b when nonzero; numpy gives the divisor's: remainder(-4., 2.) is -0. there, 0. here)."""
    r = np.asarray(np.remainder(a, b))
    if r.dtype.kind == "f" or r.dtype.name == "bfloat16":
        np.copysign(r, a, out=r, where=r == 0)
    return r


def _linear_backward(g, x, w, nx, nw, nb):
    return (np.matmul(g, w) if nx else None, np.matmul(g.T, x) if nw else None,
            _colsum(g) if nb else None)


# numpy's own dtype objects by value: an array that was pickled (a DataLoader worker's batch, joblib) or built with an
# explicit byte order carries an equal dtype that is another object, and kernels choosing their path by identity
# (``dtype is BF16``: bfloat16's float32 op math) would miss it
_CANON = {np.dtype(t): np.dtype(t) for t in (np.float16, np.float32, np.float64, np.int8, np.int16, np.int32,
                                                np.int64, np.uint8, np.bool_, np.complex64, np.complex128)}


def _from_numpy(a):
    d = a.dtype
    c = _CANON.get(d)
    if c is d:
        return a
    if c is None:
        if d.name != "bfloat16" or not d.isnative:
            return a
        c = _dtypes.BF16
        if c is d or c != d:
            return a
    return a.view(c)  # the same memory, the native dtype object


def _strides(x):
    """Element strides; an empty array (numpy 2 gives it zero strides) reports PyTorch's row-major ones."""
    isz = x.itemsize
    if not isz:
        return (0,) * x.ndim
    st = tuple(s // isz for s in x.strides)
    if x.size or any(st):
        return st
    out, acc = [], 1
    for n in reversed(x.shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


def _full(shape, v, dt):
    if v == 0 and not (v.__class__ is float and math.copysign(1.0, v) < 0):  # (-0.0 keeps its sign, as PyTorch's)
        return np.zeros(shape, dt)
    r = np.empty(shape, dt)  # np.full's Python layer does the same two steps
    r.fill(v)
    return r


def _div(a, b):
    """True division.  By a Python number of magnitude >= 1 nothing can overflow or be invalid (NaN in stays
    NaN, silently), so numpy's error state need not be switched (the mean of a loss divides by its count)."""
    if (b.__class__ is float or b.__class__ is int) and (b >= 1 or b <= -1):
        r = np.true_divide(a, b)
        return r if r.__class__ is nd else _asarray(r)
    return _quiet_div(a, b)


_quiet_div = _quiet(np.true_divide)  # any other divisor: IEEE results (x/0 = inf), no warnings


def _clamp(x, lo, hi):
    """min(max(x, lo), hi) with the bound first: a tie gives x, as PyTorch's (clamp(-0.0, min=0.0) is -0.0;
    np.clip gave 0.0)."""
    r = x if lo is None else np.maximum(lo, x)
    r = r if hi is None else np.minimum(hi, r)
    if r is x:
        r = x.copy()
    return r if r.__class__ is nd else _asarray(r)


class CPUBackend:
    name = "cpu"
    array_type = np.ndarray
    distribution = "coretorch-cpu"
    host_memory = True  # arrays are host memory: reading a value back costs no transfer
    native_broadcast = True  # numpy ufuncs broadcast: binary kernels take broadcast-compatible shapes

    def __init__(self):
        self.gen = sampling.CPUGen()  # the default generator's state (coretorch's default cpu Generator holds it)
        self.malloc_tuned = memory.tune_malloc()  # numpy's large temporaries kept in the heap (see memory.py)
        self._table = self._build()

    @property
    def rng(self) -> np.random.Generator:
        """The numpy stream of the default generator."""
        return self.gen.rng

    def is_available(self) -> bool:
        return True

    def device_count(self) -> int:
        return 1

    def device_name(self, index: int = 0) -> str:
        return f"numpy {np.__version__} on {platform.machine() or 'cpu'}"

    def manual_seed(self, seed: int) -> None:
        self.gen.reseed(seed)

    def kernels(self, index: int = 0) -> dict:
        return self._table

    # random numbers (float16 is drawn in float32 and rounded): the default generator through sampling's kernels
    def _rand(self, shape, dt):
        out = np.empty(shape, dt)
        sampling.rng_fill_(self.gen, out, "uniform", 0.0, 1.0)
        return out

    def _randn(self, shape, dt):
        out = np.empty(shape, dt)
        sampling.rng_fill_(self.gen, out, "normal", 0.0, 1.0)
        return out

    def _randint(self, low, high, shape, dt):
        return sampling.rng_randint(self.gen, low, high, shape, dt)

    def _uniform(self, x, a, b):
        sampling.rng_fill_(self.gen, x, "uniform", a, b)

    def _normal(self, x, mean, std):
        sampling.rng_fill_(self.gen, x, "normal", mean, std)

    def _build(self) -> dict:
        k = {
            "from_numpy": _from_numpy, "to_numpy": lambda x: x,
            "full": _full,
            "empty": lambda shape, dt: np.empty(shape, dt), "eye": lambda n, m, dt: np.eye(n, m, dtype=dt),
            "arange": lambda s, e, st, dt: np.arange(s, e, st, dtype=dt),
            "rand": self._rand, "randn": self._randn, "randint": self._randint, "manual_seed": self.manual_seed,
            "uniform_": self._uniform, "normal_": self._normal,
            "cast": _cast, "contiguous": lambda x: np.array(x, copy=True, order="C"),
            "is_contiguous": lambda x: x.flags.c_contiguous,
            "strides": _strides,
            "view": _view, "permute": lambda x, dims: x.transpose(dims), "expand": _expand,
            "basic_index": _basic_index, "flip": lambda x, dims: np.flip(x, dims).copy(),
            "tile": np.tile, "cat": lambda arrays, axis: np.concatenate(arrays, axis),
            "assign_": _assign, "setitem_": _setitem, "index": _index,
            "index_put_": _index_put, "gather": _gather, "scatter_add": _scatter_add,
            "index_select": lambda x, dim, idx: np.take(x, idx, axis=dim) if x.ndim else x.copy(),
            "index_add": _index_add, "nonzero": lambda x: np.argwhere(x).astype(np.int64),
            "where": _where, "clamp": _clamp, "matmul": _arr(np.matmul),
            "linear": _linear, "linear_backward": _linear_backward,
            # ufunc.reduce directly: np.sum & co. add a Python wrapper layer per call
            "sum": _reduce(np.add.reduce, 16, True, True), "prod": _quiet(_reduce(np.multiply.reduce, 16, True)),
            "amax": _reduce(np.maximum.reduce, 32), "amin": _reduce(np.minimum.reduce, 32),
            "any": _reduce(np.logical_or.reduce, 32), "all": _reduce(np.logical_and.reduce, 32),
            "argmax": _arg(np.argmax), "argmin": _arg(np.argmin),
            "cumsum": _quiet(_cumsum), "cumprod": _quiet(_cumprod),  # (inf - inf, inf * 0 in a scan: IEEE, silent)
        }
        plain = {"neg": np.negative, "abs": np.abs, "sign": _sign,
                 "tanh": np.tanh, "sigmoid": _sigmoid, "relu": _relu,
                 "floor": _int_identity(np.floor), "ceil": _int_identity(np.ceil),
                 "round": _int_identity(np.round), "trunc": _int_identity(np.trunc),
                 "logical_not": np.logical_not, "bitwise_not": np.invert, "isnan": np.isnan,
                 "add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum,
                 "minimum": np.minimum, "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
                 "gt": np.greater, "ge": np.greater_equal, "logical_and": np.logical_and,
                 "logical_or": np.logical_or, "logical_xor": np.logical_xor, "bitwise_and": np.bitwise_and,
                 "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor}
        quiet = {"log": np.log, "sqrt": np.sqrt, "rsqrt": _rsqrt, "reciprocal": np.reciprocal, "log1p": np.log1p,
                 "floor_divide": np.floor_divide, "remainder": _remainder,
                 "pow": _pow, "sin": np.sin, "cos": np.cos, "exp": np.exp, "expm1": np.expm1}
        k.update({n: _arr(f) for n, f in plain.items()})
        k.update({"iadd": _iadd, "isub": _inplace(np.subtract), "imul": _inplace(np.multiply),
                  "idiv": _inplace(np.true_divide), "axpy_": _axpy})
        k.update({n: _quiet(f) for n, f in quiet.items()})
        k["div"] = _div
        from .nn_kernels import KERNELS as _nn_kernels  # optional fused kernels of nn.functional
        k.update(_nn_kernels)
        from . import dtypes, fused, linalg, optim_kernels, products, rnn_seq, sampling, shaping, sorting, special
        from . import intbits, out_kernels
        core = frozenset(k)
        k.update(intbits.KERNELS)
        for fam in (sorting, special, shaping, products, linalg, sampling, dtypes, fused, optim_kernels, rnn_seq):
            k.update(fam.KERNELS)
        k["rng_default"] = lambda: self.gen
        k.update(dtypes.float_compute(k, core))  # bfloat16: float32 compute where numpy would round repeatedly
        k["compile_out"] = out_kernels.compile_out  # coretorch.compile's planned temporaries (numpy's out=)
        return k
