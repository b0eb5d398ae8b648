"""The 'opencl' device: coretorch's primitive kernel table on pyopencl arrays.

Arrays are ``pyopencl.array.Array`` objects whose (buffer, offset, strides) describe views, so view
primitives (view/permute/expand/basic_index) cost no copy and no launch.  Every other primitive is one
(or a few) generated kernels that read strided operands in place; data never crosses to the host inside
an op except where the result's shape depends on the data (nonzero, boolean masks); index range checks and the
zero-divisor checks of integer ``//``, ``%`` run on the device (``check_index``, ``check_values``) and report at the
next host read.

Threads: every entry of the table holds its device's lock (``Device.lock``) while it runs, so that several threads
may use one device (see device.py).
"""
from __future__ import annotations

import functools
import math
import threading

import numpy as np

from . import codegen as cg
from . import linalg as _linalg  # the decompositions, run on the host (host_kernels)
from . import sampling  # the random family: Philox kernels and generator states
from .device import STATS, Device, c_strides, cl, cla, discover
from .layout import (_collapse, _desc, _expand_strides, _is_c, _nocopy_strides,  # noqa: F401
                     _numel, _pad)

_Array = cla.Array if cla is not None else None
_BOOL = np.dtype(np.bool_)
_I64 = np.dtype(np.int64)
_UNARY = ("neg", "exp", "log", "sqrt", "rsqrt", "abs", "sign", "sin", "cos", "tanh", "sigmoid", "relu",
          "reciprocal", "floor", "ceil", "round", "trunc", "expm1", "log1p", "logical_not", "bitwise_not", "isnan",
          # special (the cheap ones: builtins; the costly special functions are kernels of special.py)
          "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log2", "log10", "exp2", "erfc",
          "lgamma", "sinc", "ndtr", "entr", "signbit")
_BINARY = ("add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "maximum", "minimum", "eq", "ne", "lt",
           "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
           "atan2", "hypot", "copysign", "logaddexp", "logaddexp2", "xlogy", "xlog1py", "fmax", "fmin")  # special
_NOT_WRITABLE = ("unsupported operation: more than one element of the written-to tensor refers to a single memory "
                 "location. Please clone() the tensor before performing the operation.")


# ---------------------------------------------------------------------------------------------
# layout helpers (element units)
# ---------------------------------------------------------------------------------------------
def _transpose8_src(t: str, isz: int) -> str:
    lanes = "s01234567"[1:]
    loads = "\n".join(f"  const v8 r{r} = *(const __global v8*)(x + xb + (long)(j0 + {r}) * sj);" for r in range(8))
    stores = "\n".join(f"  *(__global v8*)(o + ob + (long)(i0 + {a}) * B) = (v8)(" +
                        ", ".join(f"r{r}.s{lanes[a]}" for r in range(8)) + ");" for a in range(8))
    return f"""typedef {t} __attribute__((ext_vector_type(8), aligned({isz}))) v8;
__kernel void transpose8(__global {t}* restrict o, long zo, __global const {t}* restrict x, long xo, long zx, long sj,
                         int A, int B) {{
  const int i0 = get_global_id(0) * 8, j0 = get_global_id(1) * 8, z = get_global_id(2);
  const long xb = xo + z * zx + i0, ob = z * zo + j0;
  if (i0 + 8 > A || j0 + 8 > B) {{   // an edge block: element by element
    for (int a = 0; a < 8 && i0 + a < A; ++a)
      for (int b = 0; b < 8 && j0 + b < B; ++b) o[ob + (long)(i0 + a) * B + b] = x[xb + a + (long)(j0 + b) * sj];
    return;
  }}
{loads}
{stores}
}}
"""


_TRANSPOSE_MIN = 4096  # elements: below this the one-launch elementwise copy is as fast
_EW2_MIN = 1024        # elements: a strided elementwise op this large with <= 2 collapsed dims runs the "_2" kernel
_BITS = {1: "uchar", 2: "ushort", 4: "uint", 8: "ulong"}


