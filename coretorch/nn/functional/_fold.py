"""nn.functional unfold (im2col) and fold (col2im), lp_pool1d/2d, gumbel_softmax and embedding_bag, written as
compositions of differentiable ops (gather by index, index_add, pooling), so autograd and every device come free."""
from __future__ import annotations

import warnings

import numpy as np

from ... import dtypes as _dt
from ...ops import creation as _C, indexing as _I, pointwise as _P, reduction as _R, shape as _S
from ...ops._own import own
from ...ops._rangecheck import any_outside
from ...tensor import Tensor
from ._activation import relu, softmax
from ._basic import embedding
from ._common import _no_grad
from ._padding import pad
from ._pooling import avg_pool1d, avg_pool2d, max_pool1d, max_pool2d

__all__ = ["unfold", "fold", "lp_pool1d", "lp_pool2d", "gumbel_softmax", "embedding_bag"]


def _pair(v, name: str) -> tuple[int, int]:
    if isinstance(v, int):
        return (v, v)
    v = tuple(v)
    if len(v) != 2:  # (no broadcast of a 1-tuple: PyTorch's im2col/col2im check)
        raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(v)}")
    return v


def _check_dtype(input: Tensor, op: str) -> None:
    """PyTorch's im2col/col2im kernels take floating and bool tensors, not integers."""
    dt = input.dtype
    if not dt.is_floating_point and dt is not _dt.bool_:
        raise NotImplementedError(f"\"{op}_out_cpu\" not implemented for '{dt._tname[:-6]}'")


def _check_window(k, d, p, s) -> None:
    """PyTorch's im2col/col2im argument checks."""
    if k[0] <= 0 or k[1] <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: {k[0]} kernel_width: "
                           f"{k[1]}")
    if s[0] <= 0 or s[1] <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: {s[0]} stride_width: {s[1]}")
    if d[0] <= 0 or d[1] <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: {d[0]} dilation_width: "
                           f"{d[1]}")
    if p[0] < 0 or p[1] < 0:
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {p[0]} pad_width: {p[1]}")


