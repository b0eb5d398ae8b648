"""Shape and layout ops.  Views share storage and version counter with their base."""
from __future__ import annotations

from .. import dtypes as _dt
from ..autograd.grad_mode import state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make, _zeros_on
from . import _memfmt
from ._out import write_out
from ._view_dtype import view_dtype as _view_dtype
# (split and chunk live in _split.py; here as before for the ops and modules that reach them through this module)
from ._split import (SplitBackward0, SplitWithSizesBackward0, UnsafeSplitBackward0,  # noqa: F401
                     UnsafeSplitWithSizesBackward0, _multi_output, chunk, split, unsafe_chunk, unsafe_split,
                     unsafe_split_with_sizes)
from ._util import edge, norm_dim, norm_dims, shape_arg, sum_to, broadcast_shape


def _wrap_view(input: Tensor, data, node=None) -> Tensor:
    # (a view of a detached tensor views it, not its root: the root's autograd changes do not reach it)
    base = input._vbase if input._vbase is not None and not input._det else input
    if node is not None and input._rg and _gs.enabled:
        node.next_functions = (edge(input),)
        r = _make(data, input.dtype, input._be, node, base=base, version=input._vc)
    else:
        r = _make(data, input.dtype, input._be, base=base, version=input._vc)
    if input._mo is not None:  # a view of a split piece is one too (PyTorch propagates the creation meta)
        r._mo = input._vc[0]
        if input._cfv:
            r._cfv = True
    if not _gs.enabled or input._ngv:  # (a view made in no_grad mode: see ops/inplace.py's check_inplace)
        r._ngv = True
    return r


def _wrap_copy(input: Tensor, data, node=None) -> Tensor:
    if node is not None and input._rg and _gs.enabled:
        node.next_functions = (edge(input),)
        return _make(data, input.dtype, input._be, node)
    return _make(data, input.dtype, input._be)


def infer_shape(shape: tuple, numel: int, op: str = "view") -> tuple:
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for i, s in enumerate(shape):
        if s < -1:
            raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape {list(shape)}")
    if neg:
        known = 1
        for s in shape:
            if s != -1:
                known *= s
        if known == 0 and numel == 0:  # (PyTorch's message: any size would do)
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {list(shape)} because the "
                               "unspecified dimension size -1 can be any value and is ambiguous")
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    n = 1
    for s in shape:
        n *= s
    if n != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


class ViewBackward0(Node):
    __slots__ = ("in_shape",)

    def backward(self, g):
        return (reshape(g, self.in_shape),)


def view(input: Tensor, *shape, dtype: _dt.dtype | None = None, size=None) -> Tensor:
    if not shape:  # (x.view(size=...), x.view(dtype=torch.int32): PyTorch's keywords)
        shape = (dtype,) if dtype is not None else (size,) if size is not None else shape
    if len(shape) == 1 and shape[0].__class__ is type:  # (view(float) is view(torch.float64), as PyTorch's parser)
        shape = (_dt.from_python_type(shape[0]),)
    if len(shape) == 1 and isinstance(shape[0], _dt.dtype):
        return _view_dtype(input, shape[0])
    shape = infer_shape(shape_arg(shape, "view"), input.numel())
    x = input._data
    if x.shape == shape:
        out = x
    else:
        out = input._be.view(x, shape)
        if out is None:
            raise RuntimeError(f"view size is not compatible with input tensor's size and stride (at least one "
                               f"dimension spans across two contiguous subspaces): input shape "
                               f"{list(x.shape)}, requested {list(shape)}. Use .reshape(...) instead.")
    node = ViewBackward0() if input._rg else None
    if node is not None:
        node.in_shape = x.shape
    return _wrap_view(input, out, node)


def reshape(input: Tensor, *shape, **kw) -> Tensor:
    """A tensor with ``input``'s elements (in row-major order) and the given shape; a view when possible.

    One size may be ``-1`` (inferred).

    Example:
        >>> torch.reshape(torch.arange(6), (2, -1)).shape
        coretorch.Size([2, 3])
    """
    if kw:  # (x.reshape(shape=...): PyTorch's keyword)
        if shape or set(kw) != {"shape"}:
            raise TypeError(f"reshape() got an unexpected keyword argument '{next(k for k in kw if k != 'shape')}'"
                            if set(kw) != {"shape"} else "reshape() got multiple values for argument 'shape'")
        shape = (kw["shape"],)
    shape = infer_shape(shape_arg(shape, "reshape"), input.numel(), "reshape")
    x = input._data
    if x.shape == shape:
        return _wrap_view(input, x, _view_node(input, x.shape))
    out = input._be.view(x, shape)
    if out is not None:
        return _wrap_view(input, out, _view_node(input, x.shape))
    out = input._be.view(input._be.contiguous(x), shape)
    return _wrap_copy(input, out, _view_node(input, x.shape))


