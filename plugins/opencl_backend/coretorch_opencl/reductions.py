"""The reductions of the opencl kernel table (a mixin of backend._Kernels): sum, prod, amax, amin, any,
all, argmax/argmin and their strided variants."""
from __future__ import annotations

import numpy as np

from . import codegen as cg
from .common import _BOOL, _I64, KernelMixin
from .device import STATS
from .layout import _collapse, _desc, _numel, _pad


class ReductionKernels(KernelMixin):
    # ---- reductions -------------------------------------------------------------------------
    def _reduce_src(self, kname, op, in_dt, out_dt, a, b):
        acc = {"sum": None, "prod": None}.get(op)
        if op in ("any", "all"):
            act = "int"
        elif op in ("sum", "prod"):
            act = cg.ctype(out_dt)
        else:
            act = cg.ctype(in_dt)
        f = cg.is_float(in_dt)
        if op in ("sum", "prod"):  # int and long wrap, computed unsigned (a signed overflow is undefined in C)
            sym = "+" if op == "sum" else "*"
            u = cg.utype(act)
            init = f"({act}){0 if op == 'sum' else 1}"
            comb = cg.wrapping(act, f"acc {sym} v", f"({u})acc {sym} ({u})v")
        elif op == "any":
            init, comb = "0", "(acc || (v != 0))"
        elif op == "all":
            init, comb = "1", "(acc && (v != 0))"
        elif op in ("amax", "amin"):
            gt = ">" if op == "amax" else "<"
            if f:
                init = ("-INFINITY" if op == "amax" else "INFINITY")
                comb = f"((acc {gt} v || (acc != acc)) ? acc : v)"
            else:
                lim = {"long": "LONG", "int": "INT", "short": "SHRT", "char": "CHAR"}.get(act)
                if lim:
                    init = f"{lim}_MIN" if op == "amax" else f"{lim}_MAX"
                else:
                    init = "0" if op == "amax" else "UCHAR_MAX"
                comb = f"(acc {gt} v ? acc : v)"
        del acc
        kahan = op == "sum" and act in ("float", "double")  # blocks of plain sums added compensated (kahan_step)
        bk = cg.SUM_BLOCK
        args = [f"__global {cg.stype(out_dt)}* o", "long oo", f"__global const {cg.stype(in_dt)}* x", "long xo",
                "long n", "long P", "long chunk", "long K"]
        args += [f"long d{k}" for k in range(a)] + [f"long s{k}" for k in range(a)]
        args += [f"long e{k}" for k in range(b)] + [f"long t{k}" for k in range(b)]
        if b == 1:
            joff = "j * t0"
            jdec = ""
        else:
            jdec = cg.decode(b, "j", "e", "q").replace("r_", "rj_")
            joff = cg.offset(b, "t", "q")
        return (f"__kernel void {kname}({', '.join(args)}) {{\n long g = get_global_id(0); if (g >= n) return;\n"
                f" long m = g / P; long p = g % P;\n {cg.decode(a, 'm')}\n long base = xo + {cg.offset(a, 's')};\n"
                f" long j0 = p * chunk; long j1 = min(K, j0 + chunk);\n {act} acc = {init};\n"
                + (f" {act} c = 0;\n for (long jb = j0; jb < j1; jb += {bk}) {{ long je = min(j1, jb + {bk});"
                   f" {act} s = 0;\n" if kahan else " { long jb = j0, je = j1;\n")
                + f" for (long j = jb; j < je; ++j) {{ {jdec} {cg.ctype(in_dt)} v = "
                f"{cg.load(in_dt, 'x', 'base + ' + joff)}; " + ("s += v; }\n" if kahan else f"acc = {comb}; }}\n")
                + (cg.kahan_step(act, "acc", "c", "s") if kahan else "") + " }\n"
                f" {cg.store(out_dt, 'o', 'oo + g', 'acc')}\n}}\n")

    def _split(self, x, axes):
        """(kept dims/strides collapsed, reduced dims/strides collapsed, output shape parts)."""
        _, off, shape, st = _desc(x)
        nd = len(shape)
        axes = tuple(range(nd)) if axes is None else tuple(a % nd for a in axes) if nd else ()
        kept = [d for d in range(nd) if d not in axes]
        kd, (ks,) = _collapse([shape[d] for d in kept], [[st[d] for d in kept]])
        rd, (rs,) = _collapse([shape[d] for d in axes], [[st[d] for d in axes]])
        return off, kd, ks, rd, rs, axes

    def _reduce_run(self, op, x, axes, keepdim, out_dt):
        """op over ``axes`` of ``x`` into a new array.  What runs depends only on the layout (shape, strides,
        offset, dtypes) and the arguments, so it is planned once per such key (``_reduce_plan``) and a call allocates
        and launches (a compiled replay's bias-gradient sums: host time per call roughly halved)."""
        try:
            key = (op, x.shape, x.strides, x.offset, x.dtype, axes, keepdim, out_dt, self.dev.is_cpu)
            plans = self.__dict__.get("_red_plans")
            if plans is None:
                plans = self.__dict__["_red_plans"] = {}
            run = plans.get(key)
        except TypeError:          # unhashable axes (a list): planned for this call only
            return self._reduce_plan(op, x, axes, keepdim, out_dt)(x)
        if run is None:
            if len(plans) >= 2048:
                plans.clear()
            run = plans[key] = self._reduce_plan(op, x, axes, keepdim, out_dt)
        return run(x)

    def _reduce_plan(self, op, x, axes, keepdim, out_dt):
        """-> run(x): the reduction of arrays laid out as ``x`` (see ``_reduce_run``)."""
        off, kd, ks, rd, rs, axes = self._split(x, axes)
        shape = x.shape
        oshape = tuple(1 if d in axes else s for d, s in enumerate(shape)) if keepdim else \
            tuple(s for d, s in enumerate(shape) if d not in axes)
        M, K = _numel(kd), _numel(rd)
        if not rd:
            rd, rs = (1,), (0,)
        new = self._out
        if M == 0:
            return lambda x: new(oshape, out_dt)
        if op == "sum" and ks == (1,) and len(rd) == 1 and K > 1:
            col = self._colsum_plan(x.dtype, out_dt, off, rs[0], K, M)
            if col is not None:
                def run_col(x):
                    out = new(oshape, out_dt)
                    col(x, out)
                    return out
                return run_col
        P = 1
        if K >= 4096 and M < 256:
            P = min(-(-K // 1024), max(1, 1024 // M))
        chunk = -(-K // P) if K else 1
        if K:
            P = -(-K // chunk)
        kd, ks, a = _pad(kd, ks)
        b = 1 if len(rd) == 1 else max(4, len(rd))
        if b > 1:
            rd, rs, b = _pad(rd, rs)
        k = self._red_kernel(op, x.dtype, out_dt, a, b)
        tail = (off, M * P, P, chunk, K) + tuple(kd) + tuple(ks) + tuple(rd) + tuple(rs)
        launch = self.dev.launch
        if P == 1:
            def run(x):
                out = new(oshape, out_dt)
                launch(k, M, [out.base_data, 0, x.base_data, *tail])
                return out
            return run
        # the chunks' partial sums/products in float32 for a float16/bfloat16 result (PyTorch accumulates them in
        # float, rounding once): rounded to the result's dtype, a (4099, 3) bfloat16 column sum of 125.85 was 125.5
        mid = np.dtype(np.float32) if op in ("sum", "prod") and np.dtype(out_dt) in (np.float16, cg.BF16) \
            else out_dt
        if mid is not out_dt:
            k = self._red_kernel(op, x.dtype, mid, a, b)
        k2 = self._red_kernel(op, mid, out_dt, 4, 1)

        def run2(x):
            out = new(oshape, out_dt)
            target = new((M, P), mid)
            launch(k, M * P, [target.base_data, 0, x.base_data, *tail])
            launch(k2, M, [out.base_data, 0, target.base_data, 0, M, 1, P, P, 1, 1, 1, M, 0, 0, 0, P, P, 1])
            return out
        return run2

    def _colsum_plan(self, dt, out_dt, off, rs, K, M):
        """-> run(x, out), a sum over the leading axis of a (K, M) layout whose columns are contiguous (a bias
        gradient: a (batch, features) gradient summed over the batch) on CPUs: each work-item adds VW-wide vectors of
        columns down the rows (the generic kernel reads one column per work-item with a stride per element, scalar:
        2.4 ms for a 1024x1024 float32 on PoCL).  Rows are added in order, in blocks of codegen.SUM_BLOCK whose sums
        go into the total with codegen.kahan_step, as the generic kernel does (the same bits), unless too few
        work-items would remain: then the rows are split into chunks whose partial sums one more pass adds.  None
        where this does not apply: GPUs (the generic kernel reads adjacent columns in adjacent work-items there,
        coalesced), other dtypes, fewer columns than a vector."""
        dev = self.dev
        if not dev.is_cpu or dt != out_dt or dt not in (np.float32, np.float64):
            return None
        pref = dev.float_lanes if dt == np.float32 else dev.float_lanes // 2
        vw = 8 if pref >= 8 else 4 if pref >= 4 else 0   # 8-wide at most: a column sum is bound by memory, not lanes
        if not vw or M < vw or max(K, M) >= 2 ** 31:
            return None
        w = -(-M // vw)                         # work-items per row chunk
        target = 4 * dev.compute_units          # enough work-items to keep every core busy, with some balance
        P = min(-(-target // w), K // 256) if w < target else 1
        P = max(P, 1)
        chunk = -(-K // P)
        P = -(-K // chunk)
        t = cg.stype(dt)
        k = dev.kernel(("colsum", dt.str, vw), "colsum", lambda: f"""
typedef {t} __attribute__((ext_vector_type({vw}), aligned({dt.itemsize}))) ct_uv;
__kernel void colsum(__global {t}* restrict o, long oo, __global const {t}* restrict x, long xo, long rs, int K,
                     int M, int chunk) {{
  const int j0 = get_global_id(0) * {vw}, p = get_global_id(1);
  if (j0 >= M) return;
  const int r0 = p * chunk, r1 = min(K, r0 + chunk);
  const __global {t}* xp = x + xo + j0 + (long)r0 * rs;
  __global {t}* op = o + oo + (long)p * M + j0;
  if (j0 + {vw} <= M) {{
    {t}{vw} acc = ({t}{vw})(0), c = ({t}{vw})(0);
    for (int rb = r0; rb < r1; rb += {cg.SUM_BLOCK}) {{
      const int re = min(r1, rb + {cg.SUM_BLOCK});
      {t}{vw} s = ({t}{vw})(0);
      for (int r = rb; r < re; ++r, xp += rs) s += *(const __global ct_uv*)xp;
      {cg.kahan_step(f"{t}{vw}", "acc", "c", "s")}
    }}
    *(__global ct_uv*)op = acc;
  }} else {{                                // the last M % {vw} columns
    for (int j = 0; j < M - j0; ++j) {{
      {t} acc = 0, c = 0;
      const __global {t}* q = xp + j;
      for (int rb = r0; rb < r1; rb += {cg.SUM_BLOCK}) {{
        const int re = min(r1, rb + {cg.SUM_BLOCK});
        {t} s = 0;
        for (int r = rb; r < re; ++r, q += rs) s += *q;
        {cg.kahan_step(t, "acc", "c", "s")}
      }}
      op[j] = acc;
    }}
  }}
}}
""")

        ls = min(1 << max(0, (w // (4 * dev.compute_units)).bit_length() - 1), dev.ls)   # several groups per core
        gs = -(-w // ls) * ls
        new = self._out

        def run(dst, src, so, srs, rows, ch, parts):
            STATS["launches"] += 1
            k(dev.queue, (gs, parts), (ls, 1), dst.base_data, 0, src.base_data, so, srs, rows, M, ch)
        if P == 1:
            return lambda x, out: run(out, x, off, rs, K, K, 1)

        def run2(x, out):
            part = new((P, M), dt)
            run(part, x, off, rs, K, chunk, P)
            run(out, part, 0, M, P, P, 1)
        return run2

    def _red_kernel(self, op, in_dt, out_dt, a, b):
        group = ("any", "all") if op in ("any", "all") else ("sum", "prod", "amax", "amin")
        sfx = "_1" if b == 1 else "_n"

        def src():
            parts = []
            for o in group:
                if a == 4 and b in (1, 4):
                    parts += [self._reduce_src(f"red_{o}_1", o, in_dt, out_dt, 4, 1),
                              self._reduce_src(f"red_{o}_n", o, in_dt, out_dt, 4, 4)]
                else:
                    parts.append(self._reduce_src(f"red_{o}{sfx}", o, in_dt, out_dt, a, b))
            return "\n".join(parts)
        key = ("red", group, in_dt.str, out_dt.str) + ((4,) if a == 4 and b in (1, 4) else (a, b))
        return self.dev.kernel(key, f"red_{op}{sfx}", src)

    def _reduction(self, op):
        def k(x, axes, keepdim):
            out_dt = _BOOL if op in ("any", "all") else x.dtype
            return self._reduce_run(op, x, axes, keepdim, out_dt)
        return k

    def _arg(self, op):
        def k(x, axis, keepdim):
            if x.ndim == 0:
                return self.full((), 0, _I64)
            axes = None if axis is None else (axis,)
            off, kd, ks, rd, rs, axes_n = self._split(x, axes)
            if axis is None:
                oshape = (1,) * x.ndim if keepdim else ()
            else:
                oshape = tuple(1 if d == axes_n[0] else s for d, s in enumerate(x.shape)) if keepdim else \
                    tuple(s for d, s in enumerate(x.shape) if d != axes_n[0])
            M, K = _numel(kd), _numel(rd)
            if not rd:
                rd, rs = (1,), (0,)
            out = self._out(oshape, _I64)
            if M == 0:
                return out
            kd, ks, a = _pad(kd, ks)
            rd, rs, b = _pad(rd, rs)
            dt = x.dtype
            f = cg.is_float(dt)

            def one(o):
                cmp = ">" if o == "argmax" else "<"
                better = f"(!(best != best) && (v {cmp} best || (v != v)))" if f else f"(v {cmp} best)"
                args = ["__global long* o", f"__global const {cg.stype(dt)}* x", "long xo", "long n", "long K"]
                args += [f"long d{i}" for i in range(a)] + [f"long s{i}" for i in range(a)]
                args += [f"long e{i}" for i in range(b)] + [f"long t{i}" for i in range(b)]
                jdec = cg.decode(b, "j", "e", "q").replace("r_", "rj_")
                return (f"__kernel void {o}({', '.join(args)}) {{\n long g = get_global_id(0); if (g >= n) return;\n"
                        f" long m = g;\n {cg.decode(a, 'm')}\n long base = xo + {cg.offset(a, 's')};\n"
                        f" {cg.ctype(dt)} best = 0; long bi = 0;\n"
                        f" for (long j = 0; j < K; ++j) {{ {jdec} {cg.ctype(dt)} v = "
                        f"{cg.load(dt, 'x', 'base + ' + cg.offset(b, 't', 'q'))};"
                        f" if (j == 0 || {better}) {{ best = v; bi = j; }} }}\n o[g] = bi;\n}}\n")
            kern = self.dev.kernel(("arg", dt.str, a, b), op, lambda: one("argmax") + one("argmin"))
            self.dev.launch(kern, M, [out.base_data, x.base_data, off, M, K] + list(kd) + list(ks) + list(rd)
                            + list(rs))
            return out
        return k

    def _scan(self, op):
        def k(x, axis):
            from .scan import scan
            return scan(self, op, x, axis)
        return k
