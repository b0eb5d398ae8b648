"""OpenCL kernels of the sorting and selection primitives (see coretorch.plugins.KERNELS).

Every kernel works on rows: the sorted / scanned axis is moved last and made contiguous first (a copy only when
it is not already), and results are written in that layout then permuted back.

* sort: a merge sort of (key, index) pairs per row.  Pairs compare by key (NaN largest) and then by index, so the
  order is total and the result is the stable order in both directions.  One launch insertion-sorts runs of RUN
  elements (a work-item each); then log2(L / RUN) merge passes, each work-item writing CHUNK outputs of a merged
  pair of runs from where the merge path crosses its first output (a binary search), then merging sequentially:
  O(L log L) work, no padding, no barriers.  Dtypes of 32 bits or less sort one ulong per element, an
  order-preserving 32-bit key (NaN largest, -0.0 equal to 0.0, inverted for descending) above the index: a
  comparison is one integer compare (1M floats: 0.76 -> 0.45 s under load), and the values are gathered back from
  the input by index.  A bitonic sort in local memory was tried first: on PoCL its
  barrier-heavy work-groups made 1M floats take 5.9 s against 0.8 s for this (2 loaded cores).
* topk: for k <= 32, one pass keeps each chunk's best k in a private sorted list per work-item; the candidates
  (k per chunk) are then merge-sorted and the first k kept.  Larger k sorts the row.
* searchsorted: one work-item per value, a binary search in its row.
* cummax / cummin / logcumsumexp: one work-item per row (the row loop of scan.py; a CPU device streams a row at
  memory bandwidth from one core).
"""
from __future__ import annotations

import numpy as np

from . import codegen as cg
from .layout import _desc, _is_c
from .scan import _acc_dtype

_I64, _I32 = np.dtype(np.int64), np.dtype(np.int32)
RUN = 16      # elements a work-item insertion-sorts before the merge passes (tests set small values to force
CHUNK = 256   # more merge passes / merge-path segments); outputs per work-item of a merge pass (a power of two)
RUN_PACKED = 32  # the packed sort's runs (sorted in private memory, so longer runs are cheap)
_RMAX = 64
PACKED = True  # dtypes of <= 32 bits sort (key, index) packed in one ulong (tests turn it off for the generic path)
TOPK_CHUNK = 1024  # elements per work-item of topk's candidate pass
_KMAX = 32    # topk takes the candidate pass for k <= _KMAX (a private list per work-item), else a full sort


def _rows(k, x, axis):
    """(buffer, element offset, M rows, L, perm, permuted shape) of x with ``axis`` last, rows C-contiguous."""
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


