"""The layout checks of persistent arrays: where a device's elementwise results follow their operands' layouts (numpy's;
the opencl table's, as PyTorch's TensorIterator: ``w.t() * 2`` is transposed), a replay line that writes a layout of
its own (a planned buffer: :mod:`.plan`; a fused kernel's row-major outputs: :mod:`.fusion`) has the layout eager's
result had at the capture.  The guard keys the arguments' strides but not those of the persistent tensors a replay
loads (a parameter, a closure tensor, a ``.grad``: ``w.data = other.t()`` keeps the capture, as kernels take any
layout).  So the replay checks first that each persistent array such a line depends on (through any chain of
launches) still has the capture's strides, and captures again where not: eager's ``w * 2 + x`` would have w's layout
(and ``.view(-1)`` of it raise), and a reduction over it another order of additions.  Costs a strides comparison
per such array and call."""
from __future__ import annotations

import re
from typing import Any

from .capture import LOAD_LINE

_VAR = re.compile(r"\ba\d+\b")
_ARGUMENT_ARRAY = re.compile(r"A\[\d+\]\._data")  # an argument's own array (its layout is keyed by the guard)


def check(rec: Any, lines: list[int]) -> None:
    """Add the replay's checks of the persistent arrays (ndim > 1: a 1-D result is contiguous anyway) that the
    recorded lines ``lines`` (launches writing a layout of their own) read, directly or through earlier launches."""
    if not lines:
        return
    info = getattr(rec, "info", {})
    roots: dict[str, frozenset] = {}
    strides: dict[str, tuple] = {}   # load source -> the strides of the array it loaded at the capture
    for i, line in enumerate(rec.lines):
        if not line:
            continue
        m = LOAD_LINE.match(line) if i not in info else None
        if m is not None and not _ARGUMENT_ARRAY.fullmatch(m.group(2)):  # a parameter, closure tensor, .grad ...
            arr = rec.keep[int(m.group(1)[1:])]
            if getattr(arr, "strides", None) is not None and arr.ndim > 1:
                strides.setdefault(m.group(2), tuple(arr.strides))
                roots[m.group(1)] = frozenset({m.group(2)})
            continue
        if i in info and " = " in line:  # a launch (one result or several): its results depend on its operands
            lhs, rhs = line.split(" = ", 1)
            got = [roots[v] for v in _VAR.findall(rhs) if v in roots]
            if got:
                for t in _VAR.findall(lhs):
                    roots[t] = frozenset().union(*got)
    need: set[str] = set()
    for i in lines:
        line = rec.lines[i]
        for v in _VAR.findall(line.split(" = ", 1)[-1]):  # (the launch's operands)
            need |= roots.get(v, frozenset())
    done = rec.layout_checked
    for expr in sorted(need - done):
        rec.checks.append(f"if {expr}.strides != {rec.const(strides[expr])}: raise MISMATCH(False, True)")
    rec.layout_checked = done | need
