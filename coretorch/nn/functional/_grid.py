"""nn.functional.affine_grid and grid_sample (spatial transformers, flow warping).

Both are compositions of differentiable tensor ops: ``affine_grid`` is a batched matmul of a base grid with the
affine matrices; ``grid_sample`` turns the normalised grid into source coordinates (with the padding mode's
clamping or reflection), reads the taps with one ``gather`` over the flattened spatial axes per tap, and weights
them with arithmetic on the coordinates.  So the gradient reaches the input (through gather's scatter-add) and the
grid (through the weights) with no extra code, and double backward works.  Tap indices come from ``floor`` and so
carry no gradient, as in PyTorch's kernels.
"""
from __future__ import annotations

import warnings

from ...ops import creation as _C
from ...ops import indexing as _I
from ...ops import linalg as _L
from ...ops import pointwise as _P
from ...ops import shape as _S
from ...ops._own import own
from ...tensor import Tensor
from ._common import _check_tensor, _i64

__all__ = ["affine_grid", "grid_sample"]

_DEFAULT_CHANGED = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                    "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                    "grid_sample for details.")
_CUBIC_A = -0.75  # PyTorch's cubic convolution coefficient (as in interpolate's bicubic)


# ---------------------------------------------------------------------------------------------
# affine_grid
# ---------------------------------------------------------------------------------------------
def _base_coords(n: int, align_corners: bool, theta: Tensor) -> Tensor:
    """The n normalised pixel positions along one axis: -1..1 on the corner pixels' centres (align_corners) or
    on their outer edges; a unit axis sits at 0."""
    if n <= 1:
        return _C.zeros(n, dtype=theta.dtype, device=theta.device)
    v = _C.linspace(-1.0, 1.0, n, dtype=theta.dtype, device=theta.device)
    return v if align_corners else _P.mul(v, (n - 1) / n)


def affine_grid(theta: Tensor, size, align_corners: bool | None = None) -> Tensor:
    """(N, 2, 3) -> grid (N, H, W, 2) for size (N, C, H, W); (N, 3, 4) -> (N, D, H, W, 3) for 5-D sizes."""
    _check_tensor("affine_grid", "theta", theta)
    if align_corners is None:
        warnings.warn(_DEFAULT_CHANGED, stacklevel=3)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = tuple(int(s) for s in size)
    if len(size) == 4:
        if theta.ndim != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. "
                             f"Got {theta.shape}.")
    elif len(size) == 5:
        if theta.ndim != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. "
                             f"Got {theta.shape}.")
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    spatial = size[2:]
    if size[0] != theta.shape[0]:  # (PyTorch's bmm of the base grid with the matrices)
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{size[0]}, "
                           f"{len(spatial) + 1}] but got: [{theta.shape[0]}, {len(spatial) + 1}].")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the documentation "
                      "of affine_grid for details.", stacklevel=3)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    nsp = len(spatial)
    # base (*spatial, nsp + 1): coordinates x, y[, z] (x along the last axis) and a one for the translation
    axes = []
    for k in range(nsp):  # k-th coordinate varies along spatial axis nsp - 1 - k
        d = nsp - 1 - k
        shape = [1] * nsp
        shape[d] = spatial[d]
        axes.append(_S.expand(_base_coords(spatial[d], align_corners, theta).reshape(shape), spatial))
    axes.append(_C.ones(spatial, dtype=theta.dtype, device=theta.device))
    base = _S.stack(axes, -1).reshape(1, -1, nsp + 1)
    grid = _L.matmul(base, _S.transpose(theta, 1, 2))      # (N, prod(spatial), nsp)
    return own(grid.reshape((size[0],) + spatial + (nsp,)))  # (PyTorch's grid is new, not a view of the product)