def _view_node(input, in_shape):
    if not input._rg:
        return None
    n = ViewBackward0()
    n.in_shape = in_shape
    return n


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Flatten dimensions ``start_dim`` to ``end_dim`` into one (a view where possible).

    Example:
        >>> torch.flatten(torch.zeros(2, 3, 4), 1).shape
        coretorch.Size([2, 12])
    """
    nd = input.ndim
    if nd == 0:
        norm_dim(start_dim, 0, "flatten"), norm_dim(end_dim, 0, "flatten")  # [-1, 0] only, as PyTorch
        return reshape(input, (1,))
    s, e = norm_dim(start_dim, nd, "flatten"), norm_dim(end_dim, nd, "flatten")
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:  # PyTorch returns the tensor itself (no view, no graph node: a leaf stays a leaf)
        return input
    shp = input.shape
    n = 1
    for d in shp[s:e + 1]:
        n *= d
    return reshape(input, tuple(shp[:s]) + (n,) + tuple(shp[e + 1:]))


def unflatten(input: Tensor, dim: int, sizes) -> Tensor:
    """A view of ``input`` with dimension ``dim`` split into ``sizes`` (one may be -1)."""
    d = norm_dim(dim, input.ndim, "unflatten")
    if input.ndim == 0:
        raise RuntimeError(f"unflatten got an unexpected error:\nDimension specified as {dim} but tensor has no "
                           "dimensions")
    sizes = tuple(sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n, known = input.shape[d], 1
    for s in sizes:
        known *= s if s != -1 else 1
    if -1 in sizes:
        fits = n % known == 0 if known else n == 0
    else:
        fits = known == n
    if not fits and sizes.count(-1) <= 1 and min(sizes) >= -1:  # (other bad sizes: infer_shape's messages)
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {d} ({n}) "
                           "in the input tensor")
    sizes = infer_shape(sizes, n, "unflatten")
    return view(input, tuple(input.shape[:d]) + sizes + tuple(input.shape[d + 1:])) \
        if input._be.view(input._data, tuple(input.shape[:d]) + sizes + tuple(input.shape[d + 1:])) is not None \
        else reshape(input, tuple(input.shape[:d]) + sizes + tuple(input.shape[d + 1:]))


def _named(r: Tensor, cls) -> Tensor:
    """Give a generic view node PyTorch's name for the op (same layout, same backward)."""
    gf = r.grad_fn
    if gf is not None:
        base = ViewBackward0 if isinstance(gf, ViewBackward0) else \
            PermuteBackward0 if isinstance(gf, PermuteBackward0) else None
        if base is not None:
            gf.__class__ = cls[base]
    return r


def _names(name: str) -> dict:
    return {ViewBackward0: type(name, (ViewBackward0,), {"__slots__": ()}),
            PermuteBackward0: type(name, (PermuteBackward0,), {"__slots__": ()})}


def squeeze(input: Tensor, dim=None) -> Tensor:
    """A view of ``input`` without its size-1 dimensions (only those in ``dim`` when given)."""
    shp = input.shape
    if dim is None:
        new = tuple(s for s in shp if s != 1)
    else:
        dims = norm_dims(dim, input.ndim, "squeeze")
        new = tuple(s for i, s in enumerate(shp) if not (i in dims and s == 1))
    r = view(input, new) if input._be.view(input._data, new) is not None else reshape(input, new)
    return _named(r, _SQUEEZE0 if dim is None else _SQUEEZE2 if isinstance(dim, (tuple, list)) else _SQUEEZE1)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """A view of ``input`` with a size-1 dimension inserted at ``dim``."""
    d = norm_dim(dim, input.ndim + 1, "unsqueeze")
    shp = tuple(input.shape)
    return _named(view(input, shp[:d] + (1,) + shp[d:]), _UNSQUEEZE)


class PermuteBackward0(Node):
    __slots__ = ("inv",)

    def backward(self, g):
        return (permute(g, self.inv),)


