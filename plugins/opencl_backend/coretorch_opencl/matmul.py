"""Batched matmul: a register-blocked kernel (RM x VW outputs per work-item, VW-wide vectors, no local
memory) for float32/float64 shapes it tiles, and a plain strided kernel for everything else.

The blocking is chosen from the device: CPUs (PoCL) get 8x8 blocks with 8-wide vectors (16-wide vectors
crash PoCL's LLVM), GPUs 4x4 blocks with float4; the work-group shape follows max_work_group_size.
"""
from __future__ import annotations

import numpy as np

from . import codegen as cg
from .device import c_strides

_COMP = "0123456789abcdef"


def blocking(dev):
    """(rows per work-item, vector width, local size (x, y)) for this device."""
    if dev.is_cpu:
        pref = dev.cldev.preferred_vector_width_float
        vw = 8 if pref >= 8 else 4
        return vw, vw, (min(8, dev.max_wg), 1)
    wg = dev.max_wg
    lx = 16 if wg >= 256 else 8
    return 4, 4, (lx, max(1, min(16, wg // lx)))


def fast_src(dt, rm: int, vw: int) -> str:
    t = cg.stype(dt)
    v = f"{t}{vw}"
    lines = [f"__kernel void mm_fast(__global {t}* C, long co, __global const {t}* A, long ao, long sab,",
             f"                      __global const {t}* B, long bo, long sbb, int n, int k, int m, int nb) {{",
             " int bj = get_global_id(0); int bi = get_global_id(1); int bz = get_global_id(2);",
             f" if (bj * {vw} >= m || bi * {rm} >= n || bz >= nb) return;",
             f" const __global {t}* a = A + ao + bz * sab + (long)bi * {rm} * k;",
             f" const __global {t}* b = B + bo + bz * sbb + bj * {vw};"]
    lines += [f" {v} c{i} = ({v})(0);" for i in range(rm)]
    lines.append(f" int kmain = k - k % {vw};")
    lines.append(f" for (int p = 0; p < kmain; p += {vw}) {{")
    lines += [f"  {v} a{i} = vload{vw}(0, a + {i} * k + p);" for i in range(rm)]
    for s in range(vw):
        lines.append(f"  {{ {v} bv = vload{vw}(0, b + (long)(p + {s}) * m);")
        lines += [f"   c{i} += a{i}.s{_COMP[s]} * bv;" for i in range(rm)]
        lines.append("  }")
    lines.append(" }")
    lines.append(" for (int p = kmain; p < k; ++p) {")
    lines.append(f"  {v} bv = vload{vw}(0, b + (long)p * m);")
    lines += [f"  c{i} += a[{i} * k + p] * bv;" for i in range(rm)]
    lines.append(" }")
    lines.append(f" __global {t}* c = C + co + (long)bz * n * m + (long)bi * {rm} * m + bj * {vw};")
    lines += [f" vstore{vw}(c{i}, 0, c + {i} * m);" for i in range(rm)]
    lines.append("}")
    return "\n".join(lines) + "\n"


def naive_src(dt) -> str:
    t, ct = cg.stype(dt), cg.ctype(dt)
    acc = "long" if np.dtype(dt).kind in "iub" else ct
    return f"""
__kernel void mm(__global {t}* o, long oo, __global const {t}* a, long ao, long sab, long san, long sak,
                 __global const {t}* b, long bo, long sbb, long sbk, long sbm, long N, long M, long K, long total) {{
  long g = get_global_id(0); if (g >= total) return;
  long j = g % M; long r = g / M; long i = r % N; long z = r / N;
  const long pa = ao + z * sab + i * san; const long pb = bo + z * sbb + j * sbm;
  {acc} acc = 0;
  for (long p = 0; p < K; ++p)
    acc += ({acc}){cg.load(dt, 'a', 'pa + p * sak')} * ({acc}){cg.load(dt, 'b', 'pb + p * sbk')};
  {cg.store(dt, 'o', 'oo + g', 'acc')}
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
    rm, vw, local = blocking(dev)
    if dt in (np.float32, np.float64) and n % rm == 0 and m % vw == 0 and n * m * k >= 32 * 32 * 32:
        if ast[-1] != 1 or ast[-2] != k:
            a = kern.contiguous(a)
            _, ao, _, ast = _desc(a)
            sab = n * k if nb > 1 else 0
        if bst[-1] != 1 or bst[-2] != m:
            b = kern.contiguous(b)
            _, bo, _, bst = _desc(b)
            sbb = k * m if nb > 1 else 0
        kn = dev.kernel(("mm_fast", dt.str, rm, vw), "mm_fast", lambda: fast_src(dt, rm, vw))
        gx = -(-(m // vw) // local[0]) * local[0]
        gy = -(-(n // rm) // local[1]) * local[1]
        kn(dev.queue, (gx, gy, nb), (local[0], local[1], 1), out.base_data, 0, a.base_data, ao, sab,
           b.base_data, bo, sbb, n, k, m, nb)
        return out
    kn = dev.kernel(("mm", dt.str), "mm", lambda: naive_src(dt))
    total = out.size
    dev.launch(kn, total, [out.base_data, 0, a.base_data, ao, sab, ast[-2], ast[-1], b.base_data, bo, sbb,
                           bst[-2], bst[-1], n, m, k, total])
    return out
