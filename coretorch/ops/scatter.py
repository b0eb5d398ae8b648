"""Indexing by index tensors: take, take_along_dim, scatter (src/value, reduce=), scatter_reduce, index_reduce,
index_put(_), index_copy, index_fill, masked_scatter, put(_), slice_scatter, select_scatter, argwhere,
unravel_index (where(cond) and nonzero(as_tuple=True) live in pointwise/indexing).

The scatter family writes through the backend's advanced-indexing primitives: ``setitem_`` (assign),
``index_put_`` and ``index_reduce_`` (sum/prod/amax/amin of repeated indices), with a key of index arrays (the index
along ``dim``, an ``arange`` grid along the others), so each op is a copy plus one kernel on every backend."""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import dtypes as _dt
from .._determinism import alert_not_deterministic
from ..amp.autocast_mode import cast_inputs as _ac_cast, state as _ac
from ..autograd.grad_mode import state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make
from . import creation as _cr, indexing as _ix, pointwise as _pw
from ._util import broadcast_shape, broadcast_shapes, edge, host_all_below, norm_dim, sum_to
from ._out import write_out
from ._own import own
from ._rangecheck import any_outside
from ._overlap import assert_no_overlap
from ._scatter_checks import check_index_copy as _check_index_copy
from .inplace import apply_inplace
from .shape import expand

__all__: list[str] = ["scatter", "scatter_reduce", "index_reduce", "index_put", "index_put_", "index_copy",
                      "index_fill", "masked_scatter", "put", "take", "take_along_dim", "argwhere", "unravel_index",
                      "slice_scatter", "select_scatter"]

_i64, _bool = _dt.int64, _dt.bool_
_REDUCES = ("sum", "prod", "mean", "amax", "amin")
_HALVES = (_dt.float16, _dt.bfloat16)


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def _grid_key(table, shape: tuple, dim: int, index_data) -> tuple:
    """The advanced-indexing key of a scatter along ``dim``: the index there, an arange grid elsewhere."""
    nd = len(shape)
    key = []
    for d in range(nd):
        if d == dim:
            key.append(index_data)
        else:
            a = table.arange(0, shape[d], 1, np.int64)
            key.append(table.view(a, tuple(shape[d] if k == d else 1 for k in range(nd))))
    return tuple(key)


def _as1d(t: Tensor) -> Tensor:
    return t.reshape(1) if t.ndim == 0 else t


def _native(t: Tensor, dt) -> object:
    return t._data if t.dtype is dt else t._be.cast(t._data, dt.np)


def _check_scatter(op: str, input: Tensor, dim: int, index: Tensor, src: Tensor | None) -> int:
    """PyTorch's checks of scatter/scatter_reduce arguments; returns the normalised dim."""
    d = norm_dim(dim, input.ndim, op)
    _ix._check_index(op, index, input.ndim, empty_ok=True)
    _ix._same_device(op, input, index, src)
    if src is not None and src.dtype is not input.dtype:
        raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype")
    if not index.numel():  # PyTorch checks nothing more for an empty index (and writes nothing)
        return d
    if src is not None and max(src.ndim, 1) != max(index.ndim, 1):
        raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as src tensor")
    ish, xsh = tuple(index.shape) or (1,), tuple(input.shape) or (1,)  # a 0-d tensor reads as 1-d here
    ssh = (tuple(src.shape) or (1,)) if src is not None else None
    for k in range(len(ish)):
        if (k != d and ish[k] > xsh[k]) or (ssh is not None and ish[k] > ssh[k]):
            raise RuntimeError(f"{op}(): Expected index {list(index.shape)} to be smaller than self "
                               f"{list(input.shape)} apart from dimension {d}"
                               + (f" and to be smaller size than src {list(src.shape)}" if src is not None else ""))
    _ix._check_range(op, index, input.shape[d] if input.ndim else 1, d)
    return d


def _src_part(src: Tensor, index: Tensor) -> Tensor:
    """The part of src that a scatter reads: src[:index.shape] (a view)."""
    if tuple(src.shape) == tuple(index.shape):
        return src
    return _ix._index(src, tuple(slice(0, s) for s in index.shape), False)


def _pad_grad(g: Tensor, shape: tuple) -> Tensor:
    """A gradient of src[:index.shape] as one of src (zeros elsewhere)."""
    if tuple(g.shape) == tuple(shape):
        return g
    return _ix._embed(g, shape, tuple(slice(0, s) for s in g.shape), False)


_WARNED: set = set()


def _warn_once(msg: str) -> None:
    """PyTorch's TORCH_WARN_ONCE: a UserWarning the first time in the process."""
    if msg not in _WARNED:
        _WARNED.add(msg)
        warnings.warn(msg, UserWarning, stacklevel=4)