def permute(input: Tensor, *dims, **kw) -> Tensor:
    """A view of ``input`` with its dimensions reordered (``dims`` as varargs, a sequence, or ``dims=``).

    Example:
        >>> torch.permute(torch.zeros(2, 3, 5), (2, 0, 1)).shape
        coretorch.Size([5, 2, 3])
    """
    if kw:
        dims = _keyword_arg("permute", "dims", dims, kw)
    if not dims:
        raise TypeError("permute() missing 1 required positional arguments: \"dims\"")
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    if len(dims) != input.ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
                           f"length of the desired ordering of dimensions i.e. input.dim() = {input.ndim} is "
                           f"not equal to len(dims) = {len(dims)}".replace("(sparse_coo)", ""))
    dims = tuple(norm_dim(d, input.ndim, "permute") for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    out = input._be.permute(input._data, dims)
    node = None
    if input._rg:
        node = PermuteBackward0()
        inv = [0] * len(dims)
        for i, d in enumerate(dims):
            inv[d] = i
        node.inv = tuple(inv)
    return _wrap_view(input, out, node)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Alias of :func:`transpose`."""
    nd = input.ndim
    if nd == 0:
        norm_dim(dim0, 0, "transpose"), norm_dim(dim1, 0, "transpose")
        return _wrap_view(input, input._data, _view_node(input, ()))
    a, b = norm_dim(dim0, nd, "transpose"), norm_dim(dim1, nd, "transpose")
    p = list(range(nd))
    p[a], p[b] = p[b], p[a]
    return _named(permute(input, p), _TRANSPOSE)


def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """Alias of :func:`transpose` (numpy's argument names)."""
    return transpose(input, axis0, axis1)


def swapdims(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Alias of :func:`transpose`."""
    return transpose(input, dim0, dim1)


def t(input: Tensor) -> Tensor:
    """The transpose of a matrix (``transpose(input, 0, 1)``); 0-d and 1-D tensors are returned as is."""
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return _named(transpose(input, 0, 1) if input.ndim == 2 else input.view(input.shape), _T)


def movedim(input: Tensor, source, destination) -> Tensor:
    """A view of ``input`` with the dimension(s) ``source`` moved to position(s) ``destination``."""
    src, dst = (tuple(norm_dim(d, input.ndim, "movedim") for d in
                      ((v,) if not hasattr(v, "__iter__") or getattr(v, "ndim", None) == 0 else v))
                for v in (source, destination))
    if len(src) != len(dst):  # (PyTorch's messages; permute's and norm_dims' were given)
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) should contain "
                           f"the same number of dims as destination ({list(dst)} dims)")
    for name, ds in (("source", src), ("destination", dst)):
        if len(set(ds)) != len(ds):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({list(ds)})")
    if input.ndim == 0:  # dims 0 and -1 name the only position: a view of the tensor, as PyTorch
        return _wrap_view(input, input._data, _view_node(input, ()))
    order = [d for d in range(input.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(input, order)


class ExpandBackward0(Node):
    __slots__ = ("in_shape",)

    def backward(self, g):
        return (sum_to(g, self.in_shape),)


def _keyword_arg(op: str, name: str, args: tuple, kw: dict) -> tuple:
    """A varargs parameter PyTorch also takes by keyword (``x.permute(dims=(1, 0))``, ``x.expand(size=(3, 4))``)."""
    if name not in kw or args or len(kw) > 1:
        bad = next((k for k in kw if k != name), name)
        raise TypeError(f"{op}() got an unexpected keyword argument '{bad}'" if bad != name else
                        f"{op}() got multiple values for argument '{name}'")
    return (kw[name],)


def expand(input: Tensor, *sizes, **kw) -> Tensor:
    if kw:
        sizes = _keyword_arg("expand", "size", sizes, kw)
    sizes = shape_arg(sizes, "expand")
    shp = tuple(input.shape)
    if len(sizes) < len(shp):
        raise RuntimeError(f"expand(torch.{input.dtype._tname}{{{list(shp)}}}, size={list(sizes)}): the number "
                           f"of sizes provided ({len(sizes)}) must be greater or equal to the number of "
                           f"dimensions in the tensor ({len(shp)})")
    lead = len(sizes) - len(shp)
    target = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed in a leading, "
                                   f"non-existing dimension {i}")
            target.append(s)
        else:
            cur = shp[i - lead]
            if s == -1:
                s = cur
            if cur != s and cur != 1:
                raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({cur}) "
                                   f"at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor "
                                   f"sizes: {list(shp)}")
            target.append(s)
    target_t = tuple(target)
    if target_t == shp:
        return _wrap_view(input, input._data, _view_node(input, shp))
    out = input._be.expand(input._data, target_t)
    node = None
    if input._rg:
        node = ExpandBackward0()
        node.in_shape = shp
    return _wrap_view(input, out, node)


def expand_as(input: Tensor, other: Tensor) -> Tensor:
    return expand(input, other.shape)


def broadcast_to(input: Tensor, size) -> Tensor:
    """A view of ``input`` expanded to ``size`` by broadcasting (``-1`` keeps a size).

    Args:
        input (Tensor): the tensor to broadcast.
        size (tuple of ints): the target shape (PyTorch's keyword ``size=``).
    """
    return expand(input, tuple(size))


def broadcast_tensors(*tensors):
    """Broadcast the given tensors to their common shape; returns a tuple of (expanded, non-copied) views (a
    tensor already of that shape is returned itself, as PyTorch does).

    Example:
        >>> a, b = torch.broadcast_tensors(torch.zeros(3, 1), torch.zeros(4))
        >>> a.shape, b.shape
        (coretorch.Size([3, 4]), coretorch.Size([3, 4]))
    """
    shape = ()
    for t in tensors:
        shape = broadcast_shape(shape, tuple(t.shape), "broadcast_tensors")
    return tuple(t if tuple(t.shape) == shape else expand(t, shape) for t in tensors)


class RepeatBackward0(Node):
    __slots__ = ("in_shape", "reps")

    def backward(self, g):
        reps = self.reps
        shp = (1,) * (len(reps) - len(self.in_shape)) + tuple(self.in_shape)
        inter = []
        for r, s in zip(reps, shp):
            inter += [r, s]
        from .reduction import sum as _sum
        gr = _sum(reshape(g, inter), tuple(range(0, 2 * len(reps), 2)))
        return (reshape(gr, self.in_shape),)


def repeat(input: Tensor, *sizes) -> Tensor:
    reps = shape_arg(sizes, "repeat")
    if len(reps) < input.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions "
                           "of tensor")
    x = input._data
    shp = (1,) * (len(reps) - x.ndim) + tuple(x.shape)
    if any(r < 0 for r in reps):  # (PyTorch's error for the result's size; the backends raised ValueError/TypeError)
        out_sizes = [s * r for s, r in zip(shp, reps)]
        raise RuntimeError(f"Trying to create tensor with negative dimension {next(v for v in out_sizes if v < 0)}: "
                           f"{out_sizes}")
    out = input._be.tile(input._be.view(x, shp) if x.shape != shp else x, reps)
    node = None
    if input._rg:
        node = RepeatBackward0()
        node.in_shape, node.reps = tuple(x.shape), reps
    return _wrap_copy(input, out, node)


class FlipBackward0(Node):
    __slots__ = ("dims",)

    def backward(self, g):
        return (flip(g, self.dims),)


def flip(input: Tensor, dims) -> Tensor:
    """Reverse the order of the elements along the given dimensions (a copy).

    Args:
        input (Tensor): the input tensor.
        dims (int or tuple of ints): the dimensions to reverse.
    """
    dims = norm_dims(dims, input.ndim, "flip")
    node = None
    if input._rg:
        node = FlipBackward0()
        node.dims = dims
    table, x = input._be, input._data
    if not dims or not input.ndim:
        return _wrap_copy(input, table.contiguous(x), node)
    # laid out as the input (its stride order), as PyTorch's TensorIterator kernel: a channels-last or transposed
    # input's flip was row-major (so rot90's transpose of it was not, and .view of it raised where PyTorch's works)
    o = None if input.ndim < 2 or table.is_contiguous(x) else _memfmt.order(tuple(x.shape), tuple(table.strides(x)))
    if o is None:
        return _wrap_copy(input, table.flip(x, dims), node)
    data = table.permute(table.flip(table.permute(x, o), tuple(o.index(d) for d in dims)), _memfmt.inverse(o))
    return _wrap_copy(input, data, node)


class CloneBackward0(Node):
    __slots__ = ()

    def backward(self, g):
        return (g,)


def clone(input: Tensor, *, memory_format=None) -> Tensor:
    """A copy of ``input`` with its own memory; differentiable (the gradient flows back to ``input``).

    Args:
        input (Tensor): the tensor to copy.
        memory_format (memory_format, optional): ``torch.channels_last``/``channels_last_3d`` lay the copy out so,
            ``contiguous_format`` row-major; ``preserve_format`` (the default) keeps a dense input's strides (any
            other input's stride order), as PyTorch's.
    """
    table = input._be
    if memory_format is None:
        data = _memfmt.preserved(table, input._data)
    else:
        r = _memfmt.check(memory_format, input.ndim)
        data = _memfmt.relaid(table, input._data, r) if r else table.contiguous(input._data) \
            if _memfmt.rank(memory_format) == 0 and memory_format is not _memfmt._preserve() \
            else _memfmt.preserved(table, input._data)
    return _wrap_copy(input, data, CloneBackward0() if input._rg else None)


def contiguous(input: Tensor, memory_format=None) -> Tensor:
    if memory_format is not None:
        if memory_format is _memfmt._preserve():  # (a row-major tensor is returned first, as PyTorch's)
            if input._be.is_contiguous(input._data):
                return input
            raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
        r = _memfmt.check(memory_format, input.ndim)
        if r:
            if _memfmt.is_channels_last(tuple(input.shape), input.stride(), r):
                return input
            return clone(input, memory_format=memory_format)
    if input._be.is_contiguous(input._data):
        return input
    return _wrap_copy(input, input._be.contiguous(input._data), CloneBackward0() if input._rg else None)


class CatBackward0(Node):
    __slots__ = ("dim", "sizes")

    def backward(self, g):
        out, start = [], 0
        from .indexing import narrow
        for s in self.sizes:
            if s == -1:  # a legacy 1-D empty input (left out of the result): its empty gradient
                out.append(_zeros_on((0,), g.dtype, g._be))
                continue
            out.append(None if s is None else narrow(g, self.dim, start, s))
            start += s or 0
        return tuple(out)


class StackBackward0(CatBackward0):  # stack is a cat of unsqueezed inputs: PyTorch's name for its node
    __slots__ = ()


def cat(tensors, dim: int = 0) -> Tensor:
    """Concatenate tensors along an existing dimension.

    All tensors have the same shape except in ``dim`` (1-D empty tensors are skipped, as in PyTorch); the result
    dtype is the promotion of the inputs' dtypes.

    Args:
        tensors (sequence of Tensors): the tensors to join.
        dim (int): the dimension to join along (default 0).
        out (Tensor, optional): the output tensor.

    Example:
        >>> torch.cat([torch.zeros(2, 3), torch.ones(1, 3)]).shape
        coretorch.Size([3, 3])
    """
    return _cat(tensors, dim, False)


def _cat(tensors, dim: int, stacked: bool) -> Tensor:
    """cat; ``stacked``: stack's, of tensors unsqueezed at ``dim`` (their layout is that of the tensors stacked)."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"cat(): expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    # legacy: 1-D empty tensors are skipped
    parts = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)] or tensors[:1]
    ref = parts[0]
    if ref.ndim == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = norm_dim(dim, ref.ndim, "cat")
    table = ref._be
    dt = tensors[0].dtype
    for t in tensors[1:]:  # (the skipped 1-D empties count: cat([int32, tensor([])]) is float32, as PyTorch)
        dt = _dt.promote_types(dt, t.dtype)
    for i, t in enumerate(parts):
        if t._be is not table:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two "
                               f"devices, {ref.device} and {t.device}! (when checking argument for cat)")
        if t.ndim != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} and {t.ndim}")
        for k in range(ref.ndim):
            if k != d and t.shape[k] != ref.shape[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                                   f"{ref.shape[k]} but got size {t.shape[k]} for tensor number {i} in the "
                                   "list.")
    if _gs.enabled:  # promoted parts that require grad go through a differentiable cast (grads keep their dtype)
        parts = [t.to(dt) if t._rg and t.dtype is not dt else t for t in parts]
    arrays = [t._data if t.dtype is dt else table.cast(t._data, dt.np) for t in parts]
    out = table.cat(arrays, d)
    if not table.is_contiguous(out):
        if not all(_channels_last(table, a, d if stacked else -1) for a in arrays):
            out = table.contiguous(out)  # (numpy's concatenate keeps a column-major or permuted common order)
    elif not stacked and len(out.shape) in (4, 5) and all(not table.is_contiguous(a) for a in arrays) \
            and all(_channels_last(table, a, -1) for a in arrays):
        out = _memfmt.relaid(table, out, len(out.shape))
    if _gs.enabled and any(t._rg for t in tensors):
        node = CatBackward0()
        node.dim = d
        if len(parts) == len(tensors):
            node.sizes = [t.shape[d] for t in parts]
            node.next_functions = tuple(edge(t) for t in parts)
        else:  # the skipped legacy empties stay in the graph (an empty gradient each), as in PyTorch
            kept = iter(parts)
            sizes, edges = [], []
            for i, t in enumerate(tensors):
                if t.ndim == 1 and t.shape[0] == 0 and (i or len(parts) > 1 or parts[0].shape != (0,)):
                    sizes.append(-1)
                    edges.append(edge(t))
                else:
                    p = next(kept)
                    sizes.append(p.shape[d])
                    edges.append(edge(p))
            node.sizes, node.next_functions = sizes, tuple(edges)
        return _make(out, dt, table, node)
    return _make(out, dt, table)


