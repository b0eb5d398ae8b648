"""The optimizers' optional fused kernels on 'opencl' (see coretorch.plugins.KERNELS): ``adam_step_`` here,
``fused_adam_`` / ``fused_sgd_`` (every parameter of a group in one launch) in optim_multi.py.

One work-item per element reads the gradient, the parameter and its Adam state and writes them back: one launch per
parameter instead of about thirteen elementwise kernels (AdamW on the GPT benchmark: ~30 launches per step instead of
~400).  Each operation is a statement of its own, as the composite's separate kernels round it, and the ``y + a * x``
updates (lerp's and L2's ``g.add(p, alpha=wd)``) are written as the backend's axpy_ kernel writes them
(one rounding), so the results are those of coretorch-extra-ops' composite step bit for bit.
"""
from __future__ import annotations

import math

import numpy as np

from . import codegen as cg, optim_multi
from .optim_multi import lerp_weight
from .vecmath import vector_width

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_F32 = _FLOATS[0]


def _body(t: str, ld, st) -> str:
    """One element's (or one vector's) update: ``ld(array, offset)`` / ``st(array, offset, value)`` read and write
    element(s) ``i``."""
    return f"""
  {t} gi = {ld('g', 'go')};
  if (maximize) gi = -gi;
  {t} pi = {ld('p', 'po')};
  if (wd_mode == 1) pi = pi * wdc;                       // decoupled: p.mul_(1 - lr * wd)
  else if (wd_mode == 2) gi = fma(pi, wdc, gi);           // L2: g.add(p, alpha=wd), rounded once
  {t} mi = {ld('m', 'mo')};
  {t} d = gi - mi;
  if (lerp_back) mi = (gi + w1 * d); else mi = (mi + w1 * d);  // lerp from the nearer end (w1: w - 1 backwards),
                                                          // axpy_'s expression, as coretorch's lerp
  {t} vi = {ld('v', 'vo')};
  vi = vi * beta2;
  {t} gg = w2 * gi;                                       // addcmul_(g, g, value=w2): (w2 * g) * g, then the sum
  gg = gg * gi;
  vi = vi + gg;
  {st('m', 'mo', 'mi')}
  {st('v', 'vo', 'vi')}
  if (ams) {{
    {t} x = {ld('mx', 'xo')};
    x = ((x > vi || (x != x)) ? x : vi);                  // maximum (NaN propagates)
    {st('mx', 'xo', 'x')}
    vi = x;
  }}
  {t} den = sqrt(vi);
  den = den / bc2s;
  den = den + eps;
  {t} q = step_size * mi;                                 // addcdiv_(m, den, value=step_size)
  q = q / den;
  pi = pi + q;
  {st('p', 'po', 'pi')}
"""


def _src(dt, vw: int = 0) -> str:
    """``adam_step``: one work-item per element; with ``vw`` (float32 on CPUs) ``adam_step_v``: VW elements per
    work-item as vectors (PoCL leaves the scalar kernel unvectorised: 30 launches of the GPT's AdamW step 4.4 ms
    of CPU time on one compute unit, ~1.2 ms so), the last ``n % VW`` by scalar work-items, the same operations."""
    t = cg.ctype(dt)
    sig = f"""(__global {t}* p, long po, __global const {t}* g, long go, __global {t}* m, long mo,
                        __global {t}* v, long vo, __global {t}* mx, long xo, int ams, int maximize, int wd_mode,
                        {t} wdc, int lerp_back, {t} w1, {t} beta2, {t} w2, {t} bc2s, {t} eps, {t} step_size,
                        long n)"""
    scalar = _body(t, lambda a, o: f"{a}[{o} + i]", lambda a, o, v: f"{a}[{o} + i] = {v};")
    if not vw:
        return f"__kernel void adam_step{sig} {{\n  long i = get_global_id(0); if (i >= n) return;{scalar}}}\n"
    vector = _body("ct_fv", lambda a, o: f"*(const __global ct_fv*)({a} + {o} + i)",
                   lambda a, o, v: f"*(__global ct_fv*)({a} + {o} + i) = {v};")
    return (f"typedef float __attribute__((ext_vector_type({vw}), aligned(4))) ct_fv;\n"
            f"__kernel void adam_step_v{sig} {{\n  long id = get_global_id(0); long nv = n / {vw};\n"
            f"  if (id < nv) {{\n  long i = id * {vw};{vector}  return;\n  }}\n"
            f"  long i = nv * {vw} + (id - nv); if (i >= n) return;{scalar}}}\n")


def kernels(k) -> dict:
    """The optimizer kernels of one device; ``k`` is the device's kernel set (backend._Kernels)."""
    dev = k.dev
    vw = vector_width(dev) if dev.is_cpu else 0

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
        w1, back = lerp_weight(dt, 1 - beta1)
        mx = max_exp_avg_sq if max_exp_avg_sq is not None else p
        wd_mode = 0 if weight_decay == 0 else 1 if decoupled else 2
        wdc = (1 - lr * weight_decay) if wd_mode == 1 else weight_decay
        if dt == _F32 and dev.is_cpu:
            kern = dev.kernel(("optim", dt.str, vw), "adam_step_v", lambda: _src(dt, vw),
                              options="-cl-fp32-correctly-rounded-divide-sqrt")
            items = n // vw + n % vw
        else:
            kern = dev.kernel(("optim", dt.str), "adam_step", lambda: _src(dt))
            items = n
        dev.launch(kern, items, [p.base_data, off(p), grad.base_data, off(grad), exp_avg.base_data, off(exp_avg),
                             exp_avg_sq.base_data, off(exp_avg_sq), mx.base_data, off(mx),
                             int(max_exp_avg_sq is not None), int(bool(maximize)), wd_mode, wdc, int(back),
                             w1, beta2, 1 - beta2, math.sqrt(1 - beta2 ** step), eps,
                             -lr / (1 - beta1 ** step), n])
        return True

    return {"adam_step_": adam_step_, **optim_multi.kernels(k, _body)}