def _identity(reduce: str, dt):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dt.is_floating_point:
        return float("-inf") if reduce == "amax" else float("inf")
    if dt is _bool:
        return reduce == "amin"
    info = np.iinfo(dt.np)
    return int(info.min) if reduce == "amax" else int(info.max)


def _scatter_data(input: Tensor, d: int, index: Tensor, src, reduce: str | None, include_self: bool = True,
                  opmath: bool = True):
    """The scattered copy of input's data (no graph).  ``opmath``: float16/bfloat16 sums and products accumulate
    in float32, rounded once (PyTorch's CPU scatter kernels; its index_reduce rounds at each step)."""
    table = input._be
    x1, i1 = _as1d(input), _as1d(index)
    out = table.contiguous(x1._data)
    if index.numel() == 0:
        return table.view(out, tuple(input.shape))
    key = _grid_key(table, tuple(i1.shape), d, i1._data)
    if isinstance(src, Tensor):
        vals = _native(_src_part(_as1d(src), i1), input.dtype)
    else:
        vals = _dt.fit_scalar(src, input.dtype)
    wide = opmath and input.dtype in _HALVES and reduce in ("sum", "mean", "add", "prod", "multiply")
    if wide:
        out = table.cast(out, _dt.float32.np)
        if isinstance(src, Tensor):
            vals = table.cast(vals, _dt.float32.np)
    if reduce is None:
        table.setitem_(out, key, vals)
    elif reduce in ("sum", "mean", "add"):
        if not include_self:
            table.setitem_(out, key, 0)
        table.index_reduce_(out, key, vals, "sum")
        if wide:  # (a mean divides the rounded sum, as PyTorch)
            out, wide = table.cast(out, input.dtype.np), False
        if reduce == "mean":
            cnt = table.full(tuple(x1.shape), 1, input.dtype.np)
            if not include_self:
                table.setitem_(cnt, key, 0)
            table.index_reduce_(cnt, key, 1, "sum")
            out = table.floor_divide(out, cnt) if not input.dtype.is_floating_point else table.div(out, cnt)
    else:
        op = "prod" if reduce in ("prod", "multiply") else reduce
        if not include_self:
            table.setitem_(out, key, _identity(op, input.dtype))
        table.index_reduce_(out, key, vals, op)
    if wide:
        out = table.cast(out, input.dtype.np)
    return table.view(out, tuple(input.shape)) if input.ndim == 0 else out


# ---------------------------------------------------------------------------------------------
# scatter
# ---------------------------------------------------------------------------------------------
class ScatterBackward0(Node):  # src form (the indices saved, version-checked, as PyTorch's)
    def backward(self, g):
        (index,) = self.saved()
        gx = scatter(g, self.dim, index, 0) if self.need[0] else None
        gs = _pad_grad(_ix.gather(g, self.dim, index), self.src_shape) if self.need[1] else None
        return gx, gs


class ScatterBackward1(Node):  # value form
    def backward(self, g):
        return (scatter(g, self.dim, self.saved()[0], 0),)


class ScatterReduceBackward(Node):
    def backward(self, g):
        raise RuntimeError("the derivative for 'scatter' with reduce= is not implemented (use scatter_reduce)")


def scatter(input: Tensor, dim: int, index: Tensor, src=None, value=None, *, reduce: str | None = None,
            out: Tensor | None = None) -> Tensor:
    """Out-of-place scatter: input with ``src`` (a tensor or a number) written at ``index`` along ``dim``."""
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter() missing 1 required positional argument: 'src' or 'value'")
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce}")
    st = isinstance(src, Tensor)
    if st and reduce is not None:
        _warn_once("The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in a future "
                   "PyTorch release. Use torch.scatter_reduce instead for more reduction options.")
    if not st and not isinstance(src, (int, float, bool)):
        if not isinstance(src, np.generic) or src.dtype.kind not in "biuf":
            raise TypeError(f"scatter(): argument 'src' must be Tensor or Number, not {type(src).__name__}")
        src = src.item()  # (a numpy number: the Python number it holds)
    with _ix.checks_guard(input._be):  # an out= that raises forgets the device's index checks
        d = _check_scatter("scatter", input, dim, index, src if st else None)
        data = _scatter_data(input, d, index, src, reduce)
        res = _finish(input, data, st and src._rg, reduce, d, index, src if st else None)
        return _out(res, out, "scatter", input, src) if st else _out(res, out, "scatter", input)