def _windows(hp: int, wp: int, k, d, s) -> tuple[np.ndarray, int, int]:
    """Flat indices into a padded (hp, wp) plane: (kh*kw, L) with L the number of sliding blocks."""
    oh = (hp - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (wp - d[1] * (k[1] - 1) - 1) // s[1] + 1
    ki = (np.arange(k[0]) * d[0])[:, None] * wp + (np.arange(k[1]) * d[1])[None, :]    # offsets in a block
    bi = (np.arange(oh) * s[0])[:, None] * wp + (np.arange(ow) * s[1])[None, :]        # block origins
    return (ki.reshape(-1, 1) + bi.reshape(1, -1)).astype(np.int64), oh, ow


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """(N, C, H, W) -> (N, C*kh*kw, L): every sliding block as a column (im2col)."""
    k, d, p, s = (_pair(v, n) for v, n in ((kernel_size, "kernel_size"), (dilation, "dilation"),
                                          (padding, "padding"), (stride, "stride")))
    _check_window(k, d, p, s)
    nd = input.ndim
    if nd < 3:  # (PyTorch reads the size of dim 2 first)
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(nd, 1)}, {max(nd, 1) - 1}], "
                         f"but got {max(nd, 1)})")
    if nd > 4 or 0 in input.shape[nd - 3:]:
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    _check_dtype(input, "im2col")
    batched = input.ndim == 4
    x = input if batched else _S.unsqueeze(input, 0)
    n, c, h, w = x.shape
    if p != (0, 0):
        x = pad(x, (p[1], p[1], p[0], p[0]))
    hp, wp = h + 2 * p[0], w + 2 * p[1]
    idx, oh, ow = _windows(hp, wp, k, d, s)
    if oh <= 0 or ow <= 0:
        raise RuntimeError(f"Given input with spatial size ({h}, {w}), kernel_size={k}, dilation={d}, "
                           f"padding={p}, calculated shape of the array of sliding blocks as ({oh}, {ow}), but its "
                           "components must be at least one.")
    flat_idx = _C.tensor(idx.reshape(-1), device=x.device)
    cols = _I.index_select(x.reshape(n, c, hp * wp), 2, flat_idx)       # (N, C, kh*kw*L)
    out = cols.reshape(n, c * k[0] * k[1], oh * ow)
    return own(out if batched else _S.squeeze(out, 0))  # (not a view of cols: PyTorch's im2col result is new)


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """(N, C*kh*kw, L) -> (N, C, H, W): the columns summed back into place (col2im; overlaps add up)."""
    o, k, d, p, s = (_pair(v, n) for v, n in ((output_size, "output_size"), (kernel_size, "kernel_size"),
                                             (dilation, "dilation"), (padding, "padding"), (stride, "stride")))
    _check_window(k, d, p, s)
    if input.ndim not in (2, 3) or 0 in input.shape[input.ndim - 2:]:
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    batched = input.ndim == 3
    x = input if batched else _S.unsqueeze(input, 0)
    n, ck, L = x.shape
    kk = k[0] * k[1]
    if ck % kk:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={ck} and kernel_size={k}.")
    hp, wp = o[0] + 2 * p[0], o[1] + 2 * p[1]
    idx, oh, ow = _windows(hp, wp, k, d, s)
    if oh * ow != L:
        raise RuntimeError(f"Given output_size={o}, kernel_size={k}, dilation={d}, padding={p}, stride={s}, "
                           f"expected size of input's dimension 2 to match the calculated number of sliding blocks "
                           f"{oh} * {ow} = {oh * ow}, but got input.size(2)={L}.")
    _check_dtype(input, "col2im")
    c = ck // kk
    flat_idx = _C.tensor(idx.reshape(-1), device=x.device)
    plane = _C.zeros((n, c, hp * wp), dtype=x.dtype, device=x.device)
    plane = _I.index_add(plane, 2, flat_idx, x.reshape(n, c, kk * L))
    out = plane.reshape(n, c, hp, wp)[:, :, p[0]:p[0] + o[0], p[1]:p[1] + o[1]]
    out = out if batched else _S.squeeze(out, 0)
    # a row-major tensor of its own, as PyTorch's col2im (a view of the padded plane: strided, with a _base)
    return own(out) if p == (0, 0) else _S.contiguous(out)


def _lp_inf(pool, input, norm_type, kernel_size, stride, ceil_mode):
    m = pool(_P.abs(input) if norm_type > 0 else _P.neg(_P.abs(input)), kernel_size, stride, 0, 1, ceil_mode)
    return m if norm_type > 0 else _P.neg(m)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """(sum over each window of x^p)^(1/p)."""
    kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else kernel_size  # (PyTorch's unpacking)
    if isinstance(norm_type, (int, float)) and np.isinf(norm_type):  # PyTorch: the max of |x| (or -max of -|x|)
        return _lp_inf(max_pool2d, input, norm_type, kernel_size, stride, ceil_mode)
    out = avg_pool2d(_P.pow(input, norm_type), kernel_size, stride, 0, ceil_mode)
    return _P.pow(_P.mul(_P.mul(_P.sign(out), relu(_P.abs(out))), kh * kw), 1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride=None, ceil_mode: bool = False) -> Tensor:
    """1-D power-average pooling: ``(sum over the window of x ** p) ** (1 / p)`` with ``p = norm_type``."""
    if isinstance(norm_type, (int, float)) and np.isinf(norm_type):
        return _lp_inf(max_pool1d, input, norm_type, kernel_size, stride, ceil_mode)
    out = avg_pool1d(_P.pow(input, norm_type), kernel_size, stride, 0, ceil_mode)
    return _P.pow(_P.mul(_P.mul(_P.sign(out), relu(_P.abs(out))), kernel_size), 1.0 / norm_type)


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    """softmax((logits + Gumbel noise) / tau); ``hard``: the one-hot argmax in the forward pass with the soft
    sample's gradient (straight-through)."""
    gumbels = _P.neg(_P.log(_C.empty(logits.shape, dtype=logits.dtype, device=logits.device).exponential_()))
    y_soft = softmax(_P.div(_P.add(logits, gumbels), tau), dim)
    if not hard:
        return y_soft
    index = _R.max(y_soft, dim, keepdim=True)[1]
    y_hard = _C.zeros_like(logits).scatter_(dim, index, 1.0)
    return _P.add(_P.sub(y_hard, y_soft.detach()), y_soft)


