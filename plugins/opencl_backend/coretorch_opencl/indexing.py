"""Advanced indexing on the device: one generated 'take' kernel (gather, index_select, x[key]) and one
'put' kernel (x[key] = v, index_put_ with accumulation, scatter_add, index_add) following numpy's rules, and
the 'check_index' kernel: the core's index range check as a device-side check (reported at the next host read),
and its sibling 'check_values' (a zero divisor of integer // and %).

The core checks index ranges before these kernels run, on the device (``check_index``) and so after they were
queued: an index out of range reads as 0 in 'take' and writes nowhere in 'put', so that the op does no harm
before the check's report."""
from __future__ import annotations

import numpy as np

from coretorch import are_deterministic_algorithms_enabled as deterministic

from . import codegen as cg
from .layout import _collapse, _desc, _expand_strides, _numel, _pad  # noqa: F401
from .device import STATS, cla

_I64 = np.dtype(np.int64)

ATOMICS = """
inline void ct_atomic_add_float(volatile __global float* p, float v) {
  union { unsigned int u; float f; } o, w;
  do { o.f = *p; w.f = o.f + v; } while (atomic_cmpxchg((volatile __global unsigned int*)p, o.u, w.u) != o.u);
}
#if defined(CT_I64ATOM) && defined(CT_FP64)
inline void ct_atomic_add_double(volatile __global double* p, double v) {
  union { ulong u; double f; } o, w;
  do { o.f = *p; w.f = o.f + v; } while (atom_cmpxchg((volatile __global ulong*)p, o.u, w.u) != o.u);
}
#endif
"""


def has_array(key) -> bool:
    items = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, cla.Array) for k in items)


def index_plan(kern, x, key):
    """numpy's indexing -> (result shape, base offset, plain strides over result dims,
    [(index array, its strides over result dims, x stride, dim size)])."""
    items = list(key) if isinstance(key, tuple) else [key]
    _, off, shape, st = _desc(x)
    consumed = sum((k.ndim if k.dtype == np.bool_ else 1) if isinstance(k, cla.Array) else 1
                   for k in items if k is not None and k is not Ellipsis)
    ent = []
    for k in items:
        if k is Ellipsis:
            ent += [slice(None)] * (len(shape) - consumed)
        else:
            ent.append(k)
    if not any(k is Ellipsis for k in items):
        ent += [slice(None)] * (len(shape) - consumed)
    entries = []
    for k in ent:
        if isinstance(k, cla.Array) and k.dtype == np.bool_:
            if k.ndim == 0:  # a 0-d mask adds a dim of length 1 (True) or 0 (False)
                cnt = int(bool(kern.to_numpy(k)))
                entries.append(("adv0", kern.full((cnt,), 0, _I64)))
            else:
                nz = kern.nonzero(k)
                for j in range(k.ndim):
                    entries.append(("adv", kern.basic_index(nz, (slice(None), j))))
        elif isinstance(k, cla.Array):
            entries.append(("adv", k))
        elif k is None:
            entries.append(("none", None))
        elif isinstance(k, slice):
            entries.append(("slice", k))
        else:
            entries.append(("int", int(k)))
    has_adv = any(e[0] in ("adv", "adv0") for e in entries)
    pshape, pst, advs, positions = [], [], [], []
    insert_at = None
    d = 0
    for ei, (kind, v) in enumerate(entries):
        if kind == "none":
            pshape.append(1)
            pst.append(0)
        elif kind == "slice":
            start, stop, step = v.indices(shape[d])
            n = len(range(start, stop, step))
            pshape.append(n)
            pst.append(st[d] * step)
            if n:
                off += start * st[d]
            d += 1
        elif kind == "int":
            i = v + shape[d] if v < 0 else v
            if not 0 <= i < shape[d]:
                raise IndexError(f"index {v} is out of bounds for dimension {d} with size {shape[d]}")
            off += i * st[d]
            d += 1
            if has_adv:
                positions.append(ei)
                insert_at = len(pshape) if insert_at is None else insert_at
        else:
            positions.append(ei)
            insert_at = len(pshape) if insert_at is None else insert_at
            if kind == "adv":
                advs.append((v, st[d], shape[d]))
                d += 1
            else:
                advs.append((v, 0, 1))
    if not advs:
        return tuple(pshape), off, tuple(pst), []
    if positions != list(range(positions[0], positions[-1] + 1)):
        insert_at = 0  # separated advanced indices: their dims go first (numpy)
    try:
        bshape = tuple(np.broadcast_shapes(*[a.shape for a, _, _ in advs]))
    except ValueError:  # PyTorch's error, not numpy's
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                         + ", ".join(str(list(a.shape)) for a, _, _ in advs)) from None
    nb = len(bshape)
    rshape = tuple(pshape[:insert_at]) + bshape + tuple(pshape[insert_at:])
    plain = tuple(pst[:insert_at]) + (0,) * nb + tuple(pst[insert_at:])
    idxs = []
    for a, xs, size in advs:
        _, _, ashape, ast = _desc(a)
        bst = _expand_strides(ashape, ast, bshape)
        full = (0,) * insert_at + bst + (0,) * (len(rshape) - insert_at - nb)
        idxs.append((a, full, xs, size))
    return rshape, off, plain, idxs