def _sort_src(dt) -> str:
    ct, st = cg.ctype(dt), cg.stype(dt)
    isf = np.dtype(dt).kind == "f"
    nan = ("  int na = isnan(ka), nb = isnan(kb);\n"
           "  if (na | nb) { if (na & nb) return ia < ib; return desc ? na : nb; }\n") if isf else ""
    return f"""
inline int before({ct} ka, int ia, {ct} kb, int ib, int desc) {{   // a total order: key (NaN largest), then index
{nan}  if (ka != kb) return desc ? (ka > kb) : (ka < kb);
  return ia < ib;
}}
// each work-item insertion-sorts one run of R elements of a row, reading the input
__kernel void runs(__global {ct}* k, __global int* ix, __global const {st}* x, long xo, long L, long R, long nper,
                   int desc, long n) {{
  long t = get_global_id(0); if (t >= n) return;
  long row = t / nper, s = (t % nper) * R, e = min(L, s + R), b = row * L;
  __global {ct}* kr = k + b; __global int* ir = ix + b;
  for (long i = s; i < e; ++i) {{
    {ct} v = {cg.load(dt, "x", "xo + b + i")}; int vi = (int)i; long j = i;
    while (j > s && before(v, vi, kr[j - 1], ir[j - 1], desc)) {{ kr[j] = kr[j - 1]; ir[j] = ir[j - 1]; --j; }}
    kr[j] = v; ir[j] = vi;
  }}
}}
// the same from (key, index) pairs (topk's candidates)
__kernel void runs_pairs(__global {ct}* k, __global int* ix, __global const {ct}* ck, __global const int* ci, long L,
                         long R, long nper, int desc, long n) {{
  long t = get_global_id(0); if (t >= n) return;
  long row = t / nper, s = (t % nper) * R, e = min(L, s + R), b = row * L;
  __global {ct}* kr = k + b; __global int* ir = ix + b;
  for (long i = s; i < e; ++i) {{
    {ct} v = ck[b + i]; int vi = ci[b + i]; long j = i;
    while (j > s && before(v, vi, kr[j - 1], ir[j - 1], desc)) {{ kr[j] = kr[j - 1]; ir[j] = ir[j - 1]; --j; }}
    kr[j] = v; ir[j] = vi;
  }}
}}
// topk's first pass: each work-item keeps the best K (<= {_KMAX}) of its chunk of a row (the last chunk takes the
// row's tail, so every chunk has at least K elements) in a private sorted list, and writes them as candidates
__kernel void cand(__global {ct}* ck, __global int* ci, __global const {st}* x, long xo, long L, long C, long nch,
                   long K, int desc, long n) {{
  long t = get_global_id(0); if (t >= n) return;
  long row = t / nch, c = t % nch, s = c * C, e = c == nch - 1 ? L : s + C;
  {ct} bk[{_KMAX}]; int bi[{_KMAX}]; long cnt = 0;
  for (long i = s; i < e; ++i) {{
    {ct} v = {cg.load(dt, "x", "xo + row * L + i")}; int vi = (int)i;
    if (cnt == K && !before(v, vi, bk[K - 1], bi[K - 1], desc)) continue;
    long j = cnt < K ? cnt++ : K - 1;
    while (j > 0 && before(v, vi, bk[j - 1], bi[j - 1], desc)) {{ bk[j] = bk[j - 1]; bi[j] = bi[j - 1]; --j; }}
    bk[j] = v; bi[j] = vi;
  }}
  long o = t * K;
  for (long q = 0; q < K; ++q) {{ ck[o + q] = bk[q]; ci[o + q] = bi[q]; }}
}}
__kernel void fin_first(__global {st}* vo, __global long* io, __global const {ct}* keys, __global const int* idx,
                        long Lc, long K, long n) {{
  long g = get_global_id(0); if (g >= n) return;
  long src = (g / K) * Lc + g % K;
  {cg.store(dt, "vo", "g", "keys[src]")}
  io[g] = idx[src];
}}
// merge sorted runs of w into runs of 2w: each work-item writes C outputs, starting where the merge path crosses
// its first output (a binary search), then merging sequentially
__kernel void merge(__global const {ct}* ka, __global const int* ia, __global {ct}* kb, __global int* ib, long L,
                    long w, long C, long nper, int desc, long n) {{
  long t = get_global_id(0); if (t >= n) return;
  long row = t / nper, o0 = (t % nper) * C;
  if (o0 >= L) return;
  long b = row * L, s = (o0 / (2 * w)) * 2 * w;
  long m = min(w, L - s), nb = min(w, L - s - m);
  __global const {ct}* A = ka + b + s; __global const int* Ai = ia + b + s;
  __global const {ct}* B = A + m; __global const int* Bi = Ai + m;
  long kq = o0 - s, lo = max(0L, kq - nb), hi = min(kq, m);
  while (lo < hi) {{
    long i = (lo + hi) >> 1, j = kq - i;
    if (before(A[i], Ai[i], B[j - 1], Bi[j - 1], desc)) lo = i + 1; else hi = i;
  }}
  long i = lo, j = kq - lo, oe = min(o0 + C, s + m + nb);
  {ct} a = i < m ? A[i] : 0, c = j < nb ? B[j] : 0;   // the heads of both runs, kept in registers
  int ai = i < m ? Ai[i] : 0, ci = j < nb ? Bi[j] : 0;
  for (long o = o0; o < oe; ++o) {{
    if (j >= nb || (i < m && before(a, ai, c, ci, desc))) {{
      kb[b + o] = a; ib[b + o] = ai; ++i;
      if (i < m) {{ a = A[i]; ai = Ai[i]; }}
    }} else {{
      kb[b + o] = c; ib[b + o] = ci; ++j;
      if (j < nb) {{ c = B[j]; ci = Bi[j]; }}
    }}
  }}
}}
__kernel void fin(__global {st}* vo, __global long* io, __global const {ct}* keys, __global const int* idx, long n) {{
  long g = get_global_id(0); if (g >= n) return;
  {cg.store(dt, "vo", "g", "keys[g]")}
  io[g] = idx[g];
}}
"""