def _check_bag_args(input, weight, offsets, mode: str, scale_grad_by_freq: bool, sparse: bool,
                    padding_idx) -> None:
    """F.embedding_bag's argument checks as PyTorch's (its Python checks and those of the ATen op)."""
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    n = weight.shape[0]
    if padding_idx is not None and not -n <= padding_idx < n:
        raise RuntimeError(f"padding_idx must be within the number of embeddings, -{n} through {n - 1}, but got "
                           f"{padding_idx}")
    for name, t in (("indices", input), ("offsets", offsets)):
        if t is not None and t.dtype is not _dt.int64 and t.dtype is not _dt.int32:
            raise RuntimeError(f"Expected tensor for argument #{1 if name == 'indices' else 2} '{name}' to have "
                               f"one of the following scalar types: Long, Int; but got {t.type()} instead "
                               "(while checking arguments for embedding_bag)")


def _check_offsets(offsets, n: int) -> None:
    """PyTorch's CPU checks of the offsets (host memory only: a read of two values; PyTorch's CUDA kernels check
    nothing): they start at 0 and do not pass the input's end (a later offset gave empty bags silently)."""
    if not offsets._be.host_memory or not offsets.shape[0]:
        return
    # one boolean read each (the same value while the offsets are valid: a compiled step's checked read replays;
    # reading the offsets themselves would be a whole-array read, a graph break)
    if any_outside(offsets[:1], 0, 1):
        raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {int(offsets[0])}")
    if any_outside(offsets[-1:], 0, n + 1):
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got offsets[-1] of "
                           f"{int(offsets[-1])}")


