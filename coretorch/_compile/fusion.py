"""Fusion: chains of elementwise launches in a recorded program become one generated kernel (device-neutral pass).

Runs over a :class:`~.capture.Recorder`'s lines after the capture and before the replay function is generated.  A
device whose kernel table has the optional ``compile_fused`` hook (the opencl backend's) is offered *groups* of its
elementwise launches (unary/binary ops, ``cast``, ``where``, ``clamp``, ``erf``, ``full``) of one output shape
whose intermediate results are temporaries: read only by later launches of the same group, never by a host check,
a write-back of persistent state, another kernel (a view of it included), the module's backward or the result.
Such an intermediate is never stored; a value of the group read elsewhere is an output of the fused kernel.

Never fused across: a mutating kernel (in-place updates, RNG), an eager segment (``optimizer.step()``), a checked
host read, or the forward/backward split of a module capture.  A device without the hook (cpu) is left alone: its
replays stay bitwise equal to eager.

The hook's contract (documented in ``coretorch/_backend.py``): ``compile_fused(programs) -> list`` with one entry
per :class:`FusedProgram`, a callable ``fn(*arrays, *scalars) -> tuple of output arrays`` or None where the device
declines; ``compile_fused.fusable(name, args, out) -> bool`` (optional) says which launches it can fuse at all.
"""
from __future__ import annotations

import ast
import re
from typing import Any

from .. import _backend
from .._backend import BINARY, UNARY
from .capture import MUTATING, Recorder, _memory_of

# the primitive elementwise kernels a group may hold (the device's ``fusable`` narrows it further)
ELEMENTWISE = frozenset(UNARY) | frozenset(BINARY) | {"cast", "where", "clamp", "erf", "full"}
# kernels that write into an operand besides their result (scratch or ``out=`` arguments): barriers too
_WRITES_OPERANDS = frozenset({"lstm_cell", "lstm_cell_backward", "gru_cell", "gru_cell_backward"})
# in-place updates of a temporary (a bias added into a matmul's result) become the out-of-place op first, so the
# update can join a group (the temporary's old value is read by nothing else)
_INPLACE = {"iadd": "add", "isub": "sub", "imul": "mul", "idiv": "div"}
# producers whose result is a fresh array (no view of another): only those may be renamed so
_FRESH = ELEMENTWISE | {"matmul"}
_VAR = re.compile(r"\ba\d+\b")
# lines that only rebind state (load an array into a variable, write a tensor's array or .grad back): no barrier
_LOAD = re.compile(r"^a\d+ = [A-Za-z_][\w\[\]'\". ]*$")
_WRITE_BACK = re.compile(r"^c\d+[\w\[\]'\". ]* = (MAKE\(a\d+, c\d+, c\d+\)|a\d+|None)$")


class FusedProgram:
    """One group handed to the device: ``nodes`` in program order, each ``(kernel name, operands, dtype)`` with an
    operand ``("in", i)`` (the group's external array ``inputs[i]``, any layout broadcastable to ``shape``),
    ``("node", j)`` (node j's value), ``("scalar", k)`` (the Python scalar passed as the call's
    ``len(inputs) + k``-th argument; ``scalars[k]`` its value at capture) or ``("const", value)`` (a dtype, a
    shape, None: fixed by the capture); ``dtype`` the node's result dtype.  ``outputs``: the nodes whose values
    the callable returns (fresh arrays of ``shape``), in this order."""

    __slots__ = ("shape", "inputs", "scalars", "nodes", "outputs")

    def __init__(self, shape: tuple, inputs: list, scalars: list, nodes: list, outputs: list):
        self.shape, self.inputs, self.scalars, self.nodes, self.outputs = shape, inputs, scalars, nodes, outputs

    def __repr__(self) -> str:
        return (f"FusedProgram(shape={self.shape}, nodes={[n[0] for n in self.nodes]}, inputs={len(self.inputs)}, "
                f"outputs={self.outputs})")


class _Value:
    """The result of an in-place update made out of place (no array exists before the replay)."""

    __slots__ = ("shape", "dtype", "size")

    def __init__(self, like: Any):
        self.shape, self.dtype, self.size = tuple(like.shape), like.dtype, like.size


def _hook(table: Any):
    return getattr(table, "compile_fused", None) if "compile_fused" in getattr(table, "names", ()) else None


def _is_scalar(v: Any) -> bool:
    return isinstance(v, (bool, int, float)) or type(v).__module__ == "numpy" and getattr(v, "ndim", 1) == 0


