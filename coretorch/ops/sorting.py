"""Sorting, selection and order statistics: sort, argsort, msort, topk, kthvalue, median, nanmedian, mode, unique,
unique_consecutive, searchsorted, bucketize, cummax, cummin, logcumsumexp.

The selecting ops run on the backend's ``sort`` / ``topk`` / ``cummax`` / ``cummin`` kernels; their gradient is the
output gradient scattered to the selected indices (PyTorch's formula).  The rest of the family (quantile, histc,
bincount, cov, ...) is in ``statistics.py``.
"""
from __future__ import annotations

import operator

import numpy as np

from .. import dtypes as _dt
from .._warn_once import warn_once
from ..autograd.grad_mode import no_grad, state as _gs
from ..autograd._zero import keep_graph as _keep_graph
from ..autograd.graph import Node
from ..tensor import Tensor, _make, _zeros_on
from ._util import edge, norm_dim, return_type
from . import _kth_ties, _mode_nan, _util
from ._out import write_out

__all__: list[str] = ["sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "mode", "unique",
                      "unique_consecutive", "searchsorted", "bucketize", "cummax", "cummin", "logcumsumexp"]
METHODS: dict = {}       # Tensor.<name> -> function(self, ...), bound by coretorch._tensor_methods

_i64, _i32, _bool = _dt.int64, _dt.int32, _dt.bool_


RETURN_TYPES = {op: return_type(op) for op in ("sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax",
                                               "cummin")}


def _check(op: str, input) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return input


def _int_arg(op: str, name: str, v) -> int:
    """An int argument (Python int, numpy integer or a one-element integer tensor), as PyTorch's parser accepts."""
    if isinstance(v, bool) or (isinstance(v, Tensor) and (v.dtype.is_floating_point or v.numel() != 1)):
        raise TypeError(f"{op}(): argument '{name}' must be int, not {type(v).__name__}")
    try:
        return int(v.item()) if isinstance(v, Tensor) else operator.index(v)
    except TypeError:
        raise TypeError(f"{op}(): argument '{name}' must be int, not {type(v).__name__}") from None


def _write_out(op: str, out, res, *inputs):
    """``out=`` for the sorting family (the dtype must match, as PyTorch's kernels check; ``inputs``: checked
    against ``out`` for memory overlap where PyTorch's kernel checks)."""
    return write_out(op, out, res, exact_dtype=True, inputs=inputs)


# ---- the selection gradient ---------------------------------------------------------------------------------------
class _SelectNode(Node):
    """Gradient of a selection: the output gradient scattered (added) to the selected indices along ``dim``
    (``dim`` None: indices into the flattened input).  The indices are saved as PyTorch saves them (returned to
    the caller: an in-place change before the backward raises)."""
    __slots__ = ("shape", "dim", "keepdim")

    def backward(self, g):
        shape = self.shape
        sidx = self.saved()[0]  # (cummax/cummin also save their input: a version check only)
        if len(shape) == 0:
            return (reshape(g, ()),)
        if self.dim is None:
            n = 1
            for s in shape:
                n *= s
            z = _zeros_on((n,), g.dtype, g._be)
            return (reshape(scatter_add(z, 0, reshape(sidx, (-1,)), reshape(g, (-1,))), shape),)
        idx, gg = sidx, g
        if not self.keepdim:
            idx, gg = unsqueeze(idx, self.dim), unsqueeze(g, self.dim)
        return (scatter_add(_zeros_on(shape, g.dtype, g._be), self.dim, idx, gg),)


def _node(name: str):
    return type(name, (_SelectNode,), {"__slots__": ()})


SortBackward0, TopkBackward0, KthvalueBackward0 = _node("SortBackward0"), _node("TopkBackward0"), \
    _node("KthvalueBackward0")
