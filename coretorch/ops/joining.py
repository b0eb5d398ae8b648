"""Shape ops by joining, splitting and rearranging: roll, rot90, tile, repeat_interleave, meshgrid,
hstack/vstack/dstack/column_stack, hsplit/vsplit/dsplit/tensor_split, atleast_nd, ravel, moveaxis, as_strided,
unfold, the in-place shape methods and the new_* constructors.

Strided views (as_strided, unfold, and diagonal in triangular.py) go through the backend's ``as_strided``
primitive; their backward scatters the gradient through the element positions the view reads (an ``arange``
viewed with the same strides), so it runs on the device and is itself differentiable."""
from __future__ import annotations

from operator import index as _index
import warnings

import numpy as np

from .. import dtypes as _dt
from ..autograd.grad_mode import no_grad, state as _gs
from ..autograd.graph import Node
from ..storage import root_window
from ..tensor import Tensor, _make
from . import creation as _cr, indexing as _ix, pointwise as _pw, reduction as _red
from . import _memfmt, shape as _sh
from ._util import data_read as _data_read, edge, norm_dim, shape_arg
from ._out import write_out
from ._own import own
from .inplace import check_inplace
from .scatter import _renamed

__all__: list[str] = ["roll", "rot90", "tile", "repeat_interleave", "meshgrid", "dstack", "column_stack",
                      "row_stack", "hsplit", "vsplit", "dsplit", "tensor_split", "moveaxis", "atleast_1d",
                      "atleast_2d", "atleast_3d", "ravel", "as_strided", "fliplr", "flipud"]

_i64 = _dt.int64


# ---------------------------------------------------------------------------------------------
# strided views: as_strided, unfold
# ---------------------------------------------------------------------------------------------
def strided_view(input: Tensor, shape: tuple, strides: tuple, offset: int, node=None) -> Tensor:
    """A view of input's memory: element ``strides``, first element ``offset`` elements after input's own."""
    data = input._be.as_strided(input._data, tuple(shape), tuple(strides), int(offset))
    return _sh._wrap_view(input, data, node)


def _c_strides(shape) -> tuple:
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(st))


def _positions(table, n: int, shape, strides, offset: int) -> Tensor:
    """int64 tensor of ``shape``: the positions in [0, n) that a (shape, strides, offset) view of n elements reads."""
    base = table.arange(0, max(n, 1), 1, np.int64)
    return _make(table.contiguous(table.as_strided(base, tuple(shape), tuple(strides), int(offset))), _i64, table)


def _scatter_positions(g: Tensor, n: int, pos: Tensor) -> Tensor:
    """zeros(n) with g added at pos (repeats summed): differentiable (index_add)."""
    z = _cr.zeros(n, dtype=g.dtype, device=g.device)
    return _ix.index_add(z, 0, pos.reshape(-1), g.reshape(-1))


def _extent(shape, strides) -> int:
    return 0 if 0 in shape else 1 + sum((s - 1) * t for s, t in zip(shape, strides))


def _storage(input: Tensor):
    """(storage offset of input, storage size) in elements; the storage starts at the base tensor's first element.
    A base whose layout cannot be addressed that way (negative strides, or a view left behind by the base's
    resize_) gives way to the tensor itself as the storage: views never reach outside memory they own."""
    root = input
    while root._vbase is not None:  # (a view of a detached view: its base's base, see shape._wrap_view)
        root = root._vbase
    rst, ist = root.stride(), input.stride()
    off, size = root_window(input, root, _extent(tuple(root.shape), rst))
    if root is not input and (min(rst, default=0) < 0 or min(ist, default=0) < 0 or off < 0
                              or off + _extent(tuple(input.shape), ist) > size):
        return 0, _extent(tuple(input.shape), ist)
    if min(rst, default=0) < 0:
        raise RuntimeError("as_strided: a tensor with negative strides has no addressable storage here; call "
                           ".contiguous() first")
    return off, size


