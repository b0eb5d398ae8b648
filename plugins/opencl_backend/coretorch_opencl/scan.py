"""cumsum / cumprod along any axis, read in place at the input's strides, written C-contiguous.

Two strategies, chosen per shape and device (``chunks``):

* the row loop: one work-item per row (every index but the scan axis) accumulating along the axis;
* a chunked parallel scan for few long rows on a GPU: each row is cut into P chunks; one launch reduces every
  (row, chunk) to its total, a second rescans every chunk starting from the combined totals of the chunks before
  it (at most ``_MAX_CHUNKS`` of them, so this prefix is a short loop per work-item, not a third launch).

Measured on the 2-core PoCL CPU device, float32, ms per call (idle machine unless noted):

  shape / axis      row loop   chunked, P = 128 / 512   pyopencl GenericScanKernel (*)
  (1, 10^6) / 1     0.85       0.89 / 0.86              10.6
  (1000, 1000) / 1  0.50       -- (rows fill it)        9.4
  (100000, 10) / 1  0.90       -- (rows fill it)        9.5
  (100000, 10) / 0  3.27       4.87 / 3.41              not measured
  (10, 10^5) / 1    0.86       1.35 / 0.97              10.5

(*) a segmented scan over rows, measured while another job kept one core busy; the row loop under the same load:
0.9, 0.9, 1.7 and 0.9 ms.  On a CPU the row loop already streams at memory bandwidth from one core, and a chunked scan
reads its input twice, so CPUs always take the row loop; pyopencl.scan is 10x slower still on PoCL (its
local-memory tree scan) and needs Mako, a dependency coretorch-opencl does not have, so it is not used.  A GPU,
where one work-item per row leaves all but a few lanes idle, takes the chunked scan for few long rows (not
measured: no GPU was available; its correctness is tested on PoCL by forcing it).

Results keep the input's dtype (the core casts integers and bools to int64 first); float16 accumulates in float,
float32 in double where the device has doubles (PyTorch's CPU acc_type).
A float scan in chunks adds in a different order than the row loop: results agree to rounding, not bit for bit.
"""
from __future__ import annotations

import numpy as np

from . import codegen as cg
from .layout import _collapse, _desc, _expand_strides, _numel, _pad  # noqa: F401
from .device import c_strides

# a chunk holds at least _MIN_CHUNK elements and a row has at most _MAX_CHUNKS of them
_MIN_CHUNK = 2048
_MAX_CHUNKS = 256
_INIT = {"cumsum": "0", "cumprod": "1"}
_OP = {"cumsum": "+", "cumprod": "*"}


