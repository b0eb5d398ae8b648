"""PyTorch's ``*_copy`` ops (the view ops returning a new tensor instead of a view: ``view_copy``,
``permute_copy``, ... what functionalised graphs call), ``split_with_sizes`` and ``as_strided_scatter``, and the
numeric helpers ``vander``, ``trapezoid``/``trapz``/``cumulative_trapezoid`` and the deprecated ATen norms
``frobenius_norm``/``nuclear_norm``.  All are compositions of differentiable ops, so autograd and every device
come with them.
"""
from __future__ import annotations

import warnings

from .. import dtypes as _dt
from ..tensor import Tensor
from . import reduction as _R, shape as _S
from .creation import ones
from .indexing import narrow
from .joining import _storage, as_strided
from ._own import own
from .pointwise import add, div, mul, sub
from .statistics import cumprod

__all__: list[str] = ["split_with_sizes", "view_copy", "permute_copy", "t_copy", "transpose_copy",
                      "unsqueeze_copy", "squeeze_copy", "select_copy", "slice_copy", "split_copy",
                      "split_with_sizes_copy", "unbind_copy", "unfold_copy", "expand_copy", "diagonal_copy",
                      "alias_copy", "detach_copy", "as_strided_copy", "as_strided_scatter", "vander", "trapezoid",
                      "trapz", "cumulative_trapezoid", "frobenius_norm", "nuclear_norm"]
METHODS: dict = {}


def split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple[Tensor, ...]:
    """Views of ``input`` split along ``dim`` into pieces of the given sizes (which must sum to the dim's size)."""
    sizes = [int(s) for s in split_sizes]
    n = input.shape[dim]
    if sum(sizes) != n or any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                           f"dimension {dim}), but got split_sizes={sizes}")
    return tuple(_S.split(input, sizes, dim))


def _copies(ts) -> tuple[Tensor, ...]:
    return tuple(t.clone() for t in ts)


def view_copy(input: Tensor, size=None, *, dtype=None) -> Tensor:
    """``input.view(size)`` (or ``input.view(dtype)``: PyTorch's ``view_copy.dtype`` overload, keyword ``dtype=``)
    as a new tensor."""
    if (size is None) == (dtype is None):
        raise TypeError("view_copy() received an invalid combination of arguments: expected (Tensor input, tuple of "
                        "ints size) or (Tensor input, torch.dtype dtype)")
    if dtype is not None:
        if not isinstance(dtype, _dt.dtype):
            raise TypeError(f"view_copy(): argument 'dtype' must be torch.dtype, not {type(dtype).__name__}")
        size = dtype
    if isinstance(size, _dt.dtype):
        return input.view(size).clone()
    return input.view(*size if isinstance(size, (tuple, list)) else (size,)).clone()


def permute_copy(input: Tensor, dims) -> Tensor:
    """``input.permute(dims)`` as a new tensor."""
    return _S.permute(input, tuple(dims)).clone()


def t_copy(input: Tensor) -> Tensor:
    """``input.t()`` as a new tensor."""
    return _S.t(input).clone()


