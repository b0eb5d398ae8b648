"""The layout checks of persistent arrays.  The guard keys the arguments' strides but not those of the persistent
tensors a replay loads (a parameter, a closure tensor, a ``.grad``: after ``w.data = other.t()`` a replay runs the
capture's kernels, which take any layout).  Two things a capture decides depend on those layouts:

* what a layout query answered (:func:`queried`): ``is_contiguous`` (``w.contiguous()`` returned ``w`` itself, or a
  copy), ``strides``, and whether a ``view`` was possible (``w.view(-1)`` raises for a transposed ``w``, ``reshape``
  copies instead);
* the layout of a replay line that writes one of its own (:func:`check`) where the device's eager results follow
  their operands' layouts (numpy's; the opencl table's, as PyTorch's TensorIterator: ``w.t() * 2`` is transposed): a
  planned buffer (:mod:`.plan`) and a fused kernel's row-major outputs (:mod:`.fusion`) have the layout eager's
  result had at the capture; eager's ``w * 2 + x`` would have w's layout, and a reduction over it another order of
  additions.

So the replay checks first that each persistent array such a decision depends on (directly or through earlier
launches) still has the capture's strides, and captures again where not.  Costs a strides comparison per such array
and call."""
from __future__ import annotations

import re
from typing import Any

from . import strides as _strides

READS = frozenset({"is_contiguous", "strides", "view"})  # the layout queries a capture's answer depends on
_VAR = re.compile(r"\ba\d+\b")
# kernels whose results are row-major whatever their operands' layouts (a product, a contiguous copy): a layout query
# of such a result (``(x @ w.t()).view(b, t, h, d)``) depends on no persistent array's layout
_FRESH = frozenset({"matmul", "contiguous"})
# views: what a 1-D array's layout reaches (an elementwise result of 1-D operands, broadcast or not, is row-major)
_VIEWS = frozenset({"view", "permute", "expand", "basic_index"})
_ARGUMENT_ARRAY = re.compile(r"A\[\d+\]\._data")  # an argument's own array (its layout is keyed by the guard)


def _roots(rec: Any, min_ndim: int, state: list | None = None, through: Any = None) -> tuple[dict, dict]:
    """(variable -> the load sources of the persistent arrays of ``min_ndim`` dims or more whose layouts it depends
    on, load source -> the strides of the array it loaded at the capture); ``state``: ``[lines scanned, roots,
    strides]`` of an earlier scan of the same recording, continued from there (a capture's queries); ``through``:
    whether a kernel's results depend on its operands' layouts (None: every kernel's)."""
    from .capture import LOAD_LINE  # (capture imports this module)
    info = getattr(rec, "info", {})
    start, roots, strides = state if state is not None else (0, {}, {})
    lines = rec.lines
    for i in range(start, len(lines)):
        line = lines[i]
        if not line:
            continue
        m = LOAD_LINE.match(line) if i not in info else None
        if m is not None and not _ARGUMENT_ARRAY.fullmatch(m.group(2)):  # a parameter, closure tensor, .grad ...
            arr = rec.keep[int(m.group(1)[1:])]
            if getattr(arr, "strides", None) is not None and arr.ndim >= min_ndim:
                strides.setdefault(m.group(2), tuple(arr.strides))
                roots[m.group(1)] = frozenset({m.group(2)})
            continue
        if i in info and " = " in line and (through is None or through(info[i][0])):  # (a launch)
            lhs, rhs = line.split(" = ", 1)
            got = [roots[v] for v in _VAR.findall(rhs) if v in roots]
            if got:
                for t in _VAR.findall(lhs):
                    roots[t] = frozenset().union(*got)
    if state is not None:
        state[0] = len(lines)
    return roots, strides


def _add(rec: Any, need: set, strides: dict) -> None:
    done = rec.layout_checked
    for expr in sorted(need - done):
        rec.checks.append(f"if {expr}.strides != {rec.const(strides[expr])}: raise MISMATCH(False, True)")
    rec.layout_checked = done | need


def check(rec: Any, lines: list[int]) -> None:
    """Check the persistent arrays (ndim > 1: a 1-D result is contiguous anyway) that the recorded lines ``lines``
    (launches writing a layout of their own) read."""
    if not lines:
        return
    roots, strides = _roots(rec, 2)
    need: set[str] = set()
    for i in lines:
        for v in _VAR.findall(rec.lines[i].split(" = ", 1)[-1]):  # (the launch's operands)
            need |= roots.get(v, frozenset())
    _add(rec, need, strides)


def queried(rec: Any, name: str, arr: Any) -> None:
    """A capture's layout query ``name`` (``strides``, ``is_contiguous``, ``view``) of array ``arr``: check the
    persistent arrays its answer depends on."""
    if name == "strides" and 1 in arr.shape:  # (an argument's size-1 dims' strides read as numbers)
        _strides.exact(rec)
    v = rec.var.get(id(arr))
    if v is not None:
        states = getattr(rec, "layout_scan", None)  # (the lines scanned by the capture's earlier queries)
        if states is None:
            states = rec.layout_scan = ([0, {}, {}], [0, {}, {}])
        roots, strides = _roots(rec, 2, states[0], lambda n: n not in _FRESH)
        roots1, strides1 = _roots(rec, 0, states[1], _VIEWS.__contains__)
        _add(rec, set(roots.get(v, ())) | set(roots1.get(v, ())), {**strides1, **strides})
        return
    src = rec.owner.get(id(arr))
    if src is None:
        rec.refresh_owners()
        src = rec.owner.get(id(arr))
    if src is not None and not _ARGUMENT_ARRAY.fullmatch(src) and getattr(arr, "strides", None) is not None:
        _add(rec, {src}, {src: tuple(arr.strides)})
