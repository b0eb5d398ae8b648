"""Host fusion: a compiled replay on a host-memory device (cpu) runs some recorded launches as kernels another
plugin compiled for the same memory (opt-in: ``coretorch.compile(..., mode="max-autotune")``,
``options={"host_fusion": True}`` or ``coretorch._compile.config.host_fusion = True``).

Why: numpy cannot fuse, so on cpu a GELU forward is ~20 whole-array passes and a layer norm or softmax several,
where PyTorch runs one vectorised C++ loop each.  A real compiler for the same cores is at hand when PoCL (an LLVM
based OpenCL implementation for CPUs) is installed: the opencl plugin's vector kernels run on the numpy arrays' own
memory (``USE_HOST_PTR`` buffers, no copies) and beat the numpy passes 2-2.5x on the GPT step's GELU, layer norm and
softmax (coretorch_opencl/hostfuse.py has the figures).  The default stays the cpu kernels, bitwise equal to eager
(tests rely on it); host fusion gives results within float32 rounding of eager.

The extension point (documented in ``coretorch/_backend.py``): a registered backend may have a method
``host_fusion(device_type) -> provider | None``; the core asks every backend for the device type of a recorded
launch's kernel table, only when host fusion is enabled and the table's arrays are host memory
(``KernelTable.host_memory``).  A provider has

* ``kernel(name, orig, args, kwargs, result) -> callable | None``: asked once per recorded launch of kernel
  ``name`` (``orig`` the table's kernel, ``args``/``kwargs`` the recorded operands, ``result`` what it returned): a
  callable taking the same arguments and returning a result of the same structure, shapes and dtypes (fresh arrays,
  values within float rounding), or None where it declines.  The callable is called on every replay with that
  launch's operands; for operands it cannot take it must call ``orig``.

Optionally a provider also has

* ``multi_tensor(name) -> callable | None``: a multi-tensor optimizer kernel for lists of host arrays with the
  signature and contract of the kernel table entry ``name`` (``fused_adam_``: see ``coretorch/_backend.py``; False
  with nothing written where it declines the lists), or None.  A compiled step's optimizer replay (``.optim``)
  runs its merged Adam/AdamW update through it when the device's own table has no such kernel (cpu).

The pass runs after :mod:`.fusion` and before :mod:`.plan`: a replaced launch keeps its line (the constant called is
the provider's callable) and is no planned temporary (its results are the provider's arrays).  No core module
imports a plugin: a backend without ``host_fusion`` (or one returning None: the opencl plugin without a CPU OpenCL
device sharing host memory) changes nothing.
"""
from __future__ import annotations

import re
from typing import Any

from .. import _backend
from .capture import Recorder
from .config import config

_CALL = re.compile(r"^((?:.*?) = )?(c\d+)\(")


def requested(own: bool | None) -> bool:
    """Whether a capture uses host fusion: its compile call's choice, else ``config.host_fusion``."""
    return bool(config.host_fusion if own is None else own)


def providers(device_type: str) -> list:
    """Every registered backend's host-memory kernel provider for ``device_type`` (none without host_fusion)."""
    out = []
    for be in _backend.backends().values():
        hf = getattr(be, "host_fusion", None)
        if hf is None:
            continue
        try:
            p = hf(device_type)
        except Exception:  # noqa: BLE001 - a provider failing to start must not fail the capture: nothing offered
            p = None
        if p is not None:
            out.append(p)
    return out


def apply(rec: Recorder, lo: int = 0, hi: int | None = None) -> int:
    """Replace the launches of ``rec.lines[lo:hi]`` that a provider offers a kernel for (in place, ``rec.info``
    included); returns how many."""
    info = getattr(rec, "info", None)
    if not info:
        return 0
    hi = len(rec.lines) if hi is None else hi
    tables = {id(t): t for t in _backend._tables.values() if t.host_memory}.values()
    owner = {id(getattr(t, n)): t for t in tables for n in t.names}
    provs: dict[str, list] = {}
    done = 0
    for i in sorted(info):
        if not (lo <= i < hi):
            continue
        name, kernel, args, kwargs, out = info[i]
        table = owner.get(id(kernel))
        if table is None:
            continue
        ps = provs.get(table.type)
        if ps is None:
            ps = provs[table.type] = providers(table.type)
        if not ps:
            continue
        m = _CALL.match(rec.lines[i])
        if m is None or m.group(2) != rec._const_ids.get(id(kernel)):
            continue
        for p in ps:
            fn = p.kernel(name, kernel, args, kwargs, out)
            if fn is not None:
                line = rec.lines[i]
                rec.lines[i] = line[:m.start(2)] + rec.const(fn) + line[m.end(2):]
                info[i] = (name, fn, args, kwargs, out)
                done += 1
                break
    return done


def multi_tensor(name: str, table: Any) -> Any:
    """The first provider's multi-tensor kernel ``name`` for the host-memory ``table``'s arrays, or None."""
    if not table.host_memory:
        return None
    for p in providers(table.type):
        mt = getattr(p, "multi_tensor", None)
        fn = mt(name) if mt is not None else None
        if fn is not None:
            return fn
    return None
