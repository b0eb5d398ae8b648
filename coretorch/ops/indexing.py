"""Indexing: __getitem__/__setitem__ (basic and advanced), gather, scatter_add, index_select, narrow."""
from __future__ import annotations

from .. import dtypes as _dt
from ..autograd.grad_mode import state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make, _zeros_on
from ._util import edge, host_all_below, norm_dim, sum_to

_i64, _bool = _dt.int64, _dt.bool_
_INDEX_DTYPES = (_dt.int64, _dt.int32, _dt.int16, _dt.int8, _dt.uint8, _dt.bool_)


def _to_index_tensor(k, ref: Tensor, host: list | None = None) -> Tensor:
    """k as an index tensor on ref's device.  ``host``: a list that gets the index as it was in host memory (a
    list, a numpy array, a cpu tensor) before it moved to ref's device, so that its range is checked for free."""
    if isinstance(k, Tensor):
        t = k
    else:
        # lists / numpy arrays: made on the cpu first when ref's device is not host memory (checked there)
        t = _creation.tensor(k, device=ref.device if ref._be.host_memory else "cpu")
        if t.numel() == 0:
            t = t.to(_i64)
    if t._be is not ref._be:
        if t._be.type == "cpu":
            if host is not None:
                host.append(t)
            t = t.to(ref.device)
        else:
            raise RuntimeError(f"indices should be either on cpu or on the same device as the indexed tensor "
                               f"({ref.device})")
    if t.dtype not in _INDEX_DTYPES:
        raise IndexError(f"tensors used as indices must be long, int, byte or bool tensors (got {t.dtype})")
    return t