class AsStridedBackward0(Node):
    def backward(self, g):
        table = g._be
        gs = _scatter_positions(g, self.n, _positions(table, self.n, self.size, self.stride, self.offset))
        pin = _positions(table, self.n, self.in_shape, self.in_stride, self.in_offset).reshape(-1)
        gi = _ix.index_select(gs, 0, pin)
        if any(t == 0 and s > 1 for s, t in zip(self.in_shape, self.in_stride)):
            # an input whose elements alias (expanded): each alias gets its share, so that the expand's backward
            # sums them back to the storage element's gradient (as PyTorch's as_strided_backward)
            cnt = _ix.index_add(_cr.zeros(self.n, dtype=g.dtype, device=g.device), 0, pin, _cr.ones_like(gi))
            gi = gi / _ix.index_select(cnt, 0, pin)
        return (gi.reshape(self.in_shape),)


def as_strided(input: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """A view of input's storage with the given sizes, element strides and storage offset."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(stride)} strides for {len(size)} sizes")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: "
                           f"{list(stride)}")
    if any(s < 0 for s in size):
        raise RuntimeError(f"as_strided: Trying to create tensor with negative dimension {min(size)}: {list(size)}")
    in_off, n = _storage(input)
    off = in_off if storage_offset is None else int(storage_offset)
    if off < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {off}")
    need = 0 if 0 in size else off + 1 + sum((s - 1) * t for s, t in zip(size, stride))
    if need > n:
        isz = input.dtype.itemsize
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {off}, and "
                           f"itemsize {isz} requiring a storage size of {need * isz} are out of bounds for storage "
                           f"of size {n * isz}")
    node = None
    if input._rg:
        node = AsStridedBackward0()
        node.n, node.size, node.stride, node.offset = n, size, stride, off
        node.in_shape, node.in_stride, node.in_offset = tuple(input.shape), input.stride(), in_off
    return strided_view(input, size, stride, off - in_off, node)


class UnfoldBackward0(Node):
    def backward(self, g):
        n = 1
        for s in self.in_shape:
            n *= s
        pos = _positions(g._be, n, self.shape, self.strides, 0)
        return (_scatter_positions(g, n, pos).reshape(self.in_shape),)


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """Tensor.unfold: a view with every ``size``-long window along ``dimension`` (windows ``step`` apart) in a new
    last dim."""
    nd = input.ndim
    d = norm_dim(dimension, nd, "unfold")
    shape = tuple(input.shape) or (1,)
    st = input.stride() or (1,)
    n = shape[d]
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    count = (n - size) // step + 1
    oshape = shape[:d] + (count,) + shape[d + 1:] + (size,)
    ost = st[:d] + (st[d] * step,) + st[d + 1:] + (st[d],)
    if nd == 0:
        oshape, ost = (size,), (1,)
    node = None
    if input._rg:
        node = UnfoldBackward0()
        cs = _c_strides(shape)
        node.in_shape = tuple(input.shape)
        node.shape = oshape
        node.strides = (1,) if nd == 0 else cs[:d] + (cs[d] * step,) + cs[d + 1:] + (cs[d],)
    return strided_view(input, oshape, ost, 0, node)


def storage_offset(input: Tensor) -> int:
    """The element offset of the tensor's first element in its storage."""
    return _storage(input)[0]


# ---------------------------------------------------------------------------------------------
# roll / rot90 / tile / repeat_interleave
# ---------------------------------------------------------------------------------------------
class RollBackward0(Node):
    def backward(self, g):
        return (roll(g, tuple(-s for s in self.shifts), self.dims),)


def _one(v) -> bool:
    """Whether ``v`` is one int (a Python or numpy int, a 0-d integer tensor), not a sequence of them."""
    return not hasattr(v, "__iter__") or getattr(v, "ndim", None) == 0


def roll(input: Tensor, shifts, dims=None) -> Tensor:
    """Elements shifted cyclically along ``dims`` (along the flattened tensor without dims)."""
    shifts = (_index(shifts),) if _one(shifts) else tuple(int(s) for s in shifts)  # (np.int64(1), a 0-d tensor)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        with no_grad():  # (a row-major tensor of its own, with one RollBackward0, as PyTorch's: not a view)
            flat = own(_sh.reshape(roll(_sh.reshape(input, (-1,)), shifts, 0), tuple(input.shape)))
        if input._rg and _gs.enabled:
            node = RollBackward0()
            node.shifts, node.dims = shifts, None
            node.next_functions = (edge(input),)
            return _make(flat._data, input.dtype, input._be, node)
        return flat
    dims = (dims,) if _one(dims) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    if input.ndim == 0:
        raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
    nd = [norm_dim(d, input.ndim, "roll") for d in dims]
    with no_grad():
        x = input
        for s, d in zip(shifts, nd):
            n = x.shape[d] if x.ndim else 1
            s = s % n if n else 0
            if s and x.ndim:
                x = _sh.cat([_ix.narrow(x, d, n - s, s), _ix.narrow(x, d, 0, n - s)], d)
        # PyTorch's result is laid out as the input's suggested memory format: channels-last or row-major
        r = input.ndim if input.ndim in (4, 5) and _memfmt.is_channels_last(input.shape, input.stride(),
                                                                             input.ndim) else 0
        if x is input:
            from .. import _compat  # (on use: _compat imports the ops)
            x = _sh.clone(input, memory_format=None if r else _compat.contiguous_format)
        elif r and not _memfmt.is_channels_last(x.shape, x.stride(), r):
            x = _make(_memfmt.relaid(x._be, x._data, r), x.dtype, x._be)
        elif not r and not x.is_contiguous():
            x = _sh.contiguous(x)
    if input._rg and _gs.enabled:
        node = RollBackward0()
        node.shifts, node.dims = shifts, tuple(nd)
        node.next_functions = (edge(input),)
        return _make(x._data, input.dtype, input._be, node)
    return x


def rot90(input: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:
    """Rotation by 90 degrees ``k`` times in the plane of ``dims`` (from the first towards the second)."""
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = norm_dim(dims[0], input.ndim, "rot90"), norm_dim(dims[1], input.ndim, "rot90")
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 = {dims[1]}")
    k %= 4
    # PyTorch's: a flip (the input's layout) transposed in place, a tensor of its own (it was a view of the flip);
    # k = 0 a row-major clone
    if k == 1:
        r = own(_sh.transpose(_sh.flip(input, (d1,)), d0, d1))
    elif k == 2:
        r = _sh.flip(input, (d0, d1))
    elif k == 3:
        r = own(_sh.transpose(_sh.flip(input, (d0,)), d0, d1))
    else:
        from .. import _compat  # (on use: _compat imports the ops)
        r = _sh.clone(input, memory_format=_compat.contiguous_format)
    return _renamed(r, _ROT90)


_ROT90: dict = {"name": "Rot90Backward0"}


def tile(input: Tensor, dims) -> Tensor:
    """input repeated ``dims`` times per dim (dims padded with leading 1s to input's rank)."""
    dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    if len(dims) < input.ndim:
        dims = (1,) * (input.ndim - len(dims)) + dims
    return _sh.repeat(input, dims)


def _tile_method(self, *dims, **kw):
    if kw:
        dims = _sh._keyword_arg("tile", "dims", dims, kw)
    return tile(self, dims[0] if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims)


def repeat_interleave(input: Tensor, repeats=None, dim: int | None = None, *,
                      output_size: int | None = None) -> Tensor:
    """Each element (each slice along ``dim``) repeated ``repeats`` times, in place of numpy's np.repeat; with
    one tensor argument, the indices repeated by its values."""
    if repeats is None:  # torch.repeat_interleave(repeats)
        repeats = input
        if repeats.ndim > 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        input = _cr.arange(repeats.numel(), device=repeats.device)
    if dim is None:
        input = _sh.reshape(input, (-1,))
        d = 0
    else:
        d = norm_dim(dim, input.ndim, "repeat_interleave")
        if input.ndim == 0:  # PyTorch's: its kernels index dim (tensor repeats) or dim + 1 (an int) of the 0-d input
            raise IndexError("Dimension specified as 0 but tensor has no dimensions" if isinstance(repeats, Tensor)
                             else "Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    if input.ndim == 0:
        input = _sh.reshape(input, (1,))
    n = input.shape[d]
    one_int = not isinstance(repeats, Tensor)
    if isinstance(repeats, Tensor) and repeats.numel() == 1 and repeats.ndim <= 1 and \
            repeats.dtype in (_i64, _dt.int32):
        _data_read("repeat_interleave() of a tensor gives a shape that depends on the data")
        repeats = int(repeats.item())  # one repeat count for every element
    if not isinstance(repeats, (int, Tensor)) and hasattr(repeats, "__index__"):  # (np.int64(2))
        repeats = repeats.__index__()
    if isinstance(repeats, int):
        if repeats < 0:
            raise RuntimeError("repeats can not be negative")
        if output_size is not None and output_size != n * repeats:  # (it was ignored)
            raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {n * repeats} but got "
                               f"{output_size}" if one_int else "allocated size does not match required size")
        shp = tuple(input.shape)
        x = _sh.unsqueeze(input, d + 1)
        x = _sh.expand(x, shp[:d + 1] + (repeats,) + shp[d + 1:])
        r = _sh.reshape(x, shp[:d] + (n * repeats,) + shp[d + 1:])
        if r._base is not None:  # a view of the input (one repeat, or repeats of size-1 dims): PyTorch's is new
            from .. import _compat  # (on use: _compat imports the ops)
            r = _sh.clone(r, memory_format=_compat.contiguous_format)
        return r
    if not isinstance(repeats, Tensor):
        raise TypeError(f"repeat_interleave(): argument 'repeats' must be Tensor or int, not "
                        f"{type(repeats).__name__}")
    if repeats.dtype not in (_i64, _dt.int32):  # (PyTorch's dispatch: a kernel for Long and Int only)
        raise NotImplementedError(f"\"repeat_interleave_cpu\" not implemented for '{repeats.dtype._tname[:-6]}'")
    if repeats.ndim != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if repeats.shape[0] != n:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                           f"{repeats.shape[0]} and input.size({d}) = {n}")
    if repeats._be is not input._be:
        repeats = repeats.to(input.device)
    reps = repeats.to(_i64)
    if output_size is None:
        _data_read("repeat_interleave() of a tensor gives a shape that depends on the data")
        if n and int(_red.amin(reps).item()) < 0:
            raise RuntimeError("repeats can not be negative")
        total = int(_red.sum(reps).item()) if n else 0  # the output's size depends on the data
    else:
        total = int(output_size)
    # segment ids without a host loop: a 1 at each segment start (repeats counted), then a running sum
    cs = _red.cumsum(reps, 0)
    if output_size is not None:
        _check_output_size(reps, cs, n, total)
    starts = _ix.narrow(cs, 0, 0, max(n - 1, 0))
    z = _cr.zeros(total + 1, dtype=_i64, device=input.device)
    if n > 1:
        z = _ix.index_add(z, 0, starts, _cr.ones_like(starts))
    idx = _ix.narrow(_red.cumsum(z, 0), 0, 0, total)
    return _ix.index_select(input, d, idx)


def _check_output_size(reps: Tensor, cs: Tensor, n: int, total: int) -> None:
    """PyTorch's check of repeat_interleave's ``output_size`` against the repeats' sum (a wrong one gave a result of
    that size, rows repeated wrongly): in host memory at once, on a device by its queued check (no host read)."""
    msg = "allocated size does not match required size"
    be = reps._be
    if not n:
        if total:
            raise RuntimeError(msg)
        return
    diff = _pw.sub(_ix.narrow(cs, 0, n - 1, 1), total)
    if be.host_memory:
        if int(_red.amin(reps).item()) < 0:
            raise RuntimeError("repeats can not be negative")
        if int(diff.item()):
            raise RuntimeError(msg)
    else:  # (a negative repeat with a matching output_size gave rows silently on opencl; queued first, reported so)
        if be.has("check_values"):
            be.check_values(_pw.ge(reps, 0)._data, "nonzero", "repeats can not be negative")
        if be.has("check_index"):  # [0, 1): the difference is 0
            be.check_index(diff._data, 1, False, msg, RuntimeError)


# ---------------------------------------------------------------------------------------------
# meshgrid / stacking / splitting
# ---------------------------------------------------------------------------------------------
def _seq(tensors) -> list:
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return list(tensors[0])
    return list(tensors)


def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """Coordinate grids of 1-D tensors ('ij': matrix indexing, 'xy': the first two dims swapped)."""
    ts = _seq(tensors)
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    if not ts:
        raise RuntimeError("torch.meshgrid: Expected at least one tensor in the tensor list")
    for t in ts:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.ndim}D")
        if t.dtype is not ts[0].dtype:
            raise RuntimeError("torch.meshgrid: Expected all tensors in the tensor list to have the same dtype")
        if t.device != ts[0].device:
            raise RuntimeError("torch.meshgrid: Expected all tensors in the tensor list to have the same device")
    pos = list(range(len(ts)))
    if indexing == "xy" and len(ts) >= 2:
        pos[0], pos[1] = 1, 0
    shape = [0] * len(ts)
    for i, t in enumerate(ts):
        shape[pos[i]] = t.numel()
    out = []
    for i, t in enumerate(ts):
        vs = [1] * len(ts)
        vs[pos[i]] = -1
        out.append(_sh.expand(_sh.reshape(t, tuple(vs)), tuple(shape)))
    return tuple(out)


