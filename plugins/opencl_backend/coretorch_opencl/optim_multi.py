"""Multi-tensor optimizer kernels on 'opencl': ``fused_adam_`` and ``fused_sgd_`` update every parameter of a param
group in one launch (or a few), PyTorch's ``_fused_adam_`` / ``_fused_sgd_`` (multi_tensor_apply) for OpenCL 1.2.

OpenCL 1.2 has no pointer tables, so a launch takes the buffers of up to ``B`` tensors as kernel arguments
(``p0, g0, m0, v0, p1, ...``; B bounded by CL_DEVICE_MAX_PARAMETER_SIZE, at least 1024 bytes: 28 Adam tensors, 56
plain-SGD ones) and a small table (per tensor: its first work-item, its elements, the element offset of each of its
arrays; uploaded once per distinct layout and cached).  A work-item finds its tensor by a binary search of the
table, picks that tensor's pointers with a switch and runs the per-element update of the one-tensor kernel
(optim.py's ``_body`` for Adam: the same statements, so the results are those of ``adam_step_`` and of the
composite bit for bit; SGD: the operations of the foreach step, each a statement of its own as its kernels round
them).  On CPU devices a work-item updates a run of elements (float32 VW at a time as vectors, as ``adam_step_v``),
so that the search costs little per element; on GPUs one element.

Tensors are grouped by their step count (Adam's bias corrections are launch arguments); a list longer than B is
split into equal chunks (B the next power of two, so few programs are built).  A list the kernel cannot take (a
dtype other than float32/float64, mixed dtypes or shapes, a non-contiguous tensor) returns False with nothing
written: the caller runs its per-tensor path.
"""
from __future__ import annotations

import math

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from . import codegen as cg
from .vecmath import vector_width

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_F32 = _FLOATS[0]
MAX_TENSORS = 128  # tensors of one launch at most (tests lower it to exercise chunking); the device may allow fewer
_TABLES_KEPT = 64  # distinct layouts whose table buffers stay cached per device
# elements of one work-item on CPU devices (PoCL runs a work-group's work-items in a loop: the table search per
# work-item would cost more than the update of one vector); one element per work-item on GPUs
_VECTORS_PER_ITEM = 16
_ELEMENTS_PER_ITEM = 64

# the roles of one tensor's arrays: (name in the kernel body, offset name, written)
_ADAM_ROLES = (("p", "po", True), ("g", "go", False), ("m", "mo", True), ("v", "vo", True))
_AMS_ROLE = (("mx", "xo", True),)
_SGD_ROLES = (("p", "po", True), ("g", "go", False))
_BUF_ROLE = (("b", "bo", True),)

_ADAM_SCALARS = ("int maximize", "int wd_mode", "T wdc", "int lerp_back", "T w1", "T beta2", "T w2", "T bc2s",
                 "T eps", "T step_size")
_SGD_SCALARS = ("int maximize", "int wd_on", "T wd", "int first", "T momentum", "T w", "int nesterov", "T nlr")


def _sgd_body(t: str, ld, st, mom: bool) -> str:
    """One element's (or vector's) SGD update, the operations of ``_multi_tensor_sgd`` each rounded as its kernel:
    ``g.neg()``, ``g.add(p, alpha=wd)`` (one rounding, as every add with alpha), ``buf.mul_(momentum)``,
    ``_foreach_add_(bufs, grads, alpha=1 - dampening)`` (axpy_'s ``y + a * x``), ``g.add(buf, alpha=momentum)`` and
    ``p += -lr * g`` (axpy_)."""
    m = f"""
  if (first) bi = gi;
  else {{ bi = {ld('b', 'bo')}; bi = bi * momentum; bi = (bi + w * gi); }}   // axpy_'s expression
  {st('b', 'bo', 'bi')}
  if (nesterov) gi = fma(bi, momentum, gi); else gi = bi;       // g.add(buf, alpha=momentum)""" if mom else ""
    return f"""
  {t} gi = {ld('g', 'go')};
  if (maximize) gi = -gi;
  {t} pi = {ld('p', 'po')};
  {t} bi;
  if (wd_on) gi = fma(pi, wd, gi);                        // g.add(p, alpha=wd){m}
  pi = (pi + nlr * gi);                                   // axpy_'s expression
  {st('p', 'po', 'pi')}
"""


