"""The optimizers' optional fused kernels on 'opencl' (see coretorch.plugins.KERNELS): ``adam_step_``.

One work-item per element reads the gradient, the parameter and its Adam state and writes them back: one launch per
parameter instead of about thirteen elementwise kernels (AdamW on the GPT benchmark: ~30 launches per step instead of
~400).  Each operation is a statement of its own, as the composite's separate kernels round it, and the two
``y + a * x`` updates are written as the backend's axpy_ kernel writes them, so the results are those of
coretorch-extra-ops' composite step bit for bit.
"""
from __future__ import annotations

import math

import numpy as np

from . import codegen as cg

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _src(dt) -> str:
    t = cg.ctype(dt)
    return f"""
__kernel void adam_step(__global {t}* p, long po, __global const {t}* g, long go, __global {t}* m, long mo,
                        __global {t}* v, long vo, __global {t}* mx, long xo, int ams, int maximize, int wd_mode,
                        {t} wdc, int lerp_back, {t} w1, {t} beta2, {t} w2, {t} bc2s, {t} eps, {t} step_size,
                        long n) {{
  long i = get_global_id(0); if (i >= n) return;
  {t} gi = g[go + i];
  if (maximize) gi = -gi;
  {t} pi = p[po + i];
  if (wd_mode == 1) pi = pi * wdc;                       // decoupled: p.mul_(1 - lr * wd)
  else if (wd_mode == 2) {{ {t} t = pi * wdc; gi = gi + t; }}  // L2: g + wd * p
  {t} mi = m[mo + i];
  {t} d = gi - mi;
  {t} dw = d * w1;
  if (lerp_back) mi = gi - dw; else mi = mi + dw;         // lerp from the nearer end, as coretorch's lerp
  {t} vi = v[vo + i];
  vi = vi * beta2;
  {t} gg = gi * gi;
  vi = (vi + w2 * gg);                                    // axpy_'s expression
  m[mo + i] = mi;
  v[vo + i] = vi;
  if (ams) {{
    {t} x = mx[xo + i];
    x = ((x > vi || (x != x)) ? x : vi);                  // maximum (NaN propagates)
    mx[xo + i] = x;
    vi = x;
  }}
  {t} den = sqrt(vi);
  den = den / bc2s;
  den = den + eps;
  {t} q = mi / den;
  pi = (pi + step_size * q);                              // axpy_'s expression
  p[po + i] = pi;
}}
"""


def kernels(k) -> dict:
    """The optimizer kernels of one device; ``k`` is the device's kernel set (backend._Kernels)."""
    dev = k.dev

    def off(a):
        return a.offset // a.dtype.itemsize

    def adam_step_(p, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay,
                   decoupled, maximize) -> bool:
        dt = p.dtype
        arrays = (p, grad, exp_avg, exp_avg_sq) + ((max_exp_avg_sq,) if max_exp_avg_sq is not None else ())
        if dt not in _FLOATS or any(a.dtype != dt or a.shape != p.shape or not k.is_contiguous(a) for a in arrays):
            return False
        for a in (p, exp_avg, exp_avg_sq, max_exp_avg_sq):
            if a is not None:
                k._check_writable(a)
        n = p.size
        if n == 0:
            return True
        w1 = 1 - beta1
        back = not abs(w1) < 0.5
        mx = max_exp_avg_sq if max_exp_avg_sq is not None else p
        wd_mode = 0 if weight_decay == 0 else 1 if decoupled else 2
        wdc = (1 - lr * weight_decay) if wd_mode == 1 else weight_decay
        kern = dev.kernel(("optim", dt.str), "adam_step", lambda: _src(dt))
        dev.launch(kern, n, [p.base_data, off(p), grad.base_data, off(grad), exp_avg.base_data, off(exp_avg),
                             exp_avg_sq.base_data, off(exp_avg_sq), mx.base_data, off(mx),
                             int(max_exp_avg_sq is not None), int(bool(maximize)), wd_mode, wdc, int(back),
                             (1 - w1) if back else w1, beta2, 1 - beta2, math.sqrt(1 - beta2 ** step), eps,
                             -lr / (1 - beta1 ** step), n])
        return True

    return {"adam_step_": adam_step_}