def atleast_1d(*tensors) -> Tensor | tuple:
    """Each tensor with at least 1 dim (a 0-d one as shape (1,))."""
    ts = _seq(tensors)
    out = [_sh.reshape(t, (1,)) if t.ndim == 0 else t for t in ts]
    return out[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else tuple(out)


def atleast_2d(*tensors) -> Tensor | tuple:
    """Each tensor with at least 2 dims (0-d: (1, 1); 1-D (n,): (1, n))."""
    ts = _seq(tensors)
    out = [_sh.reshape(t, (1, 1)) if t.ndim == 0 else _sh.unsqueeze(t, 0) if t.ndim == 1 else t for t in ts]
    return out[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else tuple(out)


def _3d(t: Tensor) -> Tensor:
    if t.ndim == 0:
        return _sh.reshape(t, (1, 1, 1))
    if t.ndim == 1:
        return _sh.reshape(t, (1, t.shape[0], 1))
    if t.ndim == 2:
        return _sh.unsqueeze(t, -1)
    return t


def atleast_3d(*tensors) -> Tensor | tuple:
    """Each tensor with at least 3 dims (0-d: (1, 1, 1); (n,): (1, n, 1); (m, n): (m, n, 1))."""
    ts = _seq(tensors)
    out = [_3d(t) for t in ts]
    return out[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else tuple(out)


def _nonempty(op: str, tensors) -> list:
    ts = list(tensors)
    if not ts:
        raise RuntimeError(f"{op} expects a non-empty TensorList")
    return ts


def dstack(tensors, *, out: Tensor | None = None) -> Tensor:
    """Tensors stacked along the third dim (each made at least 3-D)."""
    ts = _nonempty("dstack", tensors)
    return write_out("dstack", out, _sh.cat([_3d(t) for t in ts], 2), inputs=ts)  # (castable, as cat)


def column_stack(tensors, *, out: Tensor | None = None) -> Tensor:
    """Tensors as columns side by side (0-d and 1-D ones as (n, 1) columns)."""
    ts = [_sh.reshape(t, (-1, 1)) if t.ndim <= 1 else t for t in _nonempty("column_stack", tensors)]
    return write_out("column_stack", out, _sh.cat(ts, 1), inputs=ts)


def row_stack(tensors, *, out: Tensor | None = None) -> Tensor:
    """vstack: tensors stacked as rows (each made at least 2-D)."""
    ts = _nonempty("row_stack", tensors)
    return write_out("row_stack", out, _sh.cat([atleast_2d(t) for t in ts], 0), inputs=ts)


def tensor_split(input: Tensor, indices_or_sections=None, dim: int = 0, *, sections=None, indices=None,
                 tensor_indices_or_sections=None) -> tuple:
    """Views splitting ``dim`` into n near-equal parts (an int) or at the given indices (a sequence); PyTorch's
    overloads' keywords ``sections=``, ``indices=``, ``tensor_indices_or_sections=`` name the same argument."""
    given = [v for v in (indices_or_sections, sections, indices, tensor_indices_or_sections) if v is not None]
    if len(given) != 1:
        raise TypeError("tensor_split() received an invalid combination of arguments: pass one of "
                        "indices_or_sections, sections, indices, tensor_indices_or_sections")
    indices_or_sections = given[0]
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = norm_dim(dim, input.ndim, "tensor_split")
    ios = indices_or_sections
    if isinstance(ios, Tensor):
        if ios.device.type != "cpu":
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be on cpu, but it's on "
                               f"{ios.device}")
        if ios.dtype is not _i64:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                               f"{ios.dtype._tname[:-6]}")
        if ios.ndim > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {ios.ndim} dims")
        ios = int(ios.item()) if ios.ndim == 0 else [int(v) for v in ios.tolist()]
    size = input.shape[d]
    if isinstance(ios, int):
        if ios <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {ios}")
        base, extra = divmod(size, ios)
        bounds, start = [], 0
        for i in range(ios):
            n = base + (1 if i < extra else 0)
            bounds.append((start, n))
            start += n
    else:
        pts = [int(v) for v in ios]
        bounds = []
        for a, b in zip([0] + pts, pts + [None]):  # slice bounds, negative ones from the end (as PyTorch's slice)
            s, e, _ = slice(a, b).indices(size)
            bounds.append((s, max(0, e - s)))
    return tuple(_ix.narrow(input, d, s, n) for s, n in bounds)


def _dir_split(op: str, input: Tensor, ios, dim: int, need: int, sections=None, indices=None):
    # PyTorch's two overloads take the keywords ``sections=`` (an int) and ``indices=`` (a list)
    given = [v for v in (ios, sections, indices) if v is not None]
    if len(given) != 1:
        raise TypeError(f"{op}() received an invalid combination of arguments: expected (Tensor input, int sections) "
                        f"or (Tensor input, tuple of ints indices)")
    ios = given[0]
    if input.ndim < need:
        raise RuntimeError(f"torch.{op} requires a tensor with at least {need} dimension"
                           f"{'s' if need > 1 else ''}, but got a tensor with {input.ndim} dimensions!")
    if isinstance(ios, int):
        size = input.shape[dim]
        if ios == 0 or size % ios:
            raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but the size of the dimension "
                               f"{size} is not divisible by the split_size {ios}!")
    return tensor_split(input, ios, dim)