def _src(kname: str, dt, vw: int, per_item: int, nb: int, roles, scalars, body) -> str:
    """The kernel ``kname`` over ``nb`` tensors (see the module docstring); ``body(t, ld, st)`` one element's update
    on the pointers and offsets named by ``roles``.  A work-item updates ``per_item`` elements of one tensor (VW at a
    time as vectors with ``vw``, the tensor's last ``n % VW`` one by one): the table search is paid once per
    ``per_item`` elements."""
    t = cg.ctype(dt)
    nr = 2 + len(roles)
    args = ["__global const long* tab"]
    for j in range(nb):
        args += [f"__global {'' if w else 'const '}{t}* {r}{j}" for r, _, w in roles]
    args += [s.replace("T ", f"{t} ") for s in scalars] + ["int nt", "long total"]
    decl = "\n  ".join(f"__global {'' if w else 'const '}{t}* {r};" for r, _, w in roles)
    cases = "\n    ".join(f"case {j}: " + " ".join(f"{r} = {r}{j};" for r, _, _ in roles) + " break;"
                          for j in range(nb))
    offs = " ".join(f"long {o} = tab[row + {2 + i}];" for i, (_, o, _) in enumerate(roles))
    scalar = body(t, lambda a, o: f"{a}[{o} + i]", lambda a, o, v: f"{a}[{o} + i] = {v};")
    vector = "" if not vw else (
        f"  for (; i + {vw} <= e1; i += {vw}) {{"
        + body("ct_fv", lambda a, o: f"*(const __global ct_fv*)({a} + {o} + i)",
               lambda a, o, v: f"*(__global ct_fv*)({a} + {o} + i) = {v};") + "  }\n")
    return f"""__kernel void {kname}({', '.join(args)}) {{
  long id = get_global_id(0); if (id >= total) return;
  int lo = 0, hi = nt - 1;
  while (lo < hi) {{ int mid = (lo + hi + 1) >> 1; if (tab[mid * {nr}] <= id) lo = mid; else hi = mid - 1; }}
  long row = lo * {nr};
  {decl}
  switch (lo) {{
    {cases}
    default: return;
  }}
  {offs}
  long i = (id - tab[row]) * {per_item}; long e1 = min(i + {per_item}, tab[row + 1]);
{vector}  for (; i < e1; i++) {{{scalar}  }}
}}
"""


class HostArray:
    """A host (numpy) array as these kernels take a device array: its memory as a ``USE_HOST_PTR`` buffer, which a
    CPU device with host-unified memory computes on in place (hostfuse.py's ``multi_tensor``)."""

    __slots__ = ("base_data", "offset", "dtype", "shape", "size")

    def __init__(self, buf: cl.Buffer, a: np.ndarray):  # (made only for C-contiguous arrays: see contiguous below)
        self.base_data, self.offset, self.dtype, self.shape, self.size = buf, 0, a.dtype, a.shape, a.size


def lerp_weight(dt, w: float) -> tuple:
    """lerp's weight as coretorch's lerp (PyTorch's fmadd) uses it: ``(w, False)``, or ``(w - 1, True)`` (from the
    end backwards) for |w| >= 0.5."""
    return (w, False) if abs(w) < 0.5 else (w - 1, True)


