"""The optional fused kernels of coretorch.nn.functional on 'opencl' (see coretorch.plugins.KERNELS).

One program per dtype holds every kernel here (one build per dtype):

* convolution: an on-device im2col (strided input read in place, zero padding, dilation, groups; one work-item
  per output row) into a column matrix whose layout the caller picks, then the batched matmul of ``matmul.py``
  (the register-blocked kernel where the shapes tile, split over k for the weight gradient); the input
  gradient is a matmul into columns followed by a col2im *gather* (each input element sums its taps in tap
  order: deterministic, no atomics);
* max pooling: one work-item per output row, taps in order, replacing the maximum when greater or NaN (the CPU
  kernel's rule: first maximum, last NaN); the backward is one work-item per (n, c) plane adding its
  gradients in output order (deterministic, no atomics);
* indices are decoded in 32-bit integers (64-bit division cost 3x in the LeNet step's im2col);
* softmax / log_softmax: one work-item per row, or one work-group per row (a local-memory tree reduction)
  for long contiguous rows;
* nll_loss: one work-item per row; an out-of-range target is a device-side check (``Device.error_buffer``)
  reported at the next host read, so a training step needs no read of its own; its backward one work-item per
  element of the (M, C) gradient (one launch instead of a fill, an arange and an indexed write after four small
  kernels for the coefficients).
"""
from __future__ import annotations

import numpy as np

from . import codegen as cg
from .layout import _collapse, _desc, _expand_strides, _numel, _pad  # noqa: F401
from .device import STATS


