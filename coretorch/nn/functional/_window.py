"""Window gathers shared by the pooling families whose windows are not one fused kernel: adaptive max pooling and
integer max_pool3d (argmax over gathered taps, then one gather whose backward is a scatter), the depth stage of
float max_pool3d, and windowed sums (avg_pool3d).

A window table describes one spatial dim: ``pos[o, t]`` is the input position of tap ``t`` of output ``o`` and
``valid[o, t]`` says whether it lies inside the input (padding taps do not).  Tables are small host arrays; the
work runs as a few tensor ops on the input's device (index_select per dim, argmax over the taps)."""
from __future__ import annotations

import math

import numpy as np

from ...autograd._zero import links_inputs
from ...autograd.grad_mode import state as _gs
from ...autograd.graph import Node
from ...ops import creation as _C
from ...ops import indexing as _I
from ...ops._util import edge
from ...ops.indexing import IndexSelectBackward0
from ...ops import pointwise as _P
from ...ops import reduction as _R
from ...ops import shape as _S
from ...tensor import Tensor, _make
from ._common import _i64, _needs_graph, _no_grad, _record


def pool_table(n_out: int, n_in: int, k: int, s: int, p: int, d: int) -> tuple:
    """Taps of a strided, padded, dilated window: output o reads o*s - p + t*d."""
    pos = np.arange(n_out)[:, None] * s - p + np.arange(k)[None, :] * d
    return pos, (pos >= 0) & (pos < n_in)


def adaptive_table(n_out: int, n_in: int) -> tuple:
    """PyTorch's adaptive windows [floor(o*in/out), ceil((o+1)*in/out)); shorter windows repeat their last tap
    (a repeat never changes the max nor which element is first to reach it)."""
    o = np.arange(n_out)
    start, end = (o * n_in) // n_out, -(-((o + 1) * n_in) // n_out)
    k = int((end - start).max()) if n_out else 1
    pos = np.minimum(start[:, None] + np.arange(k)[None, :], end[:, None] - 1)
    return pos, np.ones(pos.shape, dtype=bool)


def _joint(arrays: list, combine) -> np.ndarray:
    """Per-dim (out_i, k_i) arrays combined into one (out_0, ..., out_m, k_0 * ... * k_m) array."""
    m = len(arrays)
    acc = None
    for i, a in enumerate(arrays):
        b = a.reshape([a.shape[0] if j == i else 1 for j in range(m)] + [a.shape[1] if j == i else 1 for j in range(m)])
        acc = b if acc is None else combine(acc, b)
    assert acc is not None  # one array per spatial dim, at least one
    outs = tuple(a.shape[0] for a in arrays)
    return np.broadcast_to(acc, outs + tuple(a.shape[1] for a in arrays)).reshape(outs + (-1,))


_CACHE: dict = {}  # (kind, key, device) -> device tensor: the tables of recent window shapes stay on the device


def cached(key: tuple, device, make) -> Tensor:
    k = key + (str(device),)
    t = _CACHE.get(k)
    if t is None:
        if len(_CACHE) > 256:
            _CACHE.clear()
        t = _CACHE[k] = make()
    return t


def _tables_key(tables: list) -> tuple:
    return tuple((pos.shape, pos.tobytes(), valid.tobytes()) for pos, valid in tables)


def isel(x: Tensor, d: int, idx: Tensor) -> Tensor:
    """index_select with indices known to be in range (no device-side check), recording the usual node."""
    table = x._be
    out = table.index_select(x._data, d, idx._data)
    if x._rg and _gs.enabled:
        node = IndexSelectBackward0()
        node.shape, node.dim = x._data.shape, d
        node.save(idx)
        node.next_functions = (edge(x),)
        return _make(out, x.dtype, table, node)
    return _make(out, x.dtype, table)


def take(x: Tensor, d: int, idx: Tensor) -> Tensor:
    """gather (no graph) with indices known to be in range."""
    return _make(x._be.gather(x._data, d % x.ndim, idx._data), x.dtype, x._be)