def _bag_argmax(r: Tensor, bag: Tensor, idx: Tensor, keep, zeros: Tensor) -> tuple:
    """PyTorch's max_indices of each bag and column: its kernel keeps the bag's first (non-padding) element and
    replaces it by a strictly greater one, so a NaN never wins unless it comes first (then nothing replaces it),
    and a tie goes to the first.  (first index (b, d) or None without rows, the maxima ignoring NaN)"""
    t, d = r.shape
    nan = _P.ne(r, r)
    rn = _P.where(nan, float("-inf"), r)
    best = zeros.scatter_reduce(0, idx, rn, "amax", include_self=False)
    if not t:
        return None, best
    b = zeros.shape[0]
    ar = _C.arange(t, device=r.device)
    pos = _P.where(_P.eq(rn, _I.index_select(best, 0, bag)), _S.expand(_S.unsqueeze(ar, 1), (t, d)), t - 1)
    first = _C.full((b, d), t - 1, dtype=_dt.int64, device=r.device).scatter_reduce(0, idx, pos, "amin")
    valid = ar if keep is None else _P.where(keep, ar, t - 1)
    start = _C.full((b,), t - 1, dtype=_dt.int64, device=r.device).scatter_reduce(0, bag, valid, "amin")
    start = _S.expand(_S.unsqueeze(start, 1), (b, d))
    return _P.where(_I.gather(nan, 0, start), start, first), best


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm=None,
                  norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """Sums, means or maxima of bags of embeddings: a 2-D ``input`` is one bag per row; a 1-D ``input`` is cut into
    bags at ``offsets``.  ``padding_idx`` entries are left out (an empty bag gives zeros)."""
    if weight.dtype is _dt.int64 and input.dtype.is_floating_point:  # PyTorch's old argument order
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage `embedding_bag(weight, "
                      "input, ...)` is deprecated, and should now be `embedding_bag(input, weight, ...)`.",
                      stacklevel=2)
        weight, input = input, weight
    _check_bag_args(input, weight, offsets, mode, scale_grad_by_freq, sparse, padding_idx)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    if per_sample_weights is not None and tuple(per_sample_weights.shape) != tuple(input.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    if per_sample_weights is not None and per_sample_weights.dtype is not weight.dtype:
        raise RuntimeError(f"Expected tensor for argument #1 'weight' to have the same type as tensor for argument "
                           f"#1 'per_sample_weights'; but type {weight.type()} does not equal "
                           f"{per_sample_weights.type()} (while checking arguments for embedding_bag)")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        b, m = input.shape
        bag = _S.expand(_S.unsqueeze(_C.arange(b, device=input.device), 1), (b, m)).reshape(-1)
        flat = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        flat = input
        _check_offsets(offsets, flat.shape[0])
        starts = offsets[:-1] if include_last_offset else offsets
        b = starts.shape[0]
        if b == 0:  # no bags (include_last_offset with one offset): a (0, D) result, still on weight's graph
            return _P.mul(weight[:0], 0.0)
        from ...ops.sorting import searchsorted
        positions = _C.arange(flat.shape[0], device=input.device, dtype=offsets.dtype)
        bag = _P.sub(searchsorted(starts, positions, right=True), 1)
        if include_last_offset and flat.shape[0]:
            bag = _P.clamp(bag, max=b - 1)
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    n = weight.shape[0]
    if flat.shape[0] and flat._be.host_memory and any_outside(flat, 0, n):  # (the device checks at its next read)
        bad = next(v for v in flat.tolist() if not 0 <= v < n)
        raise RuntimeError(f"embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be {bad}")
    rows = embedding(flat, weight, None, max_norm, norm_type, scale_grad_by_freq, sparse)   # (T, D)
    keep = None
    if padding_idx is not None:  # (a where: a padding row holding inf/NaN is skipped, as PyTorch's kernels)
        pi = padding_idx if padding_idx >= 0 else weight.shape[0] + padding_idx
        keep = _P.ne(flat, pi)
        rows = _P.where(_S.unsqueeze(keep, 1), rows, 0.0)
    if per_sample_weights is not None:
        rows = _P.mul(rows, _S.unsqueeze(per_sample_weights, 1))
    d = weight.shape[1]
    zeros = _C.zeros((b, d), dtype=weight.dtype, device=weight.device)
    if mode == "max":
        if keep is not None:
            rows = _P.where(_S.unsqueeze(keep, 1), rows, float("-inf"))
        idx = _S.expand(_S.unsqueeze(bag, 1), (bag.shape[0], d))
        with _no_grad():
            first, best = _bag_argmax(rows.detach(), bag, idx, keep, zeros)
        # no rows: zeros that still depend on weight (PyTorch's result requires grad; its gradient is zero)
        out = _I.gather(rows, 0, first) if first is not None else _P.add(best, _P.mul(_R.sum(rows), 0.0))
        counts = _I.index_add(_C.zeros(b, dtype=_dt.int64, device=weight.device), 0, bag,
                              (keep if keep is not None else _C.ones_like(flat, dtype=_dt.bool_)).to(_dt.int64))
        return _P.where(_S.unsqueeze(_P.gt(counts, 0), 1), out, 0.0)
    out = _I.index_add(zeros, 0, bag, rows)
    if mode == "mean":
        ones = keep.to(weight.dtype) if keep is not None else _C.ones(flat.shape, dtype=weight.dtype,
                                                                      device=weight.device)
        counts = _I.index_add(_C.zeros(b, dtype=weight.dtype, device=weight.device), 0, bag, ones)
        out = _P.div(out, _S.unsqueeze(_P.clamp(counts, min=1.0), 1))
    return out
