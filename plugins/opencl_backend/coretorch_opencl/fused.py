"""The fused kernels of issue 14's transformer and recurrent steps on 'opencl' (see coretorch.plugins.KERNELS):
layer_norm forward and backward, softmax backward, GELU's backward, and one LSTM or GRU time step forward and backward.

Same contracts as the cpu backend's ``coretorch_cpu/fused.py`` (the core calls them from
``coretorch/nn/functional/_fused.py``, ``_activation.py`` and ``_rnn_fused.py`` for float32/float64 operands), one
program per dtype, one launch per call (two for layer_norm's backward with weight/bias gradients):

* layer_norm: one work-item per row of the normalised dims (two passes over the row: the mean, then the centred
  sum of squares, as the cpu kernel), writing y, mean and rstd;
* layer_norm backward: one work-item per row for the input gradient; the weight and bias gradients one work-item
  per column summing its rows in order (deterministic, no atomics; blocks of rows whose sums are compensated, as
  the sum kernel's: codegen.kahan_step);
* softmax and log_softmax backward: one work-item per row (any dim: rows of ``inner`` stride; log_softmax's sum of
  g compensated, as the sum kernel's);
* GELU backward: g (Phi(x) + x phi(x)) elementwise, Phi by erfc without cancellation on the negative side (float:
  fastmath's Phi, sharing phi's exp);
* LSTM cell: one work-item per (n, j) reads the four gate pre-activations (any 2-D strides) and the cell state and
  writes h, c_new and the saved activations ``act`` (N, 5H) = i, f, g, o, tanh(c_new); its backward reads dh, dc
  (optional), c_prev and ``act`` and writes the gate gradients (N, 4H) and dc_prev: one launch per time step each
  way instead of about fifteen;
* GRU cell: the same for PyTorch's r, z, n gates: one work-item per (n, j) reads the input and hidden projections
  (any 2-D strides; b_hh added inside, so r multiplies hn + b_hn), writes h' and ``act`` (N, 4H) = r, z, n,
  hn + b_hn; its backward writes d gi and d gh (N, 3H) and the direct part dh * z of dh_prev.
"""
from __future__ import annotations

import numpy as np