def transpose_copy(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """``input.transpose(dim0, dim1)`` as a new tensor."""
    return _S.transpose(input, dim0, dim1).clone()


def unsqueeze_copy(input: Tensor, dim: int) -> Tensor:
    """``input.unsqueeze(dim)`` as a new tensor."""
    return _S.unsqueeze(input, dim).clone()


def squeeze_copy(input: Tensor, dim=None) -> Tensor:
    """``input.squeeze(dim)`` as a new tensor (``dim`` an int, a list of them, or None for every size-1 dim)."""
    return _S.squeeze(input, tuple(dim) if isinstance(dim, list) else dim).clone()


def select_copy(input: Tensor, dim: int, index: int) -> Tensor:
    """``input.select(dim, index)`` as a new tensor."""
    return input.select(dim, index).clone()


def slice_copy(input: Tensor, dim: int = 0, start: int | None = None, end: int | None = None,
               step: int = 1) -> Tensor:
    """``input[..., start:end:step, ...]`` along ``dim`` as a new tensor."""
    key = [slice(None)] * input.ndim
    key[dim] = slice(start, end, step)
    return input[tuple(key)].clone()


def split_copy(input: Tensor, split_size: int, dim: int = 0) -> tuple[Tensor, ...]:
    """``input.split(split_size, dim)`` as new tensors."""
    return _copies(_S.split(input, split_size, dim))


def split_with_sizes_copy(input: Tensor, split_sizes, dim: int = 0) -> tuple[Tensor, ...]:
    """:func:`split_with_sizes` as new tensors."""
    return _copies(split_with_sizes(input, split_sizes, dim))


def unbind_copy(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """``input.unbind(dim)`` as new tensors."""
    return _copies(_S.unbind(input, dim))


def unfold_copy(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """``input.unfold(dimension, size, step)`` as a new tensor."""
    return input.unfold(dimension, size, step).clone()


def expand_copy(input: Tensor, size, *, implicit: bool = False) -> Tensor:
    """``input.expand(size)`` as a new (materialised) tensor."""
    return input.expand(*size).clone()


def diagonal_copy(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """``input.diagonal(offset, dim1, dim2)`` as a new tensor."""
    return input.diagonal(offset, dim1, dim2).clone()


def alias_copy(input: Tensor) -> Tensor:
    """A copy of ``input`` (the alias op as a new tensor)."""
    return input.clone()


def detach_copy(input: Tensor) -> Tensor:
    """``input.detach()`` as a new tensor."""
    return input.detach().clone()


def as_strided_copy(input: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """``input.as_strided(size, stride, storage_offset)`` as a new tensor."""
    return input.as_strided(tuple(size), tuple(stride), storage_offset).clone()


def as_strided_scatter(input: Tensor, src: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """A copy of ``input`` with ``src`` written into its ``as_strided(size, stride, storage_offset)`` view.  As
    PyTorch's, the copy keeps input's layout in a copy of its whole storage, so ``storage_offset`` and ``stride``
    address that storage as they would input's (a view or a transposed input included); positions outside input's
    own elements are written but not seen.  An input whose elements alias (expanded) is copied contiguous."""
    size, stride = tuple(size), tuple(stride)
    r = None
    if any(t == 0 and s > 1 for s, t in zip(input.shape, input.stride())):
        r = input.clone().contiguous()
        view = r.as_strided(size, stride, storage_offset)
    else:
        off, n = _storage(input)
        buf = as_strided(input, (n,), (1,), 0).clone()   # the whole storage (differentiable)
        view = as_strided(buf, size, stride, off if storage_offset is None else storage_offset)
    if tuple(view.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(view.shape)}")
    view.copy_(src)
    if r is None:  # taken after the write, from the buffer's new graph (taken before, it missed src's gradient when
        # input did not require grad); a tensor of its own, as PyTorch's (not a view of the buffer)
        r = own(as_strided(buf, tuple(input.shape), input.stride(), off))
    return r


# ---- numeric helpers ------------------------------------------------------------------------------------------
def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """The Vandermonde matrix of a 1-D ``x``: columns ``x ** (N - 1), ..., x ** 0`` (reversed when increasing);
    integer and bool inputs give int64, as PyTorch."""
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else int(N)
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if not x.dtype.is_floating_point:
        x = x.to(_dt.int64)
    if n == 0:
        return x.new_zeros((x.shape[0], 0))
    # a running product: x ** 0 is exactly 1 (also at x == 0, whose gradient stays finite)
    cols = _S.cat([ones((x.shape[0], 1), dtype=x.dtype, device=x.device),
                   _S.unsqueeze(x, 1).expand(x.shape[0], n - 1)], 1) if n > 1 else \
        ones((x.shape[0], 1), dtype=x.dtype, device=x.device)
    r = cumprod(cols, 1)
    return r if increasing else _S.flip(r, (1,))


def _pair(y: Tensor, dim: int) -> tuple[Tensor, Tensor]:
    n = y.shape[dim]
    return narrow(y, dim, 1, n - 1), narrow(y, dim, 0, n - 1)


def _float(y: Tensor) -> Tensor:
    return y if y.dtype.is_floating_point else y.to(_dt.default)


def _spacing(y: Tensor, x: Tensor, dim: int) -> Tensor:
    """The gaps between the sample points, shaped to broadcast against y's pairs (a 1-D x runs along dim)."""
    if x.ndim == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(f"trapezoid: There must be one `x` value for each sample point, but got "
                               f"{x.shape[0]} and {y.shape[dim]}")
        d = sub(x[1:], x[:-1])
        shape = [1] * y.ndim
        shape[dim % y.ndim] = d.shape[0]
        return d.reshape(shape)
    hi, lo = _pair(x, dim)
    return sub(hi, lo)


def _areas(y: Tensor, x: Tensor | None, dx, dim: int) -> Tensor:
    y = _float(y)
    hi, lo = _pair(y, dim)
    s = add(hi, lo)
    if x is None:
        return mul(s, dx / 2)
    return div(mul(s, _spacing(y, x, dim)), 2)


def _check_x(name: str, x, dx) -> None:
    if x is not None and not isinstance(x, Tensor):
        raise TypeError(f"{name}() received an invalid combination of arguments - got (Tensor, "
                        f"{type(x).__name__}), but expected one of:\n * (Tensor y, Tensor x, *, int dim = -1)\n * "
                        f"(Tensor y, *, Number dx = 1, int dim = -1)")
    if x is not None and dx is not None:
        raise TypeError(f"{name}(): pass either x or dx, not both")


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """The trapezoidal rule along ``dim``: sample points ``x`` (1-D along dim, or y's shape) or a constant
    spacing ``dx`` (default 1)."""
    _check_x("trapezoid", x, dx)
    if y.shape[dim] == 0:
        return _R.sum(_float(y), dim)
    return _R.sum(_areas(y, x, 1 if dx is None else dx, dim), dim)


def trapz(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """Alias of :func:`trapezoid`."""
    _check_x("trapz", x, dx)
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """The running trapezoidal integral along ``dim`` (one value fewer than y's samples)."""
    _check_x("cumulative_trapezoid", x, dx)
    if y.shape[dim] == 0:
        return _float(y)
    return _R.cumsum(_areas(y, x, 1 if dx is None else dx, dim), dim)


def frobenius_norm(input: Tensor, dim, keepdim: bool = False) -> Tensor:
    """Deprecated ATen op (PyTorch warns): ``linalg.vector_norm(input, 2, dim, keepdim)``."""
    warnings.warn("at::frobenius_norm is deprecated and it is just left for JIT compatibility. It will be removed in "
                  "a future PyTorch release. Please use `linalg.vector_norm(A, 2., dim, keepdim)` instead",
                  UserWarning, stacklevel=2)
    from ..linalg import vector_norm  # (coretorch.linalg imports the op families: a cycle at import time)
    return vector_norm(input, 2, tuple(dim) if not isinstance(dim, int) else dim, keepdim)


def nuclear_norm(input: Tensor, dim=None, keepdim: bool = False, *, out=None) -> Tensor:
    """Deprecated ATen op (PyTorch warns): ``linalg.matrix_norm(input, 'nuc', dim, keepdim)``; ``dim`` may be
    omitted (the last two dims), and ``nuclear_norm(input, True)`` is keepdim, as ATen's two overloads; an int
    ``dim`` is the pair ``(dim, dim)`` (PyTorch's int[2] argument, refused as "dims must be different")."""
    warnings.warn("at::nuclear_norm is deprecated and it is just left for JIT compatibility. It will be removed in a "
                  "future PyTorch release. Please use `linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead",
                  UserWarning, stacklevel=2)
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    from ..linalg import matrix_norm
    from ._out import write_out
    dims = (-2, -1) if dim is None else (dim, dim) if isinstance(dim, int) else tuple(dim)
    return write_out("nuclear_norm", out, matrix_norm(input, "nuc", dims, keepdim), exact_dtype=True)


METHODS.update({"split_with_sizes": split_with_sizes, "as_strided_scatter": as_strided_scatter})