def hsplit(input: Tensor, indices_or_sections=None, *, sections=None, indices=None) -> tuple:
    """tensor_split along dim 1 (dim 0 for a 1-D tensor); an int must divide the size."""
    return _dir_split("hsplit", input, indices_or_sections, 0 if input.ndim == 1 else 1, 1, sections, indices)


def vsplit(input: Tensor, indices_or_sections=None, *, sections=None, indices=None) -> tuple:
    """tensor_split along dim 0 of a tensor of at least 2 dims; an int must divide the size."""
    return _dir_split("vsplit", input, indices_or_sections, 0, 2, sections, indices)


def dsplit(input: Tensor, indices_or_sections=None, *, sections=None, indices=None) -> tuple:
    """tensor_split along dim 2 of a tensor of at least 3 dims; an int must divide the size."""
    return _dir_split("dsplit", input, indices_or_sections, 2, 3, sections, indices)


def fliplr(input: Tensor) -> Tensor:
    """The columns (dim 1) in reverse order."""
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return _sh.flip(input, (1,))


def flipud(input: Tensor) -> Tensor:
    """The rows (dim 0) in reverse order."""
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return _sh.flip(input, (0,))


def moveaxis(input: Tensor, source, destination) -> Tensor:
    """Alias of movedim."""
    return _sh.movedim(input, source, destination)