def kernels(k, adam_body) -> dict:
    """``fused_adam_`` and ``fused_sgd_`` of one device; ``k`` is the device's kernel set (backend._Kernels),
    ``adam_body`` optim.py's per-element Adam update (the one-tensor kernel's statements)."""
    dev = k.dev
    vw_cpu = vector_width(dev) if dev.is_cpu else 0
    limit = int(dev.cldev.max_parameter_size)
    tables: dict = {}

    def off(a) -> int:
        return a.offset // a.dtype.itemsize

    def contiguous(a) -> bool:
        # the device's own arrays carry _ct_c (C-contiguous by construction): pyopencl's ``flags`` costs ~10 us
        return a.__class__ is HostArray or a.__dict__.get("_ct_c", False) or k.is_contiguous(a)

    def usable(lists) -> bool:
        """Device arrays of one float dtype the device has, each tensor's arrays of one shape, all contiguous (so
        none is an expanded view: each array is writable)."""
        p0 = lists[0][0]
        dt, shapes = p0.dtype, [p.shape for p in lists[0]]
        if dt not in _FLOATS or (dt == _FLOATS[1] and not dev.fp64):
            return False
        for arrays in lists:
            for a, shape in zip(arrays, shapes):
                if not isinstance(a, (cla.Array, HostArray)) or a.dtype != dt or a.shape != shape \
                        or not contiguous(a):
                    return False
        return True

    def per_launch(roles) -> int:
        """Tensors one launch can take: the parameter bytes left after the table, scalars and counts (8 each)."""
        return max(1, min(MAX_TENSORS, (limit - 8 * 16) // (8 * len(roles))))

    def table(rows: tuple) -> cl.Buffer:
        buf = tables.get(rows)
        if buf is None:
            if len(tables) >= _TABLES_KEPT:
                tables.clear()
            host = np.array(rows, dtype=np.int64)
            buf = tables[rows] = cl.Buffer(dev.ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
        return buf

    def launch(name, roles, scalars, body, key, lists, idx, values, options=""):
        """Launch the kernels for tensors ``idx`` of ``lists`` (one list per role), in chunks."""
        dt = lists[0][0].dtype
        vw = vw_cpu if dt == _F32 else 0
        per_item = _VECTORS_PER_ITEM * vw if vw else _ELEMENTS_PER_ITEM if dev.is_cpu else 1
        cap = per_launch(roles)
        chunks = -(-len(idx) // cap)
        size = -(-len(idx) // chunks)
        nb = min(cap, 1 << (size - 1).bit_length())
        kname = f"{name}{'_v' if vw else ''}"
        kern = dev.kernel(("optim_multi", name, key, dt.str, vw, per_item, nb), kname,
                          lambda: ("" if not vw else
                                   f"typedef float __attribute__((ext_vector_type({vw}), aligned(4))) ct_fv;\n")
                          + _src(kname, dt, vw, per_item, nb, roles, scalars, body), options=options)
        for c in range(0, len(idx), size):
            part = idx[c:c + size]
            rows = []
            bufs = []
            start = 0
            for i in part:
                n = lists[0][i].size
                rows += [start, n] + [off(arrays[i]) for arrays in lists]
                bufs += [arrays[i].base_data for arrays in lists]
                start += -(-n // per_item)
            if start == 0:
                continue
            bufs += bufs[:len(lists)] * (nb - len(part))  # unused slots: any buffer (never read)
            dev.launch(kern, start, [table(tuple(rows)), *bufs, *values, len(part), start])

    def fused_adam_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr, beta1, beta2, eps,
                    weight_decay, decoupled, maximize) -> bool:
        if not params:
            return True
        ams = max_exp_avg_sqs is not None
        lists = [params, grads, exp_avgs, exp_avg_sqs] + ([max_exp_avg_sqs] if ams else [])
        if any(len(x) != len(params) for x in lists) or len(steps) != len(params) or not usable(lists):
            return False
        roles = _ADAM_ROLES + (_AMS_ROLE if ams else ())
        dt = params[0].dtype
        w1, back = lerp_weight(dt, 1 - beta1)
        wd_mode = 0 if weight_decay == 0 else 1 if decoupled else 2
        wdc = (1 - lr * weight_decay) if wd_mode == 1 else weight_decay
        opts = "-cl-fp32-correctly-rounded-divide-sqrt" if dt == _F32 and dev.is_cpu else ""

        ct = cg.ctype(dt)

        def body(t, ld, st):  # (without AMSGrad, the body's max_exp_avg_sq branch is dead code on p)
            return (f"\n  const int ams = {int(ams)};" + ("" if ams else f" __global {ct}* mx = p; long xo = po;")
                    + adam_body(t, ld, st))
        by_step: dict = {}
        for i, s in enumerate(steps):
            by_step.setdefault(s, []).append(i)
        for step, idx in by_step.items():
            values = [int(bool(maximize)), wd_mode, wdc, int(back), w1, beta2, 1 - beta2,
                      math.sqrt(1 - beta2 ** step), eps, -lr / (1 - beta1 ** step)]
            launch("fused_adam", roles, _ADAM_SCALARS, body, int(ams), lists, idx, values, opts)
        return True

    def fused_sgd_(params, grads, momentum_buffers, lr, momentum, dampening, weight_decay, nesterov, maximize,
                   first) -> bool:
        if not params:
            return True
        mom = momentum_buffers is not None
        lists = [params, grads] + ([momentum_buffers] if mom else [])
        if any(len(x) != len(params) for x in lists) or not usable(lists):
            return False
        values = [int(bool(maximize)), int(weight_decay != 0), weight_decay, int(bool(first)), momentum,
                  1 - dampening, int(bool(nesterov)), -lr]

        def body(t, ld, st):
            return _sgd_body(t, ld, st, mom)
        launch("fused_sgd", _SGD_ROLES + (_BUF_ROLE if mom else ()), _SGD_SCALARS, body, int(mom), lists,
               list(range(len(params))), values)
        return True

    return {"fused_adam_": fused_adam_, "fused_sgd_": fused_sgd_}
