"""OpenCL kernels of the sorting and selection primitives (see coretorch._backend.PRIMITIVES).

Every kernel works on rows: the sorted / scanned axis is moved last and made contiguous first (a copy only when
it is not already), and results are written in that layout then permuted back.

* sort: a bitonic sort of (key, index) pairs per row, the row padded to a power of two P.  Pairs compare by key
  (NaN largest) and then by index, so the order is total and the result is the stable order in both directions.
  A block of ``2 * local size`` elements sorts in local memory in one launch; longer rows merge in global memory
  for the strides above a block and finish each merge stage in local memory (log2(P / B) * (log2(P / B) + 1) / 2
  global launches; 1M elements: 66 global + 12 local launches).
* topk: the sorted row's first k (a dedicated selection kernel would do less work; not written yet).
* searchsorted: one work-item per value, a binary search in its row.
* cummax / cummin / logcumsumexp: one work-item per row (the row loop of scan.py; a CPU device streams a row at
  memory bandwidth from one core).
"""
from __future__ import annotations

import numpy as np

from . import codegen as cg
from .layout import _desc, _is_c

_I64, _I32 = np.dtype(np.int64), np.dtype(np.int32)
BLOCK = None  # elements per local-memory block: None picks it per device; tests set a small one to force the merges


def _rows(k, x, axis):
    """(buffer, element offset, M, L, perm) of x with ``axis`` last and C-contiguous rows."""
    nd = x.ndim
    perm = tuple(d for d in range(nd) if d != axis) + (axis,)
    xp = x if axis == nd - 1 else k.permute(x, perm)
    buf, off, shape, st = _desc(xp)
    if not _is_c(shape, st):
        xp = k.contiguous(xp)
        buf, off = xp.base_data, 0
    L = x.shape[axis]
    return buf, off, (x.size // L if L else 0), L, perm, xp.shape


def _back(k, arr, perm):
    """A result computed in the permuted layout, back in the input's dim order (contiguous)."""
    if perm == tuple(range(len(perm))):
        return arr
    inv = tuple(perm.index(d) for d in range(len(perm)))
    return k.contiguous(k.permute(arr, inv))


def _sort_src(dt, bmax: int) -> str:
    ct, st = cg.ctype(dt), cg.stype(dt)
    isf = np.dtype(dt).kind == "f"
    nan = ("  int na = isnan(ka), nb = isnan(kb);\n"
           "  if (na | nb) { if (na & nb) return ia < ib; return desc ? na : nb; }\n") if isf else ""
    return f"""
inline int before({ct} ka, int ia, {ct} kb, int ib, long L, int desc) {{
  if (ib >= L) return ia < L ? 1 : ia < ib;   // padding sorts last
  if (ia >= L) return 0;
{nan}  if (ka != kb) return desc ? (ka > kb) : (ka < kb);
  return ia < ib;
}}
__kernel void init(__global {ct}* keys, __global int* idx, __global const {st}* x, long xo, long L, long P, long n) {{
  long g = get_global_id(0); if (g >= n) return;
  long r = g / P, j = g % P;
  keys[g] = j < L ? ({ct}){cg.load(dt, "x", "xo + r * L + j")} : ({ct})0;
  idx[g] = (int)j;
}}
__kernel void gstep(__global {ct}* keys, __global int* idx, long P, long L, long k, long j, int desc, long n) {{
  long t = get_global_id(0); if (t >= n) return;
  long hp = P >> 1; long r = t / hp, q = t % hp;
  long i = (q / j) * 2 * j + (q % j);
  long a = r * P + i, b = a + j;
  {ct} ka = keys[a], kb = keys[b]; int ia = idx[a], ib = idx[b];
  int sw = (i & k) == 0 ? before(kb, ib, ka, ia, L, desc) : before(ka, ia, kb, ib, L, desc);
  if (sw) {{ keys[a] = kb; keys[b] = ka; idx[a] = ib; idx[b] = ia; }}
}}
__kernel void lsort(__global {ct}* keys, __global int* idx, long P, long L, long kfrom, long kto, long jfrom,
                    int desc) {{
  __local {ct} lk[{bmax}]; __local int li[{bmax}];
  long lid = get_local_id(0), h = get_local_size(0);
  long base = get_group_id(0) * 2 * h;
  long off = base % P;   // the block's position in its row (the merge direction depends on it)
  lk[lid] = keys[base + lid]; li[lid] = idx[base + lid];
  lk[lid + h] = keys[base + lid + h]; li[lid + h] = idx[base + lid + h];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (long k = kfrom; k <= kto; k <<= 1) {{
    for (long j = (k == kfrom ? jfrom : k >> 1); j > 0; j >>= 1) {{
      long i = (lid / j) * 2 * j + (lid % j);
      {ct} ka = lk[i], kb = lk[i + j]; int ia = li[i], ib = li[i + j];
      int sw = ((off + i) & k) == 0 ? before(kb, ib, ka, ia, L, desc) : before(ka, ia, kb, ib, L, desc);
      if (sw) {{ lk[i] = kb; lk[i + j] = ka; li[i] = ib; li[i + j] = ia; }}
      barrier(CLK_LOCAL_MEM_FENCE);
    }}
  }}
  keys[base + lid] = lk[lid]; idx[base + lid] = li[lid];
  keys[base + lid + h] = lk[lid + h]; idx[base + lid + h] = li[lid + h];
}}
__kernel void fin(__global {st}* vo, __global long* io, __global const {ct}* keys, __global const int* idx, long L,
                  long P, long n) {{
  long g = get_global_id(0); if (g >= n) return;
  long r = g / L, j = g % L;
  {cg.store(dt, "vo", "g", "keys[r * P + j]")}
  io[g] = idx[r * P + j];
}}
"""


def _block(dev, dt) -> int:
    """Elements a work-group sorts in local memory (a power of two)."""
    ls = 1
    cap = min(dev.max_wg, 256)
    while ls * 2 <= cap:
        ls *= 2
    item = (8 if cg.ctype(dt) in ("double", "long") else 4) + 4
    lmem = dev.cldev.local_mem_size
    while ls > 1 and 2 * ls * item > lmem // 2:
        ls //= 2
    return 2 * ls


def sort(k, x, axis, descending, stable):
    dt = x.dtype
    if x.ndim == 0:
        return k.contiguous(x), k.full((), 0, _I64)
    buf, off, M, L, perm, pshape = _rows(k, x, axis)
    vo, io = k._out(pshape, dt), k._out(pshape, _I64)
    if x.size == 0:
        return _back(k, vo, perm), _back(k, io, perm)
    if L >= 2 ** 31:
        raise RuntimeError("sort: rows of 2^31 elements or more are not supported on device 'opencl'")
    dev = k.dev
    P = 2
    while P < L:
        P *= 2
    bmax = BLOCK or _block(dev, dt)
    B = min(bmax, P)
    ct_dt = np.dtype(np.float32) if dt == np.float16 else dt
    keys, idx = k._out((M * P,), ct_dt), k._out((M * P,), _I32)

    def kern(name):
        return dev.kernel(("sort", dt.str, bmax), name, lambda: _sort_src(dt, bmax))
    desc = np.int32(1 if descending else 0)
    n = M * P
    dev.launch(kern("init"), n, [keys.base_data, idx.base_data, buf, off, L, P, n])
    q = dev.queue
    ls = B // 2
    groups = n // B
    lsort = kern("lsort")
    lsort(q, (groups * ls,), (ls,), keys.base_data, idx.base_data, P, L, 2, B, 1, desc)
    kk = 2 * B
    while kk <= P:
        j = kk // 2
        while j >= B:
            dev.launch(kern("gstep"), n // 2, [keys.base_data, idx.base_data, P, L, kk, j, desc, n // 2])
            j //= 2
        lsort(q, (groups * ls,), (ls,), keys.base_data, idx.base_data, P, L, kk, kk, B // 2, desc)
        kk *= 2
    m = M * L
    dev.launch(kern("fin"), m, [vo.base_data, io.base_data, keys.base_data, idx.base_data, L, P, m])
    return _back(k, vo, perm), _back(k, io, perm)


def topk(k, x, kk, axis, largest, sorted_):
    v, i = sort(k, x, axis, largest, False)
    if x.ndim == 0:
        return v, i
    key = (slice(None),) * axis + (slice(0, kk),)
    return k.contiguous(k.basic_index(v, key)), k.contiguous(k.basic_index(i, key))


def _ss_src(dt, odt) -> str:
    ct, st, ot = cg.ctype(dt), cg.stype(dt), cg.stype(odt)
    return f"""
__kernel void ss(__global {ot}* o, __global const {st}* s, long so, __global const {st}* v, long vo, long N, long K,
                 long batched, int right, long n) {{
  long g = get_global_id(0); if (g >= n) return;
  long base = so + (batched ? (g / K) * N : 0);
  {ct} x = {cg.load(dt, "v", "vo + g")};
  long lo = 0, hi = N;
  while (lo < hi) {{
    long mid = (lo + hi) >> 1;
    {ct} y = {cg.load(dt, "s", "base + mid")};
    int go = right ? !(x < y) : (y < x);
    if (go) lo = mid + 1; else hi = mid;
  }}
  o[g] = ({ot})lo;
}}
"""


def searchsorted(k, seq, values, right, out_dtype):
    odt = np.dtype(out_dtype)
    dt = seq.dtype
    out = k._out(values.shape, odt)
    n = values.size
    if n == 0:
        return out
    sbuf, so, _, _ = _desc(seq)
    vbuf, vo, _, _ = _desc(values)
    N = seq.shape[-1]
    K = values.shape[-1] if values.ndim else 1
    kern = k.dev.kernel(("searchsorted", dt.str, odt.str), "ss", lambda: _ss_src(dt, odt))
    k.dev.launch(kern, n, [out.base_data, sbuf, so, vbuf, vo, N, K, 1 if seq.ndim > 1 else 0,
                           np.int32(1 if right else 0), n])
    return out


def _cum_src(dt) -> str:
    ct, st = cg.ctype(dt), cg.stype(dt)
    parts = []
    for name, cmp in (("cummax", ">="), ("cummin", "<=")):
        parts.append(f"""
__kernel void {name}(__global {st}* vo, __global long* io, __global const {st}* x, long xo, long L, long n) {{
  long g = get_global_id(0); if (g >= n) return;
  long b = g * L; {ct} acc = 0; long ai = 0;
  for (long j = 0; j < L; ++j) {{
    {ct} v = {cg.load(dt, "x", "xo + b + j")};
    if (j == 0 || v != v || (acc == acc && v {cmp} acc)) {{ acc = v; ai = j; }}   // NaN sticks (v != v)
    {cg.store(dt, "vo", "b + j", "acc")}
    io[b + j] = ai;
  }}
}}
""")
    if np.dtype(dt).kind == "f":
        parts.append(f"""
__kernel void lcse(__global {st}* vo, __global const {st}* x, long xo, long L, long n) {{
  long g = get_global_id(0); if (g >= n) return;
  long b = g * L; {ct} acc = -INFINITY;
  for (long j = 0; j < L; ++j) {{
    {ct} v = {cg.load(dt, "x", "xo + b + j")};
    if (isnan(v) || isnan(acc)) acc = NAN;
    else {{
      {ct} m = acc > v ? acc : v;
      acc = isinf(m) ? m : m + log1p(exp(-fabs(acc - v)));
    }}
    {cg.store(dt, "vo", "b + j", "acc")}
  }}
}}
""")
    return "".join(parts)


def _cum(k, name, x, axis):
    if x.ndim == 0:
        return (k.contiguous(x), k.full((), 0, _I64)) if name != "lcse" else k.contiguous(x)
    dt = x.dtype
    buf, off, M, L, perm, pshape = _rows(k, x, axis)
    vo = k._out(pshape, dt)
    io = k._out(pshape, _I64) if name != "lcse" else None
    if x.size:
        kern = k.dev.kernel(("cumsel", dt.str), name, lambda: _cum_src(dt))
        args = [vo.base_data] + ([io.base_data] if io is not None else []) + [buf, off, L, M]
        k.dev.launch(kern, M, args)
    if io is None:
        return _back(k, vo, perm)
    return _back(k, vo, perm), _back(k, io, perm)


def kernels(k) -> dict:
    """The primitives of this family for one device; ``k`` is the device's kernel set (backend._Kernels)."""
    return {
        "sort": lambda x, axis, descending, stable: sort(k, x, axis, descending, stable),
        "topk": lambda x, kk, axis, largest, sorted_: topk(k, x, kk, axis, largest, sorted_),
        "searchsorted": lambda seq, values, right, out_dtype: searchsorted(k, seq, values, right, out_dtype),
        "cummax": lambda x, axis: _cum(k, "cummax", x, axis),
        "cummin": lambda x, axis: _cum(k, "cummin", x, axis),
        "logcumsumexp": lambda x, axis: _cum(k, "lcse", x, axis),
    }
