"""nn.functional fractional max pooling (Graham, 2014): fractional_max_pool2d/3d (and their _with_indices forms),
and lp_pool3d.

The pooling windows start at ATen's pseudo-random sequence, start_i = int((i + u) alpha) - int(u alpha) with
alpha = (input - kernel) / (output - 1) computed in the input's dtype and the last window flush with the input's
end, one sample u per (batch, channel, dim) from ``_random_samples`` (drawn with ``torch.rand`` when not given);
so a given ``_random_samples`` gives PyTorch's windows.  Everything runs as tensor ops on the input's device: the
window taps are gathered, the winner per window is the last NaN or else the first maximum (ATen's rule), and the
result is one node (``FractionalMaxPool2DBackward0``) whose backward scatters the gradient to the winners."""
from __future__ import annotations

import math

import numpy as np

from ... import dtypes as _dt
from ...autograd._zero import links_inputs
from ...autograd.grad_mode import no_grad, state as _gs
from ...autograd.graph import Node
from ...ops import creation as _C, indexing as _I, pointwise as _P, random as _Rn, reduction as _R, shape as _S
from ...ops._util import edge
from ...tensor import Tensor, _make
from ._activation import relu
from ._pooling3d import _triple, avg_pool3d, max_pool3d

__all__ = ["fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
           "fractional_max_pool3d_with_indices", "lp_pool3d"]

_DIMS = {2: ("height", "width"), 3: ("time", "height", "width")}


def _tuple(v, n: int) -> tuple:
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


@links_inputs
class _FractionalBackward(Node):
    """Scatters the gradient to each window's winner (index_add: differentiable, so double backward works)."""
    __slots__ = ("shape",)

    def backward(self, g):
        idx = self.saved()[0]  # (B, C, L) flat positions in each plane
        B, C = idx.shape[0], idx.shape[1]
        plane = math.prod(self.shape) // max(1, B * C)
        z = _C.zeros((B, C, plane), dtype=g.dtype, device=g.device)
        return (_S.reshape(_I._scatter_add(z, 2, idx, _S.reshape(g, (B, C, -1)), False), self.shape),)


FractionalMaxPool2DBackward0 = type("FractionalMaxPool2DBackward0", (_FractionalBackward,), {"__slots__": ()})
FractionalMaxPool3DBackward0 = type("FractionalMaxPool3DBackward0", (_FractionalBackward,), {"__slots__": ()})


def _starts(u: Tensor, n_in: int, n_out: int, k: int) -> Tensor:
    """ATen's generate_intervals for samples u (B, C) in the input's dtype -> window starts (B, C, n_out) int64."""
    last = _C.full((u.shape[0], u.shape[1], 1), n_in - k, dtype=_dt.int64, device=u.device)
    if n_out <= 1:
        return _I.narrow(last, 2, 0, n_out)
    npdt = u.dtype.np
    alpha = float(np.asarray(n_in - k, npdt) / np.asarray(n_out - 1, npdt))  # rounded as ATen's scalar_t
    i = _C.arange(n_out - 1, dtype=u.dtype, device=u.device)
    u3 = _S.unsqueeze(u, 2)
    first = _P.sub(_P.trunc(_P.mul(_P.add(i, u3), alpha)).to(_dt.int64), _P.trunc(_P.mul(u3, alpha)).to(_dt.int64))
    return _S.cat([first, last], 2)