def _finish(input, data, src_rg, reduce, d, index, src):
    table = input._be
    if not (_gs.enabled and (input._rg or src_rg)):
        return _make(data, input.dtype, table)
    if reduce is not None:
        node = ScatterReduceBackward()
    elif src is not None:
        node = ScatterBackward0()
        node.src_shape, node.need = tuple(src.shape), (input._rg, src._rg)
    else:
        node = ScatterBackward1()
    node.dim = d
    if reduce is None:  # (ScatterReduceBackward raises: it reads no index)
        node.save(index)
    node.next_functions = (edge(input), edge(src)) if src is not None else (edge(input),)
    return _make(data, input.dtype, table, node)


def _out(res: Tensor, out: Tensor | None, op: str = "scatter", *inputs) -> Tensor:
    """``inputs``: checked against ``out`` for memory overlap as PyTorch's kernels do."""
    return write_out(op, out, res, exact_dtype=True, inputs=inputs)


class ScatterReduceBackward0(Node):
    """The indices are saved with the input, source and result: one changed in place before the backward raises, as
    PyTorch's (the gradient went by the changed indices)."""
    def backward(self, grad):
        dim, reduce, inc = self.dim, self.reduce, self.include_self
        x, src, result, index = self.saved()
        gx = gs = None
        if reduce == "sum":
            gx, gs = grad, _ix.gather(grad, dim, index)
        elif reduce == "mean":
            n = _cr.ones_like(grad) if inc else _cr.zeros_like(grad)
            n = _ix.scatter_add(n, dim, index, _cr.ones_like(src))
            n = _pw.masked_fill(n, n == 0, 1)
            gx = grad / n
            gs = _ix.gather(grad, dim, index) / _ix.gather(n, dim, index)
        elif reduce == "prod":
            masked_self = _pw.masked_fill(x, x == 0, 1)
            masked_self_result = scatter_reduce(masked_self, dim, index, src, reduce, include_self=inc)
            gx = grad * masked_self_result / masked_self
            src_zero = src == 0
            nz = _ix.gather(_ix.scatter_add(_cr.zeros_like(x), dim, index, src_zero.to(x.dtype)), dim, index)
            single = _pw.logical_and(src_zero, nz == 1)
            masked_src = _pw.masked_fill(src, single, 1)
            masked_src_result = scatter_reduce(x, dim, index, masked_src, reduce, include_self=inc)
            gs = _pw.where(single, _ix.gather(grad * masked_src_result, dim, index),
                         _ix.gather(grad * result, dim, index) / _pw.masked_fill(src, src_zero, 1))
        else:  # amax / amin: the gradient is shared evenly among the elements equal to the result
            value = _ix.gather(result, dim, index)
            self_is = (x == result).to(x.dtype)
            src_is = (src == value).to(x.dtype)
            gd = grad / _ix.scatter_add(self_is, dim, index, src_is)
            gx = self_is * gd
            gs = src_is * _ix.gather(gd, dim, index)
        if not inc:
            gx = scatter(gx, dim, index, 0)
        return (gx if self.need[0] else None, _pad_grad(gs, self.src_shape) if self.need[1] else None)


_REDUCE_ALIASES = {"max": "amax", "min": "amin"}  # (PyTorch 2.13 takes them, unlisted in its error message)


def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *, include_self: bool = True,
                   out: Tensor | None = None) -> Tensor:
    """Reduce ``src`` into input at ``index`` along ``dim`` with sum, prod, mean, amax or amin."""
    return _scatter_reduce(input, dim, index, src, reduce, include_self, out, True)


def _scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, include_self: bool,
                    out: Tensor | None, opmath: bool) -> Tensor:
    reduce = _REDUCE_ALIASES.get(reduce, reduce)
    if reduce not in _REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_reduce(): argument 'src' must be Tensor, not {type(src).__name__}")
    if reduce == "mean" and input.dtype is _bool:  # (PyTorch's kernels have no bool mean)
        raise NotImplementedError("\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'")
    with _ix.checks_guard(input._be):  # an out= that raises forgets the device's index checks
        d = _check_scatter("scatter_reduce", input, dim, index, src)
        table = input._be
        data = _scatter_data(input, d, index, src, reduce, include_self, opmath)
        if not (_gs.enabled and (input._rg or src._rg)):
            return _out(_make(data, input.dtype, table), out, "scatter_reduce", input, src)
        node = ScatterReduceBackward0()
        node.dim, node.reduce, node.include_self = d, reduce, include_self
        node.need, node.src_shape = (input._rg, src._rg), tuple(src.shape)
        node.next_functions = (edge(input), edge(src))
        res = _make(data, input.dtype, table, node)
        node.save(input, _src_part(src, index), res, index)  # in the graph: the prod formula is differentiated again
        return _out(res, out, "scatter_reduce", input, src)


class IndexReduceBackward0(ScatterReduceBackward0):
    pass