class MedianBackward0(Node):
    """median()/nanmedian() of a whole tensor: the gradient is shared evenly by the elements equal to the result
    (a NaN result: by the NaNs) and written only there, PyTorch's evenly_distribute_backward (its CPU form).  It
    saves the result as PyTorch does: an in-place change of it (``x.median().relu_()``) makes the backward raise
    instead of reading the changed value."""
    __slots__ = ()

    def backward(self, g):
        x, r = self.saved()
        mask = logical_or(eq(x, r), logical_and(isnan(x), isnan(r)))
        # written only at the mask (PyTorch's CPU form): a NaN gradient stays on the selected elements
        return (where(mask, div(g, sum_(mask, dtype=g.dtype)), 0.0),)


MedianBackward1 = _node("MedianBackward1")
NanmedianBackward0 = type("NanmedianBackward0", (MedianBackward0,), {"__slots__": ()})
NanmedianBackward1 = _node("NanmedianBackward1")
ModeBackward0, CummaxBackward0, CumminBackward0 = _node("ModeBackward0"), _node("CummaxBackward0"), \
    _node("CumminBackward0")


def _selected(cls, input: Tensor, vals, idx: Tensor, dim, keepdim: bool, saves_input: bool = False) -> Tensor:
    """The selected values as a tensor (recorded as ``cls`` when input requires grad).  ``saves_input``: PyTorch's
    node saves the input too (cummax/cummin's cummaxmin_backward): an in-place change of it raises at the backward."""
    table = input._be
    if input._rg and _gs.enabled and input.dtype.is_floating_point:
        node = cls()
        node.shape, node.dim, node.keepdim = tuple(input.shape), dim, keepdim
        node.save(idx, input) if saves_input else node.save(idx)
        node.next_functions = (edge(input),)
        return _make(vals, input.dtype, table, node)
    return _make(vals, input.dtype, table)


# ---- sort / argsort / msort / topk / kthvalue ---------------------------------------------------------------------
def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool | None = False, *, out=None):
    """Sorted values and their indices along ``dim`` (NaN is the largest value; ``stable`` keeps ties in order)."""
    _check("sort", input)
    if input.dtype is _bool:
        input_ = input.to(_dt.uint8)
        r = sort(input_, dim, descending, stable)
        return _write_out("sort", out, RETURN_TYPES["sort"](r.values.to(_bool), r.indices), input)
    d = norm_dim(dim, input.ndim, "sort")
    table = input._be
    v, i = table.sort(input._data, d, bool(descending), bool(stable))
    idx = _make(i, _i64, table)
    res = RETURN_TYPES["sort"](_selected(SortBackward0, input, v, idx, d, True), idx)
    return _write_out("sort", out, res, input)


def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    """The indices that sort ``input`` along ``dim``."""
    _check("argsort", input)
    d = norm_dim(dim, input.ndim, "argsort")
    with no_grad():
        return sort(input, d, descending, stable).indices


def msort(input: Tensor, *, out=None) -> Tensor:
    """``input`` sorted along its first dimension."""
    return _write_out("msort", out, sort(_check("msort", input), 0).values, input)


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True, *, out=None):
    """The ``k`` largest (smallest) elements along ``dim`` and their indices (sorted when ``sorted``)."""
    _check("topk", input)
    d = norm_dim(dim, input.ndim, "topk")
    size = input.shape[d] if input.ndim else 1
    k = _int_arg("topk", "k", k)
    if k < 0 or k > size:
        raise RuntimeError(f"topk(): selected index k out of range (k = {k}, size of dimension {d} = {size})")
    if input.dtype is _bool:  # PyTorch's CPU kernel has no bool variant (sort and max do)
        raise RuntimeError("topk does not support bool dtypes on CPU")
    table = input._be
    v, i = table.topk(input._data, k, d, bool(largest), bool(sorted))
    if table.host_memory and sorted and input.ndim and 0 < k <= 17 and k * 64 > size \
            and input.numel() <= _kth_ties.MAX_ELEMENTS:
        # equal values in PyTorch's CPU order (its nth_element + sort path; small tensors only: host work); a device
        # keeps its kernel's order (no host round trip; tie order is unspecified on PyTorch's devices too)
        v, i = _in_pytorch_order(table, _kth_ties.topk_in_pytorch_order, input._data, v, i, k, d, bool(largest))
    idx = _make(i, _i64, table)
    return _write_out("topk", out, RETURN_TYPES["topk"](_selected(TopkBackward0, input, v, idx, d, True), idx),
                      input)