def _src(dt, wg: int) -> str:
    t, ct = cg.stype(dt), cg.ctype(dt)

    def ld(p, i):
        return cg.load(dt, p, i)

    def st(p, i, v):
        return cg.store(dt, p, i, v)
    xr, xw = ld('x', 'xo + base + j * inner'), ld('x', 'xo + base + j')    # a row element (strided / wg)
    return f"""
__kernel void im2col(__global {t}* o, long oo, long sg, long sn, long sk, long sp,
                     __global const {t}* x, long xo, long xs0, long xs1, long xs2, long xs3,
                     int rows, int C, int H, int W, int KH, int KW, int OH, int OW, int Cg,
                     int sh, int sw, int ph, int pw, int dh, int dw) {{
  int g = get_global_id(0); if (g >= rows) return;     // one work-item per (n, c, i, j, oh): a row of OW
  int r = g; int oh = r % OH; r /= OH; int j = r % KW; r /= KW;
  int i = r % KH; r /= KH; int c = r % C; int n = r / C;
  int h = oh * sh - ph + i * dh; int gi = c / Cg; int cl = c % Cg;
  __global {t}* op = o + oo + gi * sg + n * sn + ((cl * KH + i) * KW + j) * sk + (long)oh * OW * sp;
  const long xb = xo + n * xs0 + c * xs1 + h * xs2;
  const bool hin = h >= 0 && h < H;
  int w = j * dw - pw;
  for (int ow = 0; ow < OW; ++ow, w += sw) {{
    {ct} v = 0;
    if (hin && w >= 0 && w < W) v = {ld('x', 'xb + w * xs3')};
    {st('op', 'ow * sp', 'v')}
  }}
}}

__kernel void col2im(__global {t}* o, __global const {t}* gc, long gco, int rows, int C, int H, int W,
                     int KH, int KW, int OH, int OW, int Cg, int G,
                     int sh, int sw, int ph, int pw, int dh, int dw) {{
  int g = get_global_id(0); if (g >= rows) return;     // one work-item per (n, c, h): a row of W
  int r = g; int h = r % H; r /= H; int c = r % C; int n = r / C;
  int gi = c / Cg; int cl = c % Cg; long K = (long)Cg * KH * KW; long P = (long)OH * OW;
  const long base = gco + ((long)n * G + gi) * K * P + (long)cl * KH * KW * P;
  __global {t}* op = o + (long)g * W;
  for (int w = 0; w < W; ++w) {{
    {ct} acc = 0;
    for (int i = 0; i < KH; ++i) {{
      int hh = h + ph - i * dh;
      if (hh < 0 || hh % sh != 0 || hh / sh >= OH) continue;
      int oh = hh / sh;
      for (int j = 0; j < KW; ++j) {{
        int ww = w + pw - j * dw;
        if (ww < 0 || ww % sw != 0 || ww / sw >= OW) continue;
        acc += {ld('gc', 'base + (i * KW + j) * P + oh * OW + ww / sw')};
      }}
    }}
    {st('op', 'w', 'acc')}
  }}
}}

__kernel void maxpool(__global {t}* o, __global long* idx, __global const {t}* x, long xo, long xs0, long xs1,
                      long xs2, long xs3, int rows, int C, int H, int W, int OH, int OW, int KH, int KW,
                      int sh, int sw, int ph, int pw, int dh, int dw) {{
  int g = get_global_id(0); if (g >= rows) return;     // one work-item per (n, c, oh): a row of OW
  int r = g; int oh = r % OH; r /= OH; int c = r % C; int n = r / C;
  const int h0 = oh * sh - ph;
  const long base = xo + n * xs0 + c * xs1;
  for (int ow = 0; ow < OW; ++ow) {{
    const int w0 = ow * sw - pw;
    {ct} best = 0; long bk = -1;              // PyTorch: the first tap inside the input, then a greater or NaN
    for (int i = 0; i < KH; ++i) {{
      int h = h0 + i * dh;
      if (h < 0 || h >= H) continue;
      for (int j = 0; j < KW; ++j) {{
        int w = w0 + j * dw;
        if (w < 0 || w >= W) continue;
        {ct} v = {ld('x', 'base + h * xs2 + w * xs3')};
        if (bk < 0 || v > best || (v != v)) {{ best = v; bk = (long)h * W + w; }}
      }}
    }}
    {st('o', '(long)g * OW + ow', 'best')}
    idx[(long)g * OW + ow] = bk;
  }}
}}

__kernel void maxpool_bwd(__global {t}* o, __global const {t}* gy, long gyo, long gs0, long gs1, long gs2,
                          long gs3, __global const long* idx, long io, long is0, long is1, long is2, long is3,
                          long planes, long C, long HW, long OH, long OW) {{
  long g = get_global_id(0); if (g >= planes) return;
  long n = g / C; long c = g % C;
  __global {t}* out = o + g * HW;
  const long gb = gyo + n * gs0 + c * gs1; const long ib = io + n * is0 + c * is1;
  for (long a = 0; a < OH; ++a)
    for (long b = 0; b < OW; ++b) {{
      long k = idx[ib + a * is2 + b * is3];
      {ct} v = {ld('out', 'k')} + {ld('gy', 'gb + a * gs2 + b * gs3')};
      {st('out', 'k', 'v')}
    }}
}}

__kernel void nll_loss(__global {t}* loss, __global {t}* wout, __global long* idx,
                       __global const {t}* x, long xo, long xs0, long xs1, __global const long* tg, long to, long ts,
                       __global const {t}* w, long wo, long ws, int hasw, long M, long C, long ignore,
                       __global long* err) {{
  long i = get_global_id(0); if (i >= M) return;        // one work-item per row
  long ti = tg[to + i * ts];
  {ct} wi = 0, li = 0; long k = 0;
  if (ti != ignore) {{
    if (ti >= 0 && ti < C) {{
      wi = hasw ? {ld('w', 'wo + ti * ws')} : ({ct})1;
      li = -wi * {ld('x', 'xo + i * xs0 + ti * xs1')};
      k = ti;
    }} else if (atomic_cmpxchg((volatile __global int*)(err + 1), 0, 1) == 0) {{
      err[0] = ti;                                         // the first failure recorded (check code 1)
    }}
  }}
  {st('loss', 'i', 'li')}
  {st('wout', 'i', 'wi')}
  idx[i] = k;
}}

__kernel void nll_bwd(__global {t}* o, __global const {t}* g, long go, long gs, __global const {t}* w, long wo,
                      long ws, __global const {t}* tot, long tto, __global const long* tg, long to, long ts,
                      __global const long* raw, long ro, long rs, long ignore, long M, long C, int mean) {{
  const long j = get_global_id(0), i = get_global_id(1);   // one work-item per element (no division)
  if (j >= C || i >= M) return;
  {ct} v = 0;
  if (tg[to + i * ts] == j && raw[ro + i * rs] != ignore)
    v = -({ld('w', 'wo + i * ws')} * (mean ? {ld('g', 'go')} / {ld('tot', 'tto')} : {ld('g', 'go + i * gs')}));
  {st('o', 'i * C + j', 'v')}
}}

inline {ct} ct_mx({ct} m, {ct} v) {{ return (v > m || (v != v)) ? v : m; }}

__kernel void softmax_rows(__global {t}* o, __global const {t}* x, long xo, long rows, long L, long inner,
                           int logsm) {{
  long g = get_global_id(0); if (g >= rows) return;
  long base = (g / inner) * L * inner + g % inner;
  {ct} m = -INFINITY;
  for (long j = 0; j < L; ++j) m = ct_mx(m, {ld('x', 'xo + base + j * inner')});
  if (isinf(m) && m < 0) m = 0;  // an all -inf row: nan (0/0); a +inf or nan max gives a nan row
  {ct} s = 0;
  for (long j = 0; j < L; ++j) s += exp({ld('x', 'xo + base + j * inner')} - m);
  if (logsm) {{
    {ct} ls = log(s);
    for (long j = 0; j < L; ++j) {{ {ct} z = {xr} - m; {st('o', 'base + j * inner', 'z - ls')} }}
  }} else {{
    for (long j = 0; j < L; ++j) {{ {ct} e = exp({xr} - m); {st('o', 'base + j * inner', 'e / s')} }}
  }}
}}

__kernel void softmax_wg(__global {t}* o, __global const {t}* x, long xo, long L, int logsm) {{
  __local {ct} red[{wg}];
  long row = get_group_id(0); int l = get_local_id(0);
  const long base = row * L;
  {ct} m = -INFINITY;
  for (long j = l; j < L; j += {wg}) m = ct_mx(m, {ld('x', 'xo + base + j')});
  red[l] = m; barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = {wg} / 2; s > 0; s >>= 1) {{
    if (l < s) red[l] = ct_mx(red[l], red[l + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
  m = red[0]; if (isinf(m) && m < 0) m = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  {ct} acc = 0;
  for (long j = l; j < L; j += {wg}) acc += exp({ld('x', 'xo + base + j')} - m);
  red[l] = acc; barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = {wg} / 2; s > 0; s >>= 1) {{
    if (l < s) red[l] += red[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
  {ct} tot = red[0];
  if (logsm) {{
    {ct} ls = log(tot);
    for (long j = l; j < L; j += {wg}) {{ {ct} z = {xw} - m; {st('o', 'base + j', 'z - ls')} }}
  }} else {{
    for (long j = l; j < L; j += {wg}) {{ {ct} e = exp({xw} - m); {st('o', 'base + j', 'e / tot')} }}
  }}
}}
"""


