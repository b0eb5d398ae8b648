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

import math
import os
import threading

import numpy as np

from . import codegen as cg
from . import linalg as _linalg  # the decompositions, run on the host (host_kernels)
from . import hostfuse as _hostfuse  # host-memory kernels for the cpu device's compiled replays
from . import sampling  # the random family: Philox kernels and generator states
from .common import _BINARY, _NOT_WRITABLE, _UNARY, _locked
from .device import STATS, Device, c_strides, cl, cla, discover
from .elementwise import ElementwiseKernels
from .layout import _collapse, _desc, _expand_strides, _is_c, _nocopy_strides, _numel, _pad  # noqa: F401
from .reductions import ReductionKernels
from .vecmath import index_add_rows


_ASYNC_UPLOAD = 1 << 16  # bytes: smaller host arrays are copied and uploaded without waiting for the queue


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

    def __init__(self) -> None:
        self._devices: dict[int, Device] = {}
        self._tables: dict[int, dict] = {}
        self._seed = sampling.DEFAULT_SEED  # PyTorch's default seed
        self._gens: dict[int, sampling.PhiloxState] = {}  # device index -> its default generator state
        self._init_lock = threading.RLock()  # two threads' first use of a device make one context and one table
        if hasattr(os, "register_at_fork"):  # unlocked in a forked child (see device._unlock_in_forked_child)
            os.register_at_fork(after_in_child=self._init_lock._at_fork_reinit)  # type: ignore[attr-defined]
        self._host_kernels: _hostfuse.HostKernels | None = None  # see host_fusion
        self._host_checked = False

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

    def host_fusion(self, device_type: str):
        """Host-memory kernels for ``device_type``'s compiled replays (coretorch/_compile/hostfuse.py): the 'cpu'
        device's GELU, layer norm and softmax kernels run on PoCL's CPU device, on numpy's memory (hostfuse.py here);
        None for other device types or without a CPU OpenCL device sharing host memory."""
        if device_type != "cpu" or not self.is_available():
            return None
        with self._init_lock:
            if not self._host_checked:   # made once: a self-check launches a kernel
                self._host_kernels = _hostfuse.provider(self)
                self._host_checked = True
        return self._host_kernels

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


class _Kernels(ElementwiseKernels, ReductionKernels):
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
            if host.nbytes <= _ASYNC_UPLOAD:  # a private copy: the caller may change its array at once
                self.dev.upload(out.base_data, host.copy())
            else:  # waits for the copy (and the kernels queued before it) when pyopencl's event is dropped
                cl.enqueue_copy(self.dev.queue, out.base_data, host, is_blocking=False)
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
        est = _expand_strides(xs, st, tuple(shape))
        lead = len(shape) - len(xs)
        if lead >= 0 and 1 in xs:  # (a size-1 dim left at size 1 keeps its stride, as PyTorch's expand)
            est = est[:lead] + tuple(t if n != 1 or m != 1 else s for n, m, s, t in zip(xs, shape[lead:], st,
                                                                                      est[lead:]))
        return self._view_of(x, shape, est, off)

    def strides(self, x):
        return _desc(x)[3]

    def is_contiguous(self, x):
        _, _, shape, st = _desc(x)
        return not x.size or _is_c(shape, st)  # (an empty tensor is contiguous, as PyTorch's)

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
        if dim == 0 and index_add_rows(self, out, index, src):
            return out   # rows of a float32 matrix (the embedding's gradient): in index order, no atomics
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

    def check_pending(self) -> bool:
        return self.dev.check_failed()

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
            "check_values": self.check_values, "check_mark": self.dev.check_mark, "check_pending": self.check_pending,
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
        from . import dtypes, fused, fusion, linalg, optim, products, sampling, shaping, sorting, special, vecmath
        from . import lowering, out_kernels
        for fam in (sorting, special, shaping, products, linalg, sampling, dtypes, fused, vecmath, fusion, optim,
                    out_kernels, lowering):
            t.update(fam.kernels(self))
        self._rng_fill, self._rng_randint = t["rng_fill_"], t["rng_randint"]  # rand, randn, ... draw through them
        return t