def ravel(input: Tensor) -> Tensor:
    """The flattened tensor (a view when the layout allows)."""
    return _sh.reshape(input, (-1,))


# ---------------------------------------------------------------------------------------------
# in-place shape methods, resize_, apply_/map_, new_*
# ---------------------------------------------------------------------------------------------
def _meta_inplace(name: str, fn):
    """x.op_() for a shape op: x takes the view's layout (same storage) and, when recorded, its grad_fn."""
    def m(self, *args, **kwargs):
        recording = check_inplace(self, None, name)
        r = fn(self, *args, **kwargs)
        self._data = r._data
        self._vc[0] += 1  # an in-place op (Tensor(a!) in PyTorch's schema): the version counter moves
        if recording:
            gf = r.grad_fn
            if gf is not None:  # (PyTorch's names of the in-place nodes: TBackward1, SqueezeBackward3...)
                gf.__class__ = _inplace_node_class(type(gf))
            self.grad_fn, self._out_nr = gf, r._out_nr
        return self
    m.__name__ = name
    return m


_INPLACE_NODES: dict = {}


def _inplace_node_class(cls: type) -> type:
    """The class named as PyTorch names the in-place form of a shape op's node: the overload number moved past the
    out-of-place ones (squeeze: +3, the others +1)."""
    out = _INPLACE_NODES.get(cls)
    if out is None:
        name = cls.__name__
        stem = name.rstrip("0123456789")
        if stem.endswith("Backward") and stem != name:
            n = int(name[len(stem):]) + (3 if stem == "SqueezeBackward" else 1)
            out = type(f"{stem}{n}", (cls,), {"__slots__": ()})
        else:
            out = cls
        _INPLACE_NODES[cls] = out
    return out


