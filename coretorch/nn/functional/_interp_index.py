"""interpolate's source positions with PyTorch's arithmetic (its CPU kernels' index helpers in UpSample.h).

PyTorch computes the source index of an output position in single precision for every input dtype but float64
(whose linear/cubic positions use double), so an exact real-number position like 69 / 2.3 = 30 can land on either
side of an integer: these helpers repeat its float32 operations with numpy scalars so that nearest indices and
linear/cubic weights are PyTorch's, not those of double arithmetic."""
from __future__ import annotations

import numpy as np

__all__ = ["nearest_indices", "linear_positions"]

_f32 = np.float32


def _scale_f32(n_in: int, n_out: int, scale_factor) -> np.float32:
    """compute_scales_value<float>: 1 / scale_factor (in double, rounded) or n_in / n_out (in float)."""
    if scale_factor is not None and scale_factor > 0:
        return _f32(1.0 / scale_factor)
    return _f32(n_in) / _f32(n_out)


def nearest_indices(n_in: int, n_out: int, scale_factor, exact: bool, nsp: int, double: bool) -> list[int]:
    """Source index of each of n_out positions for mode nearest / nearest-exact.

    PyTorch's 2-D kernel (and every dtype but float64 in 1-D/3-D) multiplies in float32, and its 2-D nearest copies
    for n_out == n_in and halves for n_out == 2 n_in whatever the scale factor; its 1-D/3-D float64 kernels take a
    double scale and product, rounded to float32 before the floor."""
    if not exact and nsp == 2:
        if n_out == n_in:
            return list(range(n_out))
        if n_out == 2 * n_in:
            return [i >> 1 for i in range(n_out)]
    off = 0.5 if exact else 0.0
    i = np.arange(n_out, dtype=np.float64)
    if double and nsp != 2:
        s = 1.0 / scale_factor if scale_factor is not None and scale_factor > 0 else n_in / n_out
        pos = (s * (i + off)).astype(_f32)
    else:
        s32 = _scale_f32(n_in, n_out, scale_factor)
        # nearest-exact: (dst_index + 0.5) * scale, a double product rounded by floorf's float argument
        pos = ((i + 0.5) * float(s32)).astype(_f32) if exact else i.astype(_f32) * s32
    return np.minimum(np.floor(pos).astype(np.int64), n_in - 1).tolist()


def linear_positions(n_in: int, n_out: int, scale_factor, align_corners: bool, cubic: bool,
                     double: bool) -> np.ndarray:
    """area_pixel_compute_source_index for each output position with PyTorch's arithmetic: the scale in opmath
    precision (float64 for float64 inputs, float32 otherwise), ``scale * i`` with align_corners, else
    ``scale * (i + 0.5) - 0.5`` (its 0.5 is a double literal: the product is taken in double and rounded to
    opmath), clamped at 0 for the linear modes (bicubic keeps negative positions)."""
    t = np.float64 if double else np.float32
    if align_corners:
        scale = t(n_in - 1) / t(n_out - 1) if n_out > 1 else t(0)
    elif scale_factor is not None and scale_factor > 0:
        scale = t(1.0 / scale_factor)
    else:
        scale = t(n_in) / t(n_out)
    i = np.arange(n_out, dtype=np.float64)
    if align_corners:
        return (float(scale) * i).astype(t)
    src = (float(scale) * (i + 0.5) - 0.5).astype(t)
    return src if cubic else np.maximum(src, t(0))
