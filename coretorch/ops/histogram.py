"""torch.histogram and torch.histogramdd: counts (or summed weights) of the points in each bin, with the bin edges,
as PyTorch's named tuples.

Bins are given as a count (uniform edges from ``range``, else from the data's min and max: those two values per
dim are read back to the host, as PyTorch reads them, to check they are finite and build the edges with
``linspace``) or as edge tensors.  A point belongs to bin ``i`` when ``edges[i] <= x < edges[i + 1]`` (the last
bin is closed on the right: ``bucketize`` against the edges, so a point on an edge is never off by one); points
outside the edges are not counted.  The counts are one ``bincount`` on the device.
"""
from __future__ import annotations

import math

from ..autograd._zero import not_implemented_graph
from ..tensor import Tensor
from . import reduction as _R, shape as _S
from ._util import return_type
from .creation import linspace
from .pointwise import add, div, eq, ge, le, logical_and, mul, sub, where
from .sorting import bucketize
from .statistics import bincount

__all__: list[str] = ["histogram", "histogramdd"]
METHODS: dict = {}

histogram_result = return_type("histogram", ("hist", "bin_edges"))
histogramdd_result = return_type("histogramdd", ("hist", "bin_edges"))


def _edges(x: Tensor, d: int, bins, rng) -> Tensor:
    """The edges of dim ``d``: a given tensor, or ``bins + 1`` uniform edges over ``rng`` or the data's range."""
    if isinstance(bins, Tensor):
        if bins.ndim != 1 or bins.shape[0] < 1:
            raise RuntimeError(f"torch.histogramdd: expected bin_edges for dimension {d} to be a 1-D tensor with at "
                               "least 1 element")
        if bins.shape[0] == 1:  # (one edge: no bin)
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got 0 for dimension {d}")
        return bins.to(x.dtype)
    n = int(bins)
    if n <= 0:
        raise RuntimeError(f"torch.histogramdd(): bins must be > 0, but got {n} for dimension {d}")
    if rng is not None:
        lo, hi = float(rng[0]), float(rng[1])
    elif x.shape[0] == 0:
        lo, hi = 0.0, 1.0
    else:
        col = x[:, d]
        lo, hi = float(_R.amin(col).item()), float(_R.amax(col).item())
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histogramdd: dimension {d}'s range [{lo:g}, {hi:g}] is not finite")
    if lo > hi:
        raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {lo:g} max {hi:g} for "
                           f"dimension {d}")
    if lo == hi:  # an empty range is widened by a half on each side (PyTorch's, numpy's)
        lo, hi = lo - 0.5, hi + 0.5
    return linspace(lo, hi, n + 1, dtype=x.dtype, device=x.device)


def _histdd(input: Tensor, bins, rng, weight, density: bool, name: str) -> tuple[Tensor, list[Tensor]]:
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{input.dtype._tname[:-6]}'")
    if input.ndim < 1:
        raise RuntimeError(f"torch.{name}: input tensor should have at least 1 dimension, but got 0 dimensions")
    D = input.shape[-1]
    x = _S.reshape(input, (-1, D))
    if isinstance(bins, (int, Tensor)):
        bins = [bins] * D
    bins = list(bins)
    if len(bins) != D:
        raise RuntimeError(f"torch.{name}: expected {D} sequences of bin edges for each of the {D} dimensions of the "
                           f"input, but got {len(bins)}")
    if rng is not None and len(rng) != 2 * D:
        raise RuntimeError(f"torch.{name}: for a {D}-dimensional histogram range should have {2 * D} elements, but "
                           f"got {len(rng)}")
    for d, b in enumerate(bins):   # (PyTorch converts neither: an int64 edge tensor against float input raises)
        if isinstance(b, Tensor) and b.dtype is not input.dtype:
            raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the same dtype, but got "
                               f"input with dtype {input.dtype} and bins for dimension {d} with dtype {b.dtype}")
    if weight is not None and weight.dtype is not input.dtype:
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided, input tensor and weight tensor should "
                           f"have the same dtype, but got input({input.dtype}), and weight({weight.dtype})")
    edges = [_edges(x, d, b, None if rng is None else rng[2 * d:2 * d + 2]) for d, b in enumerate(bins)]
    nb = [e.shape[0] - 1 for e in edges]
    total = math.prod(nb)
    idx = valid = None
    for d, e in enumerate(edges):
        col = x[:, d]
        # bucketize(right=True) - 1: the bin whose left edge is <= x; the last edge itself is in the last bin
        pos = sub(bucketize(col, e, right=True), 1)
        pos = where(eq(col, e[-1]), nb[d] - 1, pos)
        ok = logical_and(ge(col, e[0]), le(col, e[-1]))
        idx = pos if idx is None else add(mul(idx, nb[d]), pos)
        valid = ok if valid is None else logical_and(valid, ok)
    if idx is None or total == 0:
        hist = x.new_zeros(tuple(nb))
    else:
        idx = where(valid, idx, total)  # the points outside go to one extra bin, dropped below
        w = None if weight is None else _S.reshape(weight, (-1,)).to(input.dtype)
        hist = bincount(idx, w, minlength=total + 1)[:total].to(input.dtype).reshape(tuple(nb))
    if density:
        width = None
        for d, e in enumerate(edges):
            wd = sub(e[1:], e[:-1]).reshape([nb[d] if k == d else 1 for k in range(D)])
            width = wd if width is None else mul(width, wd)
        hist = div(hist, mul(_R.sum(hist), width))
    # PyTorch: the outputs join the graph of an input that requires grad, and their backward raises
    ins = (input, weight)
    return not_implemented_graph(hist, ins, name), [not_implemented_graph(e, ins, name) for e in edges]


def histogram(input: Tensor, bins=100, *, range=None, weight: Tensor | None = None, density: bool = False,
              out=None):
    """``(hist, bin_edges)``: the histogram of every element of ``input`` (a float tensor); ``bins`` a count of
    uniform bins over ``range`` (default the data's min and max) or a 1-D tensor of increasing edges; ``weight``
    (input's shape) sums weights instead of counting; ``density`` normalises to a probability density."""
    hist, edges = _histdd(_S.reshape(input, (-1, 1)), [bins], None if range is None else tuple(range), weight,
                          density, "histogram")
    r = histogram_result(hist, edges[0])
    if out is not None:
        out[0].resize_(hist.shape).copy_(hist)
        out[1].resize_(edges[0].shape).copy_(edges[0])
        return histogram_result(*out)
    return r


def histogramdd(input: Tensor, bins, range=None, weight: Tensor | None = None, density: bool = False):
    """``(hist, bin_edges)``: the D-dimensional histogram of the points ``input[..., :]`` (last dim D); ``bins``
    an int, D ints or D edge tensors; ``range`` ``[min_0, max_0, ..., min_{D-1}, max_{D-1}]``."""
    if isinstance(input, Tensor) and input.ndim < 2:  # (the points are input's last dim: a 1-D input is no batch)
        if input.ndim == 0:
            raise IndexError("Dimension specified as -1 but tensor has no dimensions")
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    if isinstance(input, Tensor) and weight is not None and tuple(weight.shape) != tuple(input.shape[:-1]):
        raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the same shape as the input "
                           f"tensor excluding its innermost dimension, but got input with shape {list(input.shape)} "
                           f"and weight with shape {list(weight.shape)}")
    hist, edges = _histdd(input, bins, range, weight, density, "histogramdd")
    return histogramdd_result(hist, tuple(edges))


METHODS.update({"histogram": histogram})