def resize_(self: Tensor, *sizes, memory_format=None) -> Tensor:
    """Give the tensor a new shape, C-contiguous (or ``memory_format``'s layout) over its storage from its offset:
    its elements are then read in storage order, ignoring its old strides (the same shape without a
    ``memory_format`` leaves it as it is); elements past the end of the storage are new, uninitialised."""
    shape = shape_arg(sizes, "resize_")
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: {list(shape)}")
    if self._rg:  # (in no_grad mode too, as PyTorch's: resizing would leave its .grad a different shape)
        raise RuntimeError("cannot resize variables that require grad")
    if memory_format is _memfmt._preserve():
        raise RuntimeError("Unsupported memory format preserve")
    r = _memfmt.check(memory_format, len(shape)) if memory_format is not None else 0
    table = self._be
    n = 1
    for s in shape:
        n *= s
    if tuple(shape) == tuple(self.shape) and memory_format is None:
        return self
    strides = _memfmt.canonical_strides(tuple(shape), r) if r else _c_strides(shape)
    x = self._data
    off, size = _storage(self)
    if n <= size - off:  # PyTorch's storage is large enough: the same memory, restrided (a view stays one)
        self._data = table.as_strided(x, tuple(shape), strides, 0)
    else:  # (a new buffer: PyTorch enlarges the storage in place, which a backend array cannot do)
        new = table.empty((n,), self.dtype.np)
        keep = max(min(n, size - off), 0)
        if keep and self.numel():
            table.assign_(table.basic_index(new, (slice(0, keep),)), table.as_strided(x, (keep,), (1,), 0))
        self._data = table.as_strided(new, tuple(shape), strides, 0)
    self._vc[0] += 1
    return self