def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *, include_self: bool = True,
                 out: Tensor | None = None) -> Tensor:
    """Reduce the slices of ``source`` along ``dim`` into input's slices ``index`` (prod, mean, amax or amin)."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    if isinstance(input, Tensor) and input.dtype is _bool and (reduce == "mean" or not include_self):
        # (PyTorch's kernels: no bool mean, no bool initialisation of an excluded self)
        raise NotImplementedError("\"index_reduce_func_exclude_input_init\" not implemented for 'Bool'"
                                  if not include_self else "\"div_floor_cpu\" not implemented for 'Bool'")
    _warn_once("index_reduce() is in beta and the API may change at any time.")
    if isinstance(index, Tensor) and index.dtype is _dt.int32:  # (PyTorch takes int32 indices here, as index_add)
        if index.ndim > 1:
            raise IndexError("index_reduce(): Index is supposed to be a vector")
        index = index.to(_i64)
    d = _check_index_vector("index_reduce", input, dim, index)
    if not isinstance(source, Tensor):
        raise TypeError(f"index_reduce(): argument 'source' must be Tensor, not {type(source).__name__}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"index_reduce_(): self ({input.dtype._tname[:-6]}) and source ({source.dtype._tname[:-6]})"
                           " must have the same scalar type")
    x1, s1 = _as1d(input), _as1d(source)
    n = index.numel()
    if s1.ndim != x1.ndim or s1.shape[d] != n or any(s1.shape[k] != x1.shape[k] for k in range(x1.ndim) if k != d):
        raise RuntimeError(f"index_reduce(): the number of indices ({n}) must match source.size(dim), and source "
                           f"{list(source.shape)} must match self {list(input.shape)} outside dim {d}")
    vs = [1] * s1.ndim
    vs[d] = n
    idx = expand(_as1d(index).reshape(tuple(vs)), tuple(s1.shape))  # the index of every source element (a view)
    r = _scatter_reduce(x1, d, idx, s1, reduce, include_self, None, False)
    if r.grad_fn is not None:
        r.grad_fn.__class__ = IndexReduceBackward0
    return _out(r.reshape(()) if input.ndim == 0 else r, out, "index_reduce", input, source)


# ---------------------------------------------------------------------------------------------
# index_put / index_copy / index_fill / put / masked_scatter
# ---------------------------------------------------------------------------------------------
class IndexPutAccBackward0(Node):
    """index_put with accumulate (PyTorch's IndexPutBackward0; the index tensors saved, version-checked)."""

    def backward(self, g):
        if self._saved:
            self.saved()
        gv = None
        if self.need[1]:
            gv = sum_to(_ix._index(g, self.key, True), self.vshape)
        return (g if self.need[0] else None, gv)


IndexPutAccBackward0.__name__ = "IndexPutBackward0"  # the name PyTorch prints for both forms


def _renamed(r: Tensor, cls) -> Tensor:
    """Give the node of a composite op the name PyTorch gives the op's grad_fn (same backward)."""
    gf = r.grad_fn
    if gf is not None:
        sub = cls.get(type(gf))
        if sub is None:
            sub = cls[type(gf)] = type(cls["name"], (type(gf),), {})
        gf.__class__ = sub
    return r


def index_put(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """Out-of-place ``input[indices] = values`` (``+=`` with ``accumulate``, repeated indices summed)."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put(): argument 'indices' must be tuple of Tensors, not {type(indices).__name__}")
    if not isinstance(values, Tensor):
        raise TypeError(f"index_put(): argument 'values' must be Tensor, not {type(values).__name__}")
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, values = _ac_cast("index_put", input, values)
    key = tuple(slice(None) if i is None else i for i in indices)
    checks: list = []  # the indices' range is checked last, as PyTorch's kernel does
    nkey, advanced = _ix.normalize_key(input, key, python_key=False, checks=checks)
    if not accumulate and values.numel() == 1 and _ix._single_mask(key, input) and (
            values._be is input._be or values._be.type == "cpu") and (
            values.dtype is not input.dtype or values._be is not input._be):
        # PyTorch dispatches one bool mask (on input's device) with a one-element CPU value to masked_fill_ (any
        # dtype; coretorch also takes the value on input's device, as PyTorch's CPU does)
        values = values.detach().to(device=input.device, dtype=input.dtype) if not (
            input.dtype.is_floating_point or input.dtype.is_complex) else values.to(input.device, input.dtype)
    if values.dtype is not input.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{input.dtype._tname[:-6]} for the destination and {values.dtype._tname[:-6]} for the "
                           "source.")
    if values._be is not input._be and values.ndim == 0:
        values = values.to(input.device)  # PyTorch moves a 0-d value to input's device
    _ix._same_device("index_put", input, values)
    _check_values_shape(input, key, nkey, advanced, tuple(values.shape))
    _ix.run_checks(checks)
    if not accumulate:
        return _ix.index_put(input, nkey, values, advanced, _ix._index_tensors(key) if advanced else ())
    table = input._be
    out = table.contiguous(input._data)
    if advanced:
        _ix._put(table, out, nkey, values._data, True)
    else:
        table.index_put_(out, nkey, values._data, True)
    if _gs.enabled and (input._rg or values._rg):
        node = IndexPutAccBackward0()
        node.key, node.vshape, node.need = nkey, tuple(values.shape), (input._rg, values._rg)
        if advanced:
            node.save(*_ix._index_tensors(key))
        node.next_functions = (edge(input), edge(values))
        return _make(out, input.dtype, table, node)
    return _make(out, input.dtype, table)


def _check_values_shape(input: Tensor, key: tuple, nkey, advanced: bool, vshape: tuple) -> None:
    """PyTorch's error for values that do not broadcast to input[indices]; integer index tensors only (the common
    case) get the indexed shape without running the indexing."""
    if not all(isinstance(k, Tensor) and k.dtype is not _bool and k.dtype is not _dt.uint8 for k in key):
        _ix._check_put_shape(input, nkey, advanced, vshape)
        return
    target = broadcast_shapes(*[tuple(k.shape) for k in key], op="index_put") + tuple(input.shape[len(key):])
    v = vshape
    while len(v) > len(target) and v[0] == 1:
        v = v[1:]
    if len(v) > len(target) or any(a != b and a != 1 for a, b in zip(reversed(v), reversed(target))):
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(vshape)} cannot be broadcast to indexing "
                           f"result of shape {list(target)}")


def _check_index_vector(op: str, input: Tensor, dim: int, index: Tensor, check_range: bool = True,
                        negative: bool = False) -> int:
    d = norm_dim(dim, input.ndim, op)
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index.dtype is not _i64:
        if op == "index_fill":  # PyTorch's index_fill raises IndexError here (index_copy a RuntimeError)
            raise IndexError(f"index_fill_(): Expected dtype int64 for index, but got {index.dtype}")
        raise RuntimeError(f"{op}(): Expected a long tensor for index, but got {index.dtype}")
    if index.ndim > 1:
        if op == "index_fill":  # (PyTorch's index_fill: a RuntimeError)
            raise RuntimeError("Index has to be a vector/scalar")
        raise IndexError(f"{op}(): Index is supposed to be a vector")
    _ix._same_device(op, input, index)
    if not check_range:
        return d
    size = input.shape[d] if input.ndim else 1
    _ix._check_range(op, index, size, d, IndexError, f"{op}_(): index {{}} is out of bounds for dimension {d} with "
                                                     f"size {size}", negative)
    return d


def _dim_key(input: Tensor, d: int, index: Tensor) -> tuple:
    return (slice(None),) * d + (_as1d(index)._data,)


class IndexCopyBackward0(Node):  # (the indices saved, version-checked, as PyTorch's)
    def backward(self, g):
        (index,) = self.saved()
        gx = index_fill(g, self.dim, index, 0) if self.need[0] else None
        gs = _ix.index_select(g, self.dim, index).reshape(self.src_shape) if self.need[1] else None
        return gx, gs


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """input with ``input.select(dim, index[i]) = source.select(dim, i)``."""
    d = norm_dim(dim, input.ndim, "index_copy")
    if not isinstance(index, Tensor):
        raise TypeError(f"index_copy(): argument 'index' must be Tensor, not {type(index).__name__}")
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, _, source = _ac_cast("index_copy", input, index, source)
    _check_index_copy(input, d, index, source)
    if input.numel() and source.numel():  # (PyTorch's kernel reads no index when it copies nothing)
        size = input.shape[d] if input.ndim else 1
        _ix._check_range("index_copy", index, size, d, IndexError,
                         f"index_copy_(): index {{}} is out of bounds for dimension {d} with size {size}")
    x1, s1 = _as1d(input), _as1d(source)
    n = index.numel()
    table = input._be
    out = table.contiguous(x1._data)
    if n and x1.numel() and s1.numel():  # (nothing to copy: PyTorch reads no index)
        table.setitem_(out, _dim_key(x1, d, index), s1._data)
    if input.ndim == 0:
        out = table.view(out, ())
    if _gs.enabled and (input._rg or source._rg):
        node = IndexCopyBackward0()
        node.dim, node.need, node.src_shape = d, (input._rg, source._rg), tuple(source.shape)
        node.save(_as1d(index))
        node.next_functions = (edge(input), edge(source))
        return _make(out, input.dtype, table, node)
    return _make(out, input.dtype, table)


class IndexFillBackward0(Node):  # (the indices saved, version-checked, as PyTorch's)
    def backward(self, g):
        (index,) = self.saved()
        gx = index_fill(g, self.dim, index, 0) if self.need[0] else None
        gv = None
        if self.need[1]:  # the sum over the filled positions, each once (a repeated index fills it once)
            from ._pointwise_where import where
            g1 = _as1d(g)
            filled = index_fill(_cr.zeros(g1.shape, dtype=_bool, device=g1.device), self.dim, index, True)
            gv = where(filled, g1, 0).sum()
        return (gx, gv) if self.nv else (gx,)


class IndexFillBackward1(IndexFillBackward0):  # (PyTorch's name for the tensor-value form)
    pass


def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """input with ``value`` at ``index`` along ``dim``."""
    empty = input.numel() == 0
    # (PyTorch's index_fill counts negative indices from the end, unlike index_copy)
    d = _check_index_vector("index_fill", input, dim, index, check_range=not empty, negative=True)
    if empty and index.numel():
        # PyTorch reads no index of an empty tensor: where the other dims hold elements (so every index is out of
        # range of an empty ``dim``) it raises a RuntimeError, otherwise it returns the empty tensor unchecked
        others = math.prod(input.shape[:d] + input.shape[d + 1:])
        if others:
            raise RuntimeError(f"index_fill_(): index {int(_as1d(index)[0].item())} is out of bounds for dimension "
                               f"{d} with size 0")
        index = index[:0]
    vt = isinstance(value, Tensor)
    if vt and value.ndim != 0:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.ndim} dimension(s).")
    v = value if vt else _dt.fit_scalar(value, input.dtype)
    table = input._be
    given = index  # (the caller's: the backward saves it, version-checked)
    if index.numel() and not (table.host_memory and host_all_below(table, index._data, input.shape[d] if input.ndim
                                                                    else 1)):
        index = _pw.remainder(index, input.shape[d] if input.ndim else 1)  # (PyTorch wraps a negative index)
    x1 = _as1d(input)
    out = table.contiguous(x1._data)
    if index.numel():
        if vt:
            table.setitem_(out, _dim_key(x1, d, index), _native(value.to(input.device), input.dtype))
        else:
            table.setitem_(out, _dim_key(x1, d, index), v)
    if input.ndim == 0:
        out = table.view(out, ())
    vrg = vt and value._rg
    if _gs.enabled and (input._rg or vrg):
        node = IndexFillBackward1() if vt else IndexFillBackward0()
        node.dim, node.need, node.nv = d, (input._rg, vrg), vt
        node.save(_as1d(given))
        node.next_functions = (edge(input), edge(value)) if vt else (edge(input),)
        return _make(out, input.dtype, table, node)
    return _make(out, input.dtype, table)


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """Out-of-place put_: input seen as 1-D, ``source`` written (or added) at ``index``."""
    if not isinstance(index, Tensor) or index.dtype is not _i64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got "
                           f"{getattr(index, 'dtype', type(index).__name__)}")
    if not isinstance(source, Tensor):
        raise TypeError(f"put(): argument 'source' must be Tensor, not {type(source).__name__}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{input.dtype} and source.dtype = {source.dtype}")
    if index.numel() != source.numel():  # (PyTorch: an IndexError)
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                           f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    n = input.numel()
    if index.numel() and n == 0:
        raise IndexError("put_(): tried to put into an empty tensor")
    if not accumulate:  # as PyTorch (on every device): which of repeated indices wins is unspecified
        alert_not_deterministic("put_")
    flat = input.reshape(-1)
    r = index_put(flat, (index.reshape(-1),), source.reshape(-1), accumulate)
    return _renamed(own(r.reshape(tuple(input.shape))), _PUT)


_PUT: dict = {"name": "PutBackward0"}


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor, *, _inplace: bool = False) -> Tensor:
    """input with the elements where ``mask`` is True replaced, in order, by source's first elements; input and mask
    broadcast against each other (a mask larger than input gives the larger shape, as PyTorch; not in place)."""
    if not isinstance(mask, Tensor) or mask.dtype is not _bool:
        if mask.dtype is _dt.uint8:  # (PyTorch warns before refusing it)
            warnings.warn("masked_scatter_ received a mask with dtype torch.uint8, this behavior is now deprecated,"
                          "please use a mask with dtype torch.bool instead.", UserWarning, stacklevel=3)
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{_dt.cpp_name(mask.dtype) if isinstance(mask, Tensor) else type(mask).__name__}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got "
                           f"{input.dtype} and {source.dtype}")
    _ix._same_device("masked_scatter", input, mask, source)
    shape = broadcast_shape(tuple(input.shape), tuple(mask.shape), "masked_scatter")
    if shape != tuple(input.shape):
        if _inplace:
            raise RuntimeError(f"masked_scatter_: mask of shape {list(mask.shape)} cannot be broadcast to the input "
                               f"shape {list(input.shape)}")
        input = expand(input, shape)  # differentiable: the gradient sums back to input's shape
    m = expand(mask, shape) if tuple(mask.shape) != shape else mask
    # the number of elements taken from source depends on the data: read back only when it can exceed source's
    # (a source as large as the mask needs no read, and a compiled step does not recapture as the count changes)
    if source.numel() < m.numel() and int(m.sum().item()) > source.numel():
        raise RuntimeError("masked_scatter: Number of elements of source < number of ones in mask")
    if not source.numel():
        return _renamed(_ix.index_put(input, (m._data,), source.reshape(-1), True), _MASKED_SCATTER)
    # the k-th True takes source's k-th element: a gather by the running count, so that no shape (nor the
    # gradient's, a masked select before) depends on the data and a compiled step with a backward replays
    pos = m.reshape(-1).cumsum(0).sub_(1).clamp_(min=0)
    vals = source.reshape(-1).index_select(0, pos).reshape(shape)
    return _renamed(_pw.where(m, vals, input), _MASKED_SCATTER)


def _masked_scatter_inplace(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    return masked_scatter(input, mask, source, _inplace=True)


_MASKED_SCATTER: dict = {"name": "MaskedScatterBackward0"}
_TAKE: dict = {"name": "TakeBackward0"}


def _region_scatter(op: str, input: Tensor, src: Tensor, key: tuple, names: dict) -> Tensor:
    """input with ``src`` written into the (basic-indexing) region ``key``; src must have the region's shape."""
    if not isinstance(src, Tensor):
        raise TypeError(f"{op}(): argument 'src' must be Tensor, not {type(src).__name__}")
    _ix._same_device(op, input, src)
    region = tuple(input._be.basic_index(input._data, key).shape)
    if tuple(src.shape) != region:
        raise RuntimeError(f"{op}: Expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(region)}")
    if src.dtype is not input.dtype:
        src = src.to(input.dtype)
    return _renamed(_ix.index_put(input, key, src, False), names)


def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None, end: int | None = None,
                  step: int = 1) -> Tensor:
    """input with ``src`` embedded at ``input[..., start:end:step, ...]`` along ``dim``."""
    d = norm_dim(dim, input.ndim, "slice_scatter")
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    return _region_scatter("slice_scatter", input, src, (slice(None),) * d + (slice(start, end, step),),
                           _SLICE_SCATTER)


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """input with ``src`` embedded at ``input.select(dim, index)``."""
    d = norm_dim(dim, input.ndim, "select_scatter")
    size = input.shape[d]
    if index < -size or index >= size:
        raise IndexError(f"select_scatter(): index {index} out of range for tensor of size {list(input.shape)} at "
                         f"dimension {d}")
    return _region_scatter("select_scatter", input, src, (slice(None),) * d + (int(index),), _SELECT_SCATTER)


