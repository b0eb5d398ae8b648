"""The elementwise machinery of the opencl kernel table (a mixin of backend._Kernels): generated unary,
binary and ternary kernels over strided operands, one program per dtype."""
from __future__ import annotations

import numpy as np

from . import codegen as cg
from .common import (
    KernelMixin,
    _BINARY,
    _BITS,
    _BOOL,
    _EW2_MIN,
    _TRANSPOSE_MIN,
    _UNARY,
    _Array,
    _contiguous_args,
    _dense_args,
    _scalar_dtype,
    _strided_args,
    _transpose8_src,
    _valid,
)
from .device import STATS, c_strides, cla
from .layout import _c_ordered, _collapse, _desc, _is_c, _iter_order
from .vecmath import VECTOR_EW, run_ew

_F32 = np.dtype(np.float32)


def _transpose8_local(gs: tuple) -> tuple:
    """transpose8's work-groups: up to 8 blocks down the output's columns (x's rows), one across.  PoCL's own choice
    runs along the first dim; these groups write output rows in whole cache lines and reuse x's lines: the 256x784
    weight's transpose 0.067 -> 0.044 ms hot, 0.14 -> 0.09 ms inside the MLP step (PoCL, one compute unit)."""
    gy = gs[1]
    return (1, 8 if gy % 8 == 0 else 4 if gy % 4 == 0 else 2 if gy % 2 == 0 else 1, 1)