def _host_only(self: Tensor, op: str) -> None:
    if self._be.type != "cpu":
        raise TypeError(f"{op} is only implemented on CPU tensors")
    if self._rg:
        raise RuntimeError(f"Can't call {op}() on Variable that requires grad. Use var.detach().{op}() instead.")


def apply_(self: Tensor, callable) -> Tensor:
    """Apply a Python function to each element in place (CPU only, element by element, as in PyTorch)."""
    _host_only(self, "apply_")
    a = self._be.to_numpy(self._data)
    vals = np.array([callable(v) for v in a.reshape(-1).tolist()], dtype=a.dtype).reshape(a.shape)
    self._be.assign_(self._data, vals)
    self._vc[0] += 1
    return self


def map_(self: Tensor, tensor: Tensor, callable) -> Tensor:
    """self[i] = callable(self[i], tensor[i]) in place, tensor broadcast to self (CPU only, as in PyTorch)."""
    _host_only(self, "map_")
    if tensor._be.type != "cpu":
        raise TypeError("map_ is only implemented on CPU tensors")
    a = self._be.to_numpy(self._data)
    b = np.broadcast_to(tensor._be.to_numpy(tensor._data), a.shape)
    vals = np.array([callable(x, y) for x, y in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist())],
                    dtype=a.dtype).reshape(a.shape)
    self._be.assign_(self._data, vals)
    self._vc[0] += 1
    return self