_SLICE_SCATTER: dict = {"name": "SliceScatterBackward0"}
_SELECT_SCATTER: dict = {"name": "SelectScatterBackward0"}


# ---------------------------------------------------------------------------------------------
# take / take_along_dim / argwhere
# ---------------------------------------------------------------------------------------------
def take(input: Tensor, index: Tensor) -> Tensor:
    """input seen as 1-D, read at ``index`` (negative indices count from the end); the result has index's shape."""
    if not isinstance(index, Tensor) or index.dtype is not _i64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got "
                           f"{getattr(index, 'dtype', type(index).__name__)}")
    n = input.numel()
    if index.numel() and n == 0:
        raise IndexError("take(): tried to take from an empty tensor")
    return _renamed(_ix.getitem(input.reshape(-1), index), _TAKE)


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None, *, out: Tensor | None = None) -> Tensor:
    """Gather along ``dim`` with input and indices broadcast against each other elsewhere (flattened: dim=None)."""
    if not isinstance(indices, Tensor) or indices.dtype is not _i64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{getattr(indices, 'dtype', type(indices).__name__)}")
    if dim is None:
        return _out(_ix.gather(input.reshape(-1), 0, indices.reshape(-1)), out, "take_along_dim", input)
    if input.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {input.ndim} dimensions for input, and {indices.ndim} dimensions for indices")
    d = norm_dim(dim, input.ndim, "take_along_dim")
    if input.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if input.shape[d] == 0 and indices.numel():
        raise RuntimeError("ZeroDivisionError")  # PyTorch's message: the wrapping below is a modulo by the size
    si, sx = list(indices.shape), list(input.shape)
    si[d] = sx[d] = 1
    b = list(broadcast_shape(tuple(sx), tuple(si), "take_along_dim"))
    bx, bi = list(b), list(b)
    bx[d], bi[d] = input.shape[d], indices.shape[d]
    x = expand(input, tuple(bx)) if tuple(bx) != tuple(input.shape) else input
    i = expand(indices, tuple(bi)) if tuple(bi) != tuple(indices.shape) else indices
    if input.shape[d]:  # PyTorch 2.13 wraps the indices along dim (Python modulo: -1 is the last, 3 of 3 is 0)
        i = _pw.remainder(i, input.shape[d])
    return _out(_ix.gather(x, d, i), out, "take_along_dim", input)