def fuse(rec: Recorder, keep_src: str, split: int | None = None) -> int:
    """Fuse the recorded program in place (``rec.lines``; ``rec.launches`` lowered by the launches saved); returns
    how many launches were saved.  ``keep_src``: source whose variables stay materialised (the result, a module's
    outputs and gradients); ``split``: the line where a module's backward starts (no group spans it)."""
    info = getattr(rec, "info", None)
    if not info:
        return 0
    lines = rec.lines
    tables = {id(t): t for t in _backend._tables.values()}.values()
    hooks = {id(t): _hook(t) for t in tables}
    if not any(hooks.values()):
        return 0
    names = ELEMENTWISE | set(_INPLACE)
    owner = {id(getattr(t, n)): t for t in tables if hooks[id(t)] for n in names if n in t.names}
    types = (*rec._array_types, _Value)
    keep = set(_VAR.findall(keep_src))
    defs, uses = _scan(lines, info, types)
    renames: dict[int, list] = {}

    def var_of(i: int, a: Any) -> str | None:
        """The variable that holds array ``a`` at line ``i`` (after the renames of in-place updates)."""
        for line, name in reversed(renames.get(id(a), ())):
            if line < i:
                return name
        return rec.var.get(id(a))
    _functional(rec, info, owner, keep, defs, uses, renames, var_of)
    barriers = [i for i, line in enumerate(lines) if line and _is_barrier(i, line, info)]
    if split is not None:
        barriers.append(split - 0.5)
    barriers.sort()

    cand = {}
    for i, (name, kernel, args, kwargs, out) in info.items():
        table = owner.get(id(kernel))
        if table is None or name not in ELEMENTWISE or kwargs or not isinstance(out, types) or not out.size:
            continue
        fusable = getattr(hooks[id(table)], "fusable", None)
        if fusable is not None and not fusable(name, args, out):
            continue
        cand[i] = (name, table, args, kwargs, out)
    groups: dict[int, list[int]] = {}   # group id (its first line) -> member lines
    group_of: dict[int, int] = {}
    for i in sorted(cand):
        name, table, args, kwargs, out = cand[i]
        shape = tuple(out.shape)
        join = set()
        for a in args:
            if not isinstance(a, types):
                continue
            v = var_of(i, a)
            p = defs.get(v) if v is not None else None
            g = group_of.get(p) if p is not None else None
            if g is None or g in join:
                continue
            first = cand[groups[g][0]]
            if tuple(first[4].shape) != shape or first[1] is not table:
                continue
            join.add(g)
        if not join:
            groups[i] = [i]
            group_of[i] = i
            continue
        members = sorted(m for g in join for m in groups[g]) + [i]
        if _legal(members, cand, rec, uses, barriers):
            gid = min(join)
            for g in join:
                for m in groups.pop(g):
                    group_of[m] = gid
            groups[gid] = members
            group_of[i] = gid
        else:
            groups[i] = [i]
            group_of[i] = i
    todo = [m for m in groups.values() if len(m) > 1]
    if not todo:
        return 0
    by_table: dict[int, list] = {}
    for members in todo:
        prog, tokens = _program(members, cand, rec, defs, uses, keep, lines, var_of)
        by_table.setdefault(id(cand[members[0]][1]), []).append((members, prog, tokens))
    saved = 0
    for items in by_table.values():
        table = cand[items[0][0][0]][1]
        fns = hooks[id(table)]([p for _, p, _ in items])
        for (members, prog, tokens), fn in zip(items, fns):
            if fn is None:
                continue
            outs = [rec.var[id(cand[members[j]][4])] for j in prog.outputs]
            for m in members:
                lines[m] = ""
            lines[members[-1]] = f"{', '.join(outs)}, = {rec.const(fn)}({', '.join(tokens)})"
            saved += len(members) - 1
    rec.launches -= saved
    return saved


def _scan(lines: list, info: dict, types: tuple) -> tuple[dict, dict]:
    """Where each variable is defined (launch lines only) and the lines that read it."""
    defs: dict[str, int] = {}
    uses: dict[str, list[int]] = {}
    for i, line in enumerate(lines):
        if not line:
            continue
        found = _VAR.findall(line)
        if i in info and isinstance(info[i][4], types) and found:
            defs[found[0]] = i
            found = found[1:]
        for v in dict.fromkeys(found):
            uses.setdefault(v, []).append(i)
    return defs, uses