def _fractional(nd: int, input: Tensor, kernel_size, output_size, output_ratio, _random_samples):
    op = f"fractional_max_pool{nd}d"
    where = f"{op}()" if nd == 2 else f"{op}_out()"
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{where}: Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(input.shape)}")
    spatial = tuple(input.shape[-nd:])
    if output_size is None:
        if nd == 2 and len(output_ratio) > nd:  # (PyTorch's 2-d op takes len() of the ratio: a bare float raises
            # TypeError there too; its 3-d op takes a bare float as (r, r, r))
            raise ValueError(f"{op} requires output_ratio to either be a single Int or tuple of Ints.")
        ratio = _tuple(output_ratio, nd)
        output_size = [int(spatial[i] * ratio[i]) for i in range(nd)]
    outs = tuple(int(v) for v in _tuple(output_size, nd))
    ks = tuple(int(v) for v in _tuple(kernel_size, nd))
    batched = input.ndim == nd + 2
    x = input if batched else _S.unsqueeze(input.detach(), 0)
    B, C = x.shape[0], x.shape[1]
    if _random_samples is None:
        _random_samples = _Rn.rand(B, C, nd, dtype=input.dtype, device=input.device)
    rs = _random_samples
    if rs.dtype is not input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if rs.ndim != 3:
        raise RuntimeError(f"Expect _random_samples to be 3D tensor, got: {rs.ndim}D")
    if rs.shape[2] != nd:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {nd}; got {rs.shape[2]}.")
    if rs.shape[1] != C:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if rs.shape[0] < B:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    for i in range(nd):
        if outs[i] + ks[i] - 1 > spatial[i] - (nd == 3):  # ATen's 3-d check is strict (output + pool - 1 < input)
            raise RuntimeError(f"{where}: pool {_DIMS[nd][i]} {ks[i]} too large relative to input {_DIMS[nd][i]} "
                               f"{spatial[i]}")
    # samples: ATen reads (2-d) [W, H] and (3-d) [T, H, W]
    order = (1, 0) if nd == 2 else (0, 1, 2)
    with no_grad():
        rs = rs.detach().to(x.device)
        flat: Tensor | None = None
        stride = 1
        for d in range(nd - 1, -1, -1):  # the flat in-plane index of every window tap, built dim by dim
            st = _starts(_I.narrow(rs, 0, 0, B)[:, :, order[d]], spatial[d], outs[d], ks[d])   # (B, C, out_d)
            taps = _P.add(_S.unsqueeze(st, 3), _C.arange(ks[d], dtype=_dt.int64, device=x.device))  # (B,C,o,k)
            shape = [B, C] + [1] * (2 * nd)
            shape[2 + d], shape[2 + nd + d] = outs[d], ks[d]
            t = _S.reshape(_P.mul(taps, stride), tuple(shape))
            flat = t if flat is None else _P.add(flat, t)
            stride *= spatial[d]
        L, K = math.prod(outs), math.prod(ks)
        if L and K and flat is not None:
            flat = _S.reshape(flat, (B, C, L, K))
        else:
            flat = _C.zeros((B, C, L, K), dtype=_dt.int64, device=x.device)
        xp = _S.reshape(x.detach(), (B, C, -1))
        if L:
            vals = _S.reshape(_I.gather(xp, 2, _S.reshape(flat, (B, C, L * K))), (B, C, L, K))
            nan = _P.isnan(vals)
            first_max = _R.argmax(_P.where(nan, -math.inf, vals), 3, keepdim=True)
            last_nan = _P.sub(K - 1, _R.argmax(_S.flip(nan, (3,)).to(_dt.int8), 3, keepdim=True))
            win = _P.where(_R.any(nan, 3, keepdim=True), last_nan, first_max)
            idx = _S.reshape(_I.gather(flat, 3, win), (B, C, L))
            out = _I.gather(xp, 2, idx)
        else:
            idx = _C.zeros((B, C, 0), dtype=_dt.int64, device=x.device)
            out = _C.zeros((B, C, 0), dtype=x.dtype, device=x.device)
        oshape = (tuple(input.shape[:-nd]) if batched else (C,)) + outs
        out = _S.reshape(out, oshape)
        indices = _S.reshape(idx, oshape)
    if input._rg and _gs.enabled:
        node = (FractionalMaxPool2DBackward0 if nd == 2 else FractionalMaxPool3DBackward0)()
        node.shape = tuple(input.shape)
        node.save(idx, input)  # (input for its version, as PyTorch's node saves self)
        node.next_functions = (edge(input),)
        out = _make(out._data, out.dtype, out._be, node)
    return out, indices


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                                       return_indices: bool = False, _random_samples=None):
    """(output, indices) of 2-d fractional max pooling over (N, C, H, W) or (C, H, W)."""
    return _fractional(2, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool2d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples=None):
    """2-d fractional max pooling: windows of ``kernel_size`` at pseudo-random steps giving ``output_size`` (or
    ``output_ratio`` of the input size); with ``return_indices`` also the flat h * W + w index of each winner."""
    out, idx = _fractional(2, input, kernel_size, output_size, output_ratio, _random_samples)
    return (out, idx) if return_indices else out


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                                       return_indices: bool = False, _random_samples=None):
    """(output, indices) of 3-d fractional max pooling over (N, C, T, H, W) or (C, T, H, W)."""
    return _fractional(3, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool3d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples=None):
    """3-d fractional max pooling (see fractional_max_pool2d); indices are flat t * H * W + h * W + w."""
    out, idx = _fractional(3, input, kernel_size, output_size, output_ratio, _random_samples)
    return (out, idx) if return_indices else out


def lp_pool3d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """(sum over each 3-d window of x^p)^(1/p), as PyTorch composes it (avg_pool3d of x^p times the window size)."""
    kd, kh, kw = _triple(kernel_size, "lp_pool3d: kernel_size must be a single int, or a tuple of three ints")
    if isinstance(norm_type, (int, float)) and math.isinf(norm_type):  # PyTorch: the max of |x| (or -max of -|x|)
        m = max_pool3d(_P.abs(input) if norm_type > 0 else _P.neg(_P.abs(input)), kernel_size, stride, 0, 1, ceil_mode)
        return m if norm_type > 0 else _P.neg(m)
    out = avg_pool3d(_P.pow(input, norm_type), kernel_size, stride, 0, ceil_mode)
    return _P.pow(_P.mul(_P.mul(_P.sign(out), relu(_P.abs(out))), kd * kh * kw), 1.0 / norm_type)