class ElementwiseKernels(KernelMixin):
    # ---- elementwise machinery ---------------------------------------------------------------
    def _ew(self, pdt, kname, out, operands):
        """Run an elementwise kernel: ``out`` (array, written at its own strides) = f(operands).
        operands: arrays with out's shape (any strides) or Python scalars (typed by ``family``).

        One program per dtype ``pdt`` holds a contiguous ("_c") and a strided ("_s", 4 dims) variant of
        every elementwise kernel of that dtype (see ``_ew_src``), so a dtype costs one build; more than 4
        non-mergeable dims get their own program."""
        n = out.size
        if n == 0:
            return out
        args = _contiguous_args(out, operands)
        if args is None and out.__dict__.get("_ct_p"):  # a permuted fresh result: flat where all share its layout
            args = _dense_args(out, operands)
        if args is not None:
            args.append(n)
            if pdt is _F32 and kname in VECTOR_EW and self.dev.is_cpu:   # VW elements per work-item (vecmath)
                run_ew(self, kname, args, n)
                return out
            k = self._ck.get((pdt, kname))
            if k is None:  # one lookup per launch afterwards: no key tuple, name or closure built per op
                k = self._ck[(pdt, kname)] = self.dev.kernel(("ew", pdt, 4), kname + "_c", lambda: self._ew_src(pdt, 4))
            self.dev.launch(k, n, args)
            return out
        ob, oo, shape, ost = _desc(out)
        descs = [_desc(o) if o.__class__ is _Array else None for o in operands]
        if self._row_broadcast(pdt, kname, descs, n, ob, oo, shape, ost):
            return out
        dims, sts = _collapse(shape, [ost] + [d[3] for d in descs if d is not None])
        nd = len(dims)
        if 2 <= nd <= 4 and n >= _EW2_MIN and dims[-1] >= 8 and n < 2 ** 31 and self.dev.is_cpu and \
                all(st[-1] == 1 for st in sts):   # (a row per work-item: CPUs; GPUs want one element each)
            self._ew4(pdt, kname, out, operands, descs, dims, sts)
            return out
        if nd <= 2 and n >= _EW2_MIN:
            self._ew2(pdt, kname, out, operands, descs, dims, sts)
            return out
        ndk = max(4, nd)
        pad = ndk - nd
        dims = (1,) * pad + dims
        sts = [(0,) * pad + s for s in sts]
        if ndk == 4:
            k = self.dev.kernel(("ew", pdt, 4), kname + "_s", lambda: self._ew_src(pdt, 4))
        else:
            k = self.dev.kernel(("ew", pdt, ndk), kname + "_s", lambda: self._ew_src(pdt, ndk))
        args = _strided_args([ob, oo, *sts[0]], operands, descs, sts)
        args.append(n)
        args += dims
        self.dev.launch(k, n, args)
        return out

    def _ew2(self, pdt, kname, out, operands, descs, dims, sts):
        """An elementwise op whose operands collapse to at most 2 dims of any strides (a column broadcast, a
        transposed small copy): the "_2" kernel on a 2-D range, no index decoding (see ``_ew2_kernel``)."""
        if len(dims) < 2:
            dims, sts = (1,) * (2 - len(dims)) + dims, [(0,) * (2 - len(dims)) + st for st in sts]
        if dims[1] < 16 and dims[0] > dims[1]:  # a narrow last dim: iterate the other way (wider work-groups)
            dims, sts = dims[::-1], [st[::-1] for st in sts]
        args = _strided_args([out.base_data, out.offset // out.dtype.itemsize, *sts[0]], operands, descs, sts)
        args += [out.size, dims[1]]
        ls0 = min(self.dev.ls, 1 << (dims[1] - 1).bit_length())
        STATS["launches"] += 1
        self._ew2_kernel(pdt, kname)(self.dev.queue, (-(-dims[1] // ls0) * ls0, dims[0]), (ls0, 1), *args)

    def _ew4(self, pdt, kname, out, operands, descs, dims, sts):
        """An elementwise op over 2 to 4 collapsed dims whose last dim is contiguous in every array operand (the
        head split of attention, (B, H, T, D) <-> (B, T, H, D); a column slice of qkv): the "_4" kernel, one
        work-item per row of the last dim (its index decoded once, in 32-bit), the row an inner loop LLVM
        vectorises.  Measured on PoCL, one
        compute unit, a 16x4x64x32 float32 transposed copy: 1.0-1.2 ms through "_s" (three 64-bit divisions and
        remainders and a strided address per element), 0.2 ms so; a 1024 x 128 column slice of a 1024 x 384 array
        0.24-0.42 ms through "_2" (2-D range, a strided address per element), 0.21-0.34 so."""
        pad = 4 - len(dims)
        dims, sts = (1,) * pad + tuple(dims), [(0,) * pad + tuple(st) for st in sts]
        args = _strided_args([out.base_data, out.offset // out.dtype.itemsize, *sts[0][:3]], operands, descs,
                             [st[:3] for st in sts])
        rows = dims[0] * dims[1] * dims[2]
        args += [rows, dims[1], dims[2], dims[3]]
        self.dev.launch(self._ew4_kernel(pdt, kname), rows, args)

    def _ew4_kernel(self, pdt, kname):
        """The "_4" variant of one elementwise kernel (see ``_ew4``), built on first use like "_2"."""
        def src():
            name, expr, out_dt, operands, _ = next(sp for sp in self._ew_specs(pdt) if sp[0] == kname)
            args = [f"__global {cg.stype(out_dt)}* o", "long oo"] + [f"long os{d}" for d in range(3)]
            body = []
            idx = " + ".join(f"i{d} * {{p}}{d}" for d in range(3))
            for j, (dt, scalar) in enumerate(operands):
                if scalar:
                    args.append(f"{cg.ctype(dt)} a{j}")
                    continue
                args += [f"__global const {cg.stype(dt)}* p{j}", f"long po{j}"] + [f"long ps{j}_{d}" for d in range(3)]
                body.append(f"const __global {cg.stype(dt)}* r{j} = p{j} + po{j} + {idx.format(p=f'ps{j}_')};")
            loads = [f"{cg.ctype(dt)} a{j} = {cg.load(dt, f'r{j}', 'c')};"
                     for j, (dt, scalar) in enumerate(operands) if not scalar]
            args += ["int rows", "int d1", "int d2", "int d3"]
            return (cg.helpers(pdt) + f"__kernel void {name}_4({', '.join(args)}) {{\n"
                    "  const int z = get_global_id(0); if (z >= rows) return;\n"
                    "  const int i2 = z % d2, y = z / d2, i1 = y % d1, i0 = y / d1;\n  "
                    + "\n  ".join(body) + f"\n  __global {cg.stype(out_dt)}* ro = o + oo + {idx.format(p='os')};\n"
                    "  for (int c = 0; c < d3; ++c) {\n    " + " ".join(loads)
                    + f"\n    {cg.store(out_dt, 'ro', 'c', expr)}\n  }}\n}}\n")
        return self.dev.kernel(("ew4", pdt, kname), kname + "_4", src)

    def _row_broadcast(self, pdt, kname, descs, n, ob, oo, shape, ost) -> bool:
        """``x op b`` with x and the output contiguous and b a vector repeated over rows (a bias): the "_r"
        kernel on a 2-D range (measured on PoCL, (1024, 1024) + bias: 5 ms through the strided kernel, whose
        unknown strides keep it scalar; 0.2 ms as a contiguous add).  False when the operands are not so."""
        if len(descs) != 2 or descs[1] is None or kname[:2] != "b_" or not _is_c(shape, ost) \
                or not _is_c(descs[0][2], descs[0][3]):
            return False
        dims, (_, rst) = _collapse(shape, [ost, descs[1][3]])
        if len(dims) != 2 or rst != (0, 1):
            return False
        rows, rc = dims
        k = self.dev.kernel(("ew", pdt, 4), kname + "_r", lambda: self._ew_src(pdt, 4))
        ls0 = min(self.dev.ls, 1 << (rc - 1).bit_length())
        STATS["launches"] += 1
        k(self.dev.queue, (-(-rc // ls0) * ls0, rows), (ls0, 1), ob, oo, descs[0][0], descs[0][1], descs[1][0],
          descs[1][1], n, rc)
        return True

    def _out(self, shape, dt):
        return self.dev.array(tuple(shape), dt)

    def _out_like(self, shape, dt, arrays):
        """A fresh result of an elementwise op over ``arrays`` (of ``shape``, broadcast already) laid out as PyTorch's
        TensorIterator lays it: row-major when the first array is (the common case: one check), else in the order
        of the operands' strides (``x.t() + 1`` keeps x's transposed layout), made as a permutation of a fresh
        array and tagged ``_ct_p`` for ``_ew``'s flat path."""
        a0 = arrays[0]
        if a0.__dict__.get("_ct_c") or a0.shape != shape or len(shape) < 2:
            return self.dev.array(shape, dt)
        st0 = _desc(a0)[3]
        if _c_ordered(shape, st0):  # (row-major or a broadcast of a row-major array: asks for no swap)
            if _is_c(shape, st0):
                a0.__dict__["_ct_c"] = True  # (a row-major view: tagged as the device's own arrays, checked once)
            if all(a.__dict__.get("_ct_c") or _c_ordered(shape, _desc(a)[3]) for a in arrays[1:]):
                return self.dev.array(shape, dt)
        order = _iter_order(shape, [_desc(a)[3] for a in arrays])
        if order is None:
            return self.dev.array(shape, dt)
        inv = [0] * len(order)
        for i, d in enumerate(order):
            inv[d] = i
        out = self.permute(self.dev.array(tuple(shape[d] for d in order), dt), inv)
        out.__dict__["_ct_p"] = True
        return out

    def _unary(self, op):
        def k(x):
            dt = x.dtype
            if not _valid("u", op, dt):
                raise RuntimeError(f"\"{op}\" is not implemented for {dt} on device 'opencl'")
            out_dt = _BOOL if op in cg.UNARY_BOOL_OUT else dt
            out = self._out_like(x.shape, out_dt, (x,))
            return self._ew(dt, f"u_{op}", out, [x])
        return k

    def _binary_into(self, op, out, x, y):
        dt = x.dtype
        scalar = not isinstance(y, cla.Array)
        if not scalar and y.shape != x.shape:
            y = self.expand(y, x.shape)
        if scalar:
            y = self._scalar_arg(y, dt)
        return self._ew(dt, f"b_{op}{'_sc' if scalar else ''}", out, [x, y])

    def _scalar_arg(self, v, dt):
        if dt == _BOOL:
            return int(bool(v))
        if dt.kind in "iu":
            return int(v)
        return float(v)

    def _binary(self, op):
        def k(x, y):
            if not isinstance(x, cla.Array):  # a scalar first operand (not produced by the core)
                x = self.full((), x, y.dtype)
            dt = x.dtype
            if isinstance(y, cla.Array) and y.dtype != dt:
                y = self.cast(y, dt)
            if not _valid("b", op, dt):
                raise RuntimeError(f"\"{op}\" is not implemented for {dt} on device 'opencl'")
            shape = x.shape
            if isinstance(y, cla.Array) and y.shape != shape:
                shape = tuple(np.broadcast_shapes(shape, y.shape))
                if x.shape != shape:
                    x = self.expand(x, shape)
            out_dt = _BOOL if op in cg.BINARY_BOOL_OUT else dt
            if isinstance(y, cla.Array):
                if y.shape != shape:
                    y = self.expand(y, shape)
                out = self._out_like(shape, out_dt, (x, y))
            else:
                out = self._out_like(shape, out_dt, (x,))
            return self._binary_into(op, out, x, y)
        return k

    def _inplace(self, op):
        def k(x, y):
            self._check_writable(x)
            if isinstance(y, cla.Array) and y.dtype != x.dtype:
                y = self.cast(y, x.dtype)
            self._binary_into(op, x, x, y)
        return k

    def axpy_(self, y, alpha: float, x) -> None:
        """y += alpha * x in place (x of y's shape and dtype), one pass; any strides, as iadd."""
        self._check_writable(y)
        if y.dtype == _BOOL:
            raise RuntimeError("\"axpy_\" is not implemented for bool on device 'opencl'")
        if x.dtype != y.dtype:
            x = self.cast(x, y.dtype)
        if x.shape != y.shape:
            x = self.expand(x, y.shape)
        if x.base_data is not None and y.base_data is not None and x.base_data.int_ptr == y.base_data.int_ptr \
                and (x.offset, x.strides) != (y.offset, y.strides):
            x = self.contiguous(x)  # x overlaps y elsewhere than element for element: read it all before writing
        if y.dtype.itemsize == 2 and cg.is_float(y.dtype):  # float16/bfloat16: alpha in y's dtype, as PyTorch's
            alpha = float(y.dtype.type(alpha))
        self._ew(y.dtype, "k_axpy", y, [y, x, self._scalar_arg(alpha, y.dtype)])

    def erf(self, x):
        """erf(x) elementwise (float dtypes), OpenCL C's builtin."""
        if not cg.is_float(x.dtype):
            raise RuntimeError(f"\"erf\" is not implemented for {x.dtype} on device 'opencl'")
        return self._ew(x.dtype, "k_erf", self._out(x.shape, x.dtype), [x])

    def cast(self, x, dt):
        dt = self._check_dtype(dt)
        out = self._out_like(x.shape, dt, (x,))
        return self._copy_into(out, x)

    def _copy_into(self, out, x):
        sd, dd = x.dtype, out.dtype
        return self._ew(sd, f"k_cast_{cg.tag(dd)}", out, [x])

    def _fill_into(self, out, value):
        dt = out.dtype
        return self._ew(dt, "k_fill", out, [self._scalar_arg(value, dt)])

    def full(self, shape, value, dt):
        out = self.empty(shape, dt)
        return self._fill_into(out, value)

    def contiguous(self, x):
        out = self._out(x.shape, x.dtype)
        if x.size >= _TRANSPOSE_MIN and self._transpose_into(out, x):
            return out
        return self._copy_into(out, x)

    def _transpose_into(self, out, x) -> bool:
        """A (batched) transposed view -> contiguous in blocks that read and write whole rows (8x8 in registers on
        CPUs, 16x16 tiles in local memory on GPUs): the elementwise copy reads such a view with a stride per
        element (1.3 ms for a 256x784 float32 weight on PoCL, the copy matmul makes of ``W.T``).  False when
        ``x`` is not such a view."""
        _, xo, shape, xst = _desc(x)
        dims, (sst, ost) = _collapse(shape, [xst, c_strides(shape)])
        if len(dims) == 2:
            dims, sst, ost = (1,) + dims, (0,) + sst, (0,) + ost
        t = _BITS[x.dtype.itemsize]  # a copy moves bits: one kernel per element size, any dtype
        if len(dims) == 4 and self.dev.is_cpu and sst[2] == 1 and sst[3] != 1 and ost[3] == 1:
            # two batch dims (attention's k.T of a (B, T, H, D) head split): the same 8x8 blocks
            nz0, nz1, a, b = dims
            k = self.dev.kernel(("transpose8b", t), "transpose8",
                                lambda: _transpose8_src(t, x.dtype.itemsize, two=True))
            STATS["launches"] += 1
            gs = (-(-a // 8), -(-b // 8), nz0 * nz1)
            k(self.dev.queue, gs, _transpose8_local(gs), out.base_data, a * b, x.base_data, xo,
              sst[0], sst[3], a, b, nz1, sst[1])
            return True
        if len(dims) != 3 or sst[1] != 1 or sst[2] == 1 or ost[2] != 1 or self.dev.max_wg < 256:
            return False
        nb, a, b = dims     # out[z, i, j] = x[xo + z*sst0 + i + j*sst2]: i is contiguous in x, j in out
        if self.dev.is_cpu:
            # CPUs: 8x8 blocks in registers (8 vector loads along i, 8 vector stores along j built from their
            # lanes; no local memory, no barrier): 0.10 ms for the 256x784 weight against 0.27 ms tiled on PoCL
            k = self.dev.kernel(("transpose8", t), "transpose8", lambda: _transpose8_src(t, x.dtype.itemsize))
            STATS["launches"] += 1
            gs = (-(-a // 8), -(-b // 8), nb)
            k(self.dev.queue, gs, _transpose8_local(gs), out.base_data, a * b, x.base_data, xo, sst[0], sst[2], a, b)
            return True
        k = self.dev.kernel(("transpose", t), "transpose", lambda: f"""
__kernel void transpose(__global {t}* o, long zo, __global const {t}* x, long xo, long zx, long sj, int A, int B) {{
  __local {t} tile[16][17];
  const int z = get_global_id(2);
  const int i0 = get_group_id(0) * 16, j0 = get_group_id(1) * 16;
  const int li = get_local_id(0), lj = get_local_id(1);
  if (i0 + li < A && j0 + lj < B) tile[lj][li] = x[xo + z * zx + (i0 + li) + (long)(j0 + lj) * sj];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (i0 + lj < A && j0 + li < B) o[z * zo + (long)(i0 + lj) * B + j0 + li] = tile[li][lj];
}}
""")
        STATS["launches"] += 1
        k(self.dev.queue, (-(-a // 16) * 16, -(-b // 16) * 16, nb), (16, 16, 1), out.base_data, a * b,
          x.base_data, xo, sst[0], sst[2], a, b)
        return True

    def where(self, c, x, y, out=None):  # (out: a planned buffer of coretorch.compile, see out_kernels.py)
        xs, ys = not isinstance(x, cla.Array), not isinstance(y, cla.Array)
        if xs and ys:
            dt = np.result_type(_scalar_dtype(x), _scalar_dtype(y))
            if dt == np.float64 and not self.dev.fp64:
                dt = np.dtype(np.float32)
        else:
            dt = x.dtype if not xs else y.dtype
        shape = c.shape
        if not xs and x.dtype != dt:
            x = self.cast(x, dt)
        if not ys and y.dtype != dt:
            y = self.cast(y, dt)
        for a in (x, y):
            if isinstance(a, cla.Array) and a.shape != shape:
                shape = tuple(np.broadcast_shapes(shape, a.shape))
        if c.shape != shape:
            c = self.expand(c, shape)
        if not xs and x.shape != shape:
            x = self.expand(x, shape)
        if not ys and y.shape != shape:
            y = self.expand(y, shape)
        if out is None:
            out = self._out_like(shape, dt, [a for a in (c, x, y) if isinstance(a, cla.Array)])
        ops = [c, self._scalar_arg(x, dt) if xs else x, self._scalar_arg(y, dt) if ys else y]
        return self._ew(dt, f"k_where_{int(xs)}{int(ys)}", out, ops)

    def clamp(self, x, lo, hi):
        dt = x.dtype
        ops = [x] + [self._scalar_arg(v, dt) for v in (lo, hi) if v is not None]
        return self._ew(dt, f"k_clamp_{int(lo is not None)}{int(hi is not None)}", self._out_like(x.shape, dt, (x,)),
                        ops)

    def _ew_specs(self, dt) -> list:
        """(name, expression, result dtype, operands, row-broadcast variant after it) of every elementwise kernel
        whose program dtype is ``dt``: unary and binary ops (array and scalar second operand), casts from dt, fill,
        where (result dtype dt), clamp, axpy, erf."""
        specs = []
        targets = [d for d in cg.CTYPES if d != np.float64 or self.dev.fp64]
        # min(max(x, lo), hi) as PyTorch: a NaN bound gives NaN (floats only: an integer's b != b is a compiler
        # warning that pyopencl shows users), lo > hi gives hi
        nan1, nan2 = (" || a1 != a1", " || a2 != a2") if cg.is_float(dt) else ("", "")
        lo = f"((a0 < a1{nan1}) ? a1 : a0)"
        clamp = {"k_clamp_10": lo, "k_clamp_01": f"((a0 > a1{nan1}) ? a1 : a0)",
                 "k_clamp_11": f"(({lo} > a2{nan2}) ? a2 : {lo})"}
        for u in _UNARY:
            e = cg.unary_expr(u, dt)
            if e is not None:
                specs.append((f"u_{u}", e, _BOOL if u in cg.UNARY_BOOL_OUT else dt, [(dt, False)], False))
        for b in _BINARY:
            e = cg.binary_expr(b, dt)
            if e is not None:
                for sc in (False, True):
                    specs.append((f"b_{b}{'_sc' if sc else ''}", e, _BOOL if b in cg.BINARY_BOOL_OUT else dt,
                                  [(dt, False), (dt, sc)], sc))
        for t in targets:
            specs.append((f"k_cast_{cg.tag(t)}", cg.convert("a0", dt, t) if t != _BOOL else "a0", t,
                          [(dt, False)], False))
        specs.append(("k_fill", "a0", dt, [(dt, True)], False))
        for xs in (False, True):
            for ys in (False, True):
                specs.append((f"k_where_{int(xs)}{int(ys)}", "(a0 ? a1 : a2)", dt, [(_BOOL, False), (dt, xs), (dt, ys)],
                              False))
        for name, expr in clamp.items():
            specs.append((name, expr, dt, [(dt, False)] + [(dt, True)] * (1 + name.endswith("11")), False))
        if dt != _BOOL:  # y += alpha * x in one pass (axpy_: SGD's update, add_ with alpha), for floats rounded
            # once as PyTorch's fmadd (FP_CONTRACT alone left vector bodies and scalar tails to differ)
            ut = cg.utype(cg.ctype(dt))  # (integers: wrapping, see codegen.wrapping)
            e = "fma(a2, a1, a0)" if cg.is_float(dt) else cg.wrapping(
                cg.ctype(dt), "(a0 + a2 * a1)", f"(({ut})a0 + ({ut})a2 * ({ut})a1)")
            specs.append(("k_axpy", e, dt, [(dt, False), (dt, False), (dt, True)], False))
        if cg.is_float(dt):
            # float: written out (fastmath; PoCL's builtin is a slow call), double: OpenCL C's builtin
            specs.append(("k_erf", "ct_erf_f(a0)" if cg.ctype(dt) == "float" else "erf(a0)", dt, [(dt, False)], False))
        return specs

    def _ew_src(self, dt, nd):
        """Every elementwise kernel whose program dtype is ``dt`` (``_ew_specs``); "_c" and "_s" variants, and
        "_r" (a row-broadcast second operand) of the binary ops."""
        variants = [("c", 0, "_c"), ("s", 4, "_s")] if nd == 4 else [("s", nd, "_s")]
        parts = [cg.helpers(dt)]
        specs = self._ew_specs(dt)
        for mode, n, sfx in variants:
            for name, expr, out_dt, operands, row in specs:
                narr = 1 + sum(1 for _, sc in operands if not sc)
                parts.append(cg.elementwise_kernel(name + sfx, expr, out_dt, operands, (mode,) * narr, n))
                if row and mode == "c":  # x op bias: the second operand a row broadcast (see codegen "r")
                    parts.append(cg.elementwise_kernel(name[:-3] + "_r", expr, out_dt, [(dt, False), (dt, False)],
                                                       ("c", "c", "r"), 0))
        return "\n".join(parts)

    def _ew2_kernel(self, pdt, kname):
        """The "_2" variant of one elementwise kernel: operands of any strides over a 2-D range (columns, rows), so
        that no index is decoded by division (the "_s" kernel decodes 4 dims per element in 64-bit divisions: 13 us
        for a (128, 10) - (128, 1) on PoCL, against 2 us contiguous).  Built on first use, one program per kernel
        (most kernels never meet a strided 2-D operand)."""
        def src():
            name, expr, out_dt, operands, _ = next(sp for sp in self._ew_specs(pdt) if sp[0] == kname)
            args = [f"__global {cg.stype(out_dt)}* o", "long oo", "long os0", "long os1"]
            body = []
            for j, (dt, scalar) in enumerate(operands):
                if scalar:
                    args.append(f"{cg.ctype(dt)} a{j}")
                    continue
                args += [f"__global const {cg.stype(dt)}* p{j}", f"long po{j}", f"long ps{j}_0", f"long ps{j}_1"]
                body.append(f"{cg.ctype(dt)} a{j} = {cg.load(dt, f'p{j}', f'po{j} + i * ps{j}_0 + j * ps{j}_1')};")
            args += ["long n", "int d1"]
            return (cg.helpers(pdt) + f"__kernel void {name}_2({', '.join(args)}) {{\n"
                    "  const long j = get_global_id(0), i = get_global_id(1); if (j >= d1) return;\n  "
                    + "\n  ".join(body) + f"\n  {cg.store(out_dt, 'o', 'oo + i * os0 + j * os1', expr)}\n}}\n")
        return self.dev.kernel(("ew2", pdt, kname), kname + "_2", src)
