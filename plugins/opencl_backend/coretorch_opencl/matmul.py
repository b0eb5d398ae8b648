"""Batched matmul: a register-blocked kernel (RM x VW outputs per work-item, VW-wide vectors, no local memory)
for float32/float64, which also reads A transposed in place (``x.T @ g``) and computes the last ``m % VW`` columns
in the same launch; on CPUs an A @ B.T kernel (RI x RJ dot products per work-item, vectors along k) for a
transposed row-major B (``x @ W.T``) with a long k, and for long-k NN products after a transposed copy of B; and a
plain strided kernel for the rest (integers, float16, tiny products).  Small products with a long k (a
convolution's weight gradient) are split over k into a batched product and one sum, so that they fill the device.

What makes the blocked kernel fast on PoCL (measured on the 2-core PoCL 3.0 pthread device this was tuned on,
an AVX-512 Xeon shared with other jobs; see benchmarks/opencl.py): no OpenCL *builtin* call in the inner loop.
That PoCL build does not inline its builtin library, so ``vload8``/``vstore8``/``mad`` each became a function
call per use (objdump of the cached kernel: ``call _cl_vload8`` / ``call _cl_mad``; 10-20 GFLOP/s); plain vector
dereferences through an element-aligned vector typedef and ``c += a * b`` compile to inline
``vmovups``/``vbroadcastss``/``vfmadd231ps``.  A is read as scalars broadcast from memory (a load-port
operation, no shuffle), B as one vector per k step.  Built with ``-cl-mad-enable`` (without it LLVM kept separate
multiplies and adds at 16 rows: 34 vs 50 GFLOP/s), ``restrict`` on the three buffer pointers, and A's rows
addressed from one pointer (16 row pointers spilled: 38 vs 56 GFLOP/s in the same run).

Blocking from device properties: for float32, CPUs that report a preferred float vector width of 16 (AVX-512: 32
vector registers hold 16 accumulators) get 16 x 16 (8 rows where that leaves fewer than 128 work-items per compute
unit; VW = 8 for m < 16), others (AVX2: 16 vector registers) 6 rows x 2 vectors of 8 (see ``vectors``);
float64 gets 8 rows (16 spilled: 20 vs 26 GFLOP/s); GPUs get 4 x 4 blocks and a 256-wide work-group
(untested: no GPU was available).  Work-items are ordered in groups of GROUP_M row blocks
(a column of GROUP_M row blocks sweeps all column blocks before the next group) so the A rows in use stay in
cache.  Rows past ``n`` need no plain kernel: the last row block shifts up to end at row ``n`` and recomputes
a few rows, bit-identically; RM halves (down to 4) for products with fewer rows.  Batched products whose batch
dims do not collapse into one (attention's (B, H) head views of a (B, T, 3 H D) array) run as two batch dims of
their own strides in the blocked kernel, A's and B's rows read in place at any pitch (no copies of q and v; k.T
is one batched 8x8-block transposed copy).

Host time: what a product runs (kernel, copies, sizes, arguments) depends only on its operands' layouts, so
``_matmul`` plans it once per layout (``_plan``) and a later call allocates and launches (a compiled replay's
products: ~45 us of Python per call down to ~18 on the 2-core PoCL machine).
"""
from __future__ import annotations

import numpy as np

from . import codegen as cg
from .layout import _collapse, _desc, _expand_strides, _numel, _pad  # noqa: F401
from .device import STATS, c_strides

GROUP_M = 4


def blocking(dev, dt=np.float32):
    """(rows per work-item, vector width, 1-D local size) for this device and dtype."""
    if dev.is_cpu:
        wide = dev.float_lanes >= 16     # AVX-512 class: 32 vector registers
        if np.dtype(dt) == np.float64:     # measured (AVX-512 PoCL): 8x8 26, 16x8 20, 16x4 20 GFLOP/s
            return 8, (8 if wide else 4), min(8, dev.max_wg)
        # AVX-512: 12 rows x 2 vectors of 16 (24 zmm accumulators, 2 B vectors, 1 broadcast), see ``vectors``
        return (12, 16, min(8, dev.max_wg)) if wide else (6, 8, min(8, dev.max_wg))
    return 4, 4, min(256, dev.max_wg)


def vectors(dev, dt=np.float32) -> int:
    """Vectors of VW columns per work-item of the blocked kernel: 2 for float32 on CPUs.  AVX2 (16 vector
    registers): the 6 x 16 block of BLIS's AVX2 kernel (12 accumulators, 2 B vectors, 1 broadcast).  Measured on the
    2-core znver3 PoCL 3.0 device, one compute unit, the GPT step's products (1024 x 128..512 NN and transposed-A
    weight gradients, 64 batched 64x64 @ 64x32): 8 x 8 27.5 ms in all, 4 x 16 26.3, 6 x 16 18.9-20.1, 5 x 16 22.4,
    3 x 32 26.0, 8 x 16 35.7 (spills), 6 x 8 30.9.  AVX-512 (32 registers, 16-wide vectors): 12 x 2 x 16, measured
    on a 2-core Sapphire Rapids PoCL 3.0 device, one compute unit, ms (16 x 1 x 16, the blocking before / 12 x 2):
    1024x128 @ 128x512 1.20 / 0.90, 1024x512 @ 512x128 1.19 / 0.90, 1024x128 @ 128x384 0.90 / 0.70, 128x784 @
    784x256 0.47 / 0.35, 64 x (64x32 @ 32x64) 0.18 / 0.15, 1024^3 26.6 / 20.5 (OpenBLAS on that core: 0.98, 1.01,
    0.74, 0.39, -, 14.8); 10 x 2 and 14 x 2 within a few % of 12 x 2, 6 x 2 ~5% slower, 8 x 3 spilled (2-4x)."""
    if dev.is_cpu and np.dtype(dt) == np.float32:
        return 2
    return 1