def unravel_index(indices, shape) -> tuple:
    """The coordinates, one tensor per dim of ``shape``, of flat ``indices`` into a C-ordered tensor of ``shape``."""
    if not isinstance(indices, Tensor):
        indices = _cr.tensor(indices)
    if indices.dtype.is_floating_point or indices.dtype is _bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(tuple(shape)))
    n = 1
    for s in shape:
        n *= s
    if indices.numel():
        if any_outside(indices, -n, n):
            raise RuntimeError("'indices' must be in range [-numel, numel), where numel is the number of elements "
                               f"in 'shape' ({n})")
    rest = _pw.remainder(indices.to(_i64), n) if n else indices.to(_i64)
    out = []
    for k in range(len(shape) - 1, -1, -1):
        s = shape[k]
        out.append(_pw.remainder(rest, s) if s else rest)
        rest = _pw.floor_divide(rest, s) if s else rest
    return tuple(reversed(out))


def argwhere(input: Tensor) -> Tensor:
    """The indices of the nonzero elements, one row each (nonzero())."""
    return _ix.nonzero(input)


# ---------------------------------------------------------------------------------------------
# in-place forms and methods
# ---------------------------------------------------------------------------------------------
def _inplace(name: str, fn, other_pos: int | None = None):
    def m(self, *args, **kwargs):
        other = args[other_pos] if other_pos is not None and len(args) > other_pos else None
        other = other if isinstance(other, Tensor) else None
        return apply_inplace(self, name, lambda s: fn(s, *args, **kwargs), other)
    m.__name__ = name
    return m


