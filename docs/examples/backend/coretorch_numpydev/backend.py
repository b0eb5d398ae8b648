"""The 'numpydev' device: every kernel of coretorch's backend contract
(``coretorch.plugins.REQUIRED_KERNELS``), here on numpy arrays: replace them kernel by kernel with your device's
(tests/ runs the conformance suite).

The core hands kernels native arrays (here: numpy arrays) that already have the right dtype (it casts) and shape
(it broadcasts with ``expand``), and Python numbers as scalars; a kernel computes and returns a new array.  Two
rules catch most first attempts: return an *array* for a 0-d result (numpy returns a scalar: ``_a`` fixes it), and
never return the input itself where a copy is expected (the core may write into a result).
"""
from __future__ import annotations

import numpy as np

from coretorch.plugins import HOST_LINALG_KERNELS


def _a(r):
    """numpy gives scalars for 0-d results; the contract wants arrays."""
    return r if type(r) is np.ndarray else np.asarray(r)


def _k(fn, quiet=False):
    """A kernel from a numpy function: array results, and IEEE results (log(0) = -inf) without warnings."""
    def kernel(*args):
        if quiet:
            with np.errstate(all="ignore"):
                return _a(fn(*args))
        return _a(fn(*args))
    kernel.__name__ = getattr(fn, "__name__", "kernel")
    return kernel


def _ints_unchanged(fn):
    """floor/ceil/round/trunc of an integer tensor is the tensor (numpy would give floats)."""
    return lambda x: x.copy() if x.dtype.kind in "iub" else _a(fn(x))


def _view(x, shape):
    try:
        return np.reshape(x, shape, copy=False)
    except ValueError:  # the strides do not allow a view: the core copies instead
        return None


def _basic_index(x, key):
    r = x[key]
    if type(r) is np.ndarray:
        return r
    return x[(key if type(key) is tuple else (key,)) + (Ellipsis,)]  # one element: a 0-d *view* of x


def _sign(x):
    r = _a(np.sign(x))
    if r.dtype.kind == "f":
        r[np.isnan(r)] = 0  # PyTorch: sign(nan) = 0
    return r


def _index_put(x, key, values, accumulate):
    if accumulate:
        np.add.at(x, key, values)
    else:
        x[key] = values


def _gather(x, dim, index):
    if x.ndim == 0:
        return np.full(index.shape, x)
    part = tuple(slice(0, s) if d != dim else slice(None) for d, s in enumerate(index.shape))
    return np.take_along_axis(x[part], index, axis=dim)


def _add_into(out, index, src):
    if out.ndim == 0:
        out += src.sum().astype(out.dtype) if out.dtype != np.bool_ else src.any()
    else:
        np.add.at(out, index, src)
    return out


def _scatter_add(x, dim, index, src):
    if x.ndim == 0:
        return _add_into(x.copy(), (), src)
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim] = index
    return _add_into(x.copy(), tuple(grids), src[tuple(slice(0, s) for s in index.shape)])


def _index_add(x, dim, index, src):
    out = x.copy()
    if src.size == 0:
        return out
    if x.ndim == 0:
        return _add_into(out, (), src)
    np.add.at(np.moveaxis(out, dim, 0), index, np.moveaxis(src, dim, 0))
    return out


def _arg(fn):
    def kernel(x, axis, keepdim):
        if x.ndim == 0:
            return np.zeros((), np.int64)
        r = fn(x) if axis is None else fn(x, axis=axis, keepdims=keepdim)
        return np.asarray(r, dtype=np.int64)
    return kernel


def _reduce(ufunc):
    return lambda x, axes, keepdim: _a(ufunc.reduce(x, axis=axes, keepdims=keepdim))


def _scan(fn):
    return lambda x, axis: x.copy() if x.ndim == 0 else fn(x, axis=axis)


def _pow(x, y):
    """PyTorch's integer power: a negative exponent truncates (1 ** -1 = 1, (-1) ** -1 = -1, 2 ** -1 = 0)."""
    if x.dtype.kind not in "iu" or not np.any(np.less(y, 0)):
        return _a(np.power(x, y))
    y = np.asarray(y)
    small = np.where(x == -1, 1 - 2 * (y & 1), x == 1)
    return _a(np.where(y < 0, small, np.power(x, np.maximum(y, 0))).astype(x.dtype))


def _sigmoid(x):
    with np.errstate(over="ignore"):
        return _a(1 / (1 + np.exp(-x)))


UNARY = {"neg": np.negative, "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
         "abs": np.abs, "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "reciprocal": np.reciprocal,
         "expm1": np.expm1, "log1p": np.log1p, "logical_not": np.logical_not, "bitwise_not": np.invert,
         "isnan": np.isnan, "relu": lambda x: np.maximum(x, 0, dtype=x.dtype)}
BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
          "floor_divide": np.floor_divide, "remainder": np.remainder, "pow": _pow, "maximum": np.maximum,
          "minimum": np.minimum, "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
          "gt": np.greater, "ge": np.greater_equal, "logical_and": np.logical_and, "logical_or": np.logical_or,
          "logical_xor": np.logical_xor, "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
          "bitwise_xor": np.bitwise_xor}


class NumpydevBackend:
    """Implements coretorch.plugins.Backend (structurally: no base class needed)."""

    name = "numpydev"            # the device type: tensor.to("numpydev")
    array_type = np.ndarray      # the native arrays (lets coretorch.plugins.from_array check what it is given)

    def __init__(self):
        self.rng = np.random.default_rng(0)
        self._kernels = self._build()

    # -- the Backend protocol ------------------------------------------------------------------------
    def is_available(self) -> bool:
        return True

    def device_count(self) -> int:
        return 1

    def device_name(self, index: int = 0) -> str:
        return f"numpy {np.__version__} (example device)"

    def kernels(self, index: int = 0) -> dict:
        return self._kernels

    def manual_seed(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    # -- random numbers: the device's own generator ------------------------------------------------------
    def _uniform_(self, x, low, high):
        x[...] = self.rng.uniform(low, high, x.shape)

    def _normal_(self, x, mean, std):
        x[...] = self.rng.normal(mean, std, x.shape)

    def _build(self) -> dict:
        k = {
            # transfer and creation (to_numpy copies: the host array must not alias device memory)
            "from_numpy": lambda a: np.array(a, copy=True), "to_numpy": lambda x: np.array(x, copy=True),
            "full": lambda shape, value, dt: np.full(shape, value, dt), "empty": lambda shape, dt: np.empty(shape, dt),
            "arange": lambda start, end, step, dt: np.arange(start, end, step, dtype=dt),
            "eye": lambda n, m, dt: np.eye(n, m, dtype=dt),
            "rand": lambda shape, dt: self.rng.random(shape).astype(dt),
            "randn": lambda shape, dt: self.rng.standard_normal(shape).astype(dt),
            "randint": lambda low, high, shape, dt: self.rng.integers(low, high, shape).astype(dt),
            "manual_seed": self.manual_seed, "uniform_": self._uniform_, "normal_": self._normal_,
            # layout: views where numpy gives views
            "cast": lambda x, dt: x.astype(dt), "contiguous": lambda x: np.array(x, copy=True, order="C"),
            "is_contiguous": lambda x: x.flags.c_contiguous,
            "strides": lambda x: tuple(s // x.itemsize for s in x.strides),
            "view": _view, "permute": lambda x, dims: x.transpose(dims),
            "expand": lambda x, shape: np.broadcast_to(x, shape), "basic_index": _basic_index,
            "flip": lambda x, dims: np.flip(x, dims).copy(), "tile": np.tile,
            "cat": lambda arrays, axis: np.concatenate(arrays, axis),
            # indexing
            "assign_": lambda dst, src: dst.__setitem__(Ellipsis, src),
            "setitem_": lambda x, key, value: x.__setitem__(key, value),
            "index": lambda x, key: _a(x[key]), "index_put_": _index_put, "gather": _gather,
            "scatter_add": _scatter_add, "index_add": _index_add,
            "index_select": lambda x, dim, index: np.take(x, index, axis=dim) if x.ndim else x.copy(),
            "nonzero": lambda x: np.argwhere(x).astype(np.int64),
            # elementwise
            "sign": _sign, "sigmoid": _sigmoid, "where": _k(np.where), "clamp": _k(np.clip),
            **{name: _ints_unchanged(fn) for name, fn in
               (("floor", np.floor), ("ceil", np.ceil), ("round", np.round), ("trunc", np.trunc))},
            **{name: _k(fn, quiet=True) for name, fn in {**UNARY, **BINARY}.items()},
            # reductions, scans, matmul
            "sum": _reduce(np.add), "prod": _reduce(np.multiply), "amax": _reduce(np.maximum),
            "amin": _reduce(np.minimum), "any": _reduce(np.logical_or), "all": _reduce(np.logical_and),
            "argmax": _arg(np.argmax), "argmin": _arg(np.argmin),
            "cumsum": _scan(np.cumsum), "cumprod": _scan(np.cumprod), "matmul": _k(np.matmul),
        }
        # a family for free: coretorch's numpy linalg kernels work on this device's arrays as they are
        k.update(HOST_LINALG_KERNELS)
        return k