def nt_min_k_of(dev, dt=np.float32) -> int:
    """The shortest k from which ``x @ W.T`` (B a transposed row-major array) takes the A @ B.T kernel on a CPU
    device, rather than a transposed copy of B and the blocked kernel; and from which NN products with rows 4 KiB
    apart go through the A @ B.T kernel (see ``_plan``).  AVX-512's blocking (32 columns a work-item) beat that
    kernel at every k measured (``_NT_MIN_K_WIDE``)."""
    return _NT_MIN_K_WIDE if dev.is_cpu and blocking(dev, dt)[1] * vectors(dev, dt) >= 32 else _NT_MIN_K


def _step_products(t: str, v: str, rm: int, nv: int, at: bool, ind: str) -> list:
    """One k step of the register block: row i's A value times the NV vectors of B's row (A read transposed when
    ``at``), as lines indented by ``ind``."""
    lines = [f"{ind}const __global {t}* restrict ap = ar + (long)p * lda;"] if at else []
    for i in range(rm):
        ai = f"ap[{i}]" if at else f"ar[{i} * lda + p]"
        lines.append(f"{ind}{{ const {v} ai = ({v})({ai}); " + " ".join(f"c{i}_{j} += ai * bv{j};" for j in range(nv))
                     + " }")
    return lines


def fast_src(dt, rm: int, vw: int, at: bool = False, nv: int = 1, bias: bool = False) -> str:
    """The blocked kernel: RM rows x NV vectors of VW columns per work-item.  ``at``: A is read transposed in
    place (A[i, p] at ``p * lda + i``: a transposed contiguous array, ``x.T @ g`` in a weight gradient), so the RM
    values of a k step are adjacent (no copy); otherwise A's rows are ``lda`` apart (a column slice of a wider
    array, attention's heads, is read in place).  Work-items past the ``nbi * nbj`` blocks compute the last
    ``ldc - m`` columns (``m`` here is the blocked width): RM rows of one column each, scalar, in the same launch
    (the plain kernel was a second launch, 30 us for a 128x128 @ 128x10 product's last 2 columns on PoCL).
    ``bz`` (the batch index) is split into two batch dims of strides (sab, sab2) / (sbb, sbb2) (``nb2`` the
    inner one's size): the (B, H) of attention's views, which do not collapse into one.  ``bias``: a vector of
    ``ldc`` values added to every row as the results are stored (nn.Linear's x @ W.T + b in one launch; the same
    float additions as a separate add)."""
    t = cg.stype(dt)
    v = f"{t}{vw}"
    cw = vw * nv

    def a_at(i, p):
        return f"ar[(long){p} * lda + {i}]" if at else f"ar[(long){i} * lda + {p}]"
    lines = [f"typedef {t} __attribute__((ext_vector_type({vw}), aligned({np.dtype(dt).itemsize}))) ct_uv;",
             f"__kernel void mm_fast(__global {t}* restrict C, long co, __global const {t}* restrict A, long ao,",
             f"                      long sab, __global const {t}* restrict B, long bo, long sbb, int n, int k,",
             "                      int m, int ldb, int ldc, int lda, int nb2, long sab2, long sbb2"
             + (f", __global const {t}* restrict bias, long bio) {{" if bias else ") {"),
             f" int id = get_global_id(0); int bz = get_global_id(1); int nbi = (n + {rm - 1}) / {rm};"
             f" int nbj = m / {cw};",
             " int z0 = bz / nb2, z1 = bz - z0 * nb2;",
             f" const __global {t}* a = A + ao + z0 * sab + z1 * sab2;",
             f" const __global {t}* bb = B + bo + z0 * sbb + z1 * sbb2;",
             " if (id >= nbi * nbj) {   // the last ldc - m columns",
             "  int mt = ldc - m; int q = id - nbi * nbj; if (q >= nbi * mt) return;",
             f"  int col = m + q % mt; int r0 = min((q / mt) * {rm}, n - {rm});",
             f"  const __global {t}* restrict ar = a + " + ("r0;" if at else "(long)r0 * lda;"),
             f"  const __global {t}* bc = bb + col;",
             f"  {t} " + ", ".join(f"s{i} = 0" for i in range(rm)) + ";",
             "  for (int p = 0; p < k; ++p) {",
             f"   const {t} bv = bc[(long)p * ldb];"]
    lines += [f"   s{i} += {a_at(i, 'p')} * bv;" for i in range(rm)]
    lines.append("  }")
    lines.append(f"  __global {t}* c = C + co + (long)bz * n * ldc + (long)r0 * ldc + col;")
    if bias:
        lines.append(f"  const {t} bc0 = bias[bio + col];")
    lines += [f"  c[(long){i} * ldc] = s{i}{' + bc0' if bias else ''};" for i in range(rm)]
    lines += ["  return;", " }",
              f" int per = {GROUP_M} * nbj; int grp = id / per; int first = grp * {GROUP_M};"
              f" int gs = min(nbi - first, {GROUP_M});",
              " int r = id - grp * per; int bi = first + r % gs; int bj = r / gs;",
              f" const __global {t}* b = bb + bj * {cw};"]
    lines.append(f" int r0 = min(bi * {rm}, n - {rm});   // the last block shifts up (n >= {rm}): rows done twice,"
                 " identically")
    if at:
        lines.append(f" const __global {t}* restrict ar = a + r0;")
    else:
        lines.append(f" const __global {t}* restrict ar = a + (long)r0 * lda;   // one pointer: rm of them spill")
    lines += [f" {v} c{i}_{j} = ({v})(0);" for i in range(rm) for j in range(nv)]
    lines.append(" for (int p = 0; p < k; ++p) {")
    lines += [f"  const ct_uv bv{j} = *(const __global ct_uv*)(b + (long)p * ldb + {j * vw});" for j in range(nv)]
    lines += _step_products(t, v, rm, nv, at, "  ")
    lines.append(" }")
    lines.append(f" __global {t}* c = C + co + (long)bz * n * ldc + (long)r0 * ldc + bj * {cw};")
    if bias:
        lines += [f" const ct_uv bb{j} = *(const __global ct_uv*)(bias + bio + bj * {cw} + {j * vw});"
                  for j in range(nv)]
    lines += [f" *(__global ct_uv*)(c + (long){i} * ldc + {j * vw}) = c{i}_{j}{f' + bb{j}' if bias else ''};"
              for i in range(rm) for j in range(nv)]
    lines.append("}")
    return "\n".join(lines) + "\n"


