"""The index ops along one dimension and the mask ops: gather, scatter_add, index_select, index_add, nonzero,
masked_select (with their backward nodes); ``ops.indexing`` re-exports every name."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import dtypes as _dt
from ..autograd.grad_mode import state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make, _zeros_on
from ._util import edge, host_all_below, norm_dim

if TYPE_CHECKING:
    from .indexing import _embed, getitem
# bound by ops.indexing (bind_late), which imports this module and re-exports its names (x[key] stays there)
_LATE = ("_embed", "getitem")
_i64, _bool = _dt.int64, _dt.bool_
_HALVES, _F32 = (_dt.float16, _dt.bfloat16), _dt.float32.np


def _same_device(op, input: Tensor, *others) -> None:
    for o in others:
        if isinstance(o, Tensor) and o._be is not input._be and o.device != input.device:
            from ._util import device_mismatch
            raise device_mismatch(op, input, o)


def _check_index(op, index, ndim=None, *, empty_ok: bool = False):
    """PyTorch's checks of an index tensor: int64 or int32 (PyTorch 2.13 takes both), and for gather/scatter as
    many dims as the input (a 0-d tensor reads as 1-d there).  ``empty_ok``: an empty index of any dtype and
    shape passes (gather/scatter check nothing about an index without elements, as PyTorch's kernels)."""
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if empty_ok and not index.numel():
        return
    if index.dtype is not _i64 and index.dtype is not _dt.int32:
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index, got {index.dtype}")
    if ndim is not None and max(index.ndim, 1) != max(ndim, 1):
        raise RuntimeError(f"Index tensor must have the same number of dimensions as input tensor "
                           f"({op}: index has {index.ndim}, input has {ndim})")


def _shape1(t: Tensor) -> tuple:
    return tuple(t.shape) or (1,)


def _check_range(op, index: Tensor, size: int, dim: int | None = None, exc: type = RuntimeError,
                 message: str | None = None, negative: bool = False) -> None:
    """Every index in [0, size) (gather/scatter/index_select take no negative indices, as PyTorch; ``negative``:
    in [-size, size), index_fill's), else ``exc(message.format(bad index))``; by default PyTorch's RuntimeError of
    gather/scatter naming ``dim``."""
    if not index.numel():
        return
    if message is None:
        message = f"{op}(): index {{}} is out of bounds for dimension {0 if dim is None else dim} with size {size}"
    t = index._be
    if not t.host_memory and t.has("check_index"):  # on the device: reported at the next host read
        t.check_index(index._data, size, negative, message, exc)
        return
    low = -size if negative else 0
    if t.host_memory and host_all_below(t, index._data, size, low):  # the common case in one reduction
        return
    hi = int(t.to_numpy(t.amax(index._data, None, False)))
    lo = int(t.to_numpy(t.amin(index._data, None, False)))
    if hi >= size or lo < low:
        raise exc(message.format(hi if hi >= size else lo))


class GatherBackward0(Node):
    """The indices are saved as PyTorch saves them: one changed in place before the backward raises (the gradient
    went to the changed positions)."""
    __slots__ = ("shape", "dim")

    def backward(self, g):
        index = self.saved()[0]
        if not index.numel():
            return (_zeros_on(self.shape, g.dtype, g._be),)
        if not (g._rg and _gs.enabled) and g._be is index._be and index.ndim == len(self.shape):
            # plain: indices were checked in forward
            table = g._be
            zeros = table.full(self.shape, 0, g.dtype.np)
            return (_make(_scatter_add_data(table, zeros, self.dim, index._data, g._data, g.dtype), g.dtype, table),)
        return (scatter_add(_zeros_on(self.shape, g.dtype, g._be), self.dim, index, g),)


def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """Pick values along ``dim`` by index: ``out[i][j][k] = input[index[i][j][k]][j][k]`` for ``dim=0``.

    Args:
        input (Tensor): the source tensor.
        dim (int): the dimension to index along.
        index (Tensor): int64 indices, same number of dimensions as ``input``; the result has its shape.
        sparse_grad (bool): accepted for compatibility.
    """
    d = norm_dim(dim, input.ndim, "gather")
    _check_index("gather", index, input.ndim, empty_ok=True)  # PyTorch checks no empty index
    _same_device("gather", input, index)
    ish, xsh = _shape1(index), _shape1(input)  # a 0-d tensor reads as 1-d here
    for k in range(len(xsh) if index.numel() else 0):
        if k != d and ish[k] > xsh[k]:
            raise RuntimeError(f"Size does not match at dimension {k} expected index {list(index.shape)} to be "
                               f"smaller than self {list(input.shape)} apart from dimension {d}")
    _check_range("gather", index, input.shape[d] if input.ndim else 1, d)
    table = input._be
    if index.numel() and index.ndim == 0 and input.ndim == 1:  # a 0-d index of a 1-d input reads as 1-d
        out = table.view(table.gather(input._data, d, table.view(index._data, (1,))), ())
    elif index.numel():
        out = table.gather(input._data, d, index._data)
    else:  # any shape: PyTorch checks none
        out = table.full(tuple(index.shape), 0, input.dtype.np)
    if input._rg and _gs.enabled:
        node = GatherBackward0()
        node.shape, node.dim = input._data.shape, d
        node.save(index, input)  # (input only for its version, as PyTorch's gather_backward saves self)
        node.next_functions = (edge(input),)
        return _make(out, input.dtype, table, node)
    return _make(out, input.dtype, table)


class ScatterAddBackward0(Node):
    """The indices are saved (version-checked) where src's gradient reads them."""
    __slots__ = ("dim", "need", "src_shape")

    def backward(self, g):
        gs = None
        if self.need[1]:
            gs = gather(g, self.dim, self.saved()[0])
            if tuple(gs.shape) != self.src_shape:  # src larger than index: the unused part gets zeros
                gs = _embed(gs, self.src_shape, tuple(slice(0, s) for s in gs.shape), False)
        return (g if self.need[0] else None, gs)


def _scatter_add_data(table, x, d: int, index, src, dtype):
    """The backend's scatter_add; float16/bfloat16 accumulate in float32 and round once (PyTorch's CPU kernel)."""
    if dtype in _HALVES:
        return table.cast(table.scatter_add(table.cast(x, _F32), d, index, table.cast(src, _F32)), dtype.np)
    return table.scatter_add(x, d, index, src)


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of ``input`` with the values of ``src`` added at the positions ``index`` along ``dim``.

    For ``dim=0``: ``out[index[i][j]][j] += src[i][j]``; repeated indices accumulate.
    """
    return _scatter_add(input, dim, index, src, True)


def _scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor, opmath: bool) -> Tensor:
    """scatter_add; ``opmath=False``: float16/bfloat16 round at each step (PyTorch's pooling backward kernels)."""
    d = norm_dim(dim, input.ndim, "scatter_add")
    _check_index("scatter_add", index, input.ndim, empty_ok=True)
    _same_device("scatter_add", input, index, src)
    if src.dtype is not input.dtype:
        raise RuntimeError(f"scatter_add(): Expected self.dtype to be equal to src.dtype (got {input.dtype} and "
                           f"{src.dtype})")
    if not index.numel():  # PyTorch checks nothing more and adds nothing (src is not read)
        from .shape import clone
        return clone(input)
    ish, xsh, ssh = _shape1(index), _shape1(input), _shape1(src)  # a 0-d tensor reads as 1-d here
    for k in range(len(xsh)):
        if k >= len(ssh) or ish[k] > ssh[k] or (k != d and ish[k] > xsh[k]):
            raise RuntimeError(f"scatter_add(): index {list(index.shape)} is larger than src "
                               f"{list(src.shape)} or self {list(input.shape)} apart from dimension {d}")
    _check_range("scatter_add", index, input.shape[d] if input.ndim else 1, d)
    if input.ndim == 1 and (index.ndim == 0 or src.ndim == 0):  # 0-d operands read as 1-d
        index, src = index.reshape(1), src.reshape(1)
    table = input._be
    out = _scatter_add_data(table, input._data, d, index._data, src._data, input.dtype if opmath else None)
    if _gs.enabled and (input._rg or src._rg):
        node = ScatterAddBackward0()
        node.dim, node.need = d, (input._rg, src._rg)
        if src._rg:
            node.save(index)
        node.src_shape = tuple(src.shape)
        node.next_functions = (edge(input), edge(src))
        return _make(out, input.dtype, table, node)
    return _make(out, input.dtype, table)


class IndexSelectBackward0(Node):
    """The indices are saved (version-checked), as PyTorch's."""
    __slots__ = ("shape", "dim")

    def backward(self, g):  # the indices were checked in the forward
        return (_index_add(_zeros_on(self.shape, g.dtype, g._be), self.dim, self.saved()[0], g),)


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The entries of ``input`` along ``dim`` at the int64 indices of the 1-D ``index`` (a copy).

    Example:
        >>> torch.index_select(torch.arange(6).reshape(2, 3), 1, torch.tensor([0, 2]))
        tensor([[0, 2],
                [3, 5]])
    """
    d = norm_dim(dim, input.ndim, "index_select")
    _check_index("index_select", index)
    _same_device("index_select", input, index)
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if input.ndim == 0 and index.numel() != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {index.numel()} value(s)")
    size = input.shape[d] if input.ndim else 1
    if input.ndim >= 2 and index.numel() and size == 0:
        raise RuntimeError("index_select(): self indexing axis dim should be positive")
    if input.ndim >= 2 and (d == 1 or input.numel() == 0):  # PyTorch's cpu kernels differ in their error here
        _check_range("index_select", index, size, d, RuntimeError,
                     f"index_select(): INDICES element is out of DATA bounds, id={{}} axis_dim={size}")
    else:
        _check_range("index_select", index, size, d, IndexError, "index_select(): index {} out of range in self")
    table = input._be
    out = table.index_select(input._data, d, index._data.reshape(-1) if index.ndim == 0 else index._data)
    if input._rg and _gs.enabled:
        node = IndexSelectBackward0()
        node.shape, node.dim = input._data.shape, d
        node.save(index.reshape(-1))
        node.next_functions = (edge(input),)
        return _make(out, input.dtype, table, node)
    return _make(out, input.dtype, table)


class IndexAddBackward0(Node):
    """The indices are saved (version-checked) where source's gradient reads them."""
    __slots__ = ("dim", "need")

    def backward(self, g):
        return (g if self.need[0] else None, index_select(g, self.dim, self.saved()[0]) if self.need[1] else None)


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """A copy of ``input`` with ``alpha * source`` added at the positions ``index`` along ``dim``.

    ``out.select(dim, index[i]) += alpha * source.select(dim, i)``; repeated indices accumulate.
    """
    return _index_add(input, dim, index, source, alpha, True)


def _index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, alpha=1, check: bool = False,
               opmath: bool = True) -> Tensor:
    """index_add; ``check``: check the indices' range (the backward passes use indices checked already);
    ``opmath=False``: float16/bfloat16 round at each step (PyTorch's embedding backward)."""
    d = norm_dim(dim, input.ndim, "index_add")
    _check_index("index_add", index)
    _same_device("index_add", input, index, source)
    if check:
        n_src = source.shape[d] if source.ndim else 1
        if index.ndim > 1:
            raise IndexError("index_add_(): Index is supposed to be a vector")
        if input.ndim == 0 and source.ndim == 0 and index.numel() != 1:
            raise IndexError("index_add_(): Dimension specified as 0 but tensor has no dimensions")
        if source.dtype is not input.dtype:
            raise RuntimeError(f"index_add_(): self ({input.dtype._tname[:-6]}) and source "
                               f"({source.dtype._tname[:-6]}) must have the same scalar type")
        if index.numel() != n_src or source.ndim != input.ndim or any(
                source.shape[k] != input.shape[k] for k in range(input.ndim) if k != d):
            raise RuntimeError(f"index_add_(): Number of indices ({index.numel()}) should be equal to "
                               f"source.size(dim) ({n_src}), and source {list(source.shape)} should match self "
                               f"{list(input.shape)} outside dim {d}")
        if source.numel() and (input.ndim <= 1 or input.numel()):  # PyTorch reads no index when nothing is added
            if input.ndim >= 2 and (d == 0 or d == input.ndim - 1):  # PyTorch's cpu kernels differ in their error
                _check_range("index_add_", index, input.shape[d], d)
            else:
                _check_range("index_add_", index, input.shape[d] if input.ndim else 1, d, IndexError,
                             "index_add_(): index {} out of range in self")
    if check:  # (PyTorch's Scalar alpha: a number or a 0-d tensor, converted to self's dtype with its check)
        if isinstance(alpha, Tensor):
            if alpha.ndim:
                raise TypeError("index_add(): argument 'alpha' must be Number, not Tensor")
            alpha = alpha.item()
        if alpha != 1 and not isinstance(alpha, bool):
            _dt.fit_scalar(alpha, input.dtype)
    if alpha != 1:
        if not input.dtype.is_floating_point and isinstance(alpha, float):  # (PyTorch: alpha.to<int64_t>())
            alpha = int(alpha)
        source = source * alpha
    if index.ndim == 0:  # the kernels take a vector
        index = index.reshape(1)
    table = input._be
    if input.numel() == 0 or source.numel() == 0:  # nothing is added (PyTorch reads no index)
        out = table.contiguous(input._data)
    elif opmath and input.dtype in _HALVES and alpha == 1 and input.ndim > 1 and index.dtype is _i64:
        # (PyTorch's CPU index_add of a float16/bfloat16 matrix with an int64 index and alpha 1 is a scatter_add:
        # accumulated in float32, rounded once; its other cases round at each step)
        f32 = table.index_add(table.cast(input._data, _F32), d, index._data, table.cast(source._data, _F32))
        out = table.cast(f32, input.dtype.np)
    else:
        out = table.index_add(input._data, d, index._data, source._data)
    if _gs.enabled and (input._rg or source._rg):
        node = IndexAddBackward0()
        node.dim, node.need = d, (input._rg, source._rg)
        if source._rg:
            node.save(index)
        node.next_functions = (edge(input), edge(source))
        return _make(out, input.dtype, table, node)
    return _make(out, input.dtype, table)


def nonzero(input: Tensor, *, as_tuple: bool = False):
    """The indices of the nonzero elements of ``input``.

    Returns an int64 tensor of shape ``(count, input.ndim)``, one row per element in row-major order, or with
    ``as_tuple=True`` a tuple of ``input.ndim`` 1-D index tensors (usable as ``input[idx]``).
    """
    table = input._be
    out = _make(table.nonzero(input._data), _i64, table)
    if as_tuple:
        if input.ndim == 0:  # a 0-d input reads as one element: index 0 when it is nonzero
            from .creation import zeros
            return (zeros(out.shape[0], dtype=_i64, device=input.device),)
        return tuple(out[:, i] for i in range(input.ndim))
    return out


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """A 1-D tensor of the elements of ``input`` where the bool ``mask`` (broadcast) is True."""
    if mask.dtype is not _bool:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got {mask.dtype}")
    x, m = input, mask
    if tuple(input.shape) != tuple(mask.shape):
        from .shape import broadcast_tensors
        x, m = broadcast_tensors(input, mask)
    r = getitem(x, m)
    gf = r.grad_fn
    if gf is not None:  # (PyTorch's name for the node)
        cls = _MASKED_SELECT.get(type(gf))
        if cls is None:
            cls = _MASKED_SELECT[type(gf)] = type("MaskedSelectBackward0", (type(gf),), {"__slots__": ()})
        gf.__class__ = cls
    return r


_MASKED_SELECT: dict = {}