def _functional(rec: Recorder, info: dict, owner: dict, keep: set, defs: dict, uses: dict, renames: dict,
                var_of) -> None:
    """``iadd(t, y)`` on a temporary ``t`` that a fresh-array launch made and nothing read since becomes
    ``t2 = add(t, y)``, later lines reading ``t2``: the update can then join ``t``'s consumers in a group."""
    lines = rec.lines
    for i in sorted(info):
        name, kernel, args, kwargs, out = info[i]
        table = owner.get(id(kernel))
        if name not in _INPLACE or table is None or kwargs or len(args) != 2 \
                or not isinstance(args[0], rec._array_types):
            continue
        x, y = args
        vx = var_of(i, x)
        p = defs.get(vx)
        if vx is None or vx in keep or p is None or info[p][0] not in _FRESH:
            continue
        if any(p < u < i for u in uses.get(vx, ())):
            continue  # read (or viewed) before the update: it must stay in place
        if isinstance(y, rec._array_types) and _memory_of(y) is _memory_of(x):
            continue
        v = _Value(x)
        nv = rec.new_var(v)
        tokens = _call_args(lines[i])
        lines[i] = f"{nv} = {rec.const(getattr(table, _INPLACE[name]))}({', '.join(tokens)})"
        info[i] = (_INPLACE[name], getattr(table, _INPLACE[name]), args, {}, v)
        renames.setdefault(id(x), []).append((i, nv))
        pat = re.compile(rf"\b{vx}\b")
        later = [u for u in uses.get(vx, ()) if u > i]
        for u in later:
            lines[u] = pat.sub(nv, lines[u])
        defs[nv] = i
        uses[nv] = later
        uses[vx] = [u for u in uses.get(vx, ()) if u <= i]


def _is_barrier(i: int, line: str, info: dict) -> bool:
    rec_ = info.get(i)
    if rec_ is not None:
        name = rec_[0]
        return name in MUTATING or name in _WRITES_OPERANDS or name.endswith("_")
    return not (_LOAD.match(line) or _WRITE_BACK.match(line))


def _legal(members: list, cand: dict, rec: Recorder, uses: dict, barriers: list) -> bool:
    """Whether ``members`` may run as one launch at the last member's place: no barrier inside their span, and no
    value of theirs read before that place by a line outside the group."""
    lo, hi = members[0], members[-1]
    if any(lo < b < hi for b in barriers):
        return False
    inside = set(members)
    for m in members[:-1]:
        v = rec.var.get(id(cand[m][4]))
        for u in uses.get(v, ()):
            if u < hi and u not in inside:
                return False
    return True


def _call_args(line: str) -> list[str]:
    """The argument sources of a recorded launch line ``aN = cK(arg, ...)``."""
    call = ast.parse(line).body[0].value  # type: ignore[attr-defined]
    return [ast.unparse(a) for a in call.args]


def _program(members: list, cand: dict, rec: Recorder, defs: dict, uses: dict, keep: set, lines: list, var_of):
    """The FusedProgram of a group and the argument sources of its call."""
    index = {m: j for j, m in enumerate(members)}
    inputs, in_tok, in_ids = [], [], {}
    scalars, sc_tok = [], []
    nodes, outputs = [], []
    inside = set(members)
    for j, m in enumerate(members):
        name, table, args, kwargs, out = cand[m]
        toks = _call_args(lines[m])
        ops = []
        for a, tok in zip(args, toks):
            if isinstance(a, rec._array_types):
                v = var_of(m, a)
                p = defs.get(v)
                if p in index:
                    ops.append(("node", index[p]))
                    continue
                k = in_ids.get(id(a))
                if k is None:
                    k = in_ids[id(a)] = len(inputs)
                    inputs.append(a)
                    in_tok.append(tok)
                ops.append(("in", k))
            elif _is_scalar(a):
                ops.append(("scalar", len(scalars)))
                scalars.append(a)
                sc_tok.append(tok)
            else:
                ops.append(("const", a))
        nodes.append((name, ops, out.dtype))
        v = rec.var.get(id(out))
        if v in keep or any(u not in inside for u in uses.get(v, ())):
            outputs.append(j)
    if not outputs or outputs[-1] != len(members) - 1:  # the last value is returned even if nothing reads it
        outputs.append(len(members) - 1)
    prog = FusedProgram(tuple(cand[members[0]][4].shape), inputs, scalars, nodes, outputs)
    return prog, in_tok + sc_tok