def _padplan(rshape, plain, idxs, nd: int = 4):
    """Leading size-1 dims up to ``nd``: one generated kernel serves every rank up to 4."""
    p = max(0, nd - len(rshape))
    return ((1,) * p + tuple(rshape), (0,) * p + tuple(plain),
            [(a, (0,) * p + tuple(s), xs, size) for a, s, xs, size in idxs])


def _idx_args(idxs):
    args = []
    for a, strides, xs, size in idxs:
        _, ao, _, _ = _desc(a)
        args += [a.base_data, ao] + list(strides) + [xs, size]
    return args


def _idx_src(r, idxs):
    """Arguments and body that add each index's offset to ``src``; ``ok`` is 0 when one is out of range."""
    args, body = [], ["int ok = 1;"]
    for j, (a, _, _, _) in enumerate(idxs):
        args += [f"__global const {cg.stype(a.dtype)}* q{j}", f"long qo{j}"] + [f"long qs{j}_{k}" for k in range(r)]
        args += [f"long xs{j}", f"long sz{j}"]
        body.append(f"long v{j} = (long)q{j}[qo{j} + {cg.offset(r, f'qs{j}_')}]; if (v{j} < 0) v{j} += sz{j}; "
                    f"ok &= v{j} >= 0 && v{j} < sz{j}; src += v{j} * xs{j};")
    return args, " ".join(body)


def _rows_of(rshape, plain, idxs) -> tuple | None:
    """(index array, rows, row length D, table rows) when the gather picks whole contiguous rows of D elements with
    one index array laid out as the result's leading dims (an embedding lookup, ``w[idx]``, index_select on dim 0 of
    a row-major array), else None."""
    if len(idxs) != 1 or not rshape:
        return None
    a, full, xs, size = idxs[0]
    nb = len(rshape) - 1
    D = rshape[-1]
    _, _, ashape, ast = _desc(a)
    if tuple(plain) != (0,) * nb + (1,) or xs != D or full[-1] != 0 or tuple(ashape) != tuple(rshape[:nb]):
        return None
    want = 1
    for d in range(nb - 1, -1, -1):   # the index array C-contiguous over the result's leading dims
        if ashape[d] != 1 and full[d] != want:
            return None
        want *= ashape[d]
    return a, want, D, size