def chunked_src(dt, rm: int, vw: int, at: bool, nv: int, bias: bool, kc: int, gm: int = GROUP_M,
                packed: bool = False) -> str:
    """The blocked kernel for a long k on CPUs: a work-item computes the GROUP_M row blocks of one column block k
    chunk by k chunk (``kc`` steps: the chunk of B's column panel, kc x VW*NV values, stays in L1 across the row
    blocks, where a whole panel of k = 1024 rows does not), the partial sums stored in C and reloaded for the next
    chunk.  The same multiply-adds in the same order as ``fast_src`` (a float32 stored and reloaded is exact):
    bitwise its results.  Each row is owned by one block (the last block shifts up to end at row n as in
    ``fast_src``, its rows of the previous block neither loaded nor stored); the last ``ldc - m`` columns as there."""
    t = cg.stype(dt)
    v = f"{t}{vw}"
    cw = vw * nv
    src = fast_src(dt, rm, vw, at, nv, bias)
    head, rest = src.split(" if (id >= nbi * nbj) {", 1)
    tail, _ = rest.split(f" int per = {GROUP_M} * nbj;", 1)
    head = head.replace(f" int nbj = m / {cw};", f" int nbj = m / {cw}; int ngr = (nbi + {gm - 1}) / {gm};")
    tail = tail.replace("int q = id - nbi * nbj;", "int q = id - ngr * nbj;")
    if packed:   # A as row blocks of RM rows, k steps of RM values each (pack_src): lda = RM
        tail = tail.replace("restrict ar = a + r0;", f"restrict ar = a + (long)(q / mt) * k * {rm};")
    lines = [head.rstrip("\n"), " if (id >= ngr * nbj) {" + tail.rstrip("\n"),
             f" int first = (id / nbj) * {gm}; int bj = id % nbj; int gs = min(nbi - first, {gm});",
             f" const __global {t}* b = bb + bj * {cw};",
             f" for (int k0 = 0; k0 < k; k0 += {kc}) {{",
             f"  const int k1 = min(k0 + {kc}, k);",
             "  for (int g = 0; g < gs; ++g) {",
             f"   const int bi = first + g; const int own = bi * {rm}; const int r0 = min(own, n - {rm});",
             "   const __global " + t + "* restrict ar = a + " + (f"(long)bi * k * {rm};" if packed else "r0;" if at
                                                               else "(long)r0 * lda;"),
             f"   __global {t}* c = C + co + (long)bz * n * ldc + (long)r0 * ldc + bj * {cw};"]
    for i in range(rm):
        for j in range(nv):
            lines.append(f"   {v} c{i}_{j} = (k0 == 0 || r0 + {i} < own) ? ({v})(0) : "
                         f"*(__global ct_uv*)(c + (long){i} * ldc + {j * vw});")
    lines.append("   for (int p = k0; p < k1; ++p) {")
    lines += [f"    const ct_uv bv{j} = *(const __global ct_uv*)(b + (long)p * ldb + {j * vw});" for j in range(nv)]
    lines += _step_products(t, v, rm, nv, at, "    ")
    lines.append("   }")
    if bias:
        lines.append("   const int last = k1 == k;")
        lines += [f"   const ct_uv bb{j} = last ? *(const __global ct_uv*)(bias + bio + bj * {cw} + {j * vw}) : "
                  f"(ct_uv)(0);" for j in range(nv)]
    for i in range(rm):
        stores = " ".join(f"*(__global ct_uv*)(c + (long){i} * ldc + {j * vw}) = "
                          + (f"last ? c{i}_{j} + bb{j} : c{i}_{j};" if bias else f"c{i}_{j};") for j in range(nv))
        lines.append(f"   if (r0 + {i} >= own) {{ {stores} }}")
    lines += ["  }", " }", "}"]
    return "\n".join(lines) + "\n"


