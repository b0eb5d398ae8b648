"""Batched matmul: a register-blocked kernel (RM x VW outputs per work-item, VW-wide vectors, no local memory)
for float32/float64, and a plain strided kernel for the rest (integers, float16, tiny products, and the last
``m % VW`` columns of a product the blocked kernel covers).  Small products with a long k (a convolution's weight
gradient) are split over k into a batched product and one sum, so that they fill the device.

What makes the blocked kernel fast on PoCL (measured on the 2-core PoCL 3.0 pthread device this was tuned on,
an AVX-512 Xeon shared with other jobs; see benchmarks/opencl.py): no OpenCL *builtin* call in the inner loop.
That PoCL build does not inline its builtin library, so ``vload8``/``vstore8``/``mad`` each became a function
call per use (objdump of the cached kernel: ``call _cl_vload8`` / ``call _cl_mad``; 10-20 GFLOP/s); plain vector
dereferences through an element-aligned vector typedef and ``c += a * b`` compile to inline
``vmovups``/``vbroadcastss``/``vfmadd231ps``.  A is read as scalars broadcast from memory (a load-port
operation, no shuffle), B as one vector per k step.  Built with ``-cl-mad-enable`` (without it LLVM kept separate
multiplies and adds at 16 rows: 34 vs 50 GFLOP/s), ``restrict`` on the three buffer pointers, and A's rows
addressed from one pointer (16 row pointers spilled: 38 vs 56 GFLOP/s in the same run).

Blocking from device properties: CPUs get VW = 8 (16-wide vectors crash PoCL's LLVM) and, for float32, RM = 16
rows when the device reports a preferred float vector width of 16 (AVX-512: 32 vector registers hold 16
accumulators), else 8; float64 gets 8 rows (16 spilled: 20 vs 26 GFLOP/s); GPUs get 4 x 4 blocks and a
256-wide work-group (untested: no GPU was available).  Work-items are ordered in groups of GROUP_M row blocks
(a column of GROUP_M row blocks sweeps all column blocks before the next group) so the A rows in use stay in
cache.  Rows past ``n`` need no plain kernel: the last row block shifts up to end at row ``n`` and recomputes
a few rows, bit-identically; RM halves (down to 4) for products with fewer rows.
"""
from __future__ import annotations

import numpy as np

from . import codegen as cg
from .device import STATS, c_strides

GROUP_M = 4


def blocking(dev, dt=np.float32):
    """(rows per work-item, vector width, 1-D local size) for this device and dtype."""
    if dev.is_cpu:
        wide = dev.cldev.preferred_vector_width_float >= 16     # AVX-512 class: 32 vector registers
        if np.dtype(dt) == np.float64:     # measured (AVX-512 PoCL): 8x8 26, 16x8 20, 16x4 20 GFLOP/s
            return 8, (8 if wide else 4), min(8, dev.max_wg)
        return (16 if wide else 8), 8, min(8, dev.max_wg)
    return 4, 4, min(256, dev.max_wg)


def fast_src(dt, rm: int, vw: int) -> str:
    t = cg.stype(dt)
    v = f"{t}{vw}"
    lines = [f"typedef {t} __attribute__((ext_vector_type({vw}), aligned({np.dtype(dt).itemsize}))) ct_uv;",
             f"__kernel void mm_fast(__global {t}* restrict C, long co, __global const {t}* restrict A, long ao,",
             f"                      long sab, __global const {t}* restrict B, long bo, long sbb, int n, int k,",
             "                      int m, int ldb, int ldc) {",
             f" int id = get_global_id(0); int bz = get_global_id(1); int nbi = (n + {rm - 1}) / {rm};"
             f" int nbj = m / {vw};",
             " if (id >= nbi * nbj) return;",
             f" int per = {GROUP_M} * nbj; int grp = id / per; int first = grp * {GROUP_M};"
             f" int gs = min(nbi - first, {GROUP_M});",
             " int r = id - grp * per; int bi = first + r % gs; int bj = r / gs;",
             f" const __global {t}* a = A + ao + bz * sab;",
             f" const __global {t}* b = B + bo + bz * sbb + bj * {vw};"]
    lines.append(f" int r0 = min(bi * {rm}, n - {rm});   // the last block shifts up (n >= {rm}): rows done twice,"
                 " identically")
    lines.append(f" const __global {t}* restrict ar = a + (long)r0 * k;   // one pointer: rm of them spill")
    lines += [f" {v} c{i} = ({v})(0);" for i in range(rm)]
    lines.append(" for (int p = 0; p < k; ++p) {")
    lines.append("  const ct_uv bv = *(const __global ct_uv*)(b + (long)p * ldb);")
    lines += [f"  c{i} += ({v})(ar[{i} * k + p]) * bv;" for i in range(rm)]
    lines.append(" }")
    lines.append(f" __global {t}* c = C + co + (long)bz * n * ldc + (long)r0 * ldc + bj * {vw};")
    lines += [f" *(__global ct_uv*)(c + (long){i} * ldc) = c{i};" for i in range(rm)]
    lines.append("}")
    return "\n".join(lines) + "\n"