def window_argmax(x: Tensor, tables: list) -> Tensor:
    """Flat indices (into the spatial dims) of each window's max, as PyTorch picks them: the first maximum in
    scan order, the last NaN when the window holds NaN.  ``x`` is (N, C, *spatial); no graph is recorded."""
    n, c = x.shape[:2]
    sp = tuple(x.shape[2:])
    outs = tuple(pos.shape[0] for pos, _ in tables)
    m = len(tables)
    dev = x.device
    with _no_grad():
        if x.numel() == 0 or math.prod(outs) == 0:
            return _C.zeros((n, c) + outs, dtype=_i64, device=dev)
        key = _tables_key(tables) + (sp,)
        t = x
        for i, (pos, _) in enumerate(tables):
            idx = cached(("sel", i) + key, dev, lambda: _C.tensor(np.clip(tables[i][0], 0, sp[i] - 1).reshape(-1),
                                                                   dtype=_i64, device=dev))
            t = isel(t, 2 + i, idx)
        t = t.reshape((n, c) + tuple(v for pos, _ in tables for v in pos.shape))
        t = _S.permute(t, (0, 1) + tuple(2 + 2 * i for i in range(m)) + tuple(3 + 2 * i for i in range(m)))
        t = t.reshape((n, c) + outs + (-1,))
        valid = _joint([v for _, v in tables], np.logical_and)
        kk = valid.shape[-1]
        padded = not valid.all()
        if padded:
            vt = cached(("valid",) + key, dev, lambda: _C.tensor(valid, device=dev))
            low = float("-inf") if x.dtype.is_floating_point else int(np.iinfo(x.dtype.np).min)
            t = _P.where(vt, t, low)
        kidx = _R.argmax(t, -1)
        # PyTorch's loop keeps the last NaN it meets (one check first: NaN is rare)
        if x.dtype.is_floating_point and bool(_R.any(x.isnan()).item()):
            nan = t.isnan()
            last_nan = _P.sub(kk - 1, _R.argmax(_S.flip(nan, (-1,)).to(_i64), -1))
            kidx = _P.where(_R.any(nan, -1), last_nan, kidx)
        kidx = _S.unsqueeze(kidx, -1)
        if padded:  # a window whose valid taps all hold the lowest value: its first valid tap
            first = cached(("first",) + key, dev, lambda: _C.tensor(np.argmax(valid, -1)[..., None], dtype=_i64,
                                                                     device=dev))
            ok = take(_S.contiguous(_S.expand(vt, (n, c) + outs + (kk,))), -1, kidx)
            kidx = _P.where(ok, kidx, first)
        strides = [math.prod(sp[i + 1:]) for i in range(m)]
        flat = cached(("flat",) + key, dev, lambda: _C.tensor(np.ascontiguousarray(
            _joint([pos * st for (pos, _), st in zip(tables, strides)], np.add)), dtype=_i64, device=dev))
        ft = _S.contiguous(_S.expand(flat, (n, c) + outs + (kk,)))
        return take(ft, -1, kidx).squeeze(-1)


@links_inputs
class _MaxByIndex(Node):
    """out = x.flatten(2).gather(2, idx): the gradient scatters back to the winning positions (the indices saved
    as PyTorch saves them: returned to the caller, an in-place change before the backward raises)."""
    __slots__ = ("shape",)

    def backward(self, g):
        n, c = self.shape[:2]
        idx = self.saved()[0]  # (x is saved for its version only)
        z = _C.zeros(n, c, math.prod(self.shape[2:]), dtype=g.dtype, device=g.device)
        k = math.prod(idx.shape[2:])
        flat = _I._scatter_add(z, 2, idx.reshape(n, c, k), g.reshape(n, c, k), False)  # (half: summed in its dtype)
        return (flat.reshape(self.shape),)


class MaxPool3DWithIndicesBackward0(_MaxByIndex):
    __slots__ = ()


class AdaptiveMaxPool2DBackward0(_MaxByIndex):
    __slots__ = ()


class AdaptiveMaxPool3DBackward0(_MaxByIndex):
    __slots__ = ()


def take_max(node_cls, x: Tensor, idx: Tensor, values: Tensor | None = None) -> Tensor:
    """The values at ``idx`` (N, C, *out) of x's flattened spatial dims (or the given ``values``, already read),
    recorded as ``node_cls``."""
    n, c = x.shape[:2]
    table = x._be
    if values is not None:
        out = values._data
    elif idx.numel() == 0:
        out = table.full(tuple(idx.shape), 0, x.dtype.np)
    else:
        with _no_grad():
            xf = _S.contiguous(x).reshape(n, c, math.prod(x.shape[2:]))
        k = math.prod(idx.shape[2:])
        out = table.view(table.gather(xf._data, 2, idx.reshape(n, c, k)._data), tuple(idx.shape))
    if _needs_graph(x):
        node = node_cls()
        node.shape = tuple(x.shape)
        node.save(idx, x)  # (x for its version, as PyTorch's max-pool nodes save self)
        return _record(node, out, x.dtype, table, x)
    return _make(out, x.dtype, table)


def window_sum(x: Tensor, tables: list) -> Tensor:
    """Sums over the windows of the last len(tables) dims (padding taps count zero); differentiable."""
    m = len(tables)
    dev = x.device
    for i, (pos, valid) in enumerate(tables):
        d = x.ndim - m + i
        n_in = x.shape[d]
        o, k = pos.shape
        shp = tuple(x.shape)
        if n_in == 0 or o * k == 0:
            x = _C.zeros(shp[:d] + (o,) + shp[d + 1:], dtype=x.dtype, device=dev)
            continue
        key = _tables_key([(pos, valid)]) + (n_in, len(shp) - d - 1)
        idx = cached(("sum_sel",) + key, dev, lambda: _C.tensor(np.clip(pos, 0, n_in - 1).reshape(-1), dtype=_i64,
                                                                 device=dev))
        t = isel(x, d, idx).reshape(shp[:d] + (o, k) + shp[d + 1:])
        if not valid.all():
            vt = cached(("sum_valid",) + key, dev, lambda: _C.tensor(valid.reshape((o, k) + (1,) * (len(shp) - d - 1)),
                                                                      device=dev))
            t = _P.where(vt, t, _C.tensor(0, dtype=x.dtype, device=dev))
        x = _R.sum(t, d + 1)
    return x
