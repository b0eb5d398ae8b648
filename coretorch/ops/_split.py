"""split, chunk and their unsafe_ forms: pieces of a tensor along one dim, views of it with one autograd node for
all of them (PyTorch's SplitBackward0: one cat of the pieces' gradients); ``coretorch.ops.shape`` re-exports them."""
from __future__ import annotations

from ..autograd.grad_mode import state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make
from ._util import edge, norm_dim


def split(tensor: Tensor, split_size_or_sections, dim: int = 0):
    """Split ``tensor`` into views along ``dim``.

    In-place ops on the pieces raise where autograd would record them (as in PyTorch: see :func:`unsafe_split`).

    Args:
        tensor (Tensor): the tensor to split.
        split_size_or_sections (int or list of ints): the size of each piece (the last may be smaller), or
            the list of sizes.
        dim (int): the dimension to split along (default 0).

    Example:
        >>> tuple(p.shape[0] for p in torch.split(torch.arange(5), 2))
        (2, 2, 1)
    """
    return _multi_output(_split_pieces(tensor, split_size_or_sections, dim))


def _split_pieces(tensor: Tensor, split_size_or_sections, dim: int) -> tuple:
    from .indexing import narrow
    if tensor.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    if not isinstance(split_size_or_sections, int) and hasattr(split_size_or_sections, "__index__") and (
            getattr(split_size_or_sections, "ndim", 0) == 0):  # (a 0-d integer tensor, a numpy int: one size)
        split_size_or_sections = split_size_or_sections.__index__()
    if isinstance(split_size_or_sections, int) and split_size_or_sections < 0:  # checked before the dim
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={split_size_or_sections}")
    d = norm_dim(dim, tensor.ndim, "split")
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, int):
        s = split_size_or_sections
        if s == 0 and n > 0:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
        sizes = [min(s, n - i) for i in range(0, n, s)] if n else [0]
    else:
        sizes = list(split_size_or_sections)
        if any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                               f"split_sizes={sizes}")
        if sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size "
                               f"at dimension {d}), but got split_sizes={sizes}")
    grad = _gs.enabled and tensor._rg  # (one piece too: PyTorch's node is SplitBackward0 whatever the count)
    out, start = [], 0
    if grad:  # views without a graph each; one node for all of them below
        _gs.enabled = False
    try:
        for s in sizes:
            out.append(narrow(tensor, d, start, s))
            start += s
    finally:
        if grad:
            _gs.enabled = True
    if grad:
        # PyTorch's node: the pieces' gradients joined by one cat (a zero for a piece without one), where a
        # SliceBackward0 per piece gave a zero-filled input-sized gradient each, summed (a compiled GPT step's
        # q/k/v split: 11 launches over three (B, T, 3D) arrays per block, now 4)
        node = SplitBackward0() if isinstance(split_size_or_sections, int) else SplitWithSizesBackward0()
        node.dim = d
        node.next_functions = (edge(tensor),)
        node._out_meta = tuple((p._data.shape, p.dtype, p._be) for p in out)
        for k, p in enumerate(out):
            p._gf, p._out_nr, p._rg = node, k, True
    return tuple(out)


def _multi_output(pieces: tuple) -> tuple:
    """Pieces made in grad mode are PyTorch's multi-output views: an in-place op on one (or a use after its base
    was modified in place) raises where autograd records it (ops/inplace.py); unsafe_split's pieces are not."""
    if _gs.enabled:
        for p in pieces:
            p._mo = p._vc[0]
    return pieces


class SplitBackward0(Node):
    """split's pieces (views of the input): their gradients concatenated along the split dim."""
    __slots__ = ("dim",)

    def backward(self, *grads):
        from .shape import cat  # (on use: shape imports this module)
        return (cat(list(grads), self.dim),)


class SplitWithSizesBackward0(SplitBackward0):
    """split with a list of sizes (PyTorch's name for its node)."""
    __slots__ = ()


def chunk(input: Tensor, chunks: int, dim: int = 0):
    """Split ``input`` into ``chunks`` views of (nearly) equal size along ``dim``.

    Each chunk has ``ceil(size / chunks)`` elements along ``dim``, the last one fewer; fewer than ``chunks``
    pieces can result.

    Args:
        input (Tensor): the tensor to split.
        chunks (int): the number of pieces.
        dim (int): the dimension to split along (default 0).
    """
    return _multi_output(_chunk_pieces(input, chunks, dim))


def _chunk_pieces(input: Tensor, chunks: int, dim: int) -> tuple:
    if input.ndim == 0:  # checked first, as PyTorch
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if not isinstance(chunks, int) and hasattr(chunks, "__index__"):  # (np.int64(2): its split took it for sizes)
        chunks = chunks.__index__()
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = norm_dim(dim, input.ndim, "chunk")
    n = input.shape[d]
    size = -(-n // chunks) if n else 0
    return _split_pieces(input, size, d) if size else _split_pieces(input, [0] * chunks if n == 0 else [n], d)


class UnsafeSplitBackward0(SplitBackward0):
    """unsafe_split's pieces: split's gradient (the pieces are not views to autograd)."""
    __slots__ = ()


class UnsafeSplitWithSizesBackward0(SplitBackward0):
    """unsafe_split_with_sizes' pieces (PyTorch's name for its node)."""
    __slots__ = ()


_UNSAFE = {SplitBackward0: UnsafeSplitBackward0, SplitWithSizesBackward0: UnsafeSplitWithSizesBackward0}


def _unsafe(pieces: tuple) -> tuple:
    """split's pieces as unsafe_split gives them: the same memory, but not views to autograd (no base, a version
    counter each), so in-place ops on them are allowed.  Gradients are silently wrong if both the input and a piece
    are modified in place afterwards (as PyTorch warns)."""
    node = pieces[0]._gf if pieces else None
    if node is not None:
        node.__class__ = _UNSAFE[node.__class__]
    out = tuple(_make(p._data, p.dtype, p._be, node, k) for k, p in enumerate(pieces))
    for p, q in zip(pieces, out):  # the input's storage, for storage_offset/untyped_storage (as detach()'s)
        if p._vbase is not None:
            q._vbase, q._det = p._vbase, True
    return out


def unsafe_split(input: Tensor, split_size: int, dim: int = 0) -> tuple:
    """Works like :func:`split` (an int size), without autograd's restrictions on in-place modification of the
    pieces.

    Safe as long as only the input, or only the pieces, are modified in place afterwards: if both are, the
    gradients are silently wrong.
    """
    if not isinstance(split_size, int) or isinstance(split_size, bool):
        raise TypeError(f"unsafe_split(): argument 'split_size' (position 2) must be int, not "
                        f"{type(split_size).__name__}")
    return _unsafe(_split_pieces(input, split_size, dim))


def unsafe_split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple:
    """Works like :func:`split` with a list of sizes, without autograd's restrictions on in-place modification of
    the pieces (see :func:`unsafe_split`)."""
    return _unsafe(_split_pieces(input, list(split_sizes), dim))


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """Works like :func:`chunk`, without autograd's restrictions on in-place modification of the pieces (see
    :func:`unsafe_split`)."""
    return _unsafe(_chunk_pieces(input, chunks, dim))