concat = concatenate = cat


def _channels_last(table, a, skip: int) -> bool:
    """Whether array ``a`` (``skip``: less its dim ``skip``) is channels-last: PyTorch's cat result is when every
    input is (their common suggested memory format), and row-major otherwise."""
    shape, strides = tuple(a.shape), tuple(table.strides(a))
    if skip >= 0:
        shape, strides = shape[:skip] + shape[skip + 1:], strides[:skip] + strides[skip + 1:]
    r = len(shape)
    return r in (4, 5) and _memfmt.is_channels_last(shape, strides, r)


def stack(tensors, dim: int = 0) -> Tensor:
    """Join tensors of the same shape along a new dimension ``dim``.

    Example:
        >>> torch.stack([torch.zeros(3), torch.ones(3)], dim=1).shape
        coretorch.Size([3, 2])
    """
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    s0 = tensors[0].shape
    for i, t in enumerate(tensors):
        if t.shape != s0:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(s0)} at entry 0 and "
                               f"{list(t.shape)} at entry {i}")
    d = norm_dim(dim, tensors[0].ndim + 1, "stack")
    out = _cat([unsqueeze(t, d) for t in tensors], d, True)
    if out.grad_fn.__class__ is CatBackward0:
        out.grad_fn.__class__ = StackBackward0  # PyTorch's name for the node (same backward)
    return out