def _in_pytorch_order(table, fn, x, values, indices, *rest):
    """``fn(x, values, indices, *rest)``, a selection's equal values redone in PyTorch's CPU order (host numpy
    code; its result arrays, or the given ones): on numpy arrays a recorded host call (a compiled replay repeats it),
    on another host-memory backend's through a copy to numpy and back."""
    if isinstance(x, np.ndarray) and isinstance(values, np.ndarray):
        return _util.host_call(fn, x, values, indices, *rest)
    out = fn(table.to_numpy(x), table.to_numpy(values), table.to_numpy(indices), *rest)
    return tuple(map(table.from_numpy, out)) if isinstance(out, tuple) else table.from_numpy(out)


def _nth(input: Tensor, k: int, d: int):
    """(values, indices) arrays of the k-th smallest (0-based) along d, the dim kept."""
    table = input._be
    if table.has("kthvalue"):
        return table.kthvalue(input._data, k, d)
    v, i = table.topk(input._data, k + 1, d, False, True)
    if input.ndim == 0:
        return v, i
    key = (slice(None),) * d + (slice(k, k + 1),)
    return table.basic_index(v, key), table.basic_index(i, key)


def _squeezed(table, arr, shape, d, keepdim):
    if keepdim or not shape:
        return table.contiguous(arr)
    return table.view(table.contiguous(arr), tuple(s for j, s in enumerate(shape) if j != d))


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False, *, out=None):
    """The k-th smallest element (1-based) along ``dim`` and its index."""
    _check("kthvalue", input)
    d = norm_dim(dim, input.ndim, "kthvalue")
    size = input.shape[d] if input.ndim else 1
    if size == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    k = _int_arg("kthvalue", "k", k)
    if k < 1 or k > size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    if input.dtype is _bool and input.ndim:  # after the size checks, as PyTorch (a 0-d bool is its own value)
        raise NotImplementedError("\"kthvalue_cpu\" not implemented for 'Bool'")
    table, shape = input._be, tuple(input.shape)
    v, i = _nth(input, k - 1, d)
    if size > 1 and table.host_memory:
        # the index among equal values as PyTorch's CPU kernel picks it (a device keeps its kernel's choice: no host
        # round trip; PyTorch's devices pick their own too)
        i = _in_pytorch_order(table, _kth_ties.kth_in_pytorch_order, input._data, v, i, k - 1, d)
    idx = _make(_squeezed(table, i, shape, d, keepdim), _i64, table)
    vals = _selected(KthvalueBackward0, input, _squeezed(table, v, shape, d, keepdim), idx, d, keepdim)
    return _write_out("kthvalue", out, RETURN_TYPES["kthvalue"](vals, idx), input)


# ---- median / nanmedian / mode -----------------------------------------------------------------------------------
def _stable_rank_index(x: Tensor, v, pos: int, d: int):
    """The index of the element at rank ``pos`` of a stable sort along d, ``v`` (dim kept) its value: PyTorch's
    median orders equal values by index.  The (pos - #smaller)-th occurrence of v, found in a few O(n) passes."""
    with no_grad():
        xt = x.detach()
        vt = _make(v, x.dtype, x._be)
        before = sum_(gt(vt, xt), d, keepdim=True)
        seen = cumsum(eq(xt, vt), d)
        i = argmax(eq(seen, add(sub(pos, before), 1)).to(_dt.uint8), d, keepdim=True)
    return i._data