def _new(fn):
    def m(self, *args, size=None, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
        if size is not None:  # new_zeros(size=(2, 3))
            args = (size,)
        return fn(*args, dtype=_dt.from_python_type(dtype) or self.dtype, device=device or self.device,
                  requires_grad=requires_grad)
    m.__doc__ = f"A tensor like {fn.__name__}(size) with self's dtype and device unless given."
    return m


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
             pin_memory=False) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value``, with self's dtype and device unless given."""
    dtype = _dt.from_python_type(dtype)
    return _cr.full(tuple(size) if not isinstance(size, int) else (size,), fill_value, dtype=dtype or self.dtype,
                    device=device or self.device, requires_grad=requires_grad)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, layout=None,
               pin_memory=False) -> Tensor:
    """A tensor of ``data`` (copied), with self's dtype and device unless given."""
    dtype = _dt.from_python_type(dtype)
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than tensor.new_tensor("
                      "sourceTensor).", UserWarning, stacklevel=2)
        r = data.detach().to(device=device or self.device, dtype=dtype or self.dtype, copy=True)
        return r.requires_grad_(requires_grad) if requires_grad else r
    return _cr.tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def _view_as(self, other):
    """``self.view(other.shape)``."""
    return _sh.view(self, tuple(other.shape))


def _type_as(self, other):
    """``self`` cast to ``other``'s dtype."""
    return self.to(other.dtype)


def _squeeze(self, dim=None):
    return _sh.squeeze(self, dim)


METHODS: dict = {  # Tensor.<name> -> function(self, ...), bound by coretorch._tensor_methods
    "roll": roll, "rot90": rot90, "tile": _tile_method, "repeat_interleave": repeat_interleave,
    "hsplit": hsplit, "vsplit": vsplit, "dsplit": dsplit, "tensor_split": tensor_split, "moveaxis": moveaxis,
    "ravel": ravel, "fliplr": fliplr, "flipud": flipud, "as_strided": as_strided, "unfold": unfold,
    "storage_offset": storage_offset,
    "squeeze_": _meta_inplace("squeeze_", _squeeze), "unsqueeze_": _meta_inplace("unsqueeze_", _sh.unsqueeze),
    "t_": _meta_inplace("t_", _sh.t), "transpose_": _meta_inplace("transpose_", _sh.transpose),
    # (swapaxes/swapdims, not transpose: PyTorch's keywords are axis0/axis1 and dim0/dim1)
    "swapaxes_": _meta_inplace("swapaxes_", _sh.swapaxes), "swapdims_": _meta_inplace("swapdims_", _sh.swapdims),
    "as_strided_": _meta_inplace("as_strided_", as_strided), "resize_": resize_, "apply_": apply_, "map_": map_,
    "new_zeros": _new(_cr.zeros), "new_ones": _new(_cr.ones), "new_empty": _new(_cr.empty), "new_full": new_full,
    "new_tensor": new_tensor, "view_as": _view_as, "type_as": _type_as,
}
