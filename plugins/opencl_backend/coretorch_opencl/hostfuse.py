"""Host-memory kernels for the cpu device's compiled replays (``coretorch.compile(..., mode="max-autotune")``): the
GELU, layer norm and softmax kernels of a captured cpu step run as OpenCL kernels on PoCL's CPU device, on the numpy
arrays' own memory (the core's side: coretorch/_compile/hostfuse.py).

Why: numpy cannot fuse, so a GELU forward on float32 is ~20 whole-array passes (3.9 ms on the GPT step's 16x64x512
activations on one core) where PyTorch runs one vectorised C++ loop; PoCL is a real compiler (LLVM) for the same
core, and vecmath.py's vector kernels are one pass (1.6 ms).  A numpy array is handed to the kernel as a
``cl.Buffer(ctx, READ_WRITE | USE_HOST_PTR, hostbuf=array)``: a CPU device with host-unified memory (PoCL's
``pthread``/``cpu`` driver) uses that pointer itself, at any alignment, so nothing is copied either way (checked once
when the provider is made: a kernel writes into a misaligned numpy array that is then read without a map; a driver
that copied would fail the check and the provider offers nothing).  Each call wraps its arrays (~1 us each),
enqueues, and waits for its event (~40 us in all for a tiny launch, measured on PoCL 3.0): worth it for the kernels
below, not for small elementwise launches.

Offered (``kernel``), each for C-contiguous float32 operands only (other dtypes, layouts and shapes keep the cpu
kernel: the callable checks the layout on every call and falls back to it), results within float32 rounding of the
cpu kernels' (not bitwise: another evaluation order and PoCL's vector ``exp``):

* ``gelu_cdf`` (GELU's forward keeping Phi(x)) and ``gelu_backward`` with that Phi(x);
* ``layer_norm`` / ``layer_norm_backward`` over the last k dims (vecmath's row kernels);
* ``softmax`` / ``log_softmax`` and ``softmax_backward`` / ``log_softmax_backward`` over the last dim of rows of
  ``VW <= L < 4 * work-group size`` elements (vecmath's ``softmax_v`` and the row kernel here).

Also offered (``multi_tensor``): ``fused_adam_``, optim_multi.py's multi-tensor Adam/AdamW kernel on the numpy
arrays of a cpu optimizer replay (float32/float64 C-contiguous lists; one launch per step count instead of ~12
numpy passes per parameter: 2.5 -> ~0.8 ms on the GPT step's 30 parameters, one core).

The device is the first CPU OpenCL device with host-unified memory that discovery lists (the opencl backend's own
``Device``, so kernels, programs and the lock are shared).  Its compute units are PoCL's business:
``POCL_CPU_MAX_CU_COUNT=1`` (with ``POCL_MAX_PTHREAD_COUNT=1`` for older PoCL) holds it to one core, as
``OMP_NUM_THREADS=1`` holds numpy's BLAS; ``POCL_DEVICES=basic`` (PoCL's single-threaded driver, preferred when
listed) runs each kernel in the calling thread: no hand-off to a worker, which costs ~80-170 us of CPU time per call
with the threaded driver (so there only arrays from 32k elements are taken, ``min_size``).
In a child made by ``fork()`` (which has the parent's OpenCL context and queue, not PoCL's threads) nothing is
offered and the kernels already in replays run the cpu kernels.
"""
from __future__ import annotations

import math
import os
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from . import fastmath, optim, optim_multi, vecmath
from .device import cl, discover

_F32 = np.dtype(np.float32)
# set in a child made by fork(): the OpenCL context, queue and PoCL's worker threads are the parent's (a launch there
# waits forever with the threaded driver), so in a child the provider offers nothing and its kernels, already in
# replays, run the cpu kernels (eager's results)
_forked = [False]
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: _forked.__setitem__(0, True))
_INV_SQRT_2PI = "0.3989422804014327f"