from . import codegen as cg
from . import fastmath
from .layout import _desc, _numel

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _src(dt) -> str:
    t, ct = cg.stype(dt), cg.ctype(dt)
    f = ct == "float"
    one, half = ("1.0f", "0.5f") if f else ("1.0", "0.5")
    rsq2 = "M_SQRT1_2_F" if f else "M_SQRT1_2"
    inv_sqrt_2pi = "0.3989422804014327f" if f else "0.3989422804014327"

    def ld(p, i):
        return cg.load(dt, p, i)

    def st(p, i, v):
        return cg.store(dt, p, i, v)
    if f:   # Phi and phi from one exp, written out (fastmath: PoCL's float erfc builtin is a slow call); x < 0:
        # (q + x / sqrt(2 pi)) e, so that neither Phi = q e nor x phi underflows before the sum
        gelu_dx = ("float e; const float q = ct_phi_parts_f(v, &e); "
                   f"const float dx = v < -0.70710677f ? (q + v * {inv_sqrt_2pi}) * e "
                   f": ct_ndtr_from_f(v, q, e) + v * (e * {inv_sqrt_2pi});")
    else:   # Phi(x) by erfc: no cancellation for x < 0
        gelu_dx = (f"const {ct} cdf = {half} * erfc(-v * {rsq2}); "
                   f"const {ct} dx = cdf + v * exp(-{half} * v * v) * {inv_sqrt_2pi};")
    return (fastmath.float_src() if f else "") + f"""
inline {ct} ct_sigmoid({ct} v) {{ return {one} / ({one} + exp(-v)); }}

__kernel void layer_norm(__global {t}* y, __global {t}* mean, __global {t}* rstd, __global const {t}* x, long xo,
                         __global const {t}* w, long wo, __global const {t}* b, long bo, int hasw, int hasb,
                         long rows, long D, {ct} eps) {{
  long r = get_global_id(0); if (r >= rows) return;
  const long base = xo + r * D;
  {ct} s = 0;
  const {ct} x0 = D > 0 ? {ld('x', 'base')} : 0;   // the mean as x0 + mean(x - x0): exact for equal values
  for (long j = 0; j < D; ++j) s += {ld('x', 'base + j')} - x0;
  const {ct} m = x0 + s / ({ct})D;
  {ct} q = 0;
  for (long j = 0; j < D; ++j) {{ {ct} d = {ld('x', 'base + j')} - m; q += d * d; }}
  const {ct} rs = {one} / sqrt(q / ({ct})D + eps);
  for (long j = 0; j < D; ++j) {{
    {ct} v = ({ld('x', 'base + j')} - m) * rs;
    if (hasw) v *= {ld('w', 'wo + j')};
    if (hasb) v += {ld('b', 'bo + j')};
    {st('y', 'r * D + j', 'v')}
  }}
  {st('mean', 'r', 'm')}
  {st('rstd', 'r', 'rs')}
}}

__kernel void layer_norm_bwd_x(__global {t}* gx, __global const {t}* g, long go, __global const {t}* x, long xo,
                               __global const {t}* mean, long mo, __global const {t}* rstd, long ro,
                               __global const {t}* w, long wo, int hasw, long rows, long D) {{
  long r = get_global_id(0); if (r >= rows) return;
  const {ct} m = {ld('mean', 'mo + r')}, rs = {ld('rstd', 'ro + r')};
  const long gb = go + r * D, xb = xo + r * D;
  {ct} a = 0, c = 0;
  for (long j = 0; j < D; ++j) {{
    {ct} gh = {ld('g', 'gb + j')};
    if (hasw) gh *= {ld('w', 'wo + j')};
    a += gh; c += gh * ({ld('x', 'xb + j')} - m) * rs;
  }}
  a /= ({ct})D; c /= ({ct})D;
  for (long j = 0; j < D; ++j) {{
    {ct} gh = {ld('g', 'gb + j')};
    if (hasw) gh *= {ld('w', 'wo + j')};
    {ct} xh = ({ld('x', 'xb + j')} - m) * rs;
    {st('gx', 'r * D + j', '(gh - a - xh * c) * rs')}
  }}
}}

__kernel void layer_norm_bwd_wb(__global {t}* gw, __global {t}* gb, __global const {t}* g, long go,
                                __global const {t}* x, long xo, __global const {t}* mean, long mo,
                                __global const {t}* rstd, long ro, int needw, int needb, long rows, long D) {{
  long j = get_global_id(0); if (j >= D) return;
  {ct} sw = 0, sb = 0, cw = 0, cb = 0;
  for (long r0 = 0; r0 < rows; r0 += {cg.SUM_BLOCK}) {{   /* blocks of rows, their sums compensated */
    const long r1 = min(rows, r0 + {cg.SUM_BLOCK});
    {ct} bw = 0, bb = 0;
    for (long r = r0; r < r1; ++r) {{
      {ct} gv = {ld('g', 'go + r * D + j')};
      bb += gv;
      if (needw) bw += gv * ({ld('x', 'xo + r * D + j')} - {ld('mean', 'mo + r')}) * {ld('rstd', 'ro + r')};
    }}
    {cg.kahan_step(ct, "sb", "cb", "bb")}
    if (needw) {cg.kahan_step(ct, "sw", "cw", "bw")}
  }}
  if (needw) {{ {st('gw', 'j', 'sw')} }}
  if (needb) {{ {st('gb', 'j', 'sb')} }}
}}

__kernel void softmax_bwd(__global {t}* o, __global const {t}* g, long go, __global const {t}* y, long yo,
                          long rows, long L, long inner) {{
  long r = get_global_id(0); if (r >= rows) return;
  const long base = (r / inner) * L * inner + r % inner;
  {ct} s = 0;
  for (long j = 0; j < L; ++j) s += {ld('g', 'go + base + j * inner')} * {ld('y', 'yo + base + j * inner')};
  for (long j = 0; j < L; ++j) {{
    const long k = base + j * inner;
    {st('o', 'k', f"{ld('y', 'yo + k')} * ({ld('g', 'go + k')} - s)")}
  }}
}}

__kernel void log_softmax_bwd(__global {t}* o, __global const {t}* g, long go, __global const {t}* y, long yo,
                              long rows, long L, long inner) {{
  long r = get_global_id(0); if (r >= rows) return;
  const long base = (r / inner) * L * inner + r % inner;
  {ct} s = 0, c = 0;
  for (long j0 = 0; j0 < L; j0 += {cg.SUM_BLOCK}) {{   /* blocks of the row, their sums compensated */
    const long j1 = min(L, j0 + {cg.SUM_BLOCK});
    {ct} b = 0;
    for (long j = j0; j < j1; ++j) b += {ld('g', 'go + base + j * inner')};
    {cg.kahan_step(ct, "s", "c", "b")}
  }}
  for (long j = 0; j < L; ++j) {{
    const long k = base + j * inner;
    {st('o', 'k', f"{ld('g', 'go + k')} - exp({ld('y', 'yo + k')}) * s")}
  }}
}}

__kernel void gelu_bwd(__global {t}* o, __global const {t}* g, long go, __global const {t}* x, long xo, long n) {{
  long i = get_global_id(0); if (i >= n) return;
  const {ct} v = {ld('x', 'xo + i')};
  {gelu_dx}
  {st('o', 'i', f"{ld('g', 'go + i')} * dx")}
}}

__kernel void lstm_cell(__global {t}* h, long ho, __global {t}* cn, __global {t}* act,
                        __global const {t}* gt, long gto, long gs0, long gs1,
                        __global const {t}* gi, long gio, long gis0, long gis1, int hasgi,
                        __global const {t}* c, long co, long cs0, long cs1, long N, long H) {{
  long k = get_global_id(0); if (k >= N * H) return;
  const long n = k / H, j = k % H;
  const long gb = gto + n * gs0 + j * gs1, ib = gio + n * gis0 + j * gis1;
  {ct} zi = {ld('gt', 'gb')}, zf = {ld('gt', 'gb + H * gs1')};
  {ct} zg = {ld('gt', 'gb + 2 * H * gs1')}, zo = {ld('gt', 'gb + 3 * H * gs1')};
  if (hasgi) {{
    zi += {ld('gi', 'ib')}; zf += {ld('gi', 'ib + H * gis1')};
    zg += {ld('gi', 'ib + 2 * H * gis1')}; zo += {ld('gi', 'ib + 3 * H * gis1')};
  }}
  const {ct} i = ct_sigmoid(zi), f = ct_sigmoid(zf), gg = tanh(zg), o = ct_sigmoid(zo);
  const {ct} c2 = f * {ld('c', 'co + n * cs0 + j * cs1')} + i * gg;
  const {ct} tc = tanh(c2);
  __global {t}* a = act + n * 5 * H + j;
  {st('a', '0', 'i')} {st('a', 'H', 'f')} {st('a', '2 * H', 'gg')} {st('a', '3 * H', 'o')} {st('a', '4 * H', 'tc')}
  {st('cn', 'k', 'c2')}
  {st('h', 'ho + k', 'o * tc')}
}}

__kernel void lstm_cell_bwd(__global {t}* dg, long dgo, __global {t}* dcp, __global const {t}* dh, long dho,
                            long dhs0, long dhs1, __global const {t}* dy, long dyo, long dys0, long dys1, int hasdy,
                            __global const {t}* dc, long dco, long dcs0, long dcs1, int hasdc,
                            __global const {t}* c, long co, long cs0, long cs1, __global const {t}* act,
                            long ao, long N, long H) {{
  long k = get_global_id(0); if (k >= N * H) return;
  const long n = k / H, j = k % H;
  __global const {t}* a = act + ao + n * 5 * H + j;
  const {ct} i = {ld('a', '0')}, f = {ld('a', 'H')}, gg = {ld('a', '2 * H')}, o = {ld('a', '3 * H')};
  const {ct} tc = {ld('a', '4 * H')};
  {ct} d = {ld('dh', 'dho + n * dhs0 + j * dhs1')};
  if (hasdy) d += {ld('dy', 'dyo + n * dys0 + j * dys1')};
  {ct} dct = d * o * ({one} - tc * tc);
  if (hasdc) dct += {ld('dc', 'dco + n * dcs0 + j * dcs1')};
  const {ct} cp = {ld('c', 'co + n * cs0 + j * cs1')};
  __global {t}* q = dg + dgo + n * 4 * H + j;
  {st('q', '0', f'dct * gg * i * ({one} - i)')}
  {st('q', 'H', f'dct * cp * f * ({one} - f)')}
  {st('q', '2 * H', f'dct * i * ({one} - gg * gg)')}
  {st('q', '3 * H', f'd * tc * o * ({one} - o)')}
  {st('dcp', 'k', 'dct * f')}
}}

__kernel void gru_cell(__global {t}* h, long ho, __global {t}* act,
                       __global const {t}* gi, long gio, long gis0, long gis1,
                       __global const {t}* gh, long gho, long ghs0, long ghs1,
                       __global const {t}* b, long bo, long bs, int hasb,
                       __global const {t}* hp, long hpo, long hps0, long hps1, long N, long H) {{
  long k = get_global_id(0); if (k >= N * H) return;
  const long n = k / H, j = k % H;
  const long ib = gio + n * gis0 + j * gis1, hb = gho + n * ghs0 + j * ghs1;
  {ct} ar = {ld('gi', 'ib')} + {ld('gh', 'hb')}, az = {ld('gi', 'ib + H * gis1')} + {ld('gh', 'hb + H * ghs1')};
  {ct} hn = {ld('gh', 'hb + 2 * H * ghs1')};
  if (hasb) {{
    ar += {ld('b', 'bo + j * bs')}; az += {ld('b', 'bo + (H + j) * bs')}; hn += {ld('b', 'bo + (2 * H + j) * bs')};
  }}
  const {ct} r = ct_sigmoid(ar), z = ct_sigmoid(az);
  const {ct} nn = tanh({ld('gi', 'ib + 2 * H * gis1')} + r * hn);
  const {ct} hv = {ld('hp', 'hpo + n * hps0 + j * hps1')};
  __global {t}* a = act + n * 4 * H + j;
  {st('a', '0', 'r')} {st('a', 'H', 'z')} {st('a', '2 * H', 'nn')} {st('a', '3 * H', 'hn')}
  {st('h', 'ho + k', 'nn + z * (hv - nn)')}
}}

__kernel void gru_cell_bwd(__global {t}* dgi, long dgio, __global {t}* dgh, long dgho, __global {t}* dhd,
                           __global const {t}* dh, long dho, long dhs0, long dhs1,
                           __global const {t}* dy, long dyo, long dys0, long dys1, int hasdy,
                           __global const {t}* hp, long hpo, long hps0, long hps1, __global const {t}* act,
                           long ao, long N, long H) {{
  long k = get_global_id(0); if (k >= N * H) return;
  const long n = k / H, j = k % H;
  __global const {t}* a = act + ao + n * 4 * H + j;
  const {ct} r = {ld('a', '0')}, z = {ld('a', 'H')}, nn = {ld('a', '2 * H')}, hn = {ld('a', '3 * H')};
  {ct} d = {ld('dh', 'dho + n * dhs0 + j * dhs1')};
  if (hasdy) d += {ld('dy', 'dyo + n * dys0 + j * dys1')};
  const {ct} dan = d * ({one} - z) * ({one} - nn * nn);
  const {ct} dar = dan * hn * r * ({one} - r);
  const {ct} daz = d * ({ld('hp', 'hpo + n * hps0 + j * hps1')} - nn) * z * ({one} - z);
  __global {t}* p = dgi + dgio + n * 3 * H + j;
  __global {t}* q = dgh + dgho + n * 3 * H + j;
  {st('p', '0', 'dar')} {st('p', 'H', 'daz')} {st('p', '2 * H', 'dan')}
  {st('q', '0', 'dar')} {st('q', 'H', 'daz')} {st('q', '2 * H', 'dan * r')}
  {st('dhd', 'k', 'd * z')}
}}
"""


