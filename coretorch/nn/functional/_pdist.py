"""nn.functional.pdist and the deprecated upsampling aliases (``upsample_bilinear``, ``upsample_nearest``)."""
from __future__ import annotations

import warnings

from ...autograd._node_names import named_node, saves_also
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