def _strided_args(args: list, operands, descs, sts) -> list:
    """``args`` (the output's) followed by each operand's: a scalar as it is, an array as (buffer, element offset,
    its collapsed strides ``sts[j]``; ``sts[0]`` is the output's)."""
    j = 1
    for o, d in zip(operands, descs):
        if d is None:
            args.append(o)
        else:
            args += [d[0], d[1], *sts[j]]
            j += 1
    return args


def _contiguous_args(out, operands):
    """(buffer, element offset) of ``out`` and each array operand (scalars as they are) when all are C-contiguous,
    else None.  An array contiguous by construction (``Device.array`` tags it) skips the stride analysis: on a
    small tensor that analysis was a third of an elementwise op's Python time."""
    args = []
    for o in (out, *operands):
        if o.__class__ is not _Array:
            args.append(o)
            continue
        if not o.__dict__.get("_ct_c"):
            _, _, shape, st = _desc(o)
            if not _is_c(shape, st):
                return None
        args += [o.base_data, o.offset // o.dtype.itemsize]
    return args


_VALID: dict = {}


def _valid(kind: str, op: str, dt) -> bool:
    """Whether an elementwise op exists for a dtype (cached: the expressions are strings)."""
    key = (kind, op, dt)
    v = _VALID.get(key)
    if v is None:
        v = _VALID[key] = (cg.unary_expr(op, dt) if kind == "u" else cg.binary_expr(op, dt)) is not None
    return v


def _locked(fn, lock):
    """``fn`` run holding ``lock`` (a kernel-table entry: set-args + enqueue, caches and the pool stay whole)."""
    if not callable(fn):
        return fn

    @functools.wraps(fn)
    def kernel(*args, **kwargs):
        with lock:
            return fn(*args, **kwargs)
    return kernel


def _scalar_dtype(v):
    return _BOOL if isinstance(v, (bool, np.bool_)) else _I64 if isinstance(v, (int, np.integer)) \
        else np.dtype(np.float64)


class OpenCLBackend:
    name = "opencl"
    distribution = "coretorch-opencl"
    array_type = cla.Array if cla is not None else ()
    native_broadcast = False
    # float16/bfloat16 kernels compute in float and take a Python scalar as a float kernel argument: the core needs
    # no float32 round trip for PyTorch's op math (half * 65536.0)
    scalar_opmath = True
    # the kernels this device runs on the host (the linalg decompositions), shown as such by `coretorch info`
    host_kernels = frozenset(_linalg.HOST_KERNELS)

    def __init__(self):
        self._devices: dict[int, Device] = {}
        self._tables: dict[int, dict] = {}
        self._seed = sampling.DEFAULT_SEED  # PyTorch's default seed
        self._gens: dict[int, sampling.PhiloxState] = {}  # device index -> its default generator state
        self._init_lock = threading.RLock()  # two threads' first use of a device make one context and one table

    # ---- device discovery -------------------------------------------------------------------
    def unavailable_reason(self) -> str:
        return discover()[1]

    def is_available(self) -> bool:
        return bool(discover()[0])

    def device_count(self) -> int:
        return len(discover()[0])

    def device_name(self, index: int = 0) -> str:
        pi, di, d = discover()[0][index]
        kind = "GPU" if d.type & cl.device_type.GPU else "CPU" if d.type & cl.device_type.CPU else "accelerator"
        fp64 = ", fp64" if "cl_khr_fp64" in d.extensions else ", no fp64"
        return (f"{d.name.strip()} ({kind}, {d.global_mem_size >> 20} MiB, {d.max_compute_units} CUs{fp64}; "
                f"{d.platform.name.strip()} {pi}:{di})")

    def device(self, index: int = 0) -> Device:
        dev = self._devices.get(index)
        if dev is None:
            with self._init_lock:
                dev = self._devices.get(index)
                if dev is None:
                    dev = self._devices[index] = Device(discover()[0][index][2], index)
        return dev

    def synchronize(self, index: int | None = None) -> None:
        """Wait for the device's queued kernels (every device in use when ``index`` is None) and raise a failed
        device-side check now, rather than at the next host read (torch.cuda.synchronize's role)."""
        for i, dev in list(self._devices.items()):
            if index is None or i == index:
                dev.synchronize()

    def manual_seed(self, seed: int) -> None:
        self._seed = int(seed)
        for i, g in list(self._gens.items()):  # reseeded in place: coretorch's default Generators hold these objects
            with self.device(i).lock:
                g.reseed(self._seed)

    def kernels(self, index: int = 0) -> dict:
        t = self._tables.get(index)
        if t is None:
            dev = self.device(index)
            with self._init_lock:
                t = self._tables.get(index)
                if t is None:
                    t = _Kernels(self, dev).table()
                    t = self._tables[index] = {name: _locked(fn, dev.lock) for name, fn in t.items()}
        return t


class _Kernels:
    """The primitive table of one device (closures over the device)."""

    def __init__(self, backend: OpenCLBackend, dev: Device):
        self.be = backend
        self.dev = dev
        self._ck: dict = {}  # (program dtype, kernel name) -> the contiguous elementwise kernel

    # ---- basics -----------------------------------------------------------------------------
    def _check_dtype(self, dt):
        dt = np.dtype(dt)
        if dt == np.float64 and not self.dev.fp64:
            raise RuntimeError(f"float64 is not supported on OpenCL device '{self.dev.name}' (it lacks the "
                               "cl_khr_fp64 extension); use float32")
        if dt not in cg.CTYPES:
            raise TypeError(f"dtype {dt} is not supported on device 'opencl'")
        return dt

    def empty(self, shape, dt):
        return self.dev.array(tuple(shape), self._check_dtype(dt))

    def from_numpy(self, a):
        a = np.asarray(a)
        dt = self._check_dtype(a.dtype)
        out = self.dev.array(a.shape, dt)
        if a.size:
            host = np.ascontiguousarray(a)
            if dt == cg.BF16:
                host = host.view(np.uint16)  # (ml_dtypes' bfloat16 has no buffer protocol: its bits are copied)
            STATS["to_device"] += 1
            cl.enqueue_copy(self.dev.queue, out.base_data, host, is_blocking=False)  # a NannyEvent keeps host alive
        return out

    def to_numpy(self, x):
        host = np.empty(x.shape, x.dtype)
        if not x.size:
            if self.dev.check_pending:  # an empty read is a host read too: a failed device-side check reports
                self.dev.synchronize()
            return host
        buf, off, shape, st = _desc(x)
        if not _is_c(shape, st):
            x = self.contiguous(x)
            buf, off = x.base_data, 0
        # raises a failed device-side check (nll_loss's targets); bfloat16 is read as its bits (no buffer protocol)
        self.dev.read(host.view(np.uint16) if host.dtype == cg.BF16 else host, buf, off * x.dtype.itemsize)
        return host

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
        if args is not None:
            args.append(n)
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

    def _unary(self, op):
        def k(x):
            dt = x.dtype
            if not _valid("u", op, dt):
                raise RuntimeError(f"\"{op}\" is not implemented for {dt} on device 'opencl'")
            out_dt = _BOOL if op in cg.UNARY_BOOL_OUT else dt
            out = self._out(x.shape, out_dt)
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
            out = self._out(shape, _BOOL if op in cg.BINARY_BOOL_OUT else dt)
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
        self._ew(y.dtype, "k_axpy", y, [y, x, self._scalar_arg(alpha, y.dtype)])

    def erf(self, x):
        """erf(x) elementwise (float dtypes), OpenCL C's builtin."""
        if not cg.is_float(x.dtype):
            raise RuntimeError(f"\"erf\" is not implemented for {x.dtype} on device 'opencl'")
        return self._ew(x.dtype, "k_erf", self._out(x.shape, x.dtype), [x])

    def cast(self, x, dt):
        dt = self._check_dtype(dt)
        out = self._out(x.shape, dt)
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
        if len(dims) != 3 or sst[1] != 1 or sst[2] == 1 or ost[2] != 1 or self.dev.max_wg < 256:
            return False
        nb, a, b = dims     # out[z, i, j] = x[xo + z*sst0 + i + j*sst2]: i is contiguous in x, j in out
        t = _BITS[x.dtype.itemsize]  # a copy moves bits: one kernel per element size, any dtype
        if self.dev.is_cpu:
            # CPUs: 8x8 blocks in registers (8 vector loads along i, 8 vector stores along j built from their
            # lanes; no local memory, no barrier): 0.10 ms for the 256x784 weight against 0.27 ms tiled on PoCL
            k = self.dev.kernel(("transpose8", t), "transpose8", lambda: _transpose8_src(t, x.dtype.itemsize))
            STATS["launches"] += 1
            k(self.dev.queue, (-(-a // 8), -(-b // 8), nb), None, out.base_data, a * b, x.base_data, xo, sst[0],
              sst[2], a, b)
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

    def where(self, c, x, y):
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
        out = self._out(shape, dt)
        ops = [c, self._scalar_arg(x, dt) if xs else x, self._scalar_arg(y, dt) if ys else y]
        return self._ew(dt, f"k_where_{int(xs)}{int(ys)}", out, ops)

    def clamp(self, x, lo, hi):
        dt = x.dtype
        ops = [x] + [self._scalar_arg(v, dt) for v in (lo, hi) if v is not None]
        return self._ew(dt, f"k_clamp_{int(lo is not None)}{int(hi is not None)}", self._out(x.shape, dt), ops)

    def _ew_specs(self, dt) -> list:
        """(name, expression, result dtype, operands, row-broadcast variant after it) of every elementwise kernel
        whose program dtype is ``dt``: unary and binary ops (array and scalar second operand), casts from dt, fill,
        where (result dtype dt), clamp, axpy, erf."""
        specs = []
        targets = [d for d in cg.CTYPES if d != np.float64 or self.dev.fp64]
        # min(max(x, lo), hi) as PyTorch: a NaN bound gives NaN (b != b is false for integers), lo > hi gives hi
        lo = "((a0 < a1 || a1 != a1) ? a1 : a0)"
        clamp = {"k_clamp_10": lo, "k_clamp_01": "((a0 > a1 || a1 != a1) ? a1 : a0)",
                 "k_clamp_11": f"(({lo} > a2 || a2 != a2) ? a2 : {lo})"}
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
            specs.append((f"k_cast_{cg.tag(t)}", "a0", t, [(dt, False)], False))
        specs.append(("k_fill", "a0", dt, [(dt, True)], False))
        for xs in (False, True):
            for ys in (False, True):
                specs.append((f"k_where_{int(xs)}{int(ys)}", "(a0 ? a1 : a2)", dt, [(_BOOL, False), (dt, xs), (dt, ys)],
                              False))
        for name, expr in clamp.items():
            specs.append((name, expr, dt, [(dt, False)] + [(dt, True)] * (1 + name.endswith("11")), False))
        if dt != _BOOL:  # y += alpha * x in one pass (axpy_: SGD's update, add_ with alpha)
            specs.append(("k_axpy", "(a0 + a2 * a1)", dt, [(dt, False), (dt, False), (dt, True)], False))
        if cg.is_float(dt):
            specs.append(("k_erf", "erf(a0)", dt, [(dt, False)], False))  # OpenCL C's builtin
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

    # ---- views ------------------------------------------------------------------------------
    def _view_of(self, x, shape, estrides, eoffset):
        isz = x.dtype.itemsize
        return self.dev.array(tuple(shape), x.dtype, data=x.base_data, offset=eoffset * isz,
                              strides=tuple(s * isz for s in estrides))

    def view(self, x, shape):
        shape = tuple(shape)
        _, off, oshape, st = _desc(x)
        if _is_c(oshape, st):
            return self._view_of(x, shape, c_strides(shape), off)
        nst = _nocopy_strides(oshape, st, shape)
        if nst is None:
            return None
        return self._view_of(x, shape, nst, off)

    def permute(self, x, dims):
        _, off, shape, st = _desc(x)
        return self._view_of(x, [shape[d] for d in dims], [st[d] for d in dims], off)

    def expand(self, x, shape):
        _, off, xs, st = _desc(x)
        return self._view_of(x, shape, _expand_strides(xs, st, tuple(shape)), off)

    def strides(self, x):
        return _desc(x)[3]

    def is_contiguous(self, x):
        _, _, shape, st = _desc(x)
        return _is_c(shape, st)

    def basic_index(self, x, key):
        _, off, shape, st = _desc(x)
        items = list(key) if isinstance(key, tuple) else [key]
        consumed = sum(1 for k in items if k is not None and k is not Ellipsis)
        out_shape, out_st = [], []
        d = 0
        for k in items:
            if k is Ellipsis:
                for _ in range(len(shape) - consumed):
                    out_shape.append(shape[d])
                    out_st.append(st[d])
                    d += 1
            elif k is None:
                out_shape.append(1)
                out_st.append(0)
            elif isinstance(k, slice):
                start, stop, step = k.indices(shape[d])
                out_shape.append(len(range(start, stop, step)))
                out_st.append(st[d] * step)
                off += start * st[d] if out_shape[-1] else 0
                d += 1
            else:
                i = int(k)
                if i < 0:
                    i += shape[d]
                if not 0 <= i < shape[d]:
                    raise IndexError(f"index {k} is out of bounds for dimension {d} with size {shape[d]}")
                off += i * st[d]
                d += 1
        while d < len(shape):
            out_shape.append(shape[d])
            out_st.append(st[d])
            d += 1
        return self._view_of(x, out_shape, out_st, off)

    # ---- copies -----------------------------------------------------------------------------
    def _check_writable(self, x):
        for s, st in zip(x.shape, x.strides):
            if st == 0 and s > 1:
                raise RuntimeError(_NOT_WRITABLE)

    def assign_(self, dst, src):
        self._check_writable(dst)
        if not isinstance(src, cla.Array):
            self._fill_into(dst, src)
            return
        if src.base_data is not None and src.base_data is dst.base_data:
            src = self.contiguous(src)  # overlapping memory: read everything before writing
        elif src.base_data is not None and dst.base_data is not None and \
                src.base_data.int_ptr == dst.base_data.int_ptr:
            src = self.contiguous(src)
        if src.shape != dst.shape:
            _, off, ss, st = _desc(src)
            src = self._view_of(src, dst.shape, _expand_strides(ss, st, dst.shape), off)
        self._copy_into(dst, src)

    def flip(self, x, dims):
        _, off, shape, st = _desc(x)
        st = list(st)
        for d in dims:
            if shape[d] > 0:
                off += (shape[d] - 1) * st[d]
            st[d] = -st[d]
        v = self._view_of(x, shape, st, off) if x.size else x
        return self.contiguous(v)

    def tile(self, x, reps):
        reps = tuple(reps)
        _, off, shape, st = _desc(x)
        shape = (1,) * (len(reps) - len(shape)) + tuple(shape)
        st = (0,) * (len(reps) - len(st)) + tuple(st)
        vshape, vst = [], []
        for r, s, t in zip(reps, shape, st):
            vshape += [r, s]
            vst += [0, t]
        v = self._view_of(x, vshape, vst, off)
        out = self.contiguous(v)
        return self.view(out, tuple(r * s for r, s in zip(reps, shape)))

    def cat(self, arrays, axis):
        ref = arrays[0]
        dt = ref.dtype
        total = sum(a.shape[axis] for a in arrays)
        shape = list(ref.shape)
        shape[axis] = total
        out = self._out(shape, dt)
        start = 0
        for a in arrays:
            n = a.shape[axis]
            if n:
                key = (slice(None),) * axis + (slice(start, start + n),)
                self._copy_into(self.basic_index(out, key), a if a.dtype == dt else self.cast(a, dt))
            start += n
        return out

    def eye(self, n, m, dt):
        out = self.full((n, m), 0, dt)
        if n and m:
            k = min(n, m)
            diag = self._view_of(out, (k,), (m + 1,), 0)
            self._fill_into(diag, 1)
        return out

    def arange(self, start, end, step, dt):
        """start + i * step computed on the device (in double where the device has fp64, as numpy computes
        ``arange(n, float64) * step + start``), then converted to ``dt``."""
        n = max(0, math.ceil((end - start) / step))
        dt = self._check_dtype(dt)
        out = self._out((n,), dt)
        if n:
            acc = "double" if self.dev.fp64 else "float"
            k = self.dev.kernel(("arange", dt.str, acc), "k_arange", lambda: (
                f"__kernel void k_arange(__global {cg.stype(dt)}* o, {acc} start, {acc} step, long n) {{\n"
                f" long g = get_global_id(0); if (g >= n) return;\n"
                f" {cg.store(dt, 'o', 'g', f'({acc})g * step + start')}\n}}\n"))
            self.dev.launch(k, n, [out.base_data, float(start), float(step), n])
        return out

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
        if op == "sum":
            init, comb = f"({act})0", "acc + v"
        elif op == "prod":
            init, comb = f"({act})1", "acc * v"
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
                f" for (long j = j0; j < j1; ++j) {{ {jdec} {cg.ctype(in_dt)} v = "
                f"{cg.load(in_dt, 'x', 'base + ' + joff)}; acc = {comb}; }}\n"
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
        off, kd, ks, rd, rs, axes = self._split(x, axes)
        shape = x.shape
        oshape = tuple(1 if d in axes else s for d, s in enumerate(shape)) if keepdim else \
            tuple(s for d, s in enumerate(shape) if d not in axes)
        M, K = _numel(kd), _numel(rd)
        if not rd:
            rd, rs = (1,), (0,)
        out = self._out(oshape, out_dt)
        if M == 0:
            return out
        if op == "sum" and ks == (1,) and len(rd) == 1 and K > 1 and self._colsum(x, off, rs[0], K, M, out):
            return out
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
        target = out if P == 1 else self._out((M, P), out_dt)
        k = self._red_kernel(op, x.dtype, out_dt, a, b)
        args = [target.base_data, target.offset // out_dt.itemsize, x.base_data, off, M * P, P, chunk, K]
        args += list(kd) + list(ks) + list(rd) + list(rs)
        self.dev.launch(k, M * P, args)
        if P == 1:
            return out
        k2 = self._red_kernel(op, out_dt, out_dt, 4, 1)
        self.dev.launch(k2, M, [out.base_data, 0, target.base_data, 0, M, 1, P, P, 1, 1, 1, M, 0, 0, 0, P, P, 1])
        return out

    def _colsum(self, x, off, rs, K, M, out) -> bool:
        """A sum over the leading axis of a (K, M) layout whose columns are contiguous (a bias gradient: a (batch,
        features) gradient summed over the batch) on CPUs: each work-item adds VW-wide vectors of columns down the
        rows (the generic kernel reads one column per work-item with a stride per element, scalar: 2.4 ms for a
        1024x1024 float32 on PoCL).  Rows are added in order, as the generic kernel does (the same bits), unless
        too few work-items would remain: then the rows are split into chunks whose partial sums one more pass adds.
        False (nothing launched) where this does not apply: GPUs (the generic kernel reads adjacent columns in
        adjacent work-items there, coalesced), other dtypes, fewer columns than a vector."""
        dev = self.dev
        dt = x.dtype
        if not dev.is_cpu or dt != out.dtype or dt not in (np.float32, np.float64):
            return False
        pref = dev.cldev.preferred_vector_width_float if dt == np.float32 else dev.cldev.preferred_vector_width_double
        vw = 8 if pref >= 8 else 4 if pref >= 4 else 0   # 8-wide at most: a column sum is bound by memory, not lanes
        if not vw or M < vw or max(K, M) >= 2 ** 31:
            return False
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
    {t}{vw} acc = ({t}{vw})(0);
    for (int r = r0; r < r1; ++r, xp += rs) acc += *(const __global ct_uv*)xp;
    *(__global ct_uv*)op = acc;
  }} else {{                                // the last M % {vw} columns
    for (int j = 0; j < M - j0; ++j) {{
      {t} acc = 0;
      const __global {t}* q = xp + j;
      for (int r = r0; r < r1; ++r, q += rs) acc += *q;
      op[j] = acc;
    }}
  }}
}}
""")

        def run(dst, src, so, srs, rows, ch, parts):
            ls = 1 << max(0, (w // (4 * dev.compute_units)).bit_length() - 1)   # several groups per core
            ls = min(ls, dev.ls)
            STATS["launches"] += 1
            k(dev.queue, (-(-w // ls) * ls, parts), (ls, 1), dst.base_data, dst.offset // dt.itemsize,
              src.base_data, so, srs, rows, M, ch)
        if P == 1:
            run(out, x, off, rs, K, K, 1)
            return True
        part = self._out((P, M), dt)
        run(part, x, off, rs, K, chunk, P)
        run(out, part, 0, M, P, P, 1)
        return True

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

    # ---- matmul -----------------------------------------------------------------------------
    def matmul(self, a, b):
        from .matmul import matmul
        return matmul(self, a, b)

    # ---- indexing ---------------------------------------------------------------------------
    def _index_plan(self, x, key):
        """numpy's indexing rules -> (result shape, base offset, plain strides, [(idx array, strides over
        result dims, x stride, size)])."""
        from .indexing import index_plan
        return index_plan(self, x, key)

    def index(self, x, key):
        from .indexing import take
        return take(self, x, *self._index_plan(x, key))

    def setitem_(self, x, key, value):
        from .indexing import has_array, put
        if not has_array(key):  # the view is checked: x.expand(3, 2)[0] = v writes the row they share (PyTorch)
            self.assign_(self.basic_index(x, key), value)
            return
        self._check_writable(x)
        put(self, x, *self._index_plan(x, key), value, False)

    def index_put_(self, x, key, values, accumulate):
        from .indexing import put
        put(self, x, *self._index_plan(x, key), values, bool(accumulate))

    def gather(self, x, dim, index):
        from .indexing import take
        if x.ndim == 0:
            return self.contiguous(self.expand(x, index.shape))
        _, off, xs, st = _desc(x)
        _, ioff, ishape, ist = _desc(index)
        plain = tuple(0 if d == dim else st[d] for d in range(x.ndim))
        return take(self, x, tuple(ishape), off, plain, [(index, ist, st[dim], xs[dim])])

    def index_select(self, x, dim, idx):
        from .indexing import take
        if x.ndim == 0:
            return self.contiguous(x)
        _, off, xs, st = _desc(x)
        rshape = tuple(idx.shape[0] if d == dim else s for d, s in enumerate(xs))
        plain = tuple(0 if d == dim else st[d] for d in range(x.ndim))
        istr = tuple(_desc(idx)[3][0] if d == dim else 0 for d in range(x.ndim))
        return take(self, x, rshape, off, plain, [(idx, istr, st[dim], xs[dim])])

    def scatter_add(self, x, dim, index, src):
        from .indexing import put
        out = self.contiguous(x)
        if x.ndim == 0:
            s = self._reduce_run("sum", src, None, False, src.dtype)
            self._inplace("add")(out, s)
            return out
        _, _, os_, ost = _desc(out)
        ishape, ist = index.shape, _desc(index)[3]
        plain = tuple(0 if d == dim else ost[d] for d in range(x.ndim))
        vs = self._view_of(src, ishape, _desc(src)[3], _desc(src)[1])
        put(self, out, tuple(ishape), _desc(out)[1], plain, [(index, ist, ost[dim], os_[dim])], vs, True)
        return out

    def index_add(self, x, dim, index, src):
        from .indexing import put
        out = self.contiguous(x)
        if x.ndim == 0:
            s = self._reduce_run("sum", src, None, False, src.dtype)
            self._inplace("add")(out, s)
            return out
        _, _, os_, ost = _desc(out)
        plain = tuple(0 if d == dim else ost[d] for d in range(x.ndim))
        istr = tuple(_desc(index)[3][0] if d == dim else 0 for d in range(x.ndim))
        put(self, out, tuple(src.shape), _desc(out)[1], plain, [(index, istr, ost[dim], os_[dim])], src, True)
        return out

    def nonzero(self, x):
        from .indexing import nonzero
        return nonzero(self, x)

    def check_index(self, index, size, allow_negative, message, exc=IndexError):
        from .indexing import check_index
        check_index(self, index, size, allow_negative, message, exc)

    def check_values(self, x, kind, message):
        from .indexing import check_values
        check_values(self, x, kind, message)

    # ---- random (Philox kernels in sampling.py) --------------------------------------------
    def _gen(self) -> "sampling.PhiloxState":
        """The device's default generator state (coretorch.manual_seed reseeds it)."""
        g = self.be._gens.get(self.dev.index)
        if g is None:
            g = self.be._gens[self.dev.index] = sampling.PhiloxState(self.be._seed)
        return g

    def _random(self, shape, dt, normal, a, b):
        out = self._out(shape, self._check_dtype(dt))
        self._rng_fill(self._gen(), out, "normal" if normal else "uniform", a, b)
        return out

    def rand(self, shape, dt):
        dt = np.dtype(dt)
        if dt in (np.float16, cg.BF16):  # drawn in float32: keep values that would round up to 1 below it
            u = self._random(tuple(shape), np.float32, False, 0.0, 1.0)
            below1 = float(np.nextafter(np.array(1, dt), np.array(0, dt)))
            return self.cast(self.clamp(u, None, below1), dt)
        return self._random(tuple(shape), dt, False, 0.0, 1.0)

    def randn(self, shape, dt):
        return self._random(tuple(shape), dt, True, 0.0, 1.0)

    def randint(self, low, high, shape, dt):
        return self._rng_randint(self._gen(), low, high, shape, dt)

    def uniform_(self, x, low, high):
        self._rng_fill(self._gen(), x, "uniform", low, high)

    def normal_(self, x, mean, std):
        self._rng_fill(self._gen(), x, "normal", mean, std)

    # ---- the table --------------------------------------------------------------------------
    def table(self) -> dict:
        t = {
            "from_numpy": self.from_numpy, "to_numpy": self.to_numpy, "full": self.full, "empty": self.empty,
            "arange": self.arange, "eye": self.eye, "rand": self.rand, "randn": self.randn,
            "randint": self.randint, "manual_seed": self.be.manual_seed, "uniform_": self.uniform_,
            "normal_": self.normal_, "cast": self.cast, "contiguous": self.contiguous,
            "is_contiguous": self.is_contiguous, "strides": self.strides, "view": self.view,
            "permute": self.permute, "expand": self.expand, "basic_index": self.basic_index, "flip": self.flip,
            "tile": self.tile, "cat": self.cat, "assign_": self.assign_, "setitem_": self.setitem_,
            "index": self.index, "index_put_": self.index_put_, "gather": self.gather,
            "scatter_add": self.scatter_add, "index_select": self.index_select, "index_add": self.index_add,
            "nonzero": self.nonzero, "where": self.where, "clamp": self.clamp, "matmul": self.matmul,
            "argmax": self._arg("argmax"), "argmin": self._arg("argmin"),
            "cumsum": self._scan("cumsum"), "cumprod": self._scan("cumprod"),
            "iadd": self._inplace("add"), "isub": self._inplace("sub"), "imul": self._inplace("mul"),
            "idiv": self._inplace("div"), "axpy_": self.axpy_, "erf": self.erf, "check_index": self.check_index,
            "check_values": self.check_values, "check_mark": self.dev.check_mark,
            "discard_checks": self.dev.discard_checks,
        }
        for op in ("sum", "prod", "amax", "amin", "any", "all"):
            t[op] = self._reduction(op)
        for op in _UNARY:
            t[op] = self._unary(op)
        for op in _BINARY:
            t[op] = self._binary(op)
        from .nn_kernels import NNKernels
        t.update(NNKernels(self).table())
        from . import dtypes, fused, linalg, products, sampling, shaping, sorting, special  # the families' kernels
        for fam in (sorting, special, shaping, products, linalg, sampling, dtypes, fused):
            t.update(fam.kernels(self))
        self._rng_fill, self._rng_randint = t["rng_fill_"], t["rng_randint"]  # rand, randn, ... draw through them
        return t