def normalize_key(x: Tensor, key):
    """-> (key with native arrays, advanced?).  Checks ranges and counts like PyTorch."""
    if not isinstance(key, tuple):
        key = (key,)
    shape = x._data.shape
    ndim = len(shape)
    items = []
    hosts = {}  # position in items -> the index tensor as it was in host memory, when it moved to x's device
    consumed = 0
    advanced = False
    for k in key:
        if k is None or k is Ellipsis:
            items.append(k)
        elif isinstance(k, bool):
            # numpy/PyTorch: x[True] adds a dim, x[False] adds an empty one (a 0-d mask)
            if k:
                items.append(None)
            else:
                items.append(_to_index_tensor(False, x))
                advanced = True
        elif isinstance(k, int) or (hasattr(k, "__index__") and not isinstance(k, (Tensor, list))
                                    and not hasattr(k, "shape")):
            items.append(int(k.__index__() if not isinstance(k, int) else k))
            consumed += 1
        elif isinstance(k, slice):
            if k.step is not None and int(k.step) <= 0:
                raise ValueError("step must be greater than zero")
            items.append(k)
            consumed += 1
        else:
            moved = None if x._be.host_memory else []
            t = _to_index_tensor(k, x, moved)
            if moved:
                hosts[len(items)] = moved[0]
            if t.dtype in (_bool, _dt.uint8) and t.dtype is not _i64:
                if t.dtype is _dt.uint8:
                    t = t.to(_bool)
                consumed += t.ndim
            else:
                consumed += 1
            items.append(t)
            advanced = True
    if consumed > ndim:
        if ndim == 0:
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` "
                             "in C++ to convert a 0-dim tensor to a number")
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    # positions: expand the ellipsis to see which dim each index refers to
    n_ell = sum(1 for k in items if k is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    out = []
    dim = 0
    for pos, k in enumerate(items):
        if k is Ellipsis:
            dim += ndim - consumed
            out.append(Ellipsis)
        elif k is None:
            out.append(None)
        elif isinstance(k, int):
            size = shape[dim]
            if k < -size or k >= size:
                raise IndexError(f"index {k} is out of bounds for dimension {dim} with size {size}")
            out.append(k)
            dim += 1
        elif isinstance(k, slice):
            out.append(k)
            dim += 1
        else:
            if k.dtype is _bool:
                for j in range(k.ndim):
                    if k.shape[j] != shape[dim + j]:
                        raise IndexError(f"The shape of the mask {list(k.shape)} at index {j} does not match the "
                                         f"shape of the indexed tensor {list(shape)} at index {dim + j}")
                dim += k.ndim
            else:
                size = shape[dim]
                if k.numel():
                    c = hosts.get(pos, k)
                    t = c._be
                    if not t.host_memory and t.has("check_index"):  # on the device: reported at the next host read
                        t.check_index(c._data, size, True, f"index {{}} is out of bounds for dimension {dim} with "
                                                           f"size {size}")
                    else:
                        hi = int(t.to_numpy(t.amax(c._data, None, False)))
                        lo = int(t.to_numpy(t.amin(c._data, None, False)))
                        bad = hi if hi >= size else lo if lo < -size else None
                        if bad is not None:
                            raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {size}")
                dim += 1
            out.append(k._data)
    return tuple(out), advanced


class IndexBackward0(Node):
    """Backward of x[key]: scatter the gradient into zeros of the input's shape."""
    __slots__ = ("shape", "key", "advanced")

    def backward(self, g):
        return (_embed(g, self.shape, self.key, self.advanced),)


# PyTorch's names for x[basic key]: the node of the last step it applies (same backward as IndexBackward0)
class SelectBackward0(IndexBackward0):
    __slots__ = ()


class SliceBackward0(IndexBackward0):
    __slots__ = ()


class UnsqueezeBackward0(IndexBackward0):
    __slots__ = ()


class AliasBackward0(IndexBackward0):
    __slots__ = ()


_FULL = slice(None)


def _basic_node_class(nkey):
    """x[1] -> SelectBackward0, x[:, 1:3] -> SliceBackward0, x[None] -> UnsqueezeBackward0, x[...] -> Alias, as
    PyTorch names the last of the steps it applies (a full ``:`` is no step)."""
    for k in reversed(nkey):
        if k is Ellipsis or k == _FULL:
            continue
        if k is None:
            return UnsqueezeBackward0
        return SliceBackward0 if isinstance(k, slice) else SelectBackward0
    return AliasBackward0


class EmbedBackward0(Node):
    __slots__ = ("key", "advanced")

    def backward(self, g):
        return (_index(g, self.key, self.advanced),)


def _index(x: Tensor, nkey, advanced: bool) -> Tensor:
    table = x._be
    if advanced:
        out = table.index(x._data, nkey)
        base = None
    else:
        out = table.basic_index(x._data, nkey)
        base = x._base if x._base is not None else x
    node = None
    if x._rg and _gs.enabled:
        node = IndexBackward0() if advanced else _basic_node_class(nkey)()
        node.shape, node.key, node.advanced = x._data.shape, nkey, advanced
        node.next_functions = (edge(x),)
    if base is not None:
        return _make(out, x.dtype, table, node, base=base, version=x._vc)
    return _make(out, x.dtype, table, node)


def _embed(g: Tensor, shape, nkey, advanced: bool) -> Tensor:
    """zeros(shape) with g added at key (differentiable: its backward is g[key])."""
    table = g._be
    z = table.full(tuple(shape), 0, g.dtype.np)
    if advanced:
        table.index_put_(z, nkey, g._data, True)
    else:
        table.setitem_(z, nkey, g._data)
    node = None
    if g._rg and _gs.enabled:
        node = EmbedBackward0()
        node.key, node.advanced = nkey, advanced
        node.next_functions = (edge(g),)
    return _make(z, g.dtype, table, node)


def getitem(x: Tensor, key) -> Tensor:
    nkey, advanced = normalize_key(x, key)
    return _index(x, nkey, advanced)


class IndexPutBackward0(Node):
    __slots__ = ("key", "advanced", "vshape", "need")

    def backward(self, g):
        nx, nv = self.need
        gx = gv = None
        if nx:
            gx = index_put(g, self.key, 0.0, self.advanced)
        if nv:
            gv = sum_to(_index(g, self.key, self.advanced), self.vshape)
        return gx, gv


def index_put(x: Tensor, nkey, value, advanced: bool) -> Tensor:
    """Out-of-place x[key] = value (differentiable in x and value)."""
    table = x._be
    out = table.contiguous(x._data)
    vt = isinstance(value, Tensor)
    if vt:
        if value._be is not table:
            value = value.to(x.device)
        vd = value._data if value.dtype is x.dtype else table.cast(value._data, x.dtype.np)
    else:
        vd = value
    table.setitem_(out, nkey, vd)
    if _gs.enabled and (x._rg or (vt and value._rg)):
        node = IndexPutBackward0()
        node.key, node.advanced = nkey, advanced
        node.vshape = value._data.shape if vt else None
        node.need = (x._rg, vt and value._rg)
        node.next_functions = (edge(x), edge(value)) if vt else (edge(x),)
        return _make(out, x.dtype, table, node)
    return _make(out, x.dtype, table)


def setitem(x: Tensor, key, value) -> None:
    nkey, advanced = normalize_key(x, key)
    vt = isinstance(value, Tensor)
    if vt and value._be is not x._be:
        if value.ndim == 0 and value._be.type == "cpu":
            value = value.to(x.device)
        else:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two "
                               f"devices, {x.device} and {value.device}! (in __setitem__)")
    if not vt and not isinstance(value, (int, float, bool)):
        value, vt = _creation.tensor(value, dtype=x.dtype, device=x.device), True
    if not vt and x.dtype is not _dt.float16 and x.dtype is not _dt.bfloat16:
        # (PyTorch stores a Python number into float16/bfloat16 unchecked: out of range it is inf, as a cast)
        value = _dt.fit_scalar(value, x.dtype)
    # PyTorch: basic indexing copies (casting any dtype); advanced indexing is index_put_, which needs equal
    # dtypes unless it dispatches to masked_fill_ (one bool mask and a one-element CPU value)
    if vt and advanced and value.dtype is not x.dtype and not (
            value.numel() == 1 and value._be.type == "cpu" and _single_mask(key)):
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{x.dtype._tname[:-6]} for the destination and {value.dtype._tname[:-6]} for the "
                           "source.")
    if vt and value.ndim and not advanced:
        _check_put_shape(x, nkey, advanced, tuple(value.shape))  # a view: cheap
    recording = check_inplace(x, value if vt else None, "__setitem__")
    try:
        if recording:
            r = index_put(x, nkey, value, advanced)
            rebase(x, r)
            return
        table = x._be
        vd = value if not vt else (value._data if value.dtype is x.dtype else table.cast(value._data, x.dtype.np))
        table.setitem_(x._data, nkey, vd)
    except ValueError:
        if vt and value.ndim:  # the backend's own error for a value that does not fit: raise PyTorch's
            _check_put_shape(x, nkey, advanced, tuple(value.shape))
        raise
    x._vc[0] += 1


def _single_mask(key) -> bool:
    ks = key if isinstance(key, tuple) else (key,)
    adv = [k for k in ks if isinstance(k, (Tensor, list)) or (hasattr(k, "shape") and len(k.shape) > 0)]
    return len(adv) == 1 and isinstance(adv[0], Tensor) and adv[0].dtype in (_bool, _dt.uint8)


def _check_put_shape(x: Tensor, nkey, advanced: bool, vshape: tuple) -> None:
    """PyTorch's errors for a value that does not broadcast to x[key] (instead of the backend's)."""
    table = x._be
    target = tuple((table.index if advanced else table.basic_index)(x._data, nkey).shape)
    v = vshape
    while len(v) > len(target) and v[0] == 1:  # leading 1s of the value are dropped (slicePrefix1sSize)
        v = v[1:]
    ok = len(v) <= len(target) and all(a == b or a == 1 for a, b in zip(reversed(v), reversed(target)))
    if ok:
        return
    if advanced:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(vshape)} cannot be broadcast to indexing "
                           f"result of shape {list(target)}")
    if len(v) > len(target):
        raise RuntimeError(f"expand({list(v)}, size={list(target)}): the number of sizes provided ({len(target)}) "
                           f"must be greater or equal to the number of dimensions in the tensor ({len(v)})")
    for i in range(1, len(v) + 1):
        if v[-i] != target[-i] and v[-i] != 1:
            raise RuntimeError(f"The expanded size of the tensor ({target[-i]}) must match the existing size "
                               f"({v[-i]}) at non-singleton dimension {len(target) - i}.  Target sizes: "
                               f"{list(target)}.  Tensor sizes: {list(v)}")


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    d = norm_dim(dim, input.ndim, "narrow")
    size = input.shape[d]
    if start < 0:
        start += size
    if start < 0 or length < 0 or start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    key = (slice(None),) * d + (slice(start, start + length),)
    return _index(input, key, False)


def select(input: Tensor, dim: int, index: int) -> Tensor:
    d = norm_dim(dim, input.ndim, "select")
    size = input.shape[d]
    if index < -size or index >= size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input.shape)} at "
                         f"dimension {d}")
    return _index(input, (slice(None),) * d + (index,), False)


def _same_device(op, input: Tensor, *others) -> None:
    for o in others:
        if isinstance(o, Tensor) and o._be is not input._be and o.device != input.device:
            from ._util import device_mismatch
            raise device_mismatch(op, input, o)


def _check_index(op, index, ndim=None):
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index.dtype is not _i64 and not (op in ("index_select", "index_add") and index.dtype is _dt.int32):
        raise RuntimeError(f"{op}(): Expected dtype int64 for index, got {index.dtype}")
    if ndim is not None and index.ndim != ndim and not (index.ndim == 0 and ndim == 0):
        raise RuntimeError(f"Index tensor must have the same number of dimensions as input tensor "
                           f"({op}: index has {index.ndim}, input has {ndim})")


def _check_range(op, index: Tensor, size: int):
    if index.numel():
        t = index._be
        if not t.host_memory and t.has("check_index"):  # on the device: reported at the next host read
            t.check_index(index._data, size, False, f"{op}(): index {{}} is out of bounds for dimension with size "
                                                    f"{size}")
            return
        if t.host_memory and host_all_below(t, index._data, size):  # the common case in one reduction
            return
        hi = int(t.to_numpy(t.amax(index._data, None, False)))
        lo = int(t.to_numpy(t.amin(index._data, None, False)))
        if hi >= size or lo < 0:  # gather/scatter/index_select take no negative indices (as PyTorch)
            raise IndexError(f"{op}(): index {hi if hi >= size else lo} is out of bounds for dimension with "
                             f"size {size}")


class GatherBackward0(Node):
    __slots__ = ("shape", "dim", "index")

    def backward(self, g):
        if not (g._rg and _gs.enabled) and g._be is self.index._be:  # plain: indices were checked in forward
            table = g._be
            zeros = table.full(self.shape, 0, g.dtype.np)
            return (_make(table.scatter_add(zeros, self.dim, self.index._data, g._data), g.dtype, table),)
        return (scatter_add(_zeros_on(self.shape, g.dtype, g._be), self.dim, self.index, g),)


def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    d = norm_dim(dim, input.ndim, "gather")
    _check_index("gather", index, input.ndim)
    _same_device("gather", input, index)
    for k in range(input.ndim):
        if k != d and index.shape[k] > input.shape[k]:
            raise RuntimeError(f"Size does not match at dimension {k} expected index {list(index.shape)} to be "
                               f"smaller than self {list(input.shape)} apart from dimension {d}")
    if input.ndim:
        _check_range("gather", index, input.shape[d])
    table = input._be
    out = table.gather(input._data, d, index._data)
    if input._rg and _gs.enabled:
        node = GatherBackward0()
        node.shape, node.dim, node.index = input._data.shape, d, index
        node.next_functions = (edge(input),)
        return _make(out, input.dtype, table, node)
    return _make(out, input.dtype, table)


class ScatterAddBackward0(Node):
    __slots__ = ("dim", "index", "need", "src_shape")

    def backward(self, g):
        gs = None
        if self.need[1]:
            gs = gather(g, self.dim, self.index)
            if tuple(gs.shape) != self.src_shape:  # src larger than index: the unused part gets zeros
                gs = _embed(gs, self.src_shape, tuple(slice(0, s) for s in gs.shape), False)
        return (g if self.need[0] else None, gs)


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    d = norm_dim(dim, input.ndim, "scatter_add")
    _check_index("scatter_add", index, input.ndim)
    _same_device("scatter_add", input, index, src)
    if src.dtype is not input.dtype:
        raise RuntimeError(f"scatter_add(): Expected self.dtype to be equal to src.dtype (got {input.dtype} and "
                           f"{src.dtype})")
    for k in range(input.ndim):
        if index.shape[k] > src.shape[k] or (k != d and index.shape[k] > input.shape[k]):
            raise RuntimeError(f"scatter_add(): index {list(index.shape)} is larger than src "
                               f"{list(src.shape)} or self {list(input.shape)} apart from dimension {d}")
    if input.ndim:
        _check_range("scatter_add", index, input.shape[d])
    table = input._be
    out = table.scatter_add(input._data, d, index._data, src._data)
    if _gs.enabled and (input._rg or src._rg):
        node = ScatterAddBackward0()
        node.dim, node.index, node.need = d, index, (input._rg, src._rg)
        node.src_shape = tuple(src.shape)
        node.next_functions = (edge(input), edge(src))
        return _make(out, input.dtype, table, node)
    return _make(out, input.dtype, table)


class IndexSelectBackward0(Node):
    __slots__ = ("shape", "dim", "index")

    def backward(self, g):  # the indices were checked in the forward
        return (_index_add(_zeros_on(self.shape, g.dtype, g._be), self.dim, self.index, g),)


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    d = norm_dim(dim, input.ndim, "index_select")
    _check_index("index_select", index)
    _same_device("index_select", input, index)
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if input.ndim:
        _check_range("index_select", index, input.shape[d])
    table = input._be
    out = table.index_select(input._data, d, index._data.reshape(-1) if index.ndim == 0 else index._data)
    if input._rg and _gs.enabled:
        node = IndexSelectBackward0()
        node.shape, node.dim, node.index = input._data.shape, d, index.reshape(-1)
        node.next_functions = (edge(input),)
        return _make(out, input.dtype, table, node)
    return _make(out, input.dtype, table)


class IndexAddBackward0(Node):
    __slots__ = ("dim", "index", "need")

    def backward(self, g):
        return (g if self.need[0] else None, index_select(g, self.dim, self.index) if self.need[1] else None)


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    return _index_add(input, dim, index, source, alpha, True)


def _index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, alpha=1, check: bool = False) -> Tensor:
    """index_add; ``check``: check the indices' range (the backward passes use indices checked already)."""
    d = norm_dim(dim, input.ndim, "index_add")
    _check_index("index_add", index)
    _same_device("index_add", input, index, source)
    if check:
        n_src = source.shape[d] if source.ndim else 1
        if index.ndim > 1:
            raise IndexError("index_add_(): Index is supposed to be a vector")
        if source.dtype is not input.dtype:
            raise RuntimeError(f"index_add_(): self ({input.dtype._tname[:-6]}) and source "
                               f"({source.dtype._tname[:-6]}) must have the same scalar type")
        if source.ndim == 0 and input.ndim == 1:
            source = source.reshape(1)  # a 0-d source adds one value (as PyTorch)
        if index.numel() != n_src or source.ndim != input.ndim or any(
                source.shape[k] != input.shape[k] for k in range(input.ndim) if k != d):
            raise RuntimeError(f"index_add_(): Number of indices ({index.numel()}) should be equal to "
                               f"source.size(dim) ({n_src}), and source {list(source.shape)} should match self "
                               f"{list(input.shape)} outside dim {d}")
        if input.ndim:
            _check_range("index_add", index, input.shape[d])
    if alpha != 1:
        source = source * alpha
    table = input._be
    out = table.index_add(input._data, d, index._data, source._data)
    if _gs.enabled and (input._rg or source._rg):
        node = IndexAddBackward0()
        node.dim, node.index, node.need = d, index, (input._rg, source._rg)
        node.next_functions = (edge(input), edge(source))
        return _make(out, input.dtype, table, node)
    return _make(out, input.dtype, table)


def nonzero(input: Tensor, *, as_tuple: bool = False):
    table = input._be
    out = _make(table.nonzero(input._data), _i64, table)
    if as_tuple:
        if input.ndim == 0:  # a 0-d input reads as one element: index 0 when it is nonzero
            from .creation import zeros
            return (zeros(out.shape[0], dtype=_i64, device=input.device),)
        return tuple(out[:, i] for i in range(input.ndim))
    return out


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    if mask.dtype is not _bool:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got {mask.dtype}")
    from .shape import broadcast_tensors
    x, m = broadcast_tensors(input, mask)
    return getitem(x, m)


# late, module level: an import inside a function costs ~10k instructions per call (x[idx], x[i] = v)
from . import creation as _creation  # noqa: E402
from .inplace import check_inplace, rebase  # noqa: E402
