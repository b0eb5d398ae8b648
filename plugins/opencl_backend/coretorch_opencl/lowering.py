"""The ``compile_lower`` hook of the opencl kernel table: a compiled replay's kernel-table calls lowered to the
launches they make (coretorch/_compile/lower.py drives it).

A table call spends ~20-50 us of Python on a launch that PoCL enqueues in ~3 (plans, allocation, argument
conversion, pyopencl's generic invoker): most of an MLP step's replay on PoCL was host time.  The core runs a
replay twice while this hook *observes* each candidate line (its allocations through ``Device.alloc`` and its kernel
launches, in the calling thread); a line whose launches read and write only its own input arrays' buffers and the
buffers it allocated, with the same kernels, sizes and scalar arguments both times, becomes straight code: allocate,
set the buffer arguments of a per-launch clone of each kernel (its scalars set once), enqueue it, wrap the results.
Anything else the line does to the device (a host copy, a fill, a device-side check, a buffer the line did not get
as an input, a scalar that changed) keeps the table call.  The lowered code first compares its inputs' layouts
(shape, strides, offset, dtype) with the observed ones and runs the table call on a difference, so it is never
wrong for arrays the table call would have treated differently; the module settings plans depend on
(``matmul._tunables()``, ``is_cpu``, ``torch.use_deterministic_algorithms``) are compared once per replay
(``state``).  The same kernels, programs and
arguments run in the same order: the results are bitwise the table calls'.
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .device import STATS, cl, cla

_SCALARS = (int, float, bool, np.integer, np.floating, np.bool_)
_OPAQUE_DEVICE = ("upload", "read", "error_buffer", "check_code", "check_ticket", "discard_checks", "synchronize",
                  "_report")
_OPAQUE_CL = ("enqueue_copy", "enqueue_fill_buffer", "enqueue_nd_range_kernel", "enqueue_barrier",
              "enqueue_marker")
_ENQUEUE = cl.enqueue_nd_range_kernel if cl is not None else None  # bound before any observer patches it
_patch_lock = threading.Lock()
_active: dict[int, list] = {}  # thread id -> observers of that thread (the class-level spy dispatches to them)
_orig: dict[str, Any] = {}


class _Line:
    __slots__ = ("events", "opaque")

    def __init__(self) -> None:
        self.events: list = []   # ("alloc", nbytes, buffer) | ("launch", kernel, gs, ls, args)
        self.opaque = False


def _spy_call(self, queue, gs, ls, *args, **kwargs):
    obs = _active.get(threading.get_ident())
    if obs:
        for o in obs:
            if o.line is None:
                continue
            if kwargs or queue is not o.dev.queue:  # (a launch on another device's queue: that line stays a call)
                o.line.opaque = True
            else:
                o.line.events.append(("launch", self, gs, ls, args))
    return _orig["call"](self, queue, gs, ls, *args, **kwargs)


def _spy_cl(name: str):
    fn = _orig[name]

    def spy(*args, **kwargs):
        for o in _active.get(threading.get_ident(), ()):
            if o.line is not None:
                o.line.opaque = True
        return fn(*args, **kwargs)
    return spy


def _dev_spy(dev, fn, alloc: bool):
    """A device method's spy: records an allocation (``alloc``) or marks the line opaque, for the calling thread's
    observers of ``dev`` (installed once per device, whichever thread observes: see Observer)."""
    def spy(*args, **kwargs):
        out = fn(*args, **kwargs)
        for o in _active.get(threading.get_ident(), ()):
            if o.dev is dev and o.line is not None:
                if alloc:
                    o.line.events.append(("alloc", args[0] if args else kwargs["nbytes"], out))
                else:
                    o.line.opaque = True
        return out
    return spy


_dev_saved: dict[int, tuple] = {}  # id(device) -> (observers of it active, its own instance attributes replaced)


class Observer:
    """The device events of each observed line of one replay, in the calling thread.  The spies (pyopencl's and the
    device's) are installed by the first observer and removed by the last, and report to the observers of the
    thread that calls them: observers of two threads at once each see their own lines (one observer's exit used to
    remove the other's device spies, or leave its own installed for good)."""

    def __init__(self, dev) -> None:
        self.dev = dev
        self.line: _Line | None = None

    def __enter__(self) -> "Observer":
        dev = self.dev
        with _patch_lock:
            if not _orig:
                _orig["call"] = cl.Kernel.__call__
                setattr(cl.Kernel, "__call__", _spy_call)  # (every launch passes here while observing)
                for n in _OPAQUE_CL:
                    _orig[n] = getattr(cl, n)
                    setattr(cl, n, _spy_cl(n))
            count, saved = _dev_saved.get(id(dev), (0, None))
            if not count:
                names = ("alloc",) + _OPAQUE_DEVICE
                saved = {n: dev.__dict__[n] for n in names if n in dev.__dict__}
                for n in names:
                    setattr(dev, n, _dev_spy(dev, getattr(dev, n), n == "alloc"))
            _dev_saved[id(dev)] = (count + 1, saved)
            _active.setdefault(threading.get_ident(), []).append(self)
        return self

    def __exit__(self, *exc) -> None:
        dev = self.dev
        self.line = None
        with _patch_lock:
            obs = _active.get(threading.get_ident(), [])
            if self in obs:
                obs.remove(self)
            if not obs:
                _active.pop(threading.get_ident(), None)
            count, saved = _dev_saved.pop(id(dev))
            if count > 1:
                _dev_saved[id(dev)] = (count - 1, saved)
            else:
                for n in ("alloc",) + _OPAQUE_DEVICE:
                    dev.__dict__.pop(n, None)
                dev.__dict__.update(saved)
            if not _active and _orig:
                setattr(cl.Kernel, "__call__", _orig.pop("call"))
                for n in _OPAQUE_CL:
                    setattr(cl, n, _orig.pop(n))

    def begin(self) -> None:
        self.line = _Line()

    def end(self) -> _Line | None:
        line, self.line = self.line, None
        return line


def _layout(a) -> tuple:
    return (a.shape, a.strides, a.offset, a.dtype)


def _same_scalar(a, b) -> bool:
    if type(a) is not type(b):
        return False
    return bool(a == b) or (a != a and b != b)


def _buffer_source(buf, allocs: list, ins: list) -> tuple | None:
    """("alloc", j) / ("in", i) for a kernel's buffer argument, None when it is neither (hidden state)."""
    for j, b in enumerate(allocs):
        if b is buf:
            return ("alloc", j)
    for i, a in enumerate(ins):
        if a.base_data is buf:
            return ("in", i)
    return None


def _describe(line: _Line | None, ins: list, outs: list) -> tuple | None:
    """One observed run of a line as a comparable description, None where it cannot be lowered."""
    if line is None or line.opaque:
        return None
    allocs = [e[2] for e in line.events if e[0] == "alloc"]
    ev: list = []
    for e in line.events:
        if e[0] == "alloc":
            ev.append(("alloc", e[1]))
            continue
        _, k, gs, ls, args = e
        desc = []
        for v in args:
            if v is None or isinstance(v, _SCALARS):
                desc.append(("s", v))
            elif isinstance(v, cl.MemoryObjectHolder):
                src = _buffer_source(v, allocs, ins)
                if src is None:
                    return None
                desc.append(src)
            else:
                return None
        ev.append(("launch", k, tuple(gs), None if ls is None else tuple(ls), tuple(desc)))
    if len({id(o) for o in outs}) != len(outs):  # one array returned twice: one object, not two
        return None
    od: list[tuple] = []
    for o in outs:
        same = next((i for i, a in enumerate(ins) if a is o), None)
        if same is not None:
            od.append(("same", same))
            continue
        if not isinstance(o, cla.Array) or o.base_data is None:
            return None
        src = _buffer_source(o.base_data, allocs, ins)
        if src is None or set(o.__dict__) - _ARRAY_KEYS:
            return None
        od.append(("new", src, _layout(o), "_ct_c" in o.__dict__))
    return tuple(ev), tuple(od)


_ARRAY_KEYS = frozenset({"queue", "context", "shape", "dtype", "strides", "events", "nbytes", "size", "allocator",
                         "base_data", "offset", "_flags", "_ct_c"})


def _equal(d1: tuple, d2: tuple) -> bool:
    (ev1, od1), (ev2, od2) = d1, d2
    if len(ev1) != len(ev2) or od1 != od2:
        return False
    for a, b in zip(ev1, ev2):
        if a[0] != b[0]:
            return False
        if a[0] == "alloc":
            if a != b:
                return False
            continue
        if a[1] is not b[1] or a[2] != b[2] or a[3] != b[3] or len(a[4]) != len(b[4]):
            return False
        for x, y in zip(a[4], b[4]):
            if x[0] != y[0] or (x[0] == "s" and not _same_scalar(x[1], y[1])) or (x[0] != "s" and x != y):
                return False
    return True


def kernels(k) -> dict:
    """``{"compile_lower": hook}`` for the kernel mixin ``k`` of one device."""
    dev = k.dev
    from . import indexing, matmul

    class CompileLower:
        """The hook object: ``observer()``, ``summary(...)``, ``state()`` and ``lower(...)`` (see
        coretorch/_backend.py)."""

        @staticmethod
        def observer() -> Observer:
            return Observer(dev)

        @staticmethod
        def state() -> tuple:
            # (deterministic algorithms: the accumulating index writes' mode, atomic or in index order, see
            # indexing._atomic_mode)
            return (dev.is_cpu, matmul._tunables(), indexing.deterministic())

        @staticmethod
        def summary(line: _Line | None, in_vals: tuple, out_vals: tuple) -> tuple | None:
            """One observed run of a line as a comparable description holding no array or buffer (kept until the
            next observed run), or None where the line cannot be lowered."""
            if not all(isinstance(a, cla.Array) and a.queue is dev.queue for a in in_vals):
                return None
            d = _describe(line, list(in_vals), list(out_vals))
            if d is None:
                return None
            # inputs that share a buffer: the lowered code takes a buffer argument from the first of them and
            # checks that they still share it
            alias = tuple((j, i) for i, a in enumerate(in_vals) for j in range(i)
                          if in_vals[j].base_data is a.base_data and in_vals[j] is not a)
            return d, tuple(_layout(a) for a in in_vals), alias

        @staticmethod
        def lower(runs: list, ins: list[str], outs: list[str], prefix: str) -> tuple[list[str], dict] | None:
            """Straight code for one line from its observed runs' summaries (two or more), or None.  ``ins``/
            ``outs`` are the line's variable names, ``prefix`` names the constants it may add; the code assigns
            every output variable and ends with ``else:`` for the caller's table call (the code's first line is an
            ``if`` on the inputs' layouts)."""
            if any(r is None for r in runs):
                return None
            first, lay0, alias0 = runs[0]
            for d, lay, alias in runs[1:]:
                if lay != lay0 or alias != alias0 or not _equal(first, d):
                    return None
            ev, od = first
            if not any(e[0] == "launch" for e in ev) and not any(o[0] == "new" for o in od):
                return None
            consts: dict[str, Any] = {}
            c = {"G": f"{prefix}G", "ALLOC": f"{prefix}ALLOC", "ENQ": f"{prefix}ENQ", "Q": f"{prefix}Q",
                 "LOCK": f"{prefix}LOCK", "ARR": f"{prefix}ARR", "ST": f"{prefix}ST"}
            consts[c["G"]] = tuple(x for lay in lay0 for x in lay)  # as the guard's flat tuple
            # the class's methods (an observer of another thread may have patched the instance meanwhile)
            consts[c["ALLOC"]], consts[c["ENQ"]], consts[c["Q"]] = type(dev).alloc.__get__(dev), _ENQUEUE, dev.queue
            consts[c["LOCK"]], consts[c["ARR"]], consts[c["ST"]] = dev.lock, _make_array, STATS
            alias = [f"{ins[j]}.base_data is {ins[i]}.base_data" for j, i in alias0]
            guard = "(" + "".join(f"{v}.shape, {v}.strides, {v}.offset, {v}.dtype, " for v in ins) + f") == {c['G']}"
            code = [f"if {' and '.join([guard] + alias)}:"]
            body: list[str] = []
            nalloc = 0
            bufs: list[str] = []
            launches = 0
            for e in ev:
                if e[0] == "alloc":
                    name = f"{prefix}b{nalloc}"
                    bufs.append(name)
                    body.append(f"{name} = {c['ALLOC']}({e[1]})")
                    nalloc += 1
                    continue
                _, kern, gs, ls, args = e
                kc = _clone(dev, kern, args)
                if kc is None:
                    return None
                kn = f"{prefix}k{launches}"
                consts[kn] = kc
                for pos, a in enumerate(args):
                    if a[0] == "alloc":
                        body.append(f"{kn}.set_arg({pos}, {bufs[a[1]]})")
                    elif a[0] == "in":
                        body.append(f"{kn}.set_arg({pos}, {ins[a[1]]}.base_data)")
                consts[f"{kn}g"], consts[f"{kn}l"] = gs, ls
                body.append(f"{c['ENQ']}({c['Q']}, {kn}, {kn}g, {kn}l)")
                launches += 1
            for o, name in zip(od, outs):
                if o[0] == "same":
                    body.append(f"{name} = {ins[o[1]]}")
                    continue
                _, src, (shape, strides, offset, dtype), contiguous = o
                buf = bufs[src[1]] if src[0] == "alloc" else f"{ins[src[1]]}.base_data"
                ln = f"{prefix}o{name}"
                consts[ln] = _template(dev, shape, dtype, strides, contiguous)
                body.append(f"{name} = {c['ARR']}({buf}, {offset}, {ln})")
            if launches:
                body.append(f"{c['ST']}['launches'] += {launches}")
            code.append(f"    with {c['LOCK']}:")
            code += [f"        {b}" for b in body]
            if bufs:
                code.append(f"    del {', '.join(bufs)}")
            code.append("else:")
            return code, consts

    return {"compile_lower": CompileLower()}


def _template(dev, shape: tuple, dtype, strides: tuple, contiguous: bool) -> dict:
    """The attributes of a result array of this layout but its buffer, offset and events: what ``Device.array``
    would set (made by it once, here), copied by ``_make_array`` (0.7 us against 2.6 for the constructor)."""
    a = dev.array(shape, dtype, data=_NO_BUFFER, strides=None if contiguous else strides)
    t = {k: v for k, v in a.__dict__.items() if k not in ("base_data", "offset", "events")}
    t["_flags"] = None  # (computed on first use, per array)
    return t


_NO_BUFFER = object()  # a placeholder buffer for _template's array (never launched on)
_new = object.__new__


def _make_array(buf, offset: int, template: dict, _A=cla.Array if cla is not None else None):
    """A result array on ``buf`` at ``offset`` with a template's layout (a fresh events list)."""
    o = _new(_A)
    d = o.__dict__
    d.update(template)
    d["base_data"] = buf
    d["offset"] = offset
    d["events"] = []
    return o


def _clone(dev, kern, args: tuple) -> Any:
    """A kernel object of ``kern``'s program and name for one launch site, its scalar arguments set (buffers are
    set by the lowered code before each enqueue: NULL until then, so no buffer is held), or None for a kernel the
    device did not build."""
    info = dev.kernel_info(kern)
    if info is None:
        return None
    prog, kname, dtypes = info
    if len(dtypes) != len(args):
        return None
    kc = cl.Kernel(prog, kname)
    with np.errstate(over="ignore", invalid="ignore"):  # (x * 1e300 of a float32 x: inf, as eager, without a word)
        for pos, (a, dt) in enumerate(zip(args, dtypes)):
            # each scalar as its C type once (no typed invoker: pyopencl generates and compiles one per kernel object)
            kc.set_arg(pos, None if a[0] != "s" or dt is None else dt(a[1]))
    return kc