# ---------------------------------------------------------------------------------------------
# grid_sample
# ---------------------------------------------------------------------------------------------
def _unnormalize(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    if align_corners:
        return _P.mul(_P.add(coord, 1.0), (size - 1) / 2)
    return _P.div(_P.sub(_P.mul(_P.add(coord, 1.0), size), 1.0), 2)


def _reflect(coord: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """Reflect coordinates into [twice_low/2, twice_high/2] (PyTorch's reflect_coordinates)."""
    if twice_low == twice_high:
        return _P.mul(coord, 0.0)
    lo = twice_low / 2
    span = (twice_high - twice_low) / 2
    c = _P.abs(_P.sub(coord, lo))
    extra = _P.fmod(c, span)
    flips = _P.floor(_P.div(c, span))
    even = _P.eq(_P.fmod(flips, 2.0), 0.0)
    return _P.where(even, _P.add(extra, lo), _P.add(_P.rsub(extra, span), lo))


def _pad_coords(coord: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    """Source coordinates after the padding mode: border clamps, reflection reflects then clamps (a NaN clamps to
    0, as PyTorch's clip_coordinates gives it)."""
    if padding_mode == "border":
        return _clip(coord, size)
    if padding_mode == "reflection":
        if align_corners:
            coord = _reflect(coord, 0, 2 * (size - 1))
        else:
            coord = _reflect(coord, -1, 2 * size - 1)
        return _clip(coord, size)
    return coord


def _clip(coord: Tensor, size: int) -> Tensor:
    """Clamp to [0, size - 1] with PyTorch's clip_coordinates_set_grad: the gradient passes only strictly inside
    (a coordinate on the border, e.g. an identity grid's -1/1 with align_corners, gets none; clamp's gradient
    passes at its bounds)."""
    c = _P.clamp(coord, 0, size - 1)
    if coord.requires_grad:
        inside = _P.logical_and(_P.gt(coord, 0), _P.lt(coord, size - 1))
        c = _P.where(inside, coord, c.detach())
    return _P.where(_P.eq(c, c), c, 0.0)


class _Taps:
    """Reads input values at integer source positions: input flattened to (N, C, prod(spatial)) and one gather per
    tap; out-of-range positions read zero (the zeros padding; the other modes never leave the range).  Each axis's
    clamped index and in-range mask are computed once (``axis``) and shared by every tap that uses them."""

    def __init__(self, input: Tensor, out_spatial: tuple, zeros: bool) -> None:
        self.n, self.c = input.shape[0], input.shape[1]
        self.sizes = tuple(input.shape[2:])
        hw = 1
        for v in self.sizes:
            hw *= v
        self.flat = input.reshape(self.n, self.c, hw)  # (explicit: n or c may be 0)
        self.out_shape = (self.n, self.c) + tuple(out_spatial)
        self.zeros = zeros
        self.p = 1
        for s in out_spatial:
            self.p *= s

    def axis(self, pos: Tensor, k: int) -> tuple:
        """(clamped int64 index, in-range mask as the input's dtype or None) for integer-valued positions along
        spatial axis k."""
        size = self.sizes[k]
        c = _P.clamp(pos, 0, size - 1)
        idx = _P.where(_P.eq(c, c), c, 0.0).to(_i64)  # a NaN position (a NaN grid) reads tap 0: NaN weights follow
        if not self.zeros:
            return idx, None
        ok = _P.logical_and(_P.ge(pos, 0), _P.le(pos, size - 1)).to(self.flat.dtype)
        return idx, ok

    def read(self, taps: list, weight: Tensor) -> Tensor:
        """One tap: taps = one ``axis`` result per spatial axis (input order); the value times
        ``weight`` (N, *out_spatial), zero where the tap is out of range."""
        lin = None
        for (idx, ok), size in zip(taps, self.sizes):
            lin = idx if lin is None else _P.add(_P.mul(lin, size), idx)
            if ok is not None:
                weight = _P.mul(weight, ok)
        assert lin is not None  # one tap per spatial axis, at least one
        index = _S.expand(lin.reshape(self.n, 1, self.p), (self.n, self.c, self.p))
        vals = _I.gather(self.flat, 2, index).reshape(self.out_shape)
        return _P.mul(vals, _S.unsqueeze(weight, 1))


def _cubic_coeffs(t: Tensor) -> list:
    """The four taps' weights of Keys' cubic convolution at fractional positions t (taps at -1, 0, 1, 2)."""
    a = _CUBIC_A

    def near(x):  # ((a + 2) x - (a + 3)) x^2 + 1
        return _P.add(_P.mul(_P.mul(_P.sub(_P.mul(x, a + 2), a + 3), x), x), 1.0)

    def far(x):  # ((a x - 5a) x + 8a) x - 4a
        return _P.sub(_P.mul(_P.add(_P.mul(_P.sub(_P.mul(x, a), 5 * a), x), 8 * a), x), 4 * a)
    return [far(_P.add(t, 1.0)), near(t), near(_P.rsub(t, 1.0)), far(_P.rsub(t, 2.0))]


def _check_grid_args(input: Tensor, grid: Tensor, mode: str) -> None:
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if input.device != grid.device:
        raise RuntimeError(f"grid_sampler(): expected input and grid to be on same device, but input is on "
                           f"{input.device} and grid is on {grid.device}")
    if input.dtype != grid.dtype:  # (PyTorch's message names the input's and the grid's scalar types)
        raise RuntimeError(f"expected scalar type {input.dtype._tname[:-6]} but found {grid.dtype._tname[:-6]}")
    if grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    nsp = input.ndim - 2
    if grid.shape[-1] != nsp:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {nsp} in last dimension, but got grid with "
                           f"sizes {list(grid.shape)}")
    for k in range(2, input.ndim):
        if input.shape[k] <= 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {list(input.shape)} with dimension {k} being empty")
    if mode == "bicubic" and nsp != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if not input.dtype.is_floating_point:  # PyTorch's cpu kernels' dispatch error
        name = "grid_sampler_2d_cpu_kernel_impl" if nsp == 2 else "grid_sampler3d_cpu"
        raise NotImplementedError(f"\"{name}\" not implemented for '{input.dtype._tname[:-6]}'")


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """Sample ``input`` (N, C, [D,] H, W) at the normalised positions ``grid`` (N, [Do,] Ho, Wo, 2 or 3)."""
    _check_tensor("grid_sample", "input", input)
    _check_tensor("grid_sample", "grid", grid)
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_DEFAULT_CHANGED, stacklevel=3)
        align_corners = False
    _check_grid_args(input, grid, mode)
    nsp = input.ndim - 2
    sizes = tuple(input.shape[2:])                      # (D,) H, W
    taps = _Taps(input, tuple(grid.shape[1:-1]), padding_mode == "zeros")
    # grid[..., 0] is x (the last axis), grid[..., 1] is y, grid[..., 2] is z: reorder to the input's axis order
    coords = [_unnormalize(_I.select(grid, -1, nsp - 1 - k), sizes[k], align_corners) for k in range(nsp)]
    if mode == "bicubic":
        return _bicubic(taps, coords, sizes, padding_mode, align_corners)
    coords = [_pad_coords(c, s, padding_mode, align_corners) for c, s in zip(coords, sizes)]
    if mode == "nearest":  # round half to even, as std::nearbyint
        ones = _C.ones(coords[0].shape, dtype=input.dtype, device=input.device)
        if grid.requires_grad:  # PyTorch's grid gradient of nearest sampling: zeros (not None)
            ones = _P.add(ones, _P.mul(_P.sub(coords[0], coords[0].detach()), 0.0))
        return taps.read([taps.axis(_P.round(c), k) for k, c in enumerate(coords)], ones)
    lows = [_P.floor(c) for c in coords]
    fracs = [_P.sub(c, lo) for c, lo in zip(coords, lows)]
    axes = [(taps.axis(lo, k), taps.axis(_P.add(lo, 1.0), k)) for k, lo in enumerate(lows)]
    weights = [(_P.rsub(f, 1.0), f) for f in fracs]
    out = None
    for corner in range(1 << nsp):                     # the 4 (8) corners of the cell around each position
        bits = [(corner >> (nsp - 1 - k)) & 1 for k in range(nsp)]
        w = weights[0][bits[0]]
        for k in range(1, nsp):
            w = _P.mul(w, weights[k][bits[k]])
        term = taps.read([axes[k][bits[k]] for k in range(nsp)], w)
        out = term if out is None else _P.add(out, term)
    assert out is not None  # 2 ** nsp corners
    return out


def _bicubic(taps: _Taps, coords: list, sizes: tuple, padding_mode: str, align_corners: bool) -> Tensor:
    """4x4 taps around floor(coordinate); each tap's integer position goes through the padding mode, as
    PyTorch's get_value_bounded does."""
    iy, ix = coords
    y0, x0 = _P.floor(iy), _P.floor(ix)
    wy = _cubic_coeffs(_P.sub(iy, y0))
    wx = _cubic_coeffs(_P.sub(ix, x0))
    ys = [taps.axis(_pad_coords(_P.add(y0, j - 1.0), sizes[0], padding_mode, align_corners), 0) for j in range(4)]
    xs = [taps.axis(_pad_coords(_P.add(x0, i - 1.0), sizes[1], padding_mode, align_corners), 1) for i in range(4)]
    out = None
    for j in range(4):  # PyTorch's order: each row interpolated along x, then the four rows along y
        row = None
        for i in range(4):
            term = taps.read([ys[j], xs[i]], wx[i])
            row = term if row is None else _P.add(row, term)
        assert row is not None
        term = _P.mul(row, _S.unsqueeze(wy[j], 1))
        out = term if out is None else _P.add(out, term)
    assert out is not None  # 16 taps
    return out