def _key32(dt) -> str:
    """C expression: an order-preserving uint key of the loaded value ``v`` (NaN largest, -0.0 equal to 0.0)."""
    d = np.dtype(dt)
    if d.kind == "f":
        return ("({ float f = (float)v + 0.0f; uint u = isnan(f) ? 0x7fc00000u : as_uint(f);"
                " (u & 0x80000000u) ? ~u : (u | 0x80000000u); })")
    if d.kind == "i":
        return "((uint)(int)v ^ 0x80000000u)"
    return "((uint)v)"


def _packed_src(dt) -> str:
    """The merge sort on one ulong per element, (key << 32) | index, for dtypes of 32 bits or less: a comparison is
    one integer compare (the generic kernels compare key, NaN and index separately)."""
    ct, st = cg.ctype(dt), cg.stype(dt)
    return f"""
__kernel void runs(__global ulong* p, __global const {st}* x, long xo, long L, long R, long nper, int desc, long n) {{
  long t = get_global_id(0); if (t >= n) return;
  long row = t / nper, s = (t % nper) * R, e = min(L, s + R), b = row * L;
  ulong r[{_RMAX}];   // the run, insertion-sorted in private memory (R <= {_RMAX})
  for (long i = s; i < e; ++i) {{
    {ct} v = {cg.load(dt, "x", "xo + b + i")};
    uint key = {_key32(dt)};
    if (desc) key = ~key;
    ulong q = ((ulong)key << 32) | (ulong)i; long j = i - s;
    while (j > 0 && q < r[j - 1]) {{ r[j] = r[j - 1]; --j; }}
    r[j] = q;
  }}
  for (long i = s; i < e; ++i) p[b + i] = r[i - s];
}}
__kernel void merge(__global const ulong* pa, __global ulong* pb, long L, long w, long C, long nper, long n) {{
  long t = get_global_id(0); if (t >= n) return;
  long row = t / nper, o0 = (t % nper) * C;
  if (o0 >= L) return;
  long b = row * L, s = (o0 / (2 * w)) * 2 * w;
  long m = min(w, L - s), nb = min(w, L - s - m);
  __global const ulong* A = pa + b + s; __global const ulong* B = A + m;
  long kq = o0 - s, lo = max(0L, kq - nb), hi = min(kq, m);
  while (lo < hi) {{
    long i = (lo + hi) >> 1;
    if (A[i] < B[kq - i - 1]) lo = i + 1; else hi = i;
  }}
  long i = lo, j = kq - lo, oe = min(o0 + C, s + m + nb);
  ulong a = i < m ? A[i] : ULONG_MAX, c = j < nb ? B[j] : ULONG_MAX;   // a finished run's head: larger than all
  for (long o = o0; o < oe; ++o) {{
    if (a < c) {{ pb[b + o] = a; ++i; a = i < m ? A[i] : ULONG_MAX; }}
    else {{ pb[b + o] = c; ++j; c = j < nb ? B[j] : ULONG_MAX; }}
  }}
}}
// the values are gathered from the input by index: exactly the input's elements (signed zeros, NaN payloads)
__kernel void fin(__global {st}* vo, __global long* io, __global const ulong* p, __global const {st}* x, long xo,
                  long L, long n) {{
  long g = get_global_id(0); if (g >= n) return;
  long i = (long)(uint)p[g];
  io[g] = i;
  {cg.store(dt, "vo", "g", cg.load(dt, "x", "xo + (g / L) * L + i"))}
}}
"""