_EMPTY_MEDIAN = {_dt.int32: -(1 << 31), _dt.int64: -(1 << 63), _bool: True}


def _median(op: str, input: Tensor, dim, keepdim: bool, ignore_nan: bool, out):
    _check(op, input)
    table = input._be
    flat = dim is None
    x = reshape(input, (-1,)) if flat else input
    d = 0 if flat else norm_dim(dim, input.ndim, op)
    n = x.shape[d] if x.ndim else 1
    if input.dtype is _bool and n:  # empty: the size error (along a dim) or True (all of it) come first (PyTorch)
        raise NotImplementedError(f"\"{op}\" not implemented for 'Bool'")
    if n == 0:
        if flat and input.dtype.is_floating_point:  # NaN, in the graph with a zero gradient as PyTorch's
            r = _make(table.full((), float("nan"), input.dtype.np), input.dtype, table)
            return _keep_graph(r, (input,), "NanmedianBackward0" if ignore_nan else "MedianBackward0")
        if flat:  # PyTorch's NaN converted to the integer dtype (x86's conversion): 0, or the most negative int32/64
            v = _EMPTY_MEDIAN.get(input.dtype, 0)
            return _write_out(op, out, _make(table.full((), v, input.dtype.np), input.dtype, table))
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    if input.dtype is _bool:
        raise NotImplementedError(f"\"{'median_cpu' if flat else 'median_out'}\" not implemented for 'Bool'")
    xa = x._data
    if not input.dtype.is_floating_point or x.ndim == 0 or (
            table.host_memory and not table.to_numpy(table.any(table.isnan(xa), None, False))):
        # no NaN (known for free in host memory): a selection (the cpu's argpartition), not a full sort
        v, i = _nth(x, (n - 1) // 2, d)
        if not flat and x.ndim:
            i = _stable_rank_index(x, v, (n - 1) // 2, d)
    else:
        # sorted with NaN last: the median is at (n - 1) // 2, or at the first NaN when one propagates; nanmedian's
        # at (valid - 1) // 2 of the valid (non-NaN) elements (all NaN: position 0, a NaN)
        v_all, i_all = table.sort(xa, d, False, True)
        valid = table.sum(table.cast(table.logical_not(table.isnan(xa)), _i64.np), (d,), True)
        if ignore_nan:
            pos = table.floor_divide(table.sub(table.maximum(valid, 1), 1), 2)
        else:
            pos = table.where(table.lt(valid, n), valid, (n - 1) // 2)
        pos = table.contiguous(table.cast(pos, _i64.np))
        v, i = table.gather(v_all, d, pos), table.gather(i_all, d, pos)
    if flat:
        val = table.view(table.contiguous(v), ())
        if input._rg and _gs.enabled and input.dtype.is_floating_point:
            node = NanmedianBackward0() if ignore_nan else MedianBackward0()
            node.next_functions = (edge(input),)
            res = _make(val, input.dtype, table, node)
            node.save(input, res)
            return _write_out(op, out, res)
        return _write_out(op, out, _make(val, input.dtype, table))
    shape = tuple(input.shape)
    idx = _make(_squeezed(table, i, shape, d, keepdim), _i64, table)
    node_cls = NanmedianBackward1 if ignore_nan else MedianBackward1
    vals = _selected(node_cls, input, _squeezed(table, v, shape, d, keepdim), idx, d, keepdim)
    return _write_out(op, out, RETURN_TYPES[op](vals, idx), input)


def median(input: Tensor, dim=None, keepdim: bool = False, *, out=None):
    """The lower median of all elements (no ``dim``), or (values, indices) along ``dim``; NaN propagates."""
    return _median("median", input, dim, keepdim, False, out)


def nanmedian(input: Tensor, dim=None, keepdim: bool = False, *, out=None):
    """median ignoring NaN (NaN only where a slice is all NaN)."""
    return _median("nanmedian", input, dim, keepdim, True, out)


def mode(input: Tensor, dim: int = -1, keepdim: bool = False, *, out=None):
    """The most frequent value along ``dim`` (the smallest of equally frequent ones) and an index of it."""
    _check("mode", input)
    d = norm_dim(dim, input.ndim, "mode")
    shape = tuple(input.shape)
    if input.ndim == 0:
        idx = _make(input._be.full((), 0, _i64.np), _i64, input._be)
        return _write_out("mode", out, RETURN_TYPES["mode"](_selected(ModeBackward0, input, input._be.contiguous(
            input._data), idx, 0, True), idx), input)
    n = shape[d]
    if n == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    with no_grad():
        s, perm = sort(input.detach(), d, False, True)
        # run starts in the sorted slice; each element's run length so far (a running max of the start positions)
        starts = cat([ones_like(narrow(s, d, 0, 1), dtype=_bool), ne(narrow(s, d, 1, n - 1), narrow(s, d, 0, n - 1))],
                     d) if n > 1 else ones_like(s, dtype=_bool)
        view = [1] * input.ndim
        view[d] = n
        ar = reshape(arange(n, device=input.device), view)
        first = cummax(where(starts, ar, 0), d).values
        runlen = ar - first + 1
        best = amax(runlen, d, keepdim=True)
        # the last element of the first run reaching the best count: the smallest most frequent value
        pos = argmax(eq(runlen, best).to(_dt.uint8), d, keepdim=True)
        v = gather(s, d, pos)
        i = gather(perm, d, pos)
    table = input._be
    if table.host_memory and input.dtype.is_floating_point and n > 1:
        # rows with a NaN as PyTorch's CPU kernel has them (its sort leaves NaN where it stands; a device keeps its
        # kernel's answer, as PyTorch's CUDA mode has its own)
        va, ia = _in_pytorch_order(table, _mode_nan.mode_in_pytorch_order, input._data, v._data, i._data, d)
        v, i = _make(va, input.dtype, table), _make(ia, _i64, table)
    idx = _make(_squeezed(table, i._data, shape, d, keepdim), _i64, table)
    vals = _selected(ModeBackward0, input, _squeezed(table, v._data, shape, d, keepdim), idx, d, keepdim)
    return _write_out("mode", out, RETURN_TYPES["mode"](vals, idx), input)


# ---- cummax / cummin / logcumsumexp --------------------------------------------------------------------------------
def _cum_extreme(op: str, input: Tensor, dim: int, out):
    _check(op, input)
    d = norm_dim(dim, input.ndim, op)
    table = input._be
    x = input._data if input.dtype is not _bool else table.cast(input._data, _dt.uint8.np)
    v, i = getattr(table, op)(x, d)
    if input.dtype is _bool:
        v = table.cast(v, _bool.np)
    idx = _make(i, _i64, table)
    vals = _selected(CummaxBackward0 if op == "cummax" else CumminBackward0, input, v, idx, d, True, True)
    return _write_out(op, out, RETURN_TYPES[op](vals, idx))


def cummax(input: Tensor, dim: int, *, out=None):
    """Running maximum along ``dim`` and the index of the (last) element it comes from."""
    return _cum_extreme("cummax", input, dim, out)


def cummin(input: Tensor, dim: int, *, out=None):
    """Running minimum along ``dim`` and the index of the (last) element it comes from."""
    return _cum_extreme("cummin", input, dim, out)


class LogcumsumexpBackward0(Node):
    __slots__ = ("dim", "out")

    def backward(self, g):
        # d out_j / d x_i = exp(x_i - out_j) for j >= i: grad_i = sum_{j >= i} g_j exp(x_i - out_j), summed in log
        # space for the positive and negative parts of g (PyTorch's stable formula)
        x, out = self.saved()  # an in-place change of the output makes the backward raise, as PyTorch
        d = self.dim
        if x.ndim == 0:
            return (g,)

        lowest = float(np.finfo(x.dtype.np).min) / 2  # "log 0" that stays finite (no inf - inf in a 2nd backward)

        def rev_lcse(t):
            return flip(logcumsumexp(flip(t, (d,)), d), (d,))

        def log_part(h):  # log h where h > 0, else "log 0"; the inner where keeps log's gradient finite
            pos = gt(h, 0)
            return where(pos, log(where(pos, h, 1.0)), lowest)
        p = exp(add(rev_lcse(sub(log_part(g), out)), x))
        n = exp(add(rev_lcse(sub(log_part(neg_(g)), out)), x))
        return (sub(p, n),)


def logcumsumexp(input: Tensor, dim: int, *, out=None) -> Tensor:
    """log(cumsum(exp(input))) along ``dim``, computed without overflow."""
    _check("logcumsumexp", input)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for '{input.dtype._tname[:-6]}'")
    d = norm_dim(dim, input.ndim, "logcumsumexp")
    table = input._be
    r = table.logcumsumexp(input._data, d)
    if input._rg and _gs.enabled:
        node = LogcumsumexpBackward0()
        node.dim = d
        node.next_functions = (edge(input),)
        res = _make(r, input.dtype, table, node)
        node.out = res
        node.save(input, res)
        return _write_out("logcumsumexp", out, res, input)
    return _write_out("logcumsumexp", out, _make(r, input.dtype, table), input)


# ---- unique / unique_consecutive -----------------------------------------------------------------------------------
def _runs(s: Tensor, n: int, flags: Tensor, return_inverse, return_counts, inv_order, out_shape, values_fn):
    """Outputs of unique from the run-start ``flags`` of ``n`` slices (sorted, or in input order)."""
    starts = reshape(nonzero(flags), (-1,))  # the number of unique slices depends on the data: one host read
    res = [values_fn(starts)]
    if return_inverse:
        group = cumsum(flags.to(_i64), 0) - 1
        inv = group if inv_order is None else scatter_add(zeros_like(group), 0, inv_order, group)
        res.append(reshape(inv, out_shape))
    if return_counts:
        ends = cat([narrow(starts, 0, 1, starts.shape[0] - 1), full((1,), n, dtype=_i64, device=s.device)]) \
            if starts.shape[0] else starts
        res.append(ends - starts)
    return res[0] if len(res) == 1 else tuple(res)


def _rows(input: Tensor, d: int):
    """input with ``dim`` first and the other dims flattened: (n, m)."""
    x = movedim(input, d, 0)
    n = x.shape[0]
    return reshape(x, (n, -1)), x.shape


def _unique_impl(op, input, sort_first, return_inverse, return_counts, dim):
    _check(op, input)
    with no_grad():
        x = input.detach()
        if dim is None:
            flat = reshape(x, (-1,))
            n = flat.shape[0]
            if sort_first:
                s, perm = sort(flat, 0, False, False)  # any order of equal elements gives the same outputs
            else:
                s, perm = flat, None
            if n == 0:
                flags = zeros((0,), dtype=_bool, device=x.device)
            else:
                flags = cat([ones((1,), dtype=_bool, device=x.device), ne(narrow(s, 0, 1, n - 1),
                                                                         narrow(s, 0, 0, n - 1))])
            return _runs(s, n, flags, return_inverse, return_counts, perm, tuple(x.shape),
                         lambda st: index_select(s, 0, st))
        d = norm_dim(dim, x.ndim, op)
        if x.shape[d] == 0:  # (PyTorch's unique_dim: an empty input for one empty dim, else an error)
            if list(x.shape).count(0) != 1:
                raise RuntimeError("Number of zero sized dimensions is more than one, so unique cannot be applied ")
            res = [x.clone()] + [zeros((0,), dtype=_i64, device=x.device)] * (bool(return_inverse) +
                                                                              bool(return_counts))
            return res[0] if len(res) == 1 else tuple(res)
        if x.numel() == 0:
            raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
        rows, mshape = _rows(x, d)
        n, m = rows.shape
        perm = None
        if sort_first and n:
            # a lexicographic order of the rows: stable sorts by the last column first, then by each column before
            perm = arange(n, device=x.device)
            for c in range(m - 1, -1, -1):
                key = index_select(select(rows, 1, c), 0, perm)
                perm = index_select(perm, 0, sort(key, 0, False, True).indices)
            rows = index_select(rows, 0, perm)
        if n == 0:
            flags = zeros((0,), dtype=_bool, device=x.device)
        else:
            diff = any_(ne(narrow(rows, 0, 1, n - 1), narrow(rows, 0, 0, n - 1)), 1) if m else \
                zeros((n - 1,), dtype=_bool, device=x.device)
            flags = cat([ones((1,), dtype=_bool, device=x.device), diff])

        def values(st):
            u = reshape(index_select(rows, 0, st), (st.shape[0],) + tuple(mshape[1:]))
            return contiguous(movedim(u, 0, d))
        return _runs(rows, n, flags, return_inverse, return_counts, perm, (n,), values)


class NotImplemented(Node):  # noqa: A001  (PyTorch's grad_fn name for an op without a derivative formula)
    """grad_fn of unique's values: differentiable outputs whose derivative is not implemented (as in PyTorch)."""
    __slots__ = ("op",)

    def backward(self, g):
        # (PyTorch's not_implemented(): TORCH_CHECK_NOT_IMPLEMENTED, a NotImplementedError)
        raise NotImplementedError(f"the derivative for '{self.op}' is not implemented.")


# PyTorch's grad_fn of each: the op's own Backward0 node, whose formula is not_implemented (the message's name is
# the ATen op's: unique_consecutive's with dim= too)
_NOT_DIFFERENTIATED = {
    name: type(cls, (NotImplemented,), {"__slots__": ()})
    for name, cls in (("_unique2", "Unique2Backward0"), ("unique_dim", "UniqueDimBackward0"),
                      ("unique_consecutive", "UniqueConsecutiveBackward0"))}


def _not_differentiated(op: str, input: Tensor, res):
    """Mark the first output as requiring grad, with a backward that raises (PyTorch's not_implemented)."""
    if not (input._rg and _gs.enabled and input.dtype.is_floating_point):
        return res
    first = res if isinstance(res, Tensor) else res[0]
    node = _NOT_DIFFERENTIATED[op]()
    node.op = op
    node.next_functions = (edge(input),)
    first = _make(first._data, first.dtype, first._be, node)
    return first if isinstance(res, Tensor) else (first,) + tuple(res[1:])


def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,
           dim: int | None = None):
    """The unique elements (or slices along ``dim``), sorted; optionally the inverse indices and the counts."""
    res = _unique_impl("unique", input, True, return_inverse, return_counts, dim)
    return _not_differentiated("_unique2" if dim is None else "unique_dim", input, res)


def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None):
    """Collapse consecutive equal elements (or slices along ``dim``); optionally inverse indices and counts."""
    res = _unique_impl("unique_consecutive", input, False, return_inverse, return_counts, dim)
    return _not_differentiated("unique_consecutive", input, res)


# ---- searchsorted / bucketize --------------------------------------------------------------------------------------
def searchsorted(sorted_sequence: Tensor, input, *, out_int32: bool = False, right: bool = False, side=None,
                 out=None, sorter=None) -> Tensor:
    """Indices where ``input``'s values would be inserted into the sorted last-dim rows of ``sorted_sequence``."""
    _check("searchsorted", sorted_sequence)
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    seq = sorted_sequence
    scalar = not isinstance(input, Tensor)
    if scalar:  # a wrapped number, as PyTorch: 2.5 against int64 boundaries is compared as a float, not as 2
        input = full((), input, dtype=_dt.result_type((seq, input), _dt.default), device=seq.device)
    if seq.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 "
                           "dimension")
    if seq.ndim > 1 and (input.ndim != seq.ndim or tuple(input.shape[:-1]) != tuple(seq.shape[:-1])):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           f"dimensions of boundaries tensor and input value tensor must match, but we got boundaries "
                           f"tensor {list(seq.shape)} and input value tensor {list(input.shape)}")
    if input.device != seq.device:
        raise RuntimeError("torch.searchsorted(): expected sorted_sequence and input on the same device, got "
                           f"{seq.device} and {input.device}")
    # PyTorch's (once a program) performance warnings for non-contiguous operands, values first
    for what, t in (("input value", input), ("boundary", seq)):
        if not t.is_contiguous():
            warn_once(f"searchsorted.{what}", f"torch.searchsorted(): {what} tensor is non-contiguous, this will lower "
                      "the performance due to extra data copy when converting non-contiguous tensor to contiguous, "
                      f"please use contiguous {what} tensor if possible. This message will only appear once per "
                      "program.", stacklevel=2)
    if sorter is not None:
        if tuple(sorter.shape) != tuple(seq.shape):
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, but got boundary "
                               f"tensor {list(seq.shape)}and got sorter tensor {list(sorter.shape)}")
        if sorter.dtype is not _i64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                               f"{sorter.dtype._tname[:-6]}")
        # PyTorch checks the sorter's range itself (one host read), before any gather's message could name gather
        if sorter.numel() and (int(amin(sorter)) < 0 or int(amax(sorter)) >= seq.shape[-1]):
            raise RuntimeError("torch.searchsorted(): sorter index out of range")
        seq = gather(seq, -1, sorter)
    dt = _dt.promote_types(seq.dtype, input.dtype)
    if dt is _bool and input.numel():  # PyTorch's kernel runs in the common dtype and has no bool one
        raise NotImplementedError("\"searchsorted_out_cpu\" not implemented for 'Bool'")
    table = seq._be
    s = table.contiguous(table.cast(seq._data, dt.np) if seq.dtype is not dt else seq._data)
    v = table.contiguous(table.cast(input._data, dt.np) if input.dtype is not dt else input._data)
    odt = _i32 if out_int32 else _i64
    if input.numel() == 0 or seq.shape[-1] == 0:  # (nothing to search, or no boundaries: every index is 0)
        return _write_out("searchsorted", out, zeros(tuple(input.shape), dtype=odt, device=input.device))
    res = _make(table.searchsorted(s, v, bool(right), odt.np), odt, table)
    return _write_out("searchsorted", out, res)


