"""Prologues for coretorch.compile's fusion pass (``compile_fused.prologue``, see coretorch/_compile/fusion.py): a
row kernel that computes the elementwise group feeding it.

One so far, the pre-LN transformer block's ``layer_norm(x + y)``: the residual add inside vecmath's vector
layer_norm kernel (float32 rows of D >= VW on CPU devices).  Its first pass adds the two rows, stores the sum (the
residual stream: later layers read it) and sums it; the later passes read the stored sum, as the plain kernel reads
its input.  The same additions in the same order as the add kernel and ``layer_norm_v`` (the kernel is that one's
source with its first pass rewritten, built with the same options): bitwise their results, one launch and one pass
over the rows fewer.  Measured (PoCL, one compute unit, a (16, 64, 128) residual): the add alone 0.19-0.23 ms with
its launch, of which the prologue keeps the pass that stores the sum.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import fused, vecmath
from .layout import _desc, _numel

_F32 = np.dtype(np.float32)


def _kernel_src(vw: int) -> str | None:
    """``layer_norm_add_v``: vecmath's ``layer_norm_v`` whose input rows are the sum of two rows, stored."""
    ld = "*(const __global ct_fv*)"
    lanes = "0123456789abcdef"[:vw]

    def lanesum(v):
        e = f"{v}.s0"
        for q in lanes[1:]:
            e = f"({e} + {v}.s{q})"
        return e
    src = vecmath._layer_norm_src(vw, ld, lanesum)
    start = src.index("__kernel void layer_norm_v(")
    src = src[start:src.index("__kernel void", start + 10)]
    edits = [
        ("__kernel void layer_norm_v(__global float* y,", "__kernel void layer_norm_add_v(__global float* xs, "
                                                          "__global float* y,"),
        ("__global const float* x,\n                           long xo,",
         "__global const float* a, long ao, __global const float* c, long co,"),
        ("const __global float* xr = x + xo + r * D;",
         "__global float* xr = xs + r * D; const __global float* ar = a + ao + r * D; "
         "const __global float* cr = c + co + r * D;"),
        ("const float x0 = xr[0];", "const float x0 = ar[0] + cr[0];"),
        (f"for (long j = 0; j < nv; j += {vw}) sv += {ld}(xr + j) - x0;",
         f"for (long j = 0; j < nv; j += {vw}) {{ ct_fv v = {ld}(ar + j) + {ld}(cr + j); "
         f"*(__global ct_fv*)(xr + j) = v; sv += v - x0; }}"),
        ("for (long j = nv; j < D; ++j) s += xr[j] - x0;",
         "for (long j = nv; j < D; ++j) { float v = ar[j] + cr[j]; xr[j] = v; s += v - x0; }"),
    ]
    for old, new in edits:
        if src.count(old) != 1:   # vecmath's kernel changed: no prologue (the unfused launches run)
            return None
        src = src.replace(old, new)
    return f"typedef float __attribute__((ext_vector_type({vw}), aligned(4))) ct_fv;\n" + src


def kernels(k) -> dict:
    """``prologue(name, program, args)`` of the opencl table's ``compile_fused`` hook, and the names it takes."""
    dev = k.dev
    plain: dict = {}

    def unfused(x, y, w, b, eps, nk):
        """Another layout than the capture's: the add and layer_norm launches."""
        if not plain:
            plain.update(add=k._binary("add"), layer_norm=fused.kernels(k)["layer_norm"])
        s = plain["add"](x, y)
        return [s, *plain["layer_norm"](s, w, b, eps, nk)]

    def layer_norm_add(prog, args):
        if [n[0] for n in prog.nodes] != ["add"] or prog.nodes[0][1] != [("in", 0), ("in", 1)] \
                or len(prog.inputs) != 2 or prog.scalars or prog.outputs != [0] or len(args) != 4:
            return None
        w, b, eps, nk = args
        shape = tuple(prog.shape)
        if nk != 1 or not shape or any(a.dtype != _F32 or tuple(a.shape) != shape or not k.is_contiguous(a)
                                       for a in prog.inputs):
            return None
        if any(t is not None and (t.dtype != _F32 or not k.is_contiguous(t)) for t in (w, b)):
            return None
        D = shape[-1]
        vw = vecmath.vector_width(dev)
        if not dev.is_cpu or D < vw or vecmath.row_kernel(dev, "layer_norm", _F32, D) is None:
            return None
        src = _kernel_src(vw)
        if src is None:
            return None
        kern = dev.kernel(("prologue_ln", vw), "layer_norm_add_v", lambda: src, options="-cl-mad-enable")
        rows = _numel(shape[:-1])
        stat = shape[:-1] + (1,)
        lock, out = dev.lock, k._out

        def call(x, y, w, b, eps, nk):
            with lock:
                if not (k.is_contiguous(x) and k.is_contiguous(y) and (w is None or k.is_contiguous(w))
                        and (b is None or k.is_contiguous(b))):
                    return unfused(x, y, w, b, eps, nk)
                xs, yo, mean, rstd = out(shape, _F32), out(shape, _F32), out(stat, _F32), out(stat, _F32)
                wb, wo = (w.base_data, _desc(w)[1]) if w is not None else (x.base_data, 0)
                bb, bo = (b.base_data, _desc(b)[1]) if b is not None else (x.base_data, 0)
                dev.launch(kern, rows, [xs.base_data, yo.base_data, mean.base_data, rstd.base_data, x.base_data,
                                        _desc(x)[1], y.base_data, _desc(y)[1], wb, wo, bb, bo, int(w is not None),
                                        int(b is not None), rows, D, eps])
                return [xs, yo, mean, rstd]
        return call

    def prologue(name: str, prog: Any, args: tuple):
        """A callable computing ``prog`` (a FusedProgram) inside row kernel ``name``, or None."""
        if name == "layer_norm":
            return layer_norm_add(prog, args)
        return None

    prologue.names = frozenset({"layer_norm"})  # type: ignore[attr-defined]
    return {"prologue": prologue}