def _take_rows(kern, x, off, out, rows_plan) -> None:
    """Whole rows: one work-item copies a row (no per-element index decoding: the generic kernel decodes a 4-D
    position per element)."""
    a, rows, D, size = rows_plan
    dt, it = x.dtype, a.dtype
    _, ao, _, _ = _desc(a)

    def src():
        return (f"__kernel void take_rows(__global {cg.stype(dt)}* o, __global const {cg.stype(dt)}* x, long xo, "
                f"__global const {cg.stype(it)}* q, long qo, long D, long rows, long size) {{\n"
                " long r = get_global_id(0); if (r >= rows) return;\n"
                " long v = (long)q[qo + r]; if (v < 0) v += size;\n"
                " int ok = v >= 0 && v < size; long src = xo + (ok ? v : 0) * D; long dst = r * D;\n"
                f" for (long j = 0; j < D; j++) {{ {cg.ctype(dt)} val = 0; if (ok) val = "
                f"{cg.load(dt, 'x', 'src + j')}; {cg.store(dt, 'o', 'dst + j', 'val')} }}\n}}\n")
    k = kern.dev.kernel(("take_rows1", dt.str, it.str), "take_rows", src)
    ls = min(16, kern.dev.max_wg)
    STATS["launches"] += 1
    k(kern.dev.queue, (-(-rows // ls) * ls,), (ls,), out.base_data, x.base_data, off, a.base_data, ao, D, rows,
      size)


def take(kern, x, rshape, off, plain, idxs):
    dt = x.dtype
    out = kern._out(rshape, dt)
    n = out.size
    if n == 0:
        return out
    rows_plan = _rows_of(rshape, plain, idxs)
    if rows_plan is not None:
        _take_rows(kern, x, off, out, rows_plan)
        return out
    rshape, plain, idxs = _padplan(rshape, plain, idxs)
    r = len(rshape)
    key = ("take", dt.str, r, tuple(a.dtype.str for a, _, _, _ in idxs))

    def src():
        iargs, ibody = _idx_src(r, idxs)
        args = [f"__global {cg.stype(dt)}* o", f"__global const {cg.stype(dt)}* x", "long xo", "long n"]
        args += [f"long d{k}" for k in range(r)] + [f"long ps{k}" for k in range(r)] + iargs
        return (f"__kernel void take({', '.join(args)}) {{\n long g = get_global_id(0); if (g >= n) return;\n"
                f" {cg.decode(r)}\n long src = xo + {cg.offset(r, 'ps')};\n {ibody}\n"
                f" {cg.ctype(dt)} val = 0; if (ok) val = {cg.load(dt, 'x', 'src')};\n"
                f" {cg.store(dt, 'o', 'g', 'val')}\n}}\n")
    k = kern.dev.kernel(key, "take", src)
    kern.dev.launch(k, n, [out.base_data, x.base_data, off, n] + list(rshape) + list(plain) + _idx_args(idxs))
    return out


def _atomic_mode(kern, dt, exact: bool = False) -> str:
    """How an accumulating write combines: 'atomic' (one work-item per value, any order) or 'seq' (one work-item,
    index order).  Float sums in any order round differently from run to run: under
    ``torch.use_deterministic_algorithms(True)`` they go 'seq' (``exact``: max/min, the same in any order)."""
    if not exact and np.dtype(dt).kind == "f" and deterministic():
        return "seq"
    if dt == np.float32 or dt == np.int32:
        return "atomic"
    if dt in (np.float64, np.int64) and kern.dev.i64atomics:
        return "atomic"
    return "seq"  # no atomics for this dtype: one work-item accumulates in order


def put(kern, x, rshape, off, plain, idxs, value, accumulate: bool):
    if accumulate:
        mode = _atomic_mode(kern, x.dtype)
    else:  # repeated indices: the last write wins only in index order (deterministic mode), else any one does
        mode = "seq_assign" if deterministic() else "assign"

    def write(dt, ct):
        if mode == "assign" or mode == "seq_assign":
            return "", cg.store(dt, "x", "src", "val")
        if mode == "seq":
            return "", cg.store(dt, "x", "src", f"{cg.load(dt, 'x', 'src')} + val")
        if dt in (np.float32, np.float64):
            return ATOMICS, f"ct_atomic_add_{ct}(x + src, val);"
        if dt == np.int32:
            return ATOMICS, "atomic_add((volatile __global int*)(x + src), val);"
        return ATOMICS, "atom_add((volatile __global long*)(x + src), val);"
    run_put(kern, "put", ("put",), x, rshape, off, plain, idxs, value, mode, write)


def run_put(kern, kname: str, key: tuple, x, rshape, off, plain, idxs, value, mode: str, write) -> None:
    """A put-shaped kernel (``put`` here, ``index_reduce`` in shaping.py): one work-item per element of the index
    plan (``mode`` 'seq': one work-item over all of them, in order) writing ``val`` (a scalar, or the array ``value``
    broadcast to the plan) at the indexed element ``src`` of x; ``write(dt, ctype) -> (helper source, statement)``
    is that write.  ``off`` is the plan's element offset in x's buffer, x's own offset included (as ``index_plan``
    gives it).  ``key`` names the program family; the dtype, rank and layouts complete it."""
    n = 1
    for s in rshape:
        n *= s
    if n == 0:
        if isinstance(value, cla.Array) and np.broadcast_shapes(tuple(value.shape), tuple(rshape)) != tuple(rshape):
            raise ValueError(f"could not broadcast a value of shape {value.shape} to {tuple(rshape)}")  # as numpy
        return
    dt = np.dtype(x.dtype)
    scalar = not isinstance(value, cla.Array)
    vo = vstr = None  # set for an array value
    if not scalar:
        if value.dtype != dt:
            value = kern.cast(value, dt)
        _, vo, vshape, vst = _desc(value)
        vstr = (0,) * max(0, 4 - len(rshape)) + _expand_strides(vshape, vst, rshape)
    rshape, plain, idxs = _padplan(rshape, plain, idxs)
    r = len(rshape)
    ct = cg.ctype(dt)
    key = key + (dt.str, r, scalar, mode, tuple(a.dtype.str for a, _, _, _ in idxs))

    def src():
        iargs, ibody = _idx_src(r, idxs)
        args = [f"__global {cg.stype(dt)}* x", "long xo"]
        if scalar:
            args.append(f"{ct} val")
            vload = ""
        else:
            args += [f"__global const {cg.stype(dt)}* vp", "long vo"] + [f"long vs{k}" for k in range(r)]
            vload = f"{ct} val = {cg.load(dt, 'vp', 'vo + ' + cg.offset(r, 'vs'))};"
        args += ["long n"] + [f"long d{k}" for k in range(r)] + [f"long ps{k}" for k in range(r)] + iargs
        head, stmt = write(dt, ct)
        body = f"{cg.decode(r)} long src = xo + {cg.offset(r, 'ps')}; {ibody} if (ok) {{ {vload} {stmt} }}"
        if mode.startswith("seq"):
            loop = f"if (get_global_id(0) != 0) return;\n for (long g = 0; g < n; ++g) {{ {body} }}"
        else:
            loop = f"long g = get_global_id(0); if (g >= n) return;\n {body}"
        return f"{head}\n__kernel void {kname}({', '.join(args)}) {{\n {loop}\n}}\n"
    k = kern.dev.kernel(key, kname, src)
    args = [x.base_data, off]  # the plan's offset: x's own included
    if scalar:
        args.append(kern._scalar_arg(value, dt))
    else:
        assert vstr is not None  # set for an array value
        args += [value.base_data, vo] + list(vstr)
    args += [n] + list(rshape) + list(plain) + _idx_args(idxs)
    kern.dev.launch(k, 1 if mode.startswith("seq") else n, args)


def nonzero(kern, x):
    nd = x.ndim
    N = x.size
    if N == 0:
        return kern._out((0, nd), _I64)
    flags = kern._binary("ne")(x, False if x.dtype == np.bool_ else 0)
    f = kern.cast(flags, _I64)
    flat = kern.view(f, (N,))   # (None for a transposed x: its flags keep that layout)
    cs = kern._scan("cumsum")(flat if flat is not None else kern.view(kern.contiguous(f), (N,)), 0)
    cnt = int(kern.to_numpy(kern.basic_index(cs, (N - 1,))))  # the result's shape depends on the data
    out = kern._out((cnt, nd), _I64)
    if cnt == 0 or nd == 0:
        return out
    key = ("nonzero", nd)

    def src():
        args = ["__global long* o", "__global const long* cs", "long n"] + [f"long d{k}" for k in range(nd)]
        stores = " ".join(f"o[pos * {nd} + {k}] = i{k};" for k in range(nd))
        return (f"__kernel void nz({', '.join(args)}) {{\n long g = get_global_id(0); if (g >= n) return;\n"
                f" long c = cs[g]; long prev = g ? cs[g - 1] : 0; if (c == prev) return; long pos = c - 1;\n"
                f" {cg.decode(nd)}\n {stores}\n}}\n")
    k = kern.dev.kernel(key, "nz", src)
    kern.dev.launch(k, N, [out.base_data, cs.base_data, N] + list(x.shape))
    return out


def _check_launch(kern, arr, exc: type, message: str):
    """What a device-side check launch needs: the device, ``message``'s check code for ``exc``, this launch's
    ticket, the error buffer (marking a check pending), and ``arr`` read in place (buffer, element offset,
    collapsed and padded dims and strides, their count)."""
    dev = kern.dev
    code = dev.check_code(exc, message)
    ticket = dev.check_ticket()
    err = dev.error_buffer()
    buf, off, shape, st = _desc(arr)
    dims, (strides,) = _collapse(shape, [st])
    dims, strides, nd = _pad(dims, strides)
    return dev, code, ticket, err, (buf, off, dims, strides, nd)


def _read_args(dt, nd: int) -> list:
    """Kernel parameters of an array ``q`` of dtype ``dt`` read at ``nd`` dims of any strides, and its size ``n``."""
    return ([f"__global const {cg.stype(dt)}* q", "long qo", "long n"] + [f"long d{k}" for k in range(nd)]
            + [f"long s{k}" for k in range(nd)])


def check_index(kern, index, size: int, allow_negative: bool, message: str, exc: type = IndexError) -> None:
    """The core's index range check on the device, in one launch and no host read (the 'check_index' primitive).

    One work-item per index (read in place at its strides: any layout, any integer dtype); an index outside
    [0, size) (or [-size, size) with ``allow_negative``) claims the device's check buffer for this launch, unless
    an earlier kernel's failure holds it, and records itself as the largest value above the range or the smallest
    below it.  The next host read (or ``synchronize``) raises exc(message.format(value)) with the value the
    CPU check names: the largest index when one is too large, else the smallest (see ``Device.error_buffer``).
    Without 64-bit atomics the value named is one of the failing indices."""
    n = index.size
    if n == 0:
        return
    dt = np.dtype(index.dtype)
    if dt.kind not in "iub" or dt not in cg.CTYPES:
        raise TypeError(f"check_index: index arrays must be integers, got {dt}")
    dev, code, ticket, err, (buf, off, dims, strides, nd) = _check_launch(kern, index, exc, message)

    def src():
        args = _read_args(dt, nd) + ["long lo", "long hi", "int ticket", "int code", "__global long* err"]
        return f"""
__kernel void check_index({', '.join(args)}) {{
  long g = get_global_id(0); if (g >= n) return;        // one work-item per index
  {cg.decode(nd)}
  const long v = (long)q[qo + {cg.offset(nd, 's')}];
  if (v >= lo && v < hi) return;
  volatile __global int* claim = (volatile __global int*)(err + 1);
  const int old = atomic_cmpxchg(claim, 0, ticket);
  if (old != 0 && old != ticket) return;                 // an earlier kernel failed first: its failure is reported
  claim[1] = code;
  const int above = v >= hi;
#ifdef CT_I64ATOM
  volatile __global long* slot = err + (above ? 2 : 3);  // atomic max above the range, min below it
  long cur = *slot;
  while (above ? v > cur : v < cur) {{
    const long seen = atom_cmpxchg(slot, cur, v);
    if (seen == cur) break;
    cur = seen;
  }}
#else
  err[above ? 2 : 3] = v;                                // no 64-bit atomics: one of the failing values
#endif
}}
"""
    k = dev.kernel(("check_index", dt.str, nd), "check_index", src)
    lo = -int(size) if allow_negative else 0
    dev.launch(k, n, [buf, off, n, *dims, *strides, lo, int(size), ticket, code, err])


_VALUE_CHECKS = {"nonzero": "v != 0"}  # kind -> the condition every element must meet


def check_values(kern, x, kind: str, message: str) -> None:
    """The core's operand check of integer ``//``, ``%`` (kind 'nonzero': a divisor is 0) on the device, in one
    launch and no host read (the 'check_values' primitive).

    One work-item per element (read in place at its strides: any layout, integer or bool dtype); a failing element
    claims the device's check buffer for this launch, unless an earlier kernel's failure holds it, and the next host
    read (or ``synchronize``) raises RuntimeError(message).  Nothing to check (no element) is no launch."""
    cond = _VALUE_CHECKS.get(kind)
    if cond is None:
        raise ValueError(f"check_values: kind must be one of {sorted(_VALUE_CHECKS)}, got {kind!r}")
    dt = np.dtype(x.dtype)
    if dt.kind not in "iub" or dt not in cg.CTYPES:
        raise TypeError(f"check_values: integer or bool arrays only, got {dt}")
    n = x.size
    if n == 0:
        return
    message = message.replace("{", "{{").replace("}", "}}")  # reported as is
    dev, code, ticket, err, (buf, off, dims, strides, nd) = _check_launch(kern, x, RuntimeError, message)

    def src():
        args = _read_args(dt, nd) + ["int ticket", "int code", "__global long* err"]
        return f"""
__kernel void check_values({', '.join(args)}) {{
  long g = get_global_id(0); if (g >= n) return;        // one work-item per element
  {cg.decode(nd)}
  const long v = (long)q[qo + {cg.offset(nd, 's')}];
  if ({cond}) return;
  volatile __global int* claim = (volatile __global int*)(err + 1);
  if (atomic_cmpxchg(claim, 0, ticket) != 0) return;     // this launch's first failure, or an earlier kernel's
  claim[1] = code;
}}
"""
    k = dev.kernel(("check_values", kind, dt.str, nd), "check_values", src)
    dev.launch(k, n, [buf, off, n, *dims, *strides, ticket, code, err])