def bucketize(input, boundaries: Tensor, *, out_int32: bool = False, right: bool = False, out=None) -> Tensor:
    """The bucket of each value of ``input`` given 1-D sorted ``boundaries``."""
    _check("bucketize", boundaries)
    if boundaries.ndim != 1:
        raise RuntimeError(f"bucketize(): boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)


METHODS.update({"sort": sort, "argsort": argsort, "msort": msort, "topk": topk, "kthvalue": kthvalue,
                "median": median, "nanmedian": nanmedian, "mode": mode, "unique": unique,
                "unique_consecutive": unique_consecutive, "cummax": cummax, "cummin": cummin,
                "logcumsumexp": logcumsumexp})

# late, module level (the shape and pointwise modules import this family's siblings)
from .creation import arange, full, ones, ones_like, zeros, zeros_like  # noqa: E402
from .indexing import gather, index_select, narrow, nonzero, scatter_add, select  # noqa: E402
from .pointwise import add, div, eq, exp, gt, isnan, log, logical_and, logical_or, ne, neg as neg_, sub, where  # noqa: E402,E501
from .reduction import amax, amin, any as any_, argmax, cumsum, sum as sum_  # noqa: E402
from .shape import cat, contiguous, flip, movedim, reshape, unsqueeze  # noqa: E402
