"""nn.functional's distances (``pdist``, ``cosine_similarity``, ``pairwise_distance``) and the deprecated
upsampling aliases (``upsample_bilinear``, ``upsample_nearest``)."""
from __future__ import annotations

import warnings

from ... import dtypes as _dt
from ...amp.autocast_mode import cast_inputs as _ac_cast
from ...amp.autocast_mode import state as _ac
from ...autograd._node_names import named_node, saves_also
from ...autograd.grad_mode import state as _gs
from ...ops import pointwise as _P, reduction as _R
from ...ops import _distance as _D, triangular as _T
from ...tensor import Tensor
from ._interpolate import interpolate


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The p-norm distances between every pair of rows of the 2-D ``input``: the upper triangle of
    ``cdist(input, input, p)`` (row by row, diagonal excluded), ``N * (N - 1) / 2`` values.  The gradient is 0
    where a distance is 0, as PyTorch's."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    d = _D.cdist(input, input, p, compute_mode="donot_use_mm_for_euclid_dist")  # exact differences, no mm trick
    i, j = _T.triu_indices(n, n, 1, device=input.device)
    # (PyTorch's node saves input and result: an in-place change of either raises at the backward)
    return saves_also(named_node(d[i, j], "PdistBackward0"), input, output=True)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: ``interpolate(input, size, scale_factor, mode="nearest")``."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: ``interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)``."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """The cosine similarity of ``x1`` and ``x2`` along ``dim``: ``x1 . x2 / max(||x1|| * ||x2||, eps)``.

    The inputs broadcast; the result has ``dim`` removed.
    """
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        x1, x2 = _ac_cast("cosine_similarity", x1, x2)
    if not (x1.dtype.is_floating_point and x2.dtype.is_floating_point):  # integers convert to the common dtype
        common = _dt.promote_types(x1.dtype, x2.dtype)
        if not common.is_floating_point:
            raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                               f"{common._tname[:-6]}")
        x1, x2 = x1.to(common), x2.to(common)
    n1, n2 = _norm_clamped(x1, dim, eps), _norm_clamped(x2, dim, eps)
    return _R.sum(_P.mul(_P.div(x1, n1), _P.div(x2, n2)), dim)


def _norm_clamped(x: Tensor, dim: int, eps: float) -> Tensor:
    """max(||x||, eps) as PyTorch's cosine_similarity computes it: the clamp runs in place under no_grad, so a
    clamped norm's gradient is still the norm's (value eps, derivative x / ||x||)."""
    n = _R.norm(x, 2, dim, keepdim=True)
    if not (n._rg and _gs.enabled):
        return _P.clamp(n, min=eps)
    return _P.where(_P.lt(n.detach(), eps), _P.add(_P.sub(n, n.detach()), eps), n)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The ``p``-norm distance ``||x1 - x2 + eps||_p`` along the last dimension (batched)."""
    return _R.norm(_P.add(_P.sub(x1, x2), eps), p, -1, keepdim)
