"""``renorm`` and ``narrow_copy``: compositions of differentiable ops (autograd for free), with PyTorch's names for
their backward nodes, checks and ``out=``."""
from __future__ import annotations

from ..autograd._node_names import named_node
from ..tensor import Tensor
from . import indexing as _ix, pointwise as _pw, shape as _sh
from ._decomp_composite import vector_norm
from ._out import write_out
from ._util import norm_dim
from .inplace import apply_inplace

__all__ = ["renorm", "narrow_copy"]


def renorm(input: Tensor, p: float, dim: int, maxnorm: float, *, out: Tensor | None = None) -> Tensor:
    """Each sub-tensor of ``input`` along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled to norm ``maxnorm``
    (by ``maxnorm / (norm + 1e-7)``, as PyTorch); the others unchanged."""
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{input.dtype._tname[:-6]}")
    d = norm_dim(dim, input.ndim, "renorm")
    others = tuple(i for i in range(input.ndim) if i != d)
    norm = vector_norm(input, p, others, True)
    # PyTorch differentiates through the norm where the clamp is active (renorm_backward)
    factor = _pw.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)
    r = input * factor.to(input.dtype)
    if not r.is_contiguous():  # (PyTorch's renorm result is row-major)
        r = _sh.contiguous(r)
    r = named_node(r, "RenormBackward0")
    return write_out("renorm", out, r, exact_dtype=True, inputs=(input,))


def _renorm_(self: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """In-place ``renorm``."""
    return apply_inplace(self, "renorm_", lambda s: renorm(s, p, dim, maxnorm))


def narrow_copy(input: Tensor, dim: int, start: int, length: int, *, out: Tensor | None = None) -> Tensor:
    """A copy of ``input.narrow(dim, start, length)`` (a new tensor, never a view)."""
    from .. import _compat  # (on use: _compat imports the ops)
    r = named_node(_sh.clone(_ix.narrow(input, dim, start, length), memory_format=_compat.contiguous_format),
                   "NarrowCopyBackward0")  # (a row-major copy, as PyTorch's)
    return write_out("narrow_copy", out, r, exact_dtype=True, inputs=(input,))


METHODS: dict = {"renorm": renorm, "renorm_": _renorm_, "narrow_copy": narrow_copy}