def pack_src(dt, rm: int) -> str:
    """A (n x k, read transposed in place: A[i, p] at ``p * lda + i``) as row blocks of RM rows (the last one
    shifted up to end at row n, as the blocked kernels' last block), each k steps of RM adjacent values: what a
    work-item of the chunked kernel reads in order (one cache line per few steps instead of one per step)."""
    t = cg.stype(dt)
    return f"""
__kernel void mm_pack(__global {t}* restrict P, __global const {t}* restrict A, long ao, int n, int k, int lda) {{
  const int p = get_global_id(0), bi = get_global_id(1);
  if (p >= k) return;
  const int r0 = min(bi * {rm}, n - {rm});
  const __global {t}* a = A + ao + (long)p * lda + r0;
  __global {t}* o = P + ((long)bi * k + p) * {rm};
""" + "".join(f"  o[{i}] = a[{i}];\n" for i in range(rm)) + "}\n"


def nt_blocking(dev, dt=np.float32, aliased: bool = False, n: int = 4):
    """(rows, columns, vector width along k) of a work-item of the A @ B.T kernel.  Measured in one run on the
    AVX-512 PoCL device (1024^3 / 128x784x256 float32 GFLOP/s): 4x4x16 75 / 87, 5x4x16 80 / 88, 4x4x8 61 / 70,
    4x2x8 50 / 54; 16-wide float vectors build and run here (the issue reported PoCL's LLVM failing on them; these
    kernels do not hit that).  AVX2 (16 vector registers), the 2-core znver3 PoCL device, one compute unit, float32
    128x784 @ 784x256 (the MLP's x @ W.T) in ms, median of alternating runs: 4x3x8 0.82, 3x3x8 0.93, 6x2x8 0.91,
    4x2x8 0.99, 2x4x8 1.12, 5x2x8 0.96, 5x3x8 1.14, 4x4x8 1.30 (spills), 2x4x16 1.39, a transposed copy of W and the
    blocked kernel 0.89-0.92; 1000^3 4x3x8 45-63 ms against 2x4x8 55-91.  ``aliased``: A's or B's rows a multiple of
    4 KiB apart, where 4x3x8's seven row streams share L1 sets (1024^3: 41-45 ms against 39-40 for 2x4x8); ``n``:
    A's rows (fewer than 4: 2x4x8, which the kernel's shifted last block needs no more rows than)."""
    if dev.is_cpu:
        wide = dev.float_lanes >= 16
        if np.dtype(dt) == np.float64:
            return (4, 4, 8) if wide else (2, 4, 4)
        if wide:
            return 4, 4, 16    # 16 vector accumulators of 32 registers
        return (2, 4, 8) if aliased or n < 4 else (4, 3, 8)
    return 2, 2, 4