def hstack(tensors, *, out: Tensor | None = None) -> Tensor:
    """Stack tensors horizontally: ``cat`` along dim 1 (dim 0 for 1-D tensors)."""
    tensors = [t.reshape(1) if t.ndim == 0 else t for t in tensors]  # atleast_1d, as PyTorch
    r = cat(tensors, 0 if tensors and tensors[0].ndim == 1 else 1)
    return r if out is None else write_out("hstack", out, r, inputs=tensors)


def vstack(tensors, *, out: Tensor | None = None) -> Tensor:
    """Stack tensors vertically: ``cat`` along dim 0 after making 1-D tensors rows ``(1, n)``."""
    tensors = list(tensors)
    r = cat([t.reshape(1, -1) if t.ndim < 2 else t for t in tensors], 0)
    return r if out is None else write_out("vstack", out, r, inputs=tensors)


def unbind(input: Tensor, dim: int = 0):
    """The tuple of views of ``input`` at each index of ``dim`` (that dimension removed)."""
    d = norm_dim(dim, input.ndim, "unbind")
    if input.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    from .indexing import select
    grad = _gs.enabled and input._rg
    if grad:  # views without a graph each; one node for all of them (PyTorch's UnbindBackward0: one stack)
        _gs.enabled = False
    try:
        out = tuple(select(input, d, i) for i in range(input.shape[d]))
    finally:
        if grad:
            _gs.enabled = True
    if grad and out:
        node = UnbindBackward0()
        node.dim = d
        node.next_functions = (edge(input),)
        node._out_meta = tuple((p._data.shape, p.dtype, p._be) for p in out)
        for k, p in enumerate(out):
            p._gf, p._out_nr, p._rg = node, k, True
    _multi_output(out)
    return out


class UnbindBackward0(Node):
    """unbind's pieces (views of the input): their gradients stacked along the unbound dim."""
    __slots__ = ("dim",)

    def backward(self, *grads):
        return (stack(list(grads), self.dim),)


_SQUEEZE0, _SQUEEZE1, _SQUEEZE2, _UNSQUEEZE, _TRANSPOSE, _T = (_names(n) for n in (
    "SqueezeBackward0", "SqueezeBackward1", "SqueezeBackward2", "UnsqueezeBackward0", "TransposeBackward0",
    "TBackward0"))