class NNKernels:
    """The fused nn kernels of one device, on top of the primitive kernels ``kern`` (a backend._Kernels)."""

    def __init__(self, kern):
        self.k = kern
        self.dev = kern.dev
        # softmax work-group: a power of two the device allows (PoCL compiles once per local size)
        wg = 1
        while wg * 2 <= min(self.dev.max_wg, 64 if self.dev.is_cpu else 256):
            wg *= 2
        self.wg = wg

    def _kernel(self, dt, name):
        dt = np.dtype(dt)
        if not cg.is_float(dt):
            raise RuntimeError(f"\"{name}\" is not implemented for {dt} on device 'opencl'")
        return self.dev.kernel(("nn", dt.str, self.wg), name, lambda: _src(dt, self.wg))

    # ---- convolution ----------------------------------------------------------------------------------
    def _im2col(self, x, kh, kw, oh, ow, stride, padding, dilation, groups, transposed):
        """Columns of x: (G, N, K, P) -> laid out as (N, G, K, P) or, ``transposed``, (G, N*P, K) contiguous."""
        n, c, h, w = x.shape
        cg_ = c // groups
        K, P = cg_ * kh * kw, oh * ow
        if transposed:
            out = self.k._out((groups, n * P, K), x.dtype)
            sg, sn, sk, sp = n * P * K, P * K, 1, K
        else:
            out = self.k._out((n, groups, K, P), x.dtype)
            sg, sn, sk, sp = K * P, groups * K * P, P, 1
        rows = n * c * kh * kw * oh
        if rows * ow == 0:
            return out
        _int_sized(out.size, x.size)
        xb, xo, _, xs = _desc(x)
        kn = self._kernel(x.dtype, "im2col")
        self.dev.launch(kn, rows, [out.base_data, 0, sg, sn, sk, sp, xb, xo, *xs, rows, c, h, w, kh, kw, oh, ow,
                                   cg_, *stride, *padding, *dilation])
        return out

    def _weight_matrix(self, w, groups):
        """w (O, Cg, KH, KW) -> (G, Og, K) view (a copy only when the strides forbid a view)."""
        o = w.shape[0]
        shape = (groups, o // groups, _numel(w.shape[1:]))
        v = self.k.view(w, shape)
        return v if v is not None else self.k.view(self.k.contiguous(w), shape)

    def conv2d(self, x, w, stride, padding, dilation, groups):
        n, c, h, wd = x.shape
        o, cg_, kh, kw = w.shape
        oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
        ow = (wd + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
        if n * o * oh * ow == 0 or cg_ * kh * kw == 0:
            return self.k.full((n, o, oh, ow), 0, x.dtype)
        cols = self._im2col(x, kh, kw, oh, ow, stride, padding, dilation, groups, False)     # N, G, K, P
        wm = self._weight_matrix(w, groups)                                                    # G, Og, K
        wm = self.k.expand(wm, (n,) + wm.shape)                                               # N, G, Og, K (no copy)
        out = self.k.matmul(wm, cols)                                                          # N, G, Og, P
        return self.k.view(out, (n, o, oh, ow))

    def conv2d_backward_weight(self, x, gy, wshape, stride, padding, dilation, groups):
        n = x.shape[0]
        o, cg_, kh, kw = wshape
        oh, ow = gy.shape[2:]
        og, K, P = o // groups, cg_ * kh * kw, oh * ow
        if n * P == 0 or o * K == 0:
            return self.k.full(tuple(wshape), 0, x.dtype)
        colst = self._im2col(x, kh, kw, oh, ow, stride, padding, dilation, groups, True)     # G, N*P, K
        g4 = self.k.view(self.k.contiguous(gy), (n, groups, og, P))
        gyt = self.k.contiguous(self.k.permute(g4, (1, 2, 0, 3)))                            # G, Og, N, P
        gw = self.k.matmul(self.k.view(gyt, (groups, og, n * P)), colst)                     # G, Og, K
        return self.k.view(gw, tuple(wshape))

    def conv2d_backward_input(self, gy, w, xshape, stride, padding, dilation, groups):
        n, c, h, wd = xshape
        o, cg_, kh, kw = w.shape
        oh, ow = gy.shape[2:]
        og, P = o // groups, oh * ow
        out = self.k._out(tuple(xshape), gy.dtype)
        if out.size == 0:
            return out
        if P == 0 or og == 0:
            return self.k._fill_into(out, 0)
        wm = self._weight_matrix(w, groups)                                                    # G, Og, K
        wt = self.k.contiguous(self.k.permute(wm, (0, 2, 1)))                                  # G, K, Og
        wt = self.k.expand(wt, (n,) + wt.shape)
        g4 = self.k.view(self.k.contiguous(gy), (n, groups, og, P))
        gc = self.k.matmul(wt, g4)                                                             # N, G, K, P
        kn = self._kernel(gy.dtype, "col2im")
        gb, go, _, _ = _desc(gc)
        _int_sized(out.size)
        rows = n * c * h
        self.dev.launch(kn, rows, [out.base_data, gb, go, rows, c, h, wd, kh, kw, oh, ow, cg_, groups,
                                   *stride, *padding, *dilation])
        return out

    # ---- pooling --------------------------------------------------------------------------------------
    def max_pool2d(self, x, kernel, stride, padding, dilation, out_hw):
        n, c, h, w = x.shape
        oh, ow = out_hw
        vals = self.k._out((n, c, oh, ow), x.dtype)
        idx = self.k._out((n, c, oh, ow), np.dtype(np.int64))
        if vals.size == 0:
            return vals, idx
        _int_sized(x.size, vals.size)
        rows = n * c * oh
        xb, xo, _, xs = _desc(x)
        kn = self._kernel(x.dtype, "maxpool")
        self.dev.launch(kn, rows, [vals.base_data, idx.base_data, xb, xo, *xs, rows, c, h, w, oh, ow, *kernel,
                                   *stride, *padding, *dilation])
        return vals, idx

    def max_pool2d_backward(self, gy, idx, xshape):
        n, c, h, w = xshape
        out = self.k.full(tuple(xshape), 0, gy.dtype)
        planes = n * c
        oh, ow = gy.shape[2:]
        if planes == 0 or oh * ow == 0 or h * w == 0:
            return out
        gb, go, _, gs = _desc(gy)
        ib, io, _, is_ = _desc(idx)
        kn = self._kernel(gy.dtype, "maxpool_bwd")
        self.dev.launch(kn, planes, [out.base_data, gb, go, *gs, ib, io, *is_, planes, c, h * w, oh, ow])
        return out

    # ---- softmax --------------------------------------------------------------------------------------
    def _softmax(self, x, dim, log):
        if not self.k.is_contiguous(x):
            x = self.k.contiguous(x)
        out = self.k._out(x.shape, x.dtype)
        if out.size == 0:
            return out
        shape = x.shape
        dim %= len(shape) or 1  # a negative dim as the kernel contract allows (shape[dim + 1:] needs it positive)
        L = shape[dim]
        inner = _numel(shape[dim + 1:])
        rows = out.size // L
        xb, xo, _, _ = _desc(x)
        if inner == 1 and L >= 4 * self.wg and self.wg > 1:
            kn = self._kernel(x.dtype, "softmax_wg")
            STATS["launches"] += 1
            kn(self.dev.queue, (rows * self.wg,), (self.wg,), out.base_data, xb, xo, L, int(log))
            return out
        kn = self._kernel(x.dtype, "softmax_rows")
        self.dev.launch(kn, rows, [out.base_data, xb, xo, rows, L, inner, int(log)])
        return out

    def softmax(self, x, dim):
        return self._softmax(x, dim, False)

    def log_softmax(self, x, dim):
        return self._softmax(x, dim, True)

    # ---- nll_loss -------------------------------------------------------------------------------------
    def nll_loss(self, x, target, weight, ignore_index: int) -> tuple:
        """(losses, weights, safe class indices) of x (M, C) at the targets, in one launch and no host read.

        A target outside [0, C) that is not ``ignore_index`` gives 0, 0, 0 in its row and is recorded in the
        device's check buffer: the next host read raises IndexError naming it (see ``Device.read``), as CUDA's
        device-side assert does at the next synchronisation."""
        m, c = x.shape
        dt = x.dtype
        kn = self._kernel(dt, "nll_loss")
        losses, wts, idx = self.k._out((m,), dt), self.k._out((m,), dt), self.k._out((m,), np.dtype(np.int64))
        if m == 0:
            return losses, wts, idx
        if target.dtype != np.int64:
            target = self.k.cast(target, np.int64)
        err = self.dev.error_buffer()
        xb, xo, _, (xs0, xs1) = _desc(x)
        tb, to, _, (ts,) = _desc(target)
        if weight is None or c == 0:
            wb, wo, ws = err, 0, 0  # unread (hasw = 0, or no class to weigh): any valid buffer
        else:
            if weight.dtype != dt:
                weight = self.k.cast(weight, dt)
            wb, wo, _, (ws,) = _desc(weight)
        if c == 0:
            xb = err  # no classes: every target fails the check and x is never read
        self.dev.launch(kn, m, [losses.base_data, wts.base_data, idx.base_data, xb, xo, xs0, xs1, tb, to, ts, wb, wo,
                                ws, int(weight is not None), m, c, int(ignore_index), err])
        return losses, wts, idx

    def nll_loss_backward(self, g, wt, total, idx, target, ignore_index: int, c: int, reduction: str):
        """The gradient of nll_loss's input (M, C): -w_i g_i ('none'), -w_i g ('sum') or -w_i (g / total)
        ('mean', PyTorch's order) at (i, idx_i) where target_i is not ``ignore_index``, 0 elsewhere, in one launch
        (``wt`` and ``idx`` are nll_loss's weights and indices)."""
        m = wt.shape[0]
        dt = wt.dtype
        out = self.k._out((m, c), dt)
        if m * c == 0:
            return out
        if g.dtype != dt:
            g = self.k.cast(g, dt)
        if idx.dtype != np.int64:
            idx = self.k.cast(idx, np.int64)
        if target.dtype != np.int64:
            target = self.k.cast(target, np.int64)
        rb, ro, _, (rs,) = _desc(target)
        gb, go, _, gst = _desc(g)
        wb, wo, _, (ws,) = _desc(wt)
        ib, io, _, (is_,) = _desc(idx)
        mean = reduction == "mean"
        tb, to = (_desc(total)[:2]) if mean else (wb, 0)
        kn = self._kernel(dt, "nll_bwd")
        ls = min(64, self.dev.max_wg)
        STATS["launches"] += 1
        gs = gst[0] if reduction == "none" else 0    # (a scalar gradient is read at go by every row)
        kn(self.dev.queue, (-(-c // ls) * ls, m), (ls, 1), out.base_data, gb, go, gs, wb, wo, ws, tb, to, ib, io, is_,
           rb, ro, rs, int(ignore_index), m, c, int(mean))
        return out

    def table(self) -> dict:
        return {"conv2d": self.conv2d, "conv2d_backward_input": self.conv2d_backward_input,
                "conv2d_backward_weight": self.conv2d_backward_weight, "max_pool2d": self.max_pool2d,
                "max_pool2d_backward": self.max_pool2d_backward, "softmax": self.softmax,
                "log_softmax": self.log_softmax, "nll_loss": self.nll_loss, "nll_loss_backward": self.nll_loss_backward}


def _int_sized(*sizes) -> None:
    """The conv/pool kernels decode their indices in 32-bit integers (64-bit division is several times slower)."""
    if max(sizes) >= 2 ** 31:
        raise RuntimeError(f"coretorch-opencl: a convolution/pooling operand of {max(sizes)} elements is too large "
                           "for the fused kernels (at most 2**31 - 1)")