@lru_cache(maxsize=None)
def _src(vw: int) -> str:
    ld, st = "*(const __global ct_fv*)", "*(__global ct_fv*)"
    lanes = "0123456789abcdef"[:vw]

    def lanesum(v: str) -> str:
        e = f"{v}.s0"
        for q in lanes[1:]:
            e = f"({e} + {v}.s{q})"
        return e
    gelu_v = ("ct_abs_v(v) > 0.70710677f ? (v < 0 ? (v * q) * e : v * (1.0f - q * e)) : v * ct_phi_small_v(v)")
    return fastmath.float_src() + vecmath.vector_src(vw) + f"""
__kernel void hf_gelu_cdf(__global float* restrict o, __global float* restrict c, __global const float* restrict x,
                          long n) {{
  long id = get_global_id(0); long nv = n / {vw};
  if (id < nv) {{
    long i = id * {vw}; ct_fv v = {ld}(x + i), e; ct_fv q = ct_phi_parts_v(v, &e);
    {st}(o + i) = {gelu_v};
    {st}(c + i) = ct_ndtr_from_v(v, q, e);
    return;
  }}
  long i = nv * {vw} + (id - nv); if (i >= n) return;
  float v = x[i], e; float q = ct_phi_parts_f(v, &e);
  o[i] = {gelu_v.replace("_v(", "_f(")};
  c[i] = ct_ndtr_from_f(v, q, e);
}}

__kernel void hf_gelu_bwd_cdf(__global float* restrict o, __global const float* restrict g,
                              __global const float* restrict x, __global const float* restrict c, long n) {{
  long id = get_global_id(0); long nv = n / {vw};
  if (id < nv) {{   /* g (Phi(x) + x phi(x)), in the cpu kernel's order */
    long i = id * {vw}; ct_fv v = {ld}(x + i);
    {st}(o + i) = ((exp(v * v * -0.5f) * v) * {_INV_SQRT_2PI} + {ld}(c + i)) * {ld}(g + i);
    return;
  }}
  long i = nv * {vw} + (id - nv); if (i >= n) return;
  float v = x[i];
  o[i] = ((exp(v * v * -0.5f) * v) * {_INV_SQRT_2PI} + c[i]) * g[i];
}}

__kernel void hf_softmax_bwd(__global float* restrict o, __global const float* restrict g,
                             __global const float* restrict y, int rows, int L, int logsm) {{
  int r = get_global_id(0); if (r >= rows) return;
  const __global float* gr = g + (long)r * L; const __global float* yr = y + (long)r * L;
  __global float* orow = o + (long)r * L;
  const int nv = L / {vw} * {vw};
  ct_fv sv = (ct_fv)(0.0f);
  if (logsm) for (int j = 0; j < nv; j += {vw}) sv += {ld}(gr + j);
  else for (int j = 0; j < nv; j += {vw}) sv += {ld}(gr + j) * {ld}(yr + j);
  float s = {lanesum("sv")};
  for (int j = nv; j < L; ++j) s += logsm ? gr[j] : gr[j] * yr[j];
  if (logsm) {{   /* g - exp(y) sum(g) */
    for (int j = 0; j < nv; j += {vw}) {st}(orow + j) = {ld}(gr + j) - exp({ld}(yr + j)) * s;
    for (int j = nv; j < L; ++j) orow[j] = gr[j] - exp(yr[j]) * s;
  }} else {{   /* (g - sum(g y)) y */
    for (int j = 0; j < nv; j += {vw}) {st}(orow + j) = ({ld}(gr + j) - s) * {ld}(yr + j);
    for (int j = nv; j < L; ++j) orow[j] = (gr[j] - s) * yr[j];
  }}
}}
"""


def _c32(a: Any) -> bool:
    """A C-contiguous, non-empty float32 numpy array (what every kernel here reads or writes)."""
    return type(a) is np.ndarray and a.dtype == _F32 and a.flags.c_contiguous and a.size > 0