def chunks(dev, rows: int, length: int, dt) -> int:
    """Chunks per row: 1 (the row loop) on a CPU (measured: see the table above) or when the rows alone fill
    the device; else enough chunks to give every compute unit's lanes work."""
    if dev.is_cpu or length < 2 * _MIN_CHUNK or np.dtype(dt) == np.bool_:
        return 1
    target = dev.compute_units * dev.ls * 4   # work-items that keep every compute unit busy
    if rows * 2 > target:
        return 1
    return max(1, min(_MAX_CHUNKS, length // _MIN_CHUNK, -(-target // rows)))


def _acc_dtype(dt, fp64: bool):
    """The accumulator's numpy dtype, PyTorch's CPU acc_type: float16/bfloat16 accumulate in float32, float32 in
    float64 where the device has doubles (a float32 running sum of 2 * 10^6 values near 1000 was 1.6% off)."""
    d = np.dtype(dt)
    if d in (np.float16, cg.BF16):
        return np.dtype(np.float32)
    return np.dtype(np.float64) if d == np.float32 and fp64 else d


def _src(dt, a: int, acc_dt) -> str:
    """Row loop, chunk totals and chunk rescan, for cumsum and cumprod of dtype ``dt`` over ``a`` row dims,
    accumulating in ``acc_dt``."""
    ct, st = cg.ctype(acc_dt), cg.stype(dt)
    rows = [f"long d{i}" for i in range(a)] + [f"long s{i}" for i in range(a)]
    outs = [f"long w{i}" for i in range(a)]

    def x_at(j):
        return cg.load(dt, "x", f"xb + ({j}) * t")
    parts = []
    for o in ("cumsum", "cumprod"):
        init, op = _INIT[o], _OP[o]

        def comb(acc, v, op=op):  # int and long wrap, computed unsigned (a signed overflow is undefined in C)
            return cg.wrapping(ct, f"{acc} {op} {v}", f"({cg.utype(ct)}){acc} {op} ({cg.utype(ct)}){v}")
        loop_args = [f"__global {st}* o", f"__global const {st}* x", "long xo", "long n", "long L", "long t",
                     "long ot"] + rows + outs
        parts.append(
            f"__kernel void {o}({', '.join(loop_args)}) {{\n long g = get_global_id(0); if (g >= n) return;\n"
            f" {cg.decode(a)}\n long xb = xo + {cg.offset(a, 's')}; long ob = {cg.offset(a, 'w')};\n"
            f" {ct} acc = {init};\n for (long j = 0; j < L; ++j) {{ acc = {comb('acc', x_at('j'))};"
            f" {cg.store(dt, 'o', 'ob + j * ot', 'acc')} }}\n}}\n")
        # g = (row, chunk): the row is decoded from g / P; chunk p covers [p * chunk, min(L, (p + 1) * chunk))
        head = (" long g = get_global_id(0); if (g >= n) return;\n long m = g / P; long p = g % P;\n"
                f" {cg.decode(a, 'm')}\n long xb = xo + {cg.offset(a, 's')};\n"
                " long j0 = p * chunk; long j1 = min(L, j0 + chunk);\n")
        part_args = [f"__global {ct}* tot", f"__global const {st}* x", "long xo", "long n", "long P", "long chunk",
                     "long L", "long t"] + rows
        # a chunk's total in four independent accumulators: the add/multiply latency of one dependent chain
        # bounds the row loop, not this pass
        four = " ".join(f"b{u} = {comb(f'b{u}', x_at(f'j + {u}'))};" for u in range(4))
        parts.append(
            f"__kernel void {o}_part({', '.join(part_args)}) {{\n{head}"
            f" {ct} b0 = {init}, b1 = {init}, b2 = {init}, b3 = {init}; long j = j0;\n"
            f" for (; j + 4 <= j1; j += 4) {{ {four} }}\n for (; j < j1; ++j) b0 = {comb('b0', x_at('j'))};\n"
            f" tot[g] = {comb(comb('b0', 'b1'), comb('b2', 'b3'))};\n}}\n")
        fin_args = [f"__global {st}* o", f"__global const {st}* x", "long xo", f"__global const {ct}* tot", "long n",
                    "long P", "long chunk", "long L", "long t", "long ot"] + rows + outs
        parts.append(
            f"__kernel void {o}_fin({', '.join(fin_args)}) {{\n{head}"
            f" long ob = {cg.offset(a, 'w')};\n {ct} acc = {init};\n"
            f" for (long q = g - p; q < g; ++q) acc = {comb('acc', 'tot[q]')};   // the chunks before this one\n"
            f" for (long j = j0; j < j1; ++j) {{ acc = {comb('acc', x_at('j'))};"
            f" {cg.store(dt, 'o', 'ob + j * ot', 'acc')} }}\n}}\n")
    return "\n".join(parts)


def scan(kern, op: str, x, axis):
    """``op`` ('cumsum' or 'cumprod') of ``x`` along ``axis`` (None or a 0-d ``x``: a copy)."""
    if x.ndim == 0 or axis is None or x.shape[axis] == 1:
        return kern.contiguous(x)  # a scan over one element is a copy (the contiguous copy kernel: no row decode)
    dt = x.dtype
    out = kern._out(x.shape, dt)
    if not x.size:
        return out
    dev = kern.dev
    _, off, shape, st = _desc(x)
    ost = c_strides(shape)
    kept = [d for d in range(len(shape)) if d != axis]
    kd, (ks, kos) = _collapse([shape[d] for d in kept], [[st[d] for d in kept], [ost[d] for d in kept]])
    M, L = _numel(kd), shape[axis]
    kd, ks, a = _pad(kd, ks)
    kos = (0,) * (a - len(kos)) + tuple(kos)
    rows = list(kd) + list(ks)
    P = chunks(dev, M, L, dt)
    acc = _acc_dtype(dt, dev.fp64)

    def kernel(name):
        return dev.kernel(("scan", dt.str, a, acc.str), name, lambda: _src(dt, a, acc))
    if P == 1:
        dev.launch(kernel(op), M, [out.base_data, x.base_data, off, M, L, st[axis], ost[axis]] + rows + list(kos))
        return out
    chunk = -(-L // P)
    P = -(-L // chunk)
    tot = kern._out((M * P,), acc)
    n = M * P
    dev.launch(kernel(op + "_part"), n, [tot.base_data, x.base_data, off, n, P, chunk, L, st[axis]] + rows)
    dev.launch(kernel(op + "_fin"), n, [out.base_data, x.base_data, off, tot.base_data, n, P, chunk, L, st[axis],
                                        ost[axis]] + rows + list(kos))
    return out
