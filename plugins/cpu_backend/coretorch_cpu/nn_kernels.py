"""Optional fused kernels of the 'cpu' device for coretorch.nn.functional (see coretorch.plugins.KERNELS).

Convolution is im2col through ``sliding_window_view`` (a zero-copy view of every window) followed by one large
matmul per call (a batched one over groups); the input gradient scatters the column gradient back with one
strided add per kernel tap (KH*KW of them), never a Python loop over pixels.  Max pooling reduces over the taps of the
window view; its backward is one ``bincount``.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view as _swv

from .backend import _reduce
_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)

_amax, _sum = _reduce(np.maximum.reduce, 32), _reduce(np.add.reduce, 16)
_max_at = np.maximum.reduceat


def _windows(x, kh, kw, stride, padding, dilation, oh, ow, pad_value=0.0):
    """(N, C, H, W) -> view (N, C, OH, OW, KH, KW) of the (padded) input's windows."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    need_h, need_w = (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1
    eh, ew = max(0, need_h - x.shape[2] - 2 * ph), max(0, need_w - x.shape[3] - 2 * pw)
    if ph or pw or eh or ew:
        x = np.pad(x, ((0, 0), (0, 0), (ph, ph + eh), (pw, pw + ew)), constant_values=pad_value)
    v = _swv(x, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(2, 3))
    return v[:, :, :need_h - (kh - 1) * dh:sh, :need_w - (kw - 1) * dw:sw, ::dh, ::dw]