class HostKernels:
    """The provider the opencl backend gives the core's host fusion (``OpenCLBackend.host_fusion("cpu")``)."""

    def __init__(self, dev) -> None:
        self.dev = dev
        self.vw = vecmath.vector_width(dev)
        self._mf = cl.mem_flags
        self._ro = cl.mem_flags.READ_ONLY | cl.mem_flags.USE_HOST_PTR
        self._rw = cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR
        self.ls = dev.ls
        self.wg = dev.max_wg
        # elements of the first operand below which the cpu kernel stays: PoCL's threaded driver costs ~80-170 us of
        # CPU time per call (hand-off to its worker, which spins), so it wins only from ~32k elements; the
        # single-threaded driver runs the kernel in the calling thread and wins at every size measured (1280 up)
        self.min_size = 0 if _in_thread(dev) else 1 << 15
        self._multi: Callable | None = None  # optim_multi's fused_adam_ for host arrays (made on first use)

    # ---- launching on numpy memory ------------------------------------------------------------------------------
    def _k(self, name: str):
        vw = self.vw
        if name.startswith("hf_"):
            return self.dev.kernel(("hostfuse", vw), name, lambda: _src(vw), options="-cl-mad-enable")
        return self.dev.kernel(("vecmath", vw), name, lambda: vecmath._src(vw), options="-cl-mad-enable")

    def _in(self, a):
        return cl.Buffer(self.dev.ctx, self._ro, hostbuf=a)

    def _out(self, a):
        return cl.Buffer(self.dev.ctx, self._rw, hostbuf=a)

    def _run(self, launches: list) -> None:
        """Enqueue (kernel, work-items, args) in order and wait for the last (the queue is in order)."""
        dev, ls = self.dev, self.ls
        with dev.lock:
            evs = [kn(dev.queue, ((n + ls - 1) // ls * ls,), (ls,), *args) for kn, n, args in launches]
            evs[-1].wait()

    def _items(self, n: int) -> int:
        return n // self.vw + n % self.vw

    def works(self) -> bool:
        """Whether the device computes on a numpy array's own memory: GELU on misaligned arrays, read back without
        a map (a driver copying host pointers would leave the output untouched)."""
        n = 3 * self.vw + 22
        # views 4 bytes off any larger alignment (a slice of a fresh array: ``a[1:] / 4`` would be a new, aligned one)
        x, y, c = (np.empty(n + 1, np.float32)[1:] for _ in range(3))
        x[:] = np.arange(-19, n - 19, dtype=np.float32) / 4
        y[:] = c[:] = np.nan
        try:
            self._run([(self._k("hf_gelu_cdf"), self._items(x.size), [self._out(y), self._out(c), self._in(x),
                                                                       np.int64(x.size)])])
        except Exception:  # noqa: BLE001 - any driver refusal: the provider offers nothing
            return False
        phi = np.array([0.5 * math.erfc(-v / math.sqrt(2)) for v in x.astype(np.float64)])
        return bool(np.allclose(c, phi, rtol=1e-5, atol=1e-7) and np.allclose(y, x * phi, rtol=1e-5, atol=1e-7))

    # ---- the kernels ---------------------------------------------------------------------------------------------
    def gelu_cdf(self, x):
        y, c = np.empty(x.shape, _F32), np.empty(x.shape, _F32)
        self._run([(self._k("hf_gelu_cdf"), self._items(x.size),
                    [self._out(y), self._out(c), self._in(x), np.int64(x.size)])])
        return y, c

    def gelu_backward(self, g, x, cdf):
        o = np.empty(x.shape, _F32)
        self._run([(self._k("hf_gelu_bwd_cdf"), self._items(x.size),
                    [self._out(o), self._in(g), self._in(x), self._in(cdf), np.int64(x.size)])])
        return o

    def layer_norm(self, x, w, b, eps, k):
        D = math.prod(x.shape[x.ndim - k:])
        rows = x.size // D
        stat = x.shape[:x.ndim - k] + (1,) * k
        y, mean, rstd = np.empty(x.shape, _F32), np.empty(stat, _F32), np.empty(stat, _F32)
        xb = self._in(x)
        wb = self._in(w) if w is not None else xb
        bb = self._in(b) if b is not None else xb
        self._run([(self._k("layer_norm_v"), rows, [
            self._out(y), self._out(mean), self._out(rstd), xb, np.int64(0), wb, np.int64(0), bb, np.int64(0),
            np.int32(w is not None), np.int32(b is not None), np.int64(rows), np.int64(D), np.float32(eps)])])
        return y, mean, rstd

    def layer_norm_backward(self, g, x, mean, rstd, w, k, need_x, need_w, need_b):
        D = math.prod(x.shape[x.ndim - k:])
        rows = x.size // D
        gb_, xb, mb, rb = self._in(g), self._in(x), self._in(mean), self._in(rstd)
        gx = gw = gbias = None
        launches = []
        if need_x:
            gx = np.empty(x.shape, _F32)
            launches.append((self._k("layer_norm_bwd_x_v"), rows, [
                self._out(gx), gb_, np.int64(0), xb, np.int64(0), mb, np.int64(0), rb, np.int64(0),
                self._in(w) if w is not None else xb, np.int64(0), np.int32(w is not None), np.int64(rows),
                np.int64(D)]))
        if need_w or need_b:
            gw = np.empty(w.shape, _F32) if need_w else None
            gbias = np.empty(w.shape if w is not None else x.shape[x.ndim - k:], _F32) if need_b else None
            scratch = np.empty(D, _F32) if gw is None or gbias is None else None
            launches.append((self._k("layer_norm_bwd_wb_v"), vecmath.row_items(self.dev, D), [
                self._out(gw if gw is not None else scratch), self._out(gbias if gbias is not None else scratch),
                gb_, np.int64(0), xb, np.int64(0), mb, np.int64(0), rb, np.int64(0), np.int32(need_w),
                np.int32(need_b), np.int64(rows), np.int64(D)]))
        if launches:
            self._run(launches)
        return gx, gw, gbias

    def softmax_rows(self, x, log: bool):
        L = x.shape[-1]
        rows = x.size // L
        o = np.empty(x.shape, _F32)
        self._run([(self._k("softmax_v"), rows, [self._out(o), self._in(x), np.int64(0), np.int32(rows),
                                                  np.int32(L), np.int32(log)])])
        return o

    def softmax_backward_rows(self, g, y, log: bool):
        L = y.shape[-1]
        rows = y.size // L
        o = np.empty(y.shape, _F32)
        self._run([(self._k("hf_softmax_bwd"), rows, [self._out(o), self._in(g), self._in(y), np.int32(rows),
                                                       np.int32(L), np.int32(log)])])
        return o

    # ---- multi-tensor optimizer kernels ---------------------------------------------------------------------------
    def multi_tensor(self, name: str) -> Callable | None:
        """``fused_adam_`` on lists of numpy arrays (the core's contract: hostfuse.py there), or None."""
        if name != "fused_adam_" or _forked[0]:
            return None
        if self._multi is None:
            self._multi = optim_multi.kernels(_HostKernelSet(self.dev), optim._body)["fused_adam_"]
        multi, dev = self._multi, self.dev
        kinds = (_F32, np.dtype(np.float64)) if dev.fp64 else (_F32,)

        def fused_adam_(P, G, M, V, X, steps, *hp) -> bool:
            lists = [P, G, M, V] + ([X] if X is not None else [])
            if not P or P[0].dtype not in kinds or _forked[0]:
                return False
            dt = P[0].dtype
            for arrays in lists:
                for a, p in zip(arrays, P):
                    if type(a) is not np.ndarray or a.dtype != dt or a.shape != p.shape or not a.flags.c_contiguous \
                            or not a.flags.writeable or not a.size:
                        return False
            try:
                wrapped = [[optim_multi.HostArray(self._out(a), a) for a in arrays] for arrays in lists]
            except cl.Error:
                return False  # (nothing launched: the caller runs each tensor's cpu kernel)
            with dev.lock:
                done = multi(*wrapped[:4], wrapped[4] if X is not None else None, steps, *hp)
                dev.queue.finish()
            return done
        return fused_adam_

    # ---- the offer -----------------------------------------------------------------------------------------------
    def _rows_ok(self, x, dim) -> bool:
        """softmax-like over the last dim of rows the one-work-item-per-row kernels take."""
        nd = x.ndim
        return nd > 0 and isinstance(dim, int) and dim % nd == nd - 1 and self.vw <= x.shape[-1] < 4 * self.wg \
            and x.size < 2 ** 31

    def kernel(self, name: str, orig: Callable, args: tuple, kwargs: dict, result: Any) -> Callable | None:
        """A callable standing in for the recorded launch ``orig(*args, **kwargs)`` of kernel ``name`` (None where
        declined); it re-checks the layout on every call and runs ``orig`` for operands it does not take, or where
        the driver refuses (an OpenCL error: a buffer over the device's largest allocation, out of resources)."""
        if kwargs or not args or getattr(args[0], "size", 0) < self.min_size or _forked[0]:
            return None
        fn = self._offer(name, orig, args)
        if fn is None:
            return None

        def hosted(*a):
            if _forked[0]:
                return orig(*a)
            try:
                return fn(*a)
            except cl.Error:
                return orig(*a)
        hosted.__qualname__ = f"HostKernels.{name}"
        return hosted

    def _offer(self, name: str, orig: Callable, args: tuple) -> Callable | None:
        n = len(args)
        if name == "gelu_cdf" and n == 1 and _c32(args[0]):
            def gelu_cdf(x):
                return self.gelu_cdf(x) if _c32(x) else orig(x)
            return gelu_cdf
        if name == "gelu_backward" and n == 3 and all(_c32(a) for a in args) \
                and args[0].shape == args[1].shape == args[2].shape:
            def gelu_backward(g, x, cdf):
                if _c32(g) and _c32(x) and _c32(cdf) and g.shape == x.shape == cdf.shape:
                    return self.gelu_backward(g, x, cdf)
                return orig(g, x, cdf)
            return gelu_backward
        if name == "layer_norm" and n == 5 and self._ln_ok(args[0], args[1], args[2], args[4]):
            def layer_norm(x, w, b, eps, k):
                return self.layer_norm(x, w, b, eps, k) if self._ln_ok(x, w, b, k) else orig(x, w, b, eps, k)
            return layer_norm
        if name == "layer_norm_backward" and n == 9 and self._lnb_ok(*args[:6]):
            def layer_norm_backward(g, x, mean, rstd, w, k, need_x, need_w, need_b):
                if self._lnb_ok(g, x, mean, rstd, w, k):
                    return self.layer_norm_backward(g, x, mean, rstd, w, k, need_x, need_w, need_b)
                return orig(g, x, mean, rstd, w, k, need_x, need_w, need_b)
            return layer_norm_backward
        if name in ("softmax", "log_softmax") and n == 2 and _c32(args[0]) and self._rows_ok(args[0], args[1]):
            log = name == "log_softmax"

            def softmax(x, dim):
                return self.softmax_rows(x, log) if _c32(x) and self._rows_ok(x, dim) else orig(x, dim)
            return softmax
        if name in ("softmax_backward", "log_softmax_backward") and n == 3 and _c32(args[0]) and _c32(args[1]) \
                and args[0].shape == args[1].shape and self._rows_ok(args[1], args[2]):
            log = name == "log_softmax_backward"

            def softmax_backward(g, y, dim):
                if _c32(g) and _c32(y) and g.shape == y.shape and self._rows_ok(y, dim):
                    return self.softmax_backward_rows(g, y, log)
                return orig(g, y, dim)
            return softmax_backward
        return None

    def _ln_ok(self, x, w, b, k) -> bool:
        if not (_c32(x) and isinstance(k, int) and 0 < k <= x.ndim):
            return False
        D = math.prod(x.shape[x.ndim - k:])
        return D >= self.vw and all(p is None or (_c32(p) and p.size == D) for p in (w, b))

    def _lnb_ok(self, g, x, mean, rstd, w, k) -> bool:
        if not (self._ln_ok(x, w, None, k) and _c32(g) and g.shape == x.shape and _c32(mean) and _c32(rstd)):
            return False
        rows = x.size // math.prod(x.shape[x.ndim - k:])
        return mean.size == rstd.size == rows


class _HostKernelSet:
    """What optim_multi.kernels reads of a device's kernel set, for host arrays (always C-contiguous there)."""

    def __init__(self, dev) -> None:
        self.dev = dev

    @staticmethod
    def is_contiguous(a) -> bool:
        return True


def _in_thread(dev) -> bool:
    """PoCL's single-threaded driver (``POCL_DEVICES=basic``; ``cpu-minimal`` from PoCL 4): kernels run in the
    thread that waits for them."""
    return dev.name.startswith(("basic", "cpu-minimal"))


def provider(backend) -> HostKernels | None:
    """The host kernels of a CPU OpenCL device with host-unified memory (PoCL; its single-threaded driver first when
    listed), or None (no such device, or it does not compute on host pointers in place)."""
    found = [(i, d) for i, (_, _, d) in enumerate(discover()[0])
             if d.type & cl.device_type.CPU and d.host_unified_memory]
    found.sort(key=lambda e: not e[1].name.startswith(("basic", "cpu-minimal")))
    for i, _ in found[:1]:
        hk = HostKernels(backend.device(i))
        return hk if hk.works() else None
    return None