def _scatter_(self, dim, index, src=None, value=None, *, reduce=None):
    s = src if src is not None else value
    return apply_inplace(self, "scatter_", lambda t: scatter(t, dim, index, s, reduce=reduce),
                         s if isinstance(s, Tensor) else None)


def index_put_(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """In-place ``input[indices] = values`` (``+=`` with ``accumulate``); ``torch.index_put_`` and the method."""
    self = input
    if not accumulate and isinstance(indices, (tuple, list)):
        _ix.check_byte_mask_fill(self, tuple(indices), values)
    if isinstance(values, Tensor) and values._be is self._be and isinstance(indices, (tuple, list)) and not (
            not accumulate and values.numel() == 1 and _ix._single_mask(tuple(indices))):
        # PyTorch refuses values sharing memory with self (masked_fill_'s one-element value excepted)
        assert_no_overlap(self._be, self._data, values._data, self.dtype.itemsize, values.dtype.itemsize)
    return apply_inplace(self, "index_put_", lambda t: index_put(t, indices, values, accumulate), values)


def _index_fill_(self, dim, index, value):
    return apply_inplace(self, "index_fill_", lambda t: index_fill(t, dim, index, value),
                         value if isinstance(value, Tensor) else None)


def _nonzero(self, *, as_tuple: bool = False):
    return _ix.nonzero(self, as_tuple=as_tuple)


METHODS: dict = {  # Tensor.<name> -> function(self, ...), bound by coretorch._tensor_methods
    "scatter": scatter, "scatter_": _scatter_, "scatter_reduce": scatter_reduce,
    "scatter_reduce_": _inplace("scatter_reduce_", scatter_reduce, 2), "index_reduce": index_reduce,
    "index_reduce_": _inplace("index_reduce_", index_reduce, 2),
    "index_put": index_put, "index_put_": index_put_, "index_copy": index_copy,
    "index_copy_": _inplace("index_copy_", index_copy, 2), "index_fill": index_fill, "index_fill_": _index_fill_,
    "masked_scatter": masked_scatter, "masked_scatter_": _inplace("masked_scatter_", _masked_scatter_inplace, 1),
    "put": put, "put_": _inplace("put_", put, 1), "take": take, "take_along_dim": take_along_dim,
    "argwhere": argwhere, "nonzero": _nonzero, "slice_scatter": slice_scatter, "select_scatter": select_scatter,
}