def _out_hw(h, w, kh, kw, stride, padding, dilation):
    return ((h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1,
            (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1)


def _cols(x, kh, kw, stride, padding, dilation, oh, ow, groups):
    """The im2col matrices, (N, G, Cg*KH*KW, OH*OW): one copy of the window view whose innermost run is a row
    of output positions (a contiguous or strided run of OW elements, so the copy streams)."""
    n, c = x.shape[:2]
    v = _windows(x, kh, kw, stride, padding, dilation, oh, ow)
    return v.transpose(0, 1, 4, 5, 2, 3).reshape(n, groups, (c // groups) * kh * kw, oh * ow)


def _cols_cn(x, kh, kw, stride, padding, dilation, oh, ow):
    """The im2col matrix of all the batch at once, (C*KH*KW, N*OH*OW) contiguous: one GEMM per call, whose
    inner dimension N*OH*OW stays large where the late layers' OH*OW is small (a per-sample GEMM of K = 16 runs
    several times slower)."""
    n, c = x.shape[:2]
    v = _windows(x, kh, kw, stride, padding, dilation, oh, ow)
    return np.ascontiguousarray(v.transpose(1, 4, 5, 0, 2, 3)).reshape(c * kh * kw, n * oh * ow)


def conv2d(x, w, stride, padding, dilation, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh, ow = _out_hw(h, wd, kh, kw, stride, padding, dilation)
    if n * o * oh * ow == 0:  # (numpy calls any empty array contiguous: the transposed view below kept its strides)
        return np.zeros((n, o, oh, ow), x.dtype)
    if groups == 1 and oh * ow <= 256:
        # small maps: one (O, C*KH*KW) @ (C*KH*KW, N*OH*OW) GEMM, then back to NCHW (on large maps the per-sample
        # products are already large and the extra copies cost more than they save: measured on the ResNet step)
        out = np.matmul(w.reshape(o, cg * kh * kw), _cols_cn(x, kh, kw, stride, padding, dilation, oh, ow))
        return np.ascontiguousarray(out.reshape(o, n, oh, ow).transpose(1, 0, 2, 3))
    cols = _cols(x, kh, kw, stride, padding, dilation, oh, ow, groups)
    if groups == 1:     # one (O, C*KH*KW) @ (N, C*KH*KW, OH*OW) matmul, batched over N; output already NCHW
        return np.matmul(w.reshape(o, cg * kh * kw), cols[:, 0]).reshape(n, o, oh, ow)
    out = np.matmul(w.reshape(groups, o // groups, cg * kh * kw), cols)     # (N, G, Og, OH*OW)
    return out.reshape(n, o, oh, ow)


def conv2d_backward_weight(x, gy, wshape, stride, padding, dilation, groups):
    n = x.shape[0]
    o, cg, kh, kw = wshape
    oh, ow = gy.shape[2:]
    if groups == 1 and oh * ow <= 64:  # small maps: one (O, N*OH*OW) @ (N*OH*OW, C*KH*KW) GEMM, no per-sample sum
        g2 = np.ascontiguousarray(gy.transpose(1, 0, 2, 3)).reshape(o, n * oh * ow)
        return np.matmul(g2, _cols_cn(x, kh, kw, stride, padding, dilation, oh, ow).T).reshape(wshape)
    cols = _cols(x, kh, kw, stride, padding, dilation, oh, ow, groups)
    gm = gy.reshape(n, groups, o // groups, oh * ow)
    gw = np.matmul(gm, cols.transpose(0, 1, 3, 2))          # (N, G, Og, Cg*KH*KW): transposed operand, no copy
    return gw.sum(0).reshape(wshape)


def conv2d_backward_input(gy, w, xshape, stride, padding, dilation, groups):
    """Column gradient by one matmul, laid out (C, KH, KW, OH, OW, N) so that each tap's strided add into the
    (C, H, W, N) input gradient streams over runs of OW*N (or N) elements; one transpose at the end."""
    n, c, h, wd = xshape
    o, cg, kh, kw = w.shape
    oh, ow = gy.shape[2:]
    og = o // groups
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    gyt = np.ascontiguousarray(gy.reshape(n, groups, og, oh, ow).transpose(1, 2, 3, 4, 0))
    wm = w.reshape(groups, og, cg * kh * kw).transpose(0, 2, 1)             # (G, Cg*KH*KW, Og)
    gc = np.matmul(wm, gyt.reshape(groups, og, oh * ow * n)) if groups > 1 else \
        (wm[0] @ gyt.reshape(og, oh * ow * n))
    gc = gc.reshape(c, kh, kw, oh, ow, n)
    hp = max(h + 2 * ph, (oh - 1) * sh + (kh - 1) * dh + 1)
    wp = max(wd + 2 * pw, (ow - 1) * sw + (kw - 1) * dw + 1)
    gxp = np.zeros((c, hp, wp, n), gy.dtype)
    for i in range(kh):            # col2im: one strided add per kernel tap
        for j in range(kw):
            gxp[:, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw] += gc[:, i, j]
    return np.ascontiguousarray(gxp[:, ph:ph + h, pw:pw + wd].transpose(3, 0, 1, 2))


def max_pool2d(x, kernel, stride, padding, dilation, out_hw):
    """The taps of every window gathered tap-major (one streaming copy), a max over the first axis, then the
    index of the first maximum by a descending pass of masked writes; where the maximum is NaN the index of
    the last NaN, as PyTorch's CPU kernel (a tap replaces the maximum when greater or NaN)."""
    n, c, h, w = x.shape
    kh, kw = kernel
    oh, ow = out_hw
    kk = kh * kw
    v = _windows(x, kh, kw, stride, padding, dilation, oh, ow, pad_value=-np.inf)
    flat = np.ascontiguousarray(v.transpose(4, 5, 0, 1, 2, 3)).reshape(kk, n, c, oh, ow)
    vals = flat.max(0)
    bk = np.full(vals.shape, kk - 1, np.int16 if kk < 32768 else np.int64)
    for k in range(kk - 2, -1, -1):
        np.putmask(bk, flat[k] == vals, k)
    nan = np.isnan(vals)
    if nan.any():
        for k in range(kk):
            np.putmask(bk, nan & np.isnan(flat[k]), k)
    if padding[0] or padding[1]:
        # a window whose maximum is -inf matched a left/top padding tap first: PyTorch's index is its first tap
        # inside the input (the kernel starts from it and only a greater or NaN value replaces it)
        low = vals == -np.inf
        if low.any():
            fi = [-(min(0, i * stride[0] - padding[0]) // dilation[0]) for i in range(oh)]
            fj = [-(min(0, j * stride[1] - padding[1]) // dilation[1]) for j in range(ow)]
            first = np.add.outer(np.array(fi) * kw, np.array(fj))
            bk[low] = np.broadcast_to(first, bk.shape)[low]
    ki, kj = np.divmod(bk.astype(np.int64), kw)
    ki *= dilation[0] * w
    ki += (np.arange(oh) * stride[0] - padding[0])[:, None] * w
    kj *= dilation[1]
    ki += kj
    ki += np.arange(ow) * stride[1] - padding[1]
    return vals, ki


def max_pool2d_backward(g, idx, xshape):
    n, c, h, w = xshape
    base = (np.arange(n * c, dtype=np.int64) * (h * w)).reshape(n, c, 1, 1)
    flat = np.bincount((idx + base).ravel(), weights=g.ravel(), minlength=n * c * h * w)
    return flat.astype(g.dtype, copy=False).reshape(xshape)


def _row_max(x, dim):
    """Row maxima as the shift that keeps exp() finite; a row with no finite maximum is reported (its IEEE
    results come out without warnings): an all -inf row is shifted by 0 (0/0: nan), a row holding +inf or nan
    by its maximum, which makes the whole row nan as in PyTorch."""
    d = x.shape[dim] if x.ndim else 1
    if d > 32 and (dim == -1 or dim == x.ndim - 1) and x.flags.c_contiguous:
        # rows of a contiguous last axis: maximum.reduceat runs them in one loop, ~1.4x faster than reduce's
        # iteration per row (a maximum is the same whatever the order)
        m = _max_at(x.reshape(-1), np.arange(0, x.size, d)).reshape(x.shape[:-1] + (1,))
    else:
        m = _amax(x, (dim,), True)
    finite = np.isfinite(m)
    if finite.all():
        return m, True
    m[np.isneginf(m)] = 0
    return m, False


def _half_in_float(fn):
    """``fn`` of float16 arrays computed in float32 and rounded once, as PyTorch's softmax kernels (numpy's half
    exp, subtraction and row sum each rounded to half: results 3 ulp off)."""
    def k(x, *args):
        if x.dtype == _F16:
            return fn(x.astype(_F32), *[a.astype(_F32) if a.__class__ is np.ndarray and a.dtype == _F16 else a
                                        for a in args]).astype(_F16)
        return fn(x, *args)
    k.__name__ = fn.__name__
    return k


@_half_in_float
def softmax(x, dim):
    m, finite = _row_max(x, dim)
    if finite:  # every row sum is >= 1 (its maximum contributes exp(0))
        e = np.subtract(x, m, out=np.empty(x.shape, x.dtype))  # (row-major whatever x's layout, as PyTorch's)
        np.exp(e, out=e)
        e /= _sum(e, (dim,), True)
        return e
    with np.errstate(all="ignore"):
        e = np.subtract(x, m, out=np.empty(x.shape, x.dtype))  # (row-major whatever x's layout, as PyTorch's)
        np.exp(e, out=e)
        e /= _sum(e, (dim,), True)
    return e


@_half_in_float
def log_softmax(x, dim):
    m, finite = _row_max(x, dim)
    if finite:
        z = np.subtract(x, m, out=np.empty(x.shape, x.dtype))
        z -= np.log(_sum(np.exp(z), (dim,), True))
        return z
    with np.errstate(all="ignore"):
        z = np.subtract(x, m, out=np.empty(x.shape, x.dtype))
        z -= np.log(_sum(np.exp(z), (dim,), True))
    return z


@_half_in_float
def log_softmax_backward(g, y, dim):
    """g - exp(y) * sum(g over dim): one fresh array, written in place."""
    r = np.exp(y)
    r *= _sum(g, (dim,), True)
    np.subtract(g, r, out=r)
    return r


KERNELS = {"conv2d": conv2d, "conv2d_backward_input": conv2d_backward_input,
           "conv2d_backward_weight": conv2d_backward_weight, "max_pool2d": max_pool2d,
           "max_pool2d_backward": max_pool2d_backward, "softmax": softmax, "log_softmax": log_softmax,
           "log_softmax_backward": log_softmax_backward}