def naive_src(dt) -> str:
    t, ct = cg.stype(dt), cg.ctype(dt)
    acc = "long" if np.dtype(dt).kind in "iub" else ct
    return f"""
__kernel void mm(__global {t}* o, long oo, long sob, long son, __global const {t}* a, long ao, long sab, long san,
                 long sak, __global const {t}* b, long bo, long sbb, long sbk, long sbm, long N, long M, long K,
                 long total) {{
  long g = get_global_id(0); if (g >= total) return;
  long j = g % M; long r = g / M; long i = r % N; long z = r / N;
  const long pa = ao + z * sab + i * san; const long pb = bo + z * sbb + j * sbm;
  {acc} acc = 0;
  for (long p = 0; p < K; ++p)
    acc += ({acc}){cg.load(dt, 'a', 'pa + p * sak')} * ({acc}){cg.load(dt, 'b', 'pb + p * sbk')};
  {cg.store(dt, 'o', 'oo + z * sob + i * son + j', 'acc')}
}}
"""


def _desc(x):
    isz = x.dtype.itemsize
    return x.base_data, x.offset // isz, x.shape, tuple(s // isz for s in x.strides)


def matmul(kern, a, b):
    from .backend import _collapse
    dt = a.dtype
    batch = tuple(a.shape[:-2])
    n, k = a.shape[-2:]
    m = b.shape[-1]
    out = kern._out(batch + (n, m), dt)
    if out.size == 0:
        return out
    if k == 0:
        return kern._fill_into(out, 0)
    ocs = c_strides(batch + (n, m))
    for _ in range(2):
        _, ao, _, ast = _desc(a)
        _, bo, _, bst = _desc(b)
        bd, (abst, bbst, _) = _collapse(batch, [ast[:-2], bst[:-2], ocs[:-2]])
        if len(bd) <= 1:
            break
        a, b = kern.contiguous(a), kern.contiguous(b)  # batch dims that do not collapse: one copy each
    nb = bd[0] if bd else 1
    sab = abst[0] if bd else 0
    sbb = bbst[0] if bd else 0
    dev = kern.dev
    if nb == 1 and n * m <= _SPLIT_MAX_OUT and k >= 2 * _SPLIT_CHUNK and dt.kind == "f":
        return _split_k(kern, a, b, out, n, k, m)
    rm, vw, ls = blocking(dev, dt)
    while rm > 4 and n < rm:
        rm //= 2               # the blocked kernel needs n >= rm
    mf = m - m % vw        # columns the blocked kernel covers
    if dt in (np.float32, np.float64) and mf and n >= rm and n * m * k >= 32 * 32 * 32:
        if ast[-1] != 1 or ast[-2] != k:
            a = kern.contiguous(a)
            _, ao, _, ast = _desc(a)
            sab = n * k if nb > 1 else 0
        if bst[-1] != 1 or bst[-2] != m:
            b = kern.contiguous(b)
            _, bo, _, bst = _desc(b)
            sbb = k * m if nb > 1 else 0
        kn = dev.kernel(("mm_fast", dt.str, rm, vw, GROUP_M), "mm_fast", lambda: fast_src(dt, rm, vw),
                        options="-cl-mad-enable")
        blocks = -(-n // rm) * (mf // vw)
        STATS["launches"] += 1
        kn(dev.queue, (-(-blocks // ls) * ls, nb), (ls, 1), out.base_data, 0, a.base_data, ao, sab,
           b.base_data, bo, sbb, n, k, mf, bst[-2], m)
        if mf == m:
            return out
        j0 = mf      # the last m % vw columns: the plain kernel
    else:
        j0 = 0
    kn = dev.kernel(("mm", dt.str), "mm", lambda: naive_src(dt))
    mr = m - j0
    total = nb * n * mr
    dev.launch(kn, total, [out.base_data, j0, n * m, m, a.base_data, ao, sab, ast[-2], ast[-1], b.base_data,
                           bo + j0 * bst[-1], sbb, bst[-2], bst[-1], n, mr, k, total])
    return out


_SPLIT_MAX_OUT = 4096    # products with at most this many outputs ...
_SPLIT_CHUNK = 256       # ... and k >= 2 chunks: too few work-items to fill the device; split k


def _split_k(kern, a, b, out, n, k, m):
    """A small product with a long k (a convolution's weight gradient: (O, N*OH*OW) @ (N*OH*OW, C*KH*KW)): S
    products over k-chunks as one batched matmul (strided views, no copy), then one sum over the chunks."""
    s = min(64, k // _SPLIT_CHUNK)
    kc = k // s
    _, ao, _, ast = _desc(a)
    _, bo, _, bst = _desc(b)
    av = kern._view_of(a, (s, n, kc), (kc * ast[-1], ast[-2], ast[-1]), ao)
    bv = kern._view_of(b, (s, kc, m), (kc * bst[-2], bst[-2], bst[-1]), bo)
    parts = matmul(kern, av, bv)                                         # (s, n, m)
    total = kern._reduce_run("sum", parts, (0,), False, out.dtype)      # (n, m)
    if s * kc < k:
        rest = matmul(kern, kern.basic_index(a, (Ellipsis, slice(s * kc, k))),
                      kern.basic_index(b, (Ellipsis, slice(s * kc, k), slice(None))))
        kern._inplace("add")(total, rest)
    kern._copy_into(out, kern.view(total, out.shape))
    return out