def _sort_packed(k, dt, buf, off, M, L, descending, vo, io):
    dev = k.dev
    n = M * L
    pa, pb = k._out((n,), np.dtype(np.uint64)), k._out((n,), np.dtype(np.uint64))

    def kern(name):
        return dev.kernel(("sort64", dt.str), name, lambda: _packed_src(dt))
    R = min(RUN_PACKED, _RMAX)
    nper = -(-L // R)
    dev.launch(kern("runs"), M * nper, [pa.base_data, buf, off, L, R, nper, np.int32(1 if descending else 0),
                                        M * nper])
    w = R
    while w < L:
        C = min(CHUNK, 2 * w)
        nper = -(-L // C)
        dev.launch(kern("merge"), M * nper, [pa.base_data, pb.base_data, L, w, C, nper, M * nper])
        pa, pb = pb, pa
        w *= 2
    dev.launch(kern("fin"), n, [vo.base_data, io.base_data, pa.base_data, buf, off, L, n])


def _sort_pairs(k, dt, buf, off, M, L, descending, pairs=None):
    """(keys, int32 indices) buffers of the M rows of L sorted (row-major, contiguous): the rows of the array at
    (buf, off), or the (keys, indices) buffers ``pairs``."""
    dev = k.dev
    ct_dt = np.dtype(np.float32) if dt == np.float16 else dt
    n = M * L
    keys, idx = k._out((n,), ct_dt), k._out((n,), _I32)
    keys2, idx2 = k._out((n,), ct_dt), k._out((n,), _I32)

    def kern(name):
        return dev.kernel(("sort", dt.str), name, lambda: _sort_src(dt))
    desc = np.int32(1 if descending else 0)
    R = RUN
    nper = -(-L // R)
    if pairs is None:
        dev.launch(kern("runs"), M * nper, [keys.base_data, idx.base_data, buf, off, L, R, nper, desc, M * nper])
    else:
        dev.launch(kern("runs_pairs"), M * nper, [keys.base_data, idx.base_data, pairs[0].base_data,
                                                  pairs[1].base_data, L, R, nper, desc, M * nper])
    w = R
    while w < L:
        C = min(CHUNK, 2 * w)  # a power of two dividing 2w: a work-item's outputs stay in one merged run
        nper = -(-L // C)
        dev.launch(kern("merge"), M * nper, [keys.base_data, idx.base_data, keys2.base_data, idx2.base_data, L, w, C,
                                             nper, desc, M * nper])
        keys, idx, keys2, idx2 = keys2, idx2, keys, idx
        w *= 2
    return keys, idx, kern


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
    if dt.itemsize <= 4 and PACKED:
        _sort_packed(k, dt, buf, off, M, L, descending, vo, io)
    else:
        keys, idx, kern = _sort_pairs(k, dt, buf, off, M, L, descending)
        n = M * L
        k.dev.launch(kern("fin"), n, [vo.base_data, io.base_data, keys.base_data, idx.base_data, n])
    return _back(k, vo, perm), _back(k, io, perm)


def topk(k, x, kk, axis, largest, sorted_):
    dt = x.dtype
    if x.ndim == 0:
        return k.contiguous(x), k.full((), 0, _I64)
    L = x.shape[axis]
    if kk == 0 or x.size == 0 or kk > _KMAX or L < 4 * kk:
        v, i = sort(k, x, axis, largest, False)
        key = (slice(None),) * axis + (slice(0, kk),)
        return k.contiguous(k.basic_index(v, key)), k.contiguous(k.basic_index(i, key))
    # few of many: each chunk's best kk as candidates (one pass over the input), then a sort of the candidates
    buf, off, M, L, perm, pshape = _rows(k, x, axis)
    dev = k.dev
    C = max(TOPK_CHUNK, kk)
    nch = max(1, L // C)
    ct_dt = np.dtype(np.float32) if dt == np.float16 else dt
    ck, ci = k._out((M * nch * kk,), ct_dt), k._out((M * nch * kk,), _I32)
    desc = np.int32(1 if largest else 0)
    dev.launch(dev.kernel(("sort", dt.str), "cand", lambda: _sort_src(dt)), M * nch,
               [ck.base_data, ci.base_data, buf, off, L, C, nch, kk, desc, M * nch])
    Lc = nch * kk
    keys, idx, kern = _sort_pairs(k, dt, None, 0, M, Lc, largest, (ck, ci))
    oshape = tuple(pshape[:-1]) + (kk,)
    vo, io = k._out(oshape, dt), k._out(oshape, _I64)
    n = M * kk
    dev.launch(kern("fin_first"), n, [vo.base_data, io.base_data, keys.base_data, idx.base_data, Lc, kk, n])
    return _back(k, vo, perm), _back(k, io, perm)


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
    int go = right ? !(y > x) : !(y >= x);   // as PyTorch: a NaN value goes past every boundary
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


def _cum_src(dt, fp64: bool = False) -> str:
    ct, st = cg.ctype(dt), cg.stype(dt)
    at = cg.ctype(_acc_dtype(dt, fp64))   # logcumsumexp's running value: PyTorch's CPU acc_type, as scan.py's
    parts = []
    isf = np.dtype(dt).kind == "f"
    for name, cmp in (("cummax", ">="), ("cummin", "<=")):
        # NaN sticks: a NaN element takes over and nothing replaces it (integers have no NaN)
        take = f"j == 0 || isnan(v) || (!isnan(acc) && v {cmp} acc)" if isf else f"j == 0 || v {cmp} acc"
        parts.append(f"""
__kernel void {name}(__global {st}* vo, __global long* io, __global const {st}* x, long xo, long L, long n) {{
  long g = get_global_id(0); if (g >= n) return;
  long b = g * L; {ct} acc = 0; long ai = 0;
  for (long j = 0; j < L; ++j) {{
    {ct} v = {cg.load(dt, "x", "xo + b + j")};
    if ({take}) {{ acc = v; ai = j; }}
    {cg.store(dt, "vo", "b + j", "acc")}
    io[b + j] = ai;
  }}
}}
""")
    if isf:
        parts.append(f"""
__kernel void lcse(__global {st}* vo, __global const {st}* x, long xo, long L, long n) {{
  long g = get_global_id(0); if (g >= n) return;
  long b = g * L; {at} acc = -INFINITY;
  for (long j = 0; j < L; ++j) {{
    {at} v = {cg.load(dt, "x", "xo + b + j")};
    if (isnan(v) || isnan(acc)) acc = NAN;
    else {{
      {at} m = acc > v ? acc : v;
      acc = isinf(m) ? m : m + log1p(exp(-fabs(acc - v)));
    }}
    {cg.store(dt, "vo", "b + j", f"({ct})acc")}
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
        fp64 = k.dev.fp64
        kern = k.dev.kernel(("cumsel", dt.str, fp64), name, lambda: _cum_src(dt, fp64))
        args = [vo.base_data] + ([io.base_data] if io is not None else []) + [buf, off, L, M]
        k.dev.launch(kern, M, args)
    if io is None:
        return _back(k, vo, perm)
    return _back(k, vo, perm), _back(k, io, perm)


def _f32(k, fn, n_values: int = 1):
    """``fn`` for bfloat16 input through float32 (the kernels compare floats by their bits as float32/float64/half
    keys; bfloat16's ushort storage would compare as an unsigned integer): cast in, and the first ``n_values``
    outputs back."""
    def run(x, *args):
        if x.dtype != cg.BF16:
            return fn(x, *args)
        out = fn(k.cast(x, np.float32), *args)
        if isinstance(out, tuple):
            return tuple(k.cast(o, cg.BF16) if i < n_values else o for i, o in enumerate(out))
        return k.cast(out, cg.BF16) if n_values else out
    return run


def _searchsorted(k, seq, values, right, out_dtype):
    if seq.dtype == cg.BF16 or values.dtype == cg.BF16:
        seq, values = k.cast(seq, np.float32), k.cast(values, np.float32)
    return searchsorted(k, seq, values, right, out_dtype)


def kernels(k) -> dict:
    """The primitives of this family for one device; ``k`` is the device's kernel set (backend._Kernels)."""
    return {
        "sort": _f32(k, lambda x, axis, descending, stable: sort(k, x, axis, descending, stable)),
        "topk": _f32(k, lambda x, kk, axis, largest, sorted_: topk(k, x, kk, axis, largest, sorted_)),
        "searchsorted": lambda seq, values, right, out_dtype: _searchsorted(k, seq, values, right, out_dtype),
        "cummax": _f32(k, lambda x, axis: _cum(k, "cummax", x, axis)),
        "cummin": _f32(k, lambda x, axis: _cum(k, "cummin", x, axis)),
        "logcumsumexp": _f32(k, lambda x, axis: _cum(k, "lcse", x, axis)),
    }