def nt_src(dt, ri: int, rj: int, vw: int, bias: bool = False) -> str:
    """C = A @ B.T with A (n, k) and B (m, k) both read along k (B.T a transposed view of a row-major B: the
    linear layer's ``x @ W.T``): each work-item holds RI x RJ VW-wide partial dot products, then sums the lanes
    (the alternative, a transposed copy of B, cost 0.11-0.15 ms for a 256x784 float32 weight on PoCL).  The last
    row / column block shifts back to end at n / m (n >= RI, m >= RJ): those outputs are computed twice,
    identically.  ``bias``: a vector of ``m`` values added to every row as the results are stored (nn.Linear's
    x @ W.T + b in one launch; the same float additions as the separate add)."""
    t = cg.stype(dt)
    v = f"{t}{vw}"
    rows, cols = range(ri), range(rj)
    lines = [f"typedef {t} __attribute__((ext_vector_type({vw}), aligned({np.dtype(dt).itemsize}))) ct_uv;",
             f"__kernel void mm_nt(__global {t}* restrict C, long co, __global const {t}* restrict A, long ao,",
             f"                    long sab, __global const {t}* restrict B, long bo, long sbb, int n, int k, int m,",
             "                    int lda, int ldb, int nb2, long sab2, long sbb2"
             + (f", __global const {t}* restrict bias, long bio) {{" if bias else ") {"),
             f" int id = get_global_id(0); int bz = get_global_id(1); int nbi = (n + {ri - 1}) / {ri};"
             f" int nbj = (m + {rj - 1}) / {rj};",
             " int z0 = bz / nb2, z1 = bz - z0 * nb2;",
             " if (id >= nbi * nbj) return;",
             f" int per = {GROUP_M} * nbj; int grp = id / per; int first = grp * {GROUP_M};"
             f" int gs = min(nbi - first, {GROUP_M});",
             " int r = id - grp * per; int bi = first + r % gs; int bj = r / gs;",
             f" int r0 = min(bi * {ri}, n - {ri}); int c0 = min(bj * {rj}, m - {rj});"]
    lines += [f" const __global {t}* restrict a{i} = A + ao + z0 * sab + z1 * sab2 + (long)(r0 + {i}) * lda;"
              for i in rows]
    lines += [f" const __global {t}* restrict b{j} = B + bo + z0 * sbb + z1 * sbb2 + (long)(c0 + {j}) * ldb;"
              for j in cols]
    lines += [f" {v} c{i}{j} = ({v})(0);" for i in rows for j in cols]
    lines.append(f" int p = 0;\n for (; p + {vw} <= k; p += {vw}) {{")
    lines += [f"  const ct_uv x{i} = *(const __global ct_uv*)(a{i} + p);" for i in rows]
    lines += [f"  const ct_uv y{j} = *(const __global ct_uv*)(b{j} + p);" for j in cols]
    lines += [f"  c{i}{j} += x{i} * y{j};" for i in rows for j in cols]
    lines.append(" }")
    lanes = "0123456789abcdef"[:vw]
    lines += [f" {t} s{i}{j} = " + " + ".join(f"c{i}{j}.s{q}" for q in lanes) + ";" for i in rows for j in cols]
    lines.append(" for (; p < k; ++p) {")
    lines += [f"  s{i}{j} += a{i}[p] * b{j}[p];" for i in rows for j in cols]
    lines.append(" }")
    lines.append(f" __global {t}* c = C + co + (long)bz * n * m + (long)r0 * m + c0;")
    if bias:
        lines += [f" const {t} bb{j} = bias[bio + c0 + {j}];" for j in cols]
    lines += [f" c[(long){i} * m + {j}] = s{i}{j}{f' + bb{j}' if bias else ''};" for i in rows for j in cols]
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


def matmul(kern, a, b, bias=None, out=None):
    """a @ b (batched, any strides); ``bias`` (a contiguous vector of b's columns, 2-D products only) added to
    every row: in the blocked kernel's stores, else by one row-broadcast add; ``out``: a planned buffer of
    coretorch.compile (see out_kernels.py) written instead of a new array."""
    out, added = _matmul(kern, a, b, bias, out)
    if bias is not None and not added:
        kern._inplace("add")(out, kern.expand(bias, out.shape))
    return out


class _Plan:
    """What ``_matmul`` does for one operand layout (see ``_plan``): a kind, and for a launch of the blocked or
    A @ B.T kernel the copies made first and every argument but the buffers."""
    __slots__ = ("kind", "shape", "dt", "prep_a", "prep_b", "kn", "gs", "ls", "ao", "sab", "bo", "sbb", "rest",
                 "biased", "pack", "extra")

    def __init__(self, kind, shape, dt, **kw):
        self.kind, self.shape, self.dt = kind, shape, dt
        self.prep_a = self.prep_b = self.kn = self.gs = self.ls = self.rest = self.pack = self.extra = None
        self.ao = self.sab = self.bo = self.sbb = 0
        self.biased = False
        for k, v in kw.items():
            setattr(self, k, v)


_EMPTY, _ZERO_K, _RETRY, _SPLIT, _PLAIN, _LAUNCH = range(6)   # plan kinds
_CONTIG, _BT_COPY, _PACKED = 1, 2, 3                            # copies made before a launch


def _tunables() -> tuple:
    """The module settings a plan depends on (tests and benchmarks change them): part of the plan's key."""
    return (GROUP_M, _KC, _KC_MIN_K, _KC_GM, _KC_MIN_GROUPS, _PACK, _KC_AT_MIN_K, _KC_AT_MIN_WORK, _NT_MIN_K,
            _NT_MIN_K_WIDE, _VIA_NT_N, _SPLIT_MAX_OUT, _SPLIT_CHUNK, nt_blocking, blocking, vectors)


