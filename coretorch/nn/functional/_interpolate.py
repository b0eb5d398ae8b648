"""nn.functional.interpolate / upsample (nearest, linear family, bicubic, area)."""
from __future__ import annotations

import math
import warnings

import numpy as np

from ... import dtypes as _dt
from ...ops import creation as _C
from ...ops import indexing as _I
from ...ops import linalg as _L
from ...ops import pointwise as _P
from ...ops import shape as _S
from ...tensor import Tensor
from ._common import _channels_last_like, _check_tensor, _i64
from ._interp_index import linear_positions, nearest_indices
from ._interpolate_u8 import check_integer, resample_uint8
from ._adaptive import adaptive_avg_pool1d, adaptive_avg_pool3d
from ._pooling import adaptive_avg_pool2d


# ---------------------------------------------------------------------------------------------
# interpolate
# ---------------------------------------------------------------------------------------------
def _index_tensor(values, device) -> Tensor:
    return _C.tensor(values, dtype=_i64, device=device)


def _is_integer(v) -> bool:
    """PyTorch's _is_integer: a Python or numpy integer, or an integer tensor."""
    if isinstance(v, (int, np.integer)):
        return True
    return isinstance(v, Tensor) and not v.is_floating_point()


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize ``input`` ``(N, C, *spatial)`` (1 to 3 spatial dimensions) to ``size`` or by ``scale_factor``.

    Args:
        input (Tensor): ``(N, C, L)``, ``(N, C, H, W)`` or ``(N, C, D, H, W)``.
        size (int or tuple, optional): the output spatial size.
        scale_factor (float or tuple, optional): the multiplier of the spatial size.
        mode (str): ``"nearest"`` (default), ``"nearest-exact"``, ``"linear"``, ``"bilinear"``, ``"bicubic"``,
            ``"trilinear"`` or ``"area"``.
        align_corners (bool, optional): for the linear and cubic modes, align the corner pixels' centres.
        recompute_scale_factor (bool, optional): compute the scale from the output size.
        antialias (bool): anti-aliasing when downsampling (bilinear/bicubic).

    Example:
        >>> F.interpolate(torch.zeros(1, 3, 8, 8), scale_factor=2, mode="bilinear").shape
        coretorch.Size([1, 3, 16, 16])
    """
    _check_tensor("interpolate", "input", input)
    out = _interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias)
    return _channels_last_like(out, input)  # (a channels-last 4-D input: PyTorch's upsampling kernels keep it)


def _interpolate(input: Tensor, size, scale_factor, mode: str, align_corners, recompute_scale_factor,
                 antialias: bool) -> Tensor:
    """interpolate's result, row-major."""
    nsp = input.ndim - 2
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    else:
        align_corners = bool(align_corners)
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    in_sizes = tuple(input.shape[2:])
    if size is not None:
        if isinstance(size, (tuple, list)):
            if len(size) != nsp:
                raise ValueError(f"Input and output must have the same number of spatial dimensions, but got "
                                 f"input with spatial dimensions of {list(in_sizes)} and output size of {size}. "
                                 "Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in "
                                 "(o1, o2, ...,oK) format.")
            if not all(_is_integer(v) for v in size):
                raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, int] or Tuple[int, int, "
                                f"int], but got size with types {[type(v) for v in size]}")
            out_sizes = tuple(int(v) for v in size)
        else:
            if not _is_integer(size):  # (PyTorch's binding refuses a float size: no truncation)
                raise TypeError(f"interpolate(): argument 'size' must be tuple of ints, but found element of type "
                                f"{type(size).__name__} at pos 0")
            out_sizes = (int(size),) * nsp
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        scales: list = [None] * nsp
    else:
        sf = list(scale_factor) if isinstance(scale_factor, (tuple, list)) else [scale_factor] * max(nsp, 0)
        if isinstance(scale_factor, (tuple, list)) and len(sf) != nsp:
            raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got "
                             f"input with spatial dimensions of {list(in_sizes)} and scale_factor of shape "
                             f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                             "scale_factor in (s1, s2, ...,sK) format.")
        if recompute_scale_factor or mode == "area":  # PyTorch's Python int(size * factor), in the factor's type
            out_sizes = tuple(int(s * f) for s, f in zip(in_sizes, sf))
        else:  # its kernels' floor(size * factor) in double
            out_sizes = tuple(int(math.floor(s * float(f))) for s, f in zip(in_sizes, sf))
        scales = [None] * nsp if recompute_scale_factor else [float(f) for f in sf]
    modes = {"nearest": 1, "nearest-exact": 1, "linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3, "area": 0,
             "lanczos": 2}
    if not 1 <= nsp <= 3 or mode not in modes or mode in ("bicubic", "lanczos") and nsp != 2:
        # PyTorch's last resort, after the size checks (no kernel for these dimensionalities or modes)
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) "
                                  f"for the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | "
                                  f"area | nearest-exact (got {mode})")
    if modes[mode] > 1 and modes[mode] != nsp or mode == "linear" and nsp != 1:
        want = {1: "3D", 2: "4D", 3: "5D"}[modes[mode]]
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {want} input")
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a "
                         "4-D tensor as input")
    if mode == "lanczos":
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    check_integer(input, mode, antialias)
    if mode != "area" and (min(out_sizes) <= 0 or min(in_sizes) <= 0):  # (area is adaptive pooling: 0 is fine)
        names = ("D", "H", "W")[3 - nsp:]
        fmt = lambda v: ", ".join(f"{n}: {x}" for n, x in zip(names, v))  # noqa: E731
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({fmt(in_sizes)})"
                           f"{' and' if nsp == 1 else ''} output ({fmt(out_sizes)})")
    if mode != "area" and input.shape[1] == 0:  # (an empty batch of non-empty images is fine)
        raise RuntimeError(f"Non-empty {input.ndim}D data tensor expected but got a tensor with sizes "
                           f"{list(input.shape)}")
    if input.dtype is _dt.uint8 and mode in ("bilinear", "bicubic"):  # PyTorch's (and PIL's) fixed-point path
        return resample_uint8(input, out_sizes, scales, mode, align_corners, antialias, _aa_matrix)
    if antialias:
        return _antialias(input, out_sizes, scales, mode, align_corners)
    if mode == "area":
        return (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[nsp - 1](input, out_sizes)
    reduced = input.dtype in (_dt.float16, _dt.bfloat16) and mode != "nearest" and mode != "nearest-exact"
    out = input.float() if reduced else input  # PyTorch's kernels compute half/bfloat16 in float32, round once
    double = input.dtype is _dt.float64
    for k in reversed(range(nsp)):  # the last dim first: PyTorch's kernels nest the first dim's sum outermost
        d = 2 + k
        n_in, n_out, sc = in_sizes[k], out_sizes[k], scales[k]
        if mode in ("nearest", "nearest-exact"):
            idx = nearest_indices(n_in, n_out, sc, mode == "nearest-exact", nsp, double)
            out = _I.index_select(out, d, _index_tensor(idx, input.device))
            continue
        src = linear_positions(n_in, n_out, sc, align_corners, mode == "bicubic", double)
        if mode == "bicubic":
            out = _cubic_pass(out, d, src, n_in, input.dtype)
            continue
        if n_in == n_out:  # PyTorch's compute_source_index_and_lambda: equal sizes copy, whatever the scale
            i0 = i1 = list(range(n_out))
            lam1 = np.zeros(n_out, src.dtype)
        else:
            i0, lam1 = _guard(src, n_in)
            i1 = [min(i + 1, n_in - 1) for i in i0]
        wshape = [1] * out.ndim
        wshape[d] = n_out
        # weights in the input's dtype as PyTorch's scalar_t ones (1 - lambda1 in it too), but its 2-D bilinear
        # kernel computes half/bfloat16 in float32 throughout
        wdt = out.dtype if mode == "bilinear" else input.dtype
        w1 = _C.tensor(lam1, dtype=wdt, device=out.device).reshape(wshape)
        w0 = _P.rsub(w1, 1.0).to(out.dtype)
        w1 = w1.to(out.dtype)
        a = _I.index_select(out, d, _index_tensor(i0, input.device))
        b = _I.index_select(out, d, _index_tensor(i1, input.device))
        out = _P.add(_P.mul(a, w0), _P.mul(b, w1))
    return out.to(input.dtype) if reduced else out


def _guard(src: np.ndarray, n_in: int) -> tuple:
    """PyTorch's guard_index_and_lambda: index min(floorf(src), n_in - 1) (floorf rounds a double to float first),
    weight of the next tap src - index clamped to [0, 1], in src's precision."""
    i0 = np.minimum(np.floor(src.astype(np.float32)).astype(np.int64), n_in - 1)
    lam = np.clip(src - i0.astype(src.dtype), 0, 1).astype(src.dtype)
    return i0.tolist(), lam


_CUBIC_A = -0.75  # PyTorch's (and OpenCV's) cubic convolution coefficient


def _cubic_weights(t: np.ndarray) -> list:
    """The four taps' weights of Keys' cubic convolution at fractional positions t (taps at -1, 0, 1, 2), in t's
    precision with PyTorch's get_cubic_upsample_coefficients' operations."""
    a = t.dtype.type(_CUBIC_A)
    one = t.dtype.type(1)

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + one

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    x2 = one - t
    return [far(t + one), near(t), near(x2), far(x2 + one)]


def _cubic_pass(out: Tensor, d: int, src: np.ndarray, n_in: int, dtype) -> Tensor:
    """Bicubic interpolation along dim ``d``: four index_select taps (clamped at the borders) weighted per output
    (weights rounded to the input's ``dtype``, as PyTorch stores them, then computed in ``out``'s)."""
    device = out.device
    base, t = _guard(src, n_in)
    weights = _cubic_weights(t)
    wshape = [1] * out.ndim
    wshape[d] = len(src)
    acc = None
    for j in range(4):
        idx = [min(max(b - 1 + j, 0), n_in - 1) for b in base]
        w = _C.tensor(weights[j], dtype=dtype, device=device).reshape(wshape).to(out.dtype)
        term = _P.mul(_I.index_select(out, d, _index_tensor(idx, device)), w)
        acc = term if acc is None else _P.add(acc, term)
    assert acc is not None  # four taps
    return acc


def _aa_filter(mode: str):
    if mode == "bilinear":
        return lambda x: np.maximum(1.0 - np.abs(x), 0.0)
    if mode == "lanczos":  # Lanczos-3: sinc(x) sinc(x / 3) on |x| < 3
        return lambda x: np.where(np.abs(x) < 3, np.sinc(x) * np.sinc(x / 3), 0.0)
    a = -0.5  # the antialiasing bicubic filter is PIL's (Keys' a = -0.5), not the -0.75 of plain bicubic

    def cubic(x):
        x = np.abs(x)
        near = ((a + 2) * x - (a + 3)) * x * x + 1
        far = (((x - 5) * x + 8) * x - 4) * a
        return np.where(x < 1, near, np.where(x < 2, far, 0.0))
    return cubic


def _aa_matrix(n_in: int, n_out: int, scale_factor, align_corners: bool, mode: str) -> np.ndarray:
    """(n_out, n_in) resampling weights of PyTorch's (and PIL's) antialiased interpolation: the filter is
    stretched by the downscale factor (so every input pixel under an output pixel's footprint contributes), cut
    to the input and normalised to sum 1 per output."""
    if align_corners:
        scale = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        scale = 1.0 / scale_factor if scale_factor is not None and scale_factor > 0 else n_in / n_out
    half = {"bilinear": 1.0, "bicubic": 2.0, "lanczos": 3.0}[mode]  # interp_size / 2
    support = half * scale if scale >= 1.0 else half
    inv = 1.0 / scale if scale >= 1.0 else 1.0
    filt = _aa_filter(mode)
    w = np.zeros((n_out, n_in))
    for i in range(n_out):
        center = scale * (i + 0.5)
        lo = max(int(center - support + 0.5), 0)          # C++ truncation, as PyTorch's kernel
        hi = min(int(center + support + 0.5), n_in)
        if hi <= lo:
            continue
        taps = filt((np.arange(lo, hi) - center + 0.5) * inv)
        total = taps.sum()
        w[i, lo:hi] = taps / total if total != 0 else taps
    return w


def _antialias(input: Tensor, out_sizes: tuple, scales: list, mode: str, align_corners: bool) -> Tensor:
    """Separable antialiased resampling of a 4-D input: one matmul with a host-built weight matrix per axis."""
    out = input
    for k in (1, 0):  # width first, then height
        d = 2 + k
        w = _aa_matrix(input.shape[d], out_sizes[k], scales[k], align_corners, mode)
        wt = _C.tensor(w.T, dtype=input.dtype, device=input.device)            # (n_in, n_out)
        moved = _S.movedim(out, d, -1)
        out = _S.movedim(_L.matmul(moved, wt), -1, d)
    return _S.contiguous(out)  # row-major, as PyTorch's (the height pass left a permuted view)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of :func:`interpolate` (warns as PyTorch's)."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)