def kernels(k) -> dict:
    """The fused kernels of one device; ``k`` is the device's kernel set (backend._Kernels)."""
    from .vecmath import row_items, row_kernel   # (vecmath imports this module: here, not at the top)
    dev = k.dev

    def kernel(dt, name):
        if dt not in _FLOATS:
            raise RuntimeError(f"\"{name}\" is not implemented for {dt} on device 'opencl'")
        return dev.kernel(("fused14", dt.str), name, lambda: _src(dt))

    def contig(a):
        return a if k.is_contiguous(a) else k.contiguous(a)

    def off(a):
        return a.offset // a.dtype.itemsize

    def layer_norm(x, w, b, eps, nk):
        x = contig(x)
        dt = x.dtype
        D = _numel(x.shape[x.ndim - nk:])
        rows = _numel(x.shape[:x.ndim - nk])
        stat = tuple(x.shape[:x.ndim - nk]) + (1,) * nk
        y, mean, rstd = k._out(tuple(x.shape), dt), k._out(stat, dt), k._out(stat, dt)
        if rows * D == 0:  # the core takes this path for non-empty inputs only
            return y, mean, rstd
        w = contig(w) if w is not None else None
        b = contig(b) if b is not None else None
        wb, wo = (w.base_data, off(w)) if w is not None else (x.base_data, 0)
        bb, bo = (b.base_data, off(b)) if b is not None else (x.base_data, 0)
        kn = row_kernel(dev, "layer_norm", dt, D) or kernel(dt, "layer_norm")
        dev.launch(kn, rows, [y.base_data, mean.base_data, rstd.base_data, x.base_data, off(x), wb, wo, bb, bo,
                              int(w is not None), int(b is not None), rows, D, eps])
        return y, mean, rstd

    def layer_norm_backward(g, x, mean, rstd, w, nk, need_x, need_w, need_b):
        g, x, mean, rstd = contig(g), contig(x), contig(mean), contig(rstd)
        dt = x.dtype
        D = _numel(x.shape[x.ndim - nk:])
        rows = _numel(x.shape[:x.ndim - nk])
        wshape = tuple(w.shape) if w is not None else tuple(x.shape[x.ndim - nk:])
        gx = gw = gb = None
        if need_x:
            gx = k._out(tuple(x.shape), dt)
            if rows * D:
                wc = contig(w) if w is not None else None
                wb, wo = (wc.base_data, off(wc)) if wc is not None else (x.base_data, 0)
                kn = row_kernel(dev, "layer_norm_bwd_x", dt, D) or kernel(dt, "layer_norm_bwd_x")
                dev.launch(kn, rows, [gx.base_data, g.base_data, off(g), x.base_data, off(x), mean.base_data,
                                      off(mean), rstd.base_data, off(rstd), wb, wo, int(wc is not None), rows, D])
        if need_w or need_b:
            gw = k._out(wshape, dt) if need_w else None
            gb = k._out(wshape, dt) if need_b else None
            if rows * D:
                first = (gw if need_w else gb).base_data
                kn = row_kernel(dev, "layer_norm_bwd_wb", dt, D)
                dev.launch(kn or kernel(dt, "layer_norm_bwd_wb"), D if kn is None else row_items(dev, D), [
                    gw.base_data if need_w else first, gb.base_data if need_b else first, g.base_data, off(g),
                    x.base_data, off(x), mean.base_data, off(mean), rstd.base_data, off(rstd), int(need_w),
                    int(need_b), rows, D])
        return gx, gw, gb

    def rows_backward(name, g, y, dim):
        """softmax_bwd / log_softmax_bwd: one work-item per row along ``dim`` (rows ``inner`` apart)."""
        g, y = contig(g), contig(y)
        out = k._out(tuple(y.shape), y.dtype)
        if out.size == 0:
            return out
        dim %= y.ndim
        L = y.shape[dim]
        inner = _numel(y.shape[dim + 1:])
        rows = out.size // L
        dev.launch(kernel(y.dtype, name), rows, [out.base_data, g.base_data, off(g), y.base_data, off(y), rows, L,
                                                 inner])
        return out

    def softmax_backward(g, y, dim):
        return rows_backward("softmax_bwd", g, y, dim)

    def log_softmax_backward(g, y, dim):
        if y.dtype not in _FLOATS:   # half: in float32, rounded once (the cpu kernel's rule)
            f32 = np.dtype(np.float32)
            return k.cast(log_softmax_backward(k.cast(g, f32), k.cast(y, f32), dim), y.dtype)
        return rows_backward("log_softmax_bwd", g, y, dim)

    def gelu_backward(g, x, cdf=None):
        g, x = contig(g), contig(x)
        out = k._out(tuple(x.shape), x.dtype)
        if out.size:
            dev.launch(kernel(x.dtype, "gelu_bwd"), out.size, [out.base_data, g.base_data, off(g), x.base_data,
                                                               off(x), out.size])
        return out

    def _slot(out, shape, dt):
        """``out`` (a contiguous (N, X) view the caller gives) or a new array; (array, element offset)."""
        if out is None:
            return k._out(shape, dt), 0
        if not k.is_contiguous(out):
            raise RuntimeError("coretorch-opencl: the rnn cell kernels' out= must be a contiguous view")
        return out, off(out)

    def _opt(a, like):
        """(buffer, offset, strides..., present) of an optional 2-D operand."""
        if a is None:
            return [like.base_data, 0, 0, 0, 0]
        b, o, _, st = _desc(a)
        return [b, o, *st, 1]

    def lstm_cell(gates, c, gi=None, out=None):
        n, h4 = gates.shape
        hs = h4 // 4
        dt = gates.dtype
        (h, ho), cn, act = _slot(out, (n, hs), dt), k._out((n, hs), dt), k._out((n, 5 * hs), dt)
        if n * hs:
            gbuf, go, _, gst = _desc(gates)
            cbuf, co, _, cst = _desc(c)
            dev.launch(kernel(dt, "lstm_cell"), n * hs, [h.base_data, ho, cn.base_data, act.base_data, gbuf, go,
                                                         *gst, *_opt(gi, gates), cbuf, co, *cst, n, hs])
        return h, cn, act

    def lstm_cell_backward(dh, dc, c_prev, act, dy=None, out=None):
        n, h5 = act.shape
        hs = h5 // 5
        dt = act.dtype
        (dg, dgo), dcp = _slot(out, (n, 4 * hs), dt), k._out((n, hs), dt)
        if n * hs:
            act = contig(act)
            hb, ho, _, hst = _desc(dh)
            cb, co, _, cst = _desc(c_prev)
            dev.launch(kernel(dt, "lstm_cell_bwd"), n * hs, [dg.base_data, dgo, dcp.base_data, hb, ho, *hst,
                                                             *_opt(dy, dh), *_opt(dc, dh), cb, co, *cst,
                                                             act.base_data, off(act), n, hs])
        return dg, dcp

    def gru_cell(gi, gh, h, b=None, out=None):
        n, hs = h.shape
        dt = h.dtype
        (hnew, ho), act = _slot(out, (n, hs), dt), k._out((n, 4 * hs), dt)
        if n * hs:
            ib, io, _, ist = _desc(gi)
            gb, go, _, gst = _desc(gh)
            pb, po, _, pst = _desc(h)
            if b is None:
                bopt = [gh.base_data, 0, 0, 0]
            else:
                bb, bo, _, bst = _desc(b)
                bopt = [bb, bo, *bst, 1]
            dev.launch(kernel(dt, "gru_cell"), n * hs, [hnew.base_data, ho, act.base_data, ib, io, *ist, gb, go, *gst,
                                                        *bopt, pb, po, *pst, n, hs])
        return hnew, act

    def gru_cell_backward(dh, h_prev, act, dy=None, out=None, gh_out=None):
        n, h4 = act.shape
        hs = h4 // 4
        dt = act.dtype
        (dgi, dgio), (dgh, dgho) = _slot(out, (n, 3 * hs), dt), _slot(gh_out, (n, 3 * hs), dt)
        dhd = k._out((n, hs), dt)
        if n * hs:
            act = contig(act)
            hb, ho, _, hst = _desc(dh)
            pb, po, _, pst = _desc(h_prev)
            dev.launch(kernel(dt, "gru_cell_bwd"), n * hs, [dgi.base_data, dgio, dgh.base_data, dgho, dhd.base_data,
                                                            hb, ho, *hst, *_opt(dy, dh), pb, po, *pst,
                                                            act.base_data, off(act), n, hs])
        return dgi, dgh, dhd

    return {"layer_norm": layer_norm, "layer_norm_backward": layer_norm_backward,
            "softmax_backward": softmax_backward, "log_softmax_backward": log_softmax_backward,
            "gelu_backward": gelu_backward, "lstm_cell": lstm_cell,
            "lstm_cell_backward": lstm_cell_backward, "gru_cell": gru_cell, "gru_cell_backward": gru_cell_backward}