def _matmul(kern, a, b, bias, out=None):
    """-> (a @ b, whether ``bias`` was added).  The choice of kernel, copies, sizes and arguments depends only on
    the operands' layouts (shapes, strides, offsets, dtypes), so it is made once per layout (``_plan``) and kept
    on the kernel set: a call then allocates, makes its copies and launches (a compiled replay's products: ~45 us
    of host time per call down to ~15 on the 2-core PoCL machine)."""
    key = (a.shape, a.strides, a.offset, b.shape, b.strides, b.offset, a.dtype, b.dtype, bias is not None,
           kern.dev.is_cpu, _tunables())   # is_cpu: the blocking forced to a GPU's in tests must not stay planned
    plans = kern.__dict__.get("_mm_plans")
    if plans is None:
        plans = kern.__dict__["_mm_plans"] = {}
    p = plans.get(key)
    if p is None:
        if len(plans) >= 2048:
            plans.clear()
        p = plans[key] = _plan(kern, a, b, bias is not None)
    if out is None:
        out = kern._out(p.shape, p.dt)
    kind = p.kind
    if kind == _LAUNCH:
        dev = kern.dev
        if p.prep_a == _CONTIG:
            a = kern.contiguous(a)
        elif p.prep_a == _PACKED:
            pk, pgs, pls, size, pargs = p.pack
            pa = kern._out((size,), p.dt)
            STATS["launches"] += 1
            pk(dev.queue, pgs, pls, pa.base_data, a.base_data, *pargs)
            a = pa
        if p.prep_b == _CONTIG:
            b = kern.contiguous(b)
        elif p.prep_b == _BT_COPY:     # B.T copied: only the new buffer is read (at the strides planned)
            b = kern.contiguous(kern.permute(b, p.extra))
        STATS["launches"] += 1
        if p.biased:
            p.kn(dev.queue, p.gs, p.ls, out.base_data, 0, a.base_data, p.ao, p.sab, b.base_data, p.bo, p.sbb,
                 *p.rest, bias.base_data, bias.offset // bias.dtype.itemsize)
            return out, True
        p.kn(dev.queue, p.gs, p.ls, out.base_data, 0, a.base_data, p.ao, p.sab, b.base_data, p.bo, p.sbb, *p.rest)
        return out, False
    if kind == _EMPTY:
        return out, False
    if kind == _ZERO_K:
        return kern._fill_into(out, 0), False
    if kind == _RETRY:   # batch dims that do not collapse: one copy each, then the plan of the copies
        return _matmul(kern, kern.contiguous(a), kern.contiguous(b), bias, out)
    if kind == _SPLIT:
        return _split_k(kern, a, b, out, *p.extra), False
    return _plain(kern, a, b, out, *p.extra), False


def _plan(kern, a, b, biased: bool) -> _Plan:
    """How ``_matmul`` computes a @ b for these operand layouts (nothing launched here)."""
    dt = a.dtype
    batch = tuple(a.shape[:-2])
    n, k = a.shape[-2:]
    m = b.shape[-1]
    shape = batch + (n, m)
    if _numel(shape) == 0:
        return _Plan(_EMPTY, shape, dt)
    if k == 0:
        return _Plan(_ZERO_K, shape, dt)
    _, ao, _, ast = _desc(a)
    _, bo, _, bst = _desc(b)
    bd, (abst, bbst, _) = _collapse(batch, [ast[:-2], bst[:-2], c_strides(shape)[:-2]])
    if len(bd) > 2:
        return _Plan(_RETRY, shape, dt)
    dev = kern.dev
    rm, vw, ls = blocking(dev, dt)
    nv = vectors(dev, dt)
    nb = bd[0] if bd else 1
    sab = abst[0] if bd else 0
    sbb = bbst[0] if bd else 0
    nb2, sab2, sbb2 = (bd[1], abst[1], bbst[1]) if len(bd) == 2 else (1, 0, 0)
    nb *= nb2
    if nb == 1 and n * m <= _SPLIT_MAX_OUT and k >= 4 * _SPLIT_CHUNK and dt.kind == "f":
        return _Plan(_SPLIT, shape, dt, extra=(n, k, m))
    prep_a = prep_b = None
    perm = tuple(range(len(batch))) + (len(batch) + 1, len(batch))
    lda = ast[-2] if ast[-1] == 1 and ast[-2] >= k else k   # the rows' pitches the A @ B.T kernel reads
    ldb = bst[-1] if bst[-2] == 1 and bst[-1] >= k else k
    ri, rj, kv = nt_blocking(dev, dt, (lda * dt.itemsize) % 4096 == 0 or (ldb * dt.itemsize) % 4096 == 0, n)
    nt_min_k = nt_min_k_of(dev, dt)
    if dev.is_cpu and dt in (np.float32, np.float64) and n >= ri and m >= rj and n * m * k >= 32 * 32 * 32:
        b_nt = bst[-2] == 1 and bst[-1] >= k              # B.T of a row-major array: x @ W.T
        a_t = ast[-2] == 1 and ast[-1] >= n and not (ast[-1] == 1 and ast[-2] == k)
        if not b_nt and not a_t and k * dt.itemsize % 4096 == 0 and k >= nt_min_k and n >= _VIA_NT_N and \
                nb2 == 1:
            # rows of A a multiple of 4 KiB apart: the blocked kernel's RM rows alias in the L1 cache (1024^3:
            # 51 GFLOP/s against 71 for 1000^3 in one run), so a transposed copy of B (k*m elements, 1/n of the
            # product's work) and the A @ B.T kernel (1024^3: 66 GFLOP/s including the copy, the same run).  Other
            # shapes measured faster blocked (128x784 @ 784x256: 0.50 blocked, 0.75 ms so)
            tst = c_strides(batch + (m, k))
            prep_b, bo, bst = _BT_COPY, 0, tst[:-2] + (tst[-1], tst[-2])
            sbb = k * m if nb > 1 else 0
            b_nt = True
        # (a narrow m: the blocked kernel's tail.  Not for attention's q @ k.T, k = 32: 2.2 ms against 0.5 with
        # B copied and the blocked kernel, 64 x (64x32 @ 32x64), PoCL one compute unit)
        if b_nt and (k >= nt_min_k or (m < 16 and k >= 4 * kv)):
            if ast[-1] != 1 or ast[-2] < k:
                prep_a, ao, ast = _CONTIG, 0, c_strides(a.shape)
                sab, sab2 = (n * k * nb2, n * k) if nb > 1 else (0, 0)
            biased = biased and nb == 1
            kn = dev.kernel(("mm_nt2", dt.str, ri, rj, kv, GROUP_M) + (("bias",) if biased else ()), "mm_nt",
                            lambda: nt_src(dt, ri, rj, kv, biased), options="-cl-mad-enable")
            items = -(-n // ri) * -(-m // rj)
            return _Plan(_LAUNCH, shape, dt, prep_a=prep_a, prep_b=prep_b, extra=perm, kn=kn,
                         gs=(-(-items // ls) * ls, nb), ls=(ls, 1), ao=ao, sab=sab, bo=bo, sbb=sbb,
                         rest=(n, k, m, ast[-2], bst[-1], nb2, sab2, sbb2), biased=biased)
    if vw > 8 and m < vw:
        vw = 8                 # a narrow product (m = 10): the blocked kernel still covers 8 columns
    if dev.is_cpu and rm > 8 and -(-n // rm) * (m // vw) < 128 * dev.compute_units:
        rm = 8                 # few work-items: smaller blocks, more of them (128x128 @ 128x256: 0.10 -> 0.08 ms)
    while rm > 4 and n < rm:
        rm //= 2               # the blocked kernel needs n >= rm
    if m < vw * nv:
        nv = 1
    mf = m - m % (vw * nv)     # columns the blocked kernel covers
    if dt in (np.float32, np.float64) and mf and n >= rm and n * m * k >= 32 * 32 * 32:
        # A as a transposed contiguous view (x.T @ g): read in place by the "at" variant, no copy; A's rows at any
        # pitch >= k (a column slice, attention's heads): read in place
        at = (ast[-1] != 1 or ast[-2] < k) and ast[-2] == 1 and ast[-1] >= n
        if not at and (ast[-1] != 1 or ast[-2] < k):
            prep_a, ao, ast = _CONTIG, 0, c_strides(a.shape)
            sab, sab2 = (n * k * nb2, n * k) if nb > 1 else (0, 0)
        if bst[-1] != 1 or bst[-2] < m:     # rows of B at any pitch >= m (a column slice): read in place
            prep_b, bo, bst = _CONTIG, 0, c_strides(batch + (k, m))
            sbb, sbb2 = (k * m * nb2, k * m) if nb > 1 else (0, 0)
        biased = biased and nb == 1
        nbi = -(-n // rm)
        ngr = -(-nbi // _KC_GM) * (mf // (vw * nv))
        pack = None
        if dev.is_cpu and (k >= _KC_MIN_K or (at and nb == 1 and _PACK and k >= _KC_AT_MIN_K and
                                              n * m * k >= _KC_AT_MIN_WORK)) and \
                ngr * nb >= _KC_MIN_GROUPS * ls * dev.compute_units:
            # a long k (the weight gradients' x.T @ g over 1024 rows): k chunks of B's panel kept in L1, bitwise the
            # same sums (measured, the GPT step's five such products twice, PoCL one compute unit: 21.0 -> 17.8 ms;
            # packed A, see _PACK: a further ~10%)
            packed = at and nb == 1 and _PACK
            if packed:
                pk = dev.kernel(("mm_pack", dt.str, rm), "mm_pack", lambda: pack_src(dt, rm))
                pls = min(64, dev.max_wg)
                pack = (pk, (-(-k // pls) * pls, nbi), (pls, 1), nbi * k * rm, (ao, n, k, ast[-1]))
                prep_a, ao, ast = _PACKED, 0, (1, rm)
            kn = dev.kernel(("mm_fastk", dt.str, rm, vw, nv, _KC_GM, at, biased, _KC, packed), "mm_fast",
                            lambda: chunked_src(dt, rm, vw, at, nv, biased, _KC, _KC_GM, packed),
                            options="-cl-mad-enable")
            items = ngr + nbi * (m - mf)
        else:
            kn = dev.kernel(("mm_fast3", dt.str, rm, vw, nv, GROUP_M, at, biased), "mm_fast",
                            lambda: fast_src(dt, rm, vw, at, nv, biased), options="-cl-mad-enable")
            items = nbi * (mf // (vw * nv)) + nbi * (m - mf)   # the blocks, then the last columns (one launch)
        return _Plan(_LAUNCH, shape, dt, prep_a=prep_a, prep_b=prep_b, extra=perm, kn=kn,
                     gs=(-(-items // ls) * ls, nb), ls=(ls, 1), ao=ao, sab=sab, bo=bo, sbb=sbb,
                     rest=(n, k, mf, bst[-2], m, ast[-1] if at else ast[-2], nb2, sab2, sbb2), biased=biased,
                     pack=pack)
    if nb2 > 1:   # two batch dims: only the blocked kernel reads them in place
        return _Plan(_RETRY, shape, dt)
    return _Plan(_PLAIN, shape, dt, extra=(nb, ao, sab, ast, bo, sbb, bst))


def _plain(kern, a, b, out, nb=None, ao=None, sab=None, ast=None, bo=None, sbb=None, bst=None):
    """The strided kernel (integers, float16, tiny products)."""
    n, k = a.shape[-2:]
    m = b.shape[-1]
    if nb is None:
        batch = tuple(a.shape[:-2])
        _, ao, _, ast = _desc(a)
        _, bo, _, bst = _desc(b)
        bd, (abst, bbst, _) = _collapse(batch, [ast[:-2], bst[:-2], c_strides(batch + (n, m))[:-2]])
        nb, sab, sbb = (bd[0], abst[0], bbst[0]) if bd else (1, 0, 0)
    dt = a.dtype
    kn = kern.dev.kernel(("mm", dt.str), "mm", lambda: naive_src(dt))
    total = nb * n * m
    kern.dev.launch(kn, total, [out.base_data, 0, n * m, m, a.base_data, ao, sab, ast[-2], ast[-1], b.base_data,
                                bo, sbb, bst[-2], bst[-1], n, m, k, total])
    return out


def linear(kern, x, w, b):
    """x (N, in) @ w (out, in).T + b: nn.Linear's forward, the bias added in the product's stores."""
    if b is not None and x.dtype.itemsize == 2 and x.dtype.kind in "fV":
        # float16/bfloat16 with a bias: in float32, rounded once (PyTorch's addmm op math; the half product's store
        # rounded before the bias add: an ulp off in a quarter of the elements)
        f32 = np.dtype(np.float32)
        r = linear(kern, kern.cast(x, f32), kern.cast(w, f32), kern.cast(b, f32))
        return kern.cast(r, x.dtype)
    if b is not None and not kern.is_contiguous(b):
        b = kern.contiguous(b)
    return matmul(kern, x, kern.permute(w, (1, 0)), b)


def linear_backward(kern, g, x, w, nx, nw, nb):
    """(g @ w, g.T @ x, g summed over rows), each only where needed."""
    return (matmul(kern, g, w) if nx else None, matmul(kern, kern.permute(g, (1, 0)), x) if nw else None,
            kern._reduce_run("sum", g, (0,), False, g.dtype) if nb else None)


_KC = 256                # k chunk of the blocked kernel for a long k on CPUs (chunked_src) ...
_KC_MIN_K = 768          # ... from this k on, ...
_KC_GM = 8               # ... each work-item this many row blocks, when that leaves this many work-groups per
_KC_MIN_GROUPS = 2       # compute unit; A read transposed is packed first (pack_src).  Measured, PoCL one compute
_PACK = True             # unit, the GPT's five weight-gradient products: 9.4 / 8.6 ms unpacked 4 blocks, 8.5 / 7.7
#                          packed 8 blocks (two runs; 128, 512 and 16 blocks measured in between)
_KC_AT_MIN_K = 128       # A read transposed (a weight gradient g.T @ x) goes packed from this k on, in products of
_KC_AT_MIN_WORK = 1 << 24  # at least this n * m * k: the MLP's 256x128 @ 128x784, PoCL one compute unit on the AVX2
#                          device: 0.87-1.14 ms (min 0.79-0.84) against 1.09-1.32 (min 0.89-1.04) unpacked in
#                          alternating runs; its 128x128 @ 128x256 gained ~0.02 ms, what the packing launch costs
_NT_MIN_K = 768          # A @ B.T with a shorter k: a transposed copy of B and the blocked kernel (one run,
#                          128 x k @ k x 256, copy+blocked / A @ B.T: k=256 0.23 / 0.36 ms, 512 0.39 / 0.46,
#                          784 0.59 / 0.60: one launch fewer; 1024^3 51 / 76 GFLOP/s, see _VIA_NT_N)
_NT_MIN_K_WIDE = 1 << 62  # AVX-512's 12 x 2 x 16 blocking (32 columns a work-item): no A @ B.T kernel but for a
#                          narrow m; B.T copied and the blocked kernel instead, and for rows 4 KiB apart too (one
#                          compute unit, ms: 128x784 @ (256x784).T 0.52 -> 0.45, 1024^3 NN 26.6 -> 20.5, NT 24.8 ->
#                          21.7)
_VIA_NT_N = 64           # NN products with rows 4 KiB apart and n >= this run as A @ (B.T copied).T on CPUs
_SPLIT_MAX_OUT = 4096    # products with at most this many outputs ...
_SPLIT_CHUNK = 256       # ... and k >= 4 chunks: too few work-items to fill the device; split k (at 2 chunks the
#                          four launches cost more: an LSTM step's 32x512 @ 512x128, 0.38 ms unsplit, 1.4 split)


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
