"""interpolate on integer images: PyTorch's uint8 path for bilinear and bicubic (antialiased or not) and its
NotImplementedError for the other integer cases.

PyTorch (as PIL) resamples uint8 images separably, the last dim first, with each pass's weights (computed in
double) rounded to int16 fixed point: the precision p is the first for which the largest weight times 2^(p+1)
reaches 2^15, a weight w becomes round-half-away(w 2^p), and an output is clamp((sum w x + 2^(p-1)) >> p, 0, 255),
an intermediate pass rounded to uint8 too.  Here each pass is one float64 matmul with the integer weights (exact:
the sums stay far below 2^53), a floor division by 2^p and a clamp, on the input's device."""
from __future__ import annotations

import math

import numpy as np

from ... import dtypes as _dt
from ...ops import creation as _C, linalg as _L, pointwise as _P, shape as _S
from ...tensor import Tensor

__all__: list[str] = []


def check_integer(input: Tensor, mode: str, antialias: bool) -> None:
    """PyTorch's NotImplementedError for the integer inputs its kernels do not take (uint8 bilinear/bicubic and
    nearest are taken)."""
    dt = input.dtype
    if dt.is_floating_point:
        return
    name = dt._tname[:-6]
    nd = input.ndim - 2
    if antialias:
        if dt is not _dt.uint8:
            raise NotImplementedError(f"\"compute_index_ranges_weights\" not implemented for '{name}'")
        return
    if mode == "area":
        pool = "adaptive_avg_pool3d_cpu" if nd == 3 else "adaptive_avg_pool2d"  # (the 1-D pool is the 2-D one)
        raise NotImplementedError(f"\"{pool}\" not implemented for '{name}'")
    if mode in ("linear", "trilinear"):
        raise NotImplementedError(f"\"compute_indices_weights_linear\" not implemented for '{name}'")
    if dt is _dt.uint8:
        return
    if mode == "bicubic":
        raise NotImplementedError(f"\"compute_indices_weights_cubic\" not implemented for '{name}'")
    if mode == "bilinear":
        raise NotImplementedError(f"\"upsample_bilinear2d_channels_last\" not implemented for '{name}'")
    if nd == 2:
        raise NotImplementedError(f"\"upsample_nearest2d_channels_last\" not implemented for '{name}'")
    raise NotImplementedError(f"\"compute_indices_weights_nearest\" not implemented for '{name}'")  # 1-D, 3-D


def _scale(n_in: int, n_out: int, align_corners: bool, sc) -> float:
    if align_corners:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return 1.0 / sc if sc is not None and sc > 0 else n_in / n_out


def _triangle(x):
    x = np.abs(x)
    return np.where(x < 1.0, 1.0 - x, 0.0)


def _keys(a: float):
    def f(x):
        x = np.abs(x)
        near = ((a + 2) * x - (a + 3)) * x * x + 1
        far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        return np.where(x < 1.0, near, np.where(x < 2.0, far, 0.0))
    return f


def _plain_matrix(n_in: int, n_out: int, scale: float, align_corners: bool, cubic: bool) -> np.ndarray:
    """(n_out, n_in) weights of the non-antialiased uint8 path: interp_size taps around the source index, taps
    beyond the edges folded onto the edge pixels (ATen's _compute_indices_min_size_weights)."""
    size = 4 if cubic else 2
    support = size // 2
    filt = _keys(-0.75) if cubic else _triangle
    w = np.zeros((n_out, n_in))
    for i in range(n_out):
        src = scale * i if align_corners else scale * (i + 0.5) - 0.5
        if not cubic and src < 0:
            src = 0.0
        idx = min(int(math.floor(src)), n_in - 1)
        lam = min(max(src - idx, 0.0), 1.0)
        lo = idx - support + 1
        for j in range(size):
            w[i, min(max(lo + j, 0), n_in - 1)] += filt(np.float64(j + 1 - support) - lam)
    return w


def _fixed_point(w: np.ndarray) -> tuple[np.ndarray, int]:
    """ATen's int16 weights: the precision p and round-half-away(w 2^p)."""
    wmax = float(w.max()) if w.size else 0.0
    p = 0
    while p < 22 and int(0.5 + wmax * (1 << (p + 1))) < (1 << 15):
        p += 1
    v = w * (1 << p)
    return np.where(v < 0, np.trunc(v - 0.5), np.trunc(v + 0.5)), p


def resample_uint8(input: Tensor, out_sizes: tuple, scales: list, mode: str, align_corners: bool, antialias: bool,
                   aa_matrix) -> Tensor:
    """uint8 (N, C, H, W) bilinear/bicubic resampling as PyTorch's uint8 kernels (see the module docstring)."""
    if tuple(input.shape[2:]) == tuple(out_sizes):
        return input.clone()
    out = input
    for k in (1, 0):  # width first, then height; a dim that keeps its size is not resampled
        d = 2 + k
        n_in, n_out = input.shape[d], out_sizes[k]
        if n_in == n_out:
            continue
        if antialias:
            w = aa_matrix(n_in, n_out, scales[k], align_corners, mode)
        else:
            w = _plain_matrix(n_in, n_out, _scale(n_in, n_out, align_corners, scales[k]), align_corners,
                              mode == "bicubic")
        wi, p = _fixed_point(w)
        wt = _C.tensor(wi.T, dtype=_dt.float64, device=input.device)           # (n_in, n_out)
        acc = _L.matmul(_S.movedim(out, d, -1).to(_dt.float64), wt)
        acc = _P.floor(_P.div(_P.add(acc, float(1 << (p - 1))), float(1 << p)))
        out = _S.movedim(_P.clamp(acc, 0.0, 255.0).to(_dt.uint8), -1, d)
    return _S.contiguous(out)  # row-major, as PyTorch's (the width pass left the width dim moved: a transposed layout)
