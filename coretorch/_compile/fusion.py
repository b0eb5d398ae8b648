"""Fusion: chains of elementwise launches in a recorded program become one generated kernel (device-neutral pass).

Runs over a :class:`~.capture.Recorder`'s lines after the capture and before the replay function is generated.  A
device whose kernel table has the optional ``compile_fused`` hook (the opencl backend's) is offered *groups* of its
elementwise launches (unary/binary ops, ``cast``, ``where``, ``clamp``, ``erf``, ``full``) of one output shape
whose intermediate results are temporaries: read only by later launches of the same group, never by a host check,
a write-back of persistent state, another kernel (a view of it included), the module's backward or the result.
Such an intermediate is never stored; a value of the group read elsewhere is an output of the fused kernel.

Reshapes: a ``view`` of a group's value that is contiguous, of a contiguous value, and read only by later members
does not end the group (the GPT's ``y.transpose(1, 2).contiguous().view(b, t, d)``, the loss's ``.view(-1, 65)``):
an elementwise chain of contiguous operands is indexed linearly whatever its shape.  Members then have several
shapes of one size: the program's shape is the last member's; an external array read by a member of another shape
must be contiguous and of that size (read at the linear index: the program's ``flat`` inputs), and a member of
another shape reads no broadcast array.

In-place updates (``iadd``/``isub``/``imul``/``idiv``, ``axpy_``, ``assign_``: a bias added into a matmul's result,
running statistics, hand-written or recorded optimizer updates) join groups too: the fused kernel writes the array's
last new value into it (in place, at its strides) and nothing in between; a lone update stays the original launch.
Never fused across: another mutating kernel (indexed writes, RNG), an in-place update of an array a member reads
(unless that update is in the group), a read of an updated array through another view before the group ran, an
eager segment (``optimizer.step()``), a checked host read, or the forward/backward split of a module capture.  A
device without the hook (cpu) is left alone: its replays stay bitwise equal to eager.

Prologues: a group (a lone launch included) whose last value is the input of the next launch, a row kernel the
device names in ``compile_fused.prologues`` (``layer_norm``: the pre-LN block's residual add), with only loads of
state in between, is offered as ``compile_fused.prologue(name, program, args) -> callable or None``; a callable
``fn(*arrays, *scalars, *args) -> [group outputs..., kernel results...]`` computes the group inside the row kernel
(the residual sum still stored: later layers read it) in one launch instead of two.

The hook's contract (documented in ``coretorch/_backend.py``): ``compile_fused(programs) -> list`` with one entry
per :class:`FusedProgram`, a callable ``fn(*arrays, *scalars) -> list of output arrays`` or None where the device
declines; ``compile_fused.fusable(name, args, out) -> bool`` (optional) says which launches it can fuse at all.
"""
from __future__ import annotations

import ast
import re
import warnings
from typing import Any

from .. import _backend
from .._backend import BINARY, UNARY
from . import layouts as _layouts
from .capture import LOAD_LINE, MUTATING, Recorder
from .owners import _memory_of
from .symbolic import Sym

# the primitive elementwise kernels a group may hold (the device's ``fusable`` narrows it further)
ELEMENTWISE = frozenset(UNARY) | frozenset(BINARY) | {"cast", "where", "clamp", "erf", "full"}
# kernels that write into an operand besides their result (scratch or ``out=`` arguments): barriers too
_WRITES_OPERANDS = frozenset({"lstm_cell", "lstm_cell_backward", "gru_cell", "gru_cell_backward"})
# in-place updates (a bias added into a matmul's result, running statistics, optimizer state) are offered as nodes
# too: the update's new value gets its own variable, and a fused kernel writes the last one into the array
_INPLACE = {"iadd": "add", "isub": "sub", "imul": "mul", "idiv": "div", "axpy_": "axpy_", "assign_": "assign_"}
# launches whose result is a fresh array (no view of another, not persistent): an update of one read by nothing else
# afterwards need not be stored
_FRESH = ELEMENTWISE | {"matmul"}
_VAR = re.compile(r"\ba\d+\b")
# lines that only rebind state (load an array into a variable, write a tensor's array or .grad back): no barrier
_LOAD = re.compile(r"^a\d+ = [A-Za-z_][\w\[\]'\". ]*$")
_WRITE_BACK = re.compile(r"^c\d+[\w\[\]'\". ]* = ((NEWGRAD\(c\d+[\w\[\]'\". ]*, |CONSUMED\()?"
                         r"MAKE\(a\d+, c\d+, c\d+(, version=\[\d+\])?\)(?(2)(\)|, c\d+\)))|a\d+|None|True|False)$")


class FusedProgram:
    """One group handed to the device: ``nodes`` in program order, each ``(kernel name, operands, dtype)`` with an
    operand ``("in", i)`` (the group's external array ``inputs[i]``, any layout broadcastable to ``shape``),
    ``("node", j)`` (node j's value), ``("scalar", k)`` (the Python scalar passed as the call's
    ``len(inputs) + k``-th argument; ``scalars[k]`` its value at capture) or ``("const", value)`` (a dtype, a
    shape, None: fixed by the capture); ``dtype`` the node's result dtype.  A node name is an elementwise kernel's
    (an in-place update's is its out-of-place op: ``add`` for ``iadd``; ``axpy_`` (y, alpha, x) -> y + alpha x and
    ``assign_`` (dst, src) -> src as dst's dtype keep theirs).  ``outputs``: the nodes whose values the callable
    returns, in this order: fresh arrays of ``shape``, except ``targets[k] = i``: output k is written into
    ``inputs[i]`` (an updated array, at its strides) and returned as that array.  Through reshapes (see the module
    docstring): ``out_shapes[k]`` output k's shape (a fresh array of that shape, the same size as ``shape``), and
    ``flat`` the inputs read at the output's linear index (contiguous arrays of that size, of another shape)."""

    __slots__ = ("shape", "inputs", "scalars", "nodes", "outputs", "targets", "out_shapes", "flat")

    def __init__(self, shape: tuple, inputs: list, scalars: list, nodes: list, outputs: list, targets: dict,
                 out_shapes: list | None = None, flat: frozenset = frozenset()):
        self.shape, self.inputs, self.scalars, self.nodes = shape, inputs, scalars, nodes
        self.outputs, self.targets = outputs, targets
        self.out_shapes = [shape] * len(outputs) if out_shapes is None else out_shapes
        self.flat = flat

    def __repr__(self) -> str:
        return (f"FusedProgram(shape={self.shape}, nodes={[n[0] for n in self.nodes]}, inputs={len(self.inputs)}, "
                f"outputs={self.outputs}, targets={self.targets})")


class _Value:
    """The new value of an in-place update (the updated array ``array``, or a fresh one once fused)."""

    __slots__ = ("shape", "dtype", "size", "array")

    def __init__(self, like: Any):
        self.shape, self.dtype, self.size, self.array = tuple(like.shape), like.dtype, like.size, like


def _hook(table: Any):
    return getattr(table, "compile_fused", None) if "compile_fused" in getattr(table, "names", ()) else None


def _is_scalar(v: Any) -> bool:
    return isinstance(v, (bool, int, float)) or type(v).__module__ == "numpy" and getattr(v, "ndim", 1) == 0


def _mem(a: Any) -> Any:
    return _memory_of(a.array if isinstance(a, _Value) else a)


class _Pass:
    """The state of one fusion pass over a recorder's program."""

    def __init__(self, rec: Recorder, keep_src: str, split: int | None, hooks: dict, owner: dict):
        self.rec, self.lines, self.info = rec, rec.lines, rec.info
        self.hooks, self.owner = hooks, owner
        self.types = (*rec._array_types, _Value)
        self.keep = set(_VAR.findall(keep_src))
        self.defs, self.uses = _scan(self.lines, self.info, self.types)
        self.renames: dict[int, list] = {}
        self.conv: dict[int, tuple] = {}   # line -> (original line, original record, old var, new var)
        self.writes: dict[int, Any] = {}   # converted line -> memory it updates
        self.split = split
        self.views: dict[int, tuple] = {}  # view line -> its record, for the views a group reads through

    def info_of(self, m: int, cand: dict) -> tuple:
        return cand[m] if m in cand else self.views[m]

    def through(self, i: int, a: Any, cand: dict) -> tuple[int | None, list[int]]:
        """The line that made the value ``a`` (read at line ``i``), looking through contiguous views of contiguous
        group values (see the module docstring), and the view lines passed."""
        v = self.var_of(i, a)
        p = self.defs.get(v) if v is not None else None
        passed: list[int] = []
        while p is not None and p not in cand:
            rec_ = self.info.get(p)
            if rec_ is None or rec_[0] != "view" or rec_[3] or not rec_[2] or v in self.keep:
                break
            src, out = rec_[2][0], rec_[4]
            table = self.owner.get(id(rec_[1]))
            if table is None or not isinstance(src, self.types) or not isinstance(out, self.types) \
                    or not _contiguous(table, src) or not _contiguous(table, out):
                break
            mem = _memory_of(out)
            if any(w is mem for w in self.writes.values()):
                break  # updated in place through a view: the group's value would not see the update
            self.views[p] = rec_
            passed.append(p)
            v = self.var_of(p, src)
            p = self.defs.get(v) if v is not None else None
        return p, passed

    def var_of(self, i: int, a: Any) -> str | None:
        """The variable that holds array ``a`` at line ``i`` (after the renames of in-place updates)."""
        for line, name in reversed(self.renames.get(id(a), ())):
            if line < i:
                return name
        return self.rec.var.get(id(a))

    def functional(self) -> None:
        """Each in-place update of a fusing device ``iadd(x, y)`` becomes ``x2 = iadd(x, y)`` with later lines reading
        ``x2`` (provisionally: restored when it joins no group)."""
        rec, lines, info = self.rec, self.lines, self.info
        for i in sorted(info):
            name, kernel, args, kwargs, out = info[i]
            table = self.owner.get(id(kernel))
            if name not in _INPLACE or table is None or kwargs or len(args) < 2 \
                    or not isinstance(args[0], rec._array_types):
                continue
            x = args[0]
            vx = self.var_of(i, x)
            if vx is None or vx in self.keep:
                continue
            if any(isinstance(a, rec._array_types) and _memory_of(a) is _memory_of(x) for a in args[1:]):
                continue  # reads the memory it writes elsewhere: stays as it is
            if self.split is not None and i < self.split and any(u >= self.split for u in self.uses.get(vx, ())):
                continue  # an array the module's backward reads (through the saved context): stays as it is
            v = _Value(x)
            nv = rec.new_var(v)
            self.conv[i] = (lines[i], info[i], vx, nv)
            self.writes[i] = _memory_of(x)
            lines[i] = f"{nv} = {lines[i]}"
            info[i] = (_INPLACE[name], kernel, args, {}, v)
            self.renames.setdefault(id(x), []).append((i, nv))
            pat = re.compile(rf"\b{vx}\b")
            later = [u for u in self.uses.get(vx, ()) if u > i]
            for u in later:
                lines[u] = pat.sub(nv, lines[u])
            self.defs[nv] = i
            self.uses[nv] = later
            self.uses[vx] = [u for u in self.uses.get(vx, ()) if u <= i]

    def restore(self, i: int) -> None:
        """An update that joined no group: the original launch, its new variable the same array."""
        line, record, vx, nv = self.conv.pop(i)
        self.lines[i] = f"{line}; {nv} = {vx}"
        self.info[i] = record

    def legal(self, members: list, cand: dict, barriers: list) -> bool:
        """Whether ``members`` may run as one launch at the last member's place: no barrier inside their span, no
        value of theirs read before that place by a line outside the group, no update of an array a member reads
        between the member and that place (unless in the group), no read of an array the group updates through
        another variable in between."""
        lo, hi = members[0], members[-1]
        if any(lo < b < hi for b in barriers):
            return False
        inside = set(members)
        uses, rec = self.uses, self.rec
        for m in members[:-1]:
            v = rec.var.get(id(self.info_of(m, cand)[4]))
            for u in uses.get(v, ()):
                if (u < hi or m in self.views) and u not in inside:
                    return False
        if not self._shapes_ok(members, cand):
            return False
        members = [m for m in members if m not in self.views]
        outside_writes = [(w, mem) for w, mem in self.writes.items() if lo < w < hi and w not in inside]
        updated = {id(self.writes[m]): cand[m][2][0] for m in members if m in self.conv and self.writes[m] is not None}
        for m in members:
            for a in cand[m][2]:
                if isinstance(a, self.types):
                    mem = _mem(a)
                    if any(m < w and wm is mem for w, wm in outside_writes):
                        return False
                    x = updated.get(id(mem)) if mem is not None else None
                    if x is not None and a is not x:  # another view of an array the kernel writes: a race
                        return False
            if m in self.conv:
                mem = self.writes[m]
                for u in range(m + 1, hi):
                    if u not in inside and u in self.info and any(
                            isinstance(a, self.types) and _mem(a) is mem for a in _flat(self.info[u][2])):
                        return False
        return True

    def _shapes_ok(self, members: list, cand: dict) -> bool:
        """Members of several shapes (through views): one size; a member whose shape is not the last member's
        reads group values and contiguous arrays of that size only (linearly indexed)."""
        last = cand[members[-1]][4]
        shape, n = tuple(last.shape), last.size
        if all(m in self.views or tuple(cand[m][4].shape) == shape for m in members):
            return True
        index = set(members)
        for m in members:
            if m in self.views:
                continue
            name, table, args, _, out = cand[m]
            if out.size != n:
                return False
            other = tuple(out.shape) != shape
            for a in args:
                if not isinstance(a, self.types):
                    continue
                if a.size != n:
                    return False
                if other and self.through(m, a, cand)[0] not in index and not _contiguous(table, _arr(a)):
                    return False
        return True

    def _dead_temp(self, new: str | None, old: str, inside: set) -> bool:
        """Whether an updated array is a temporary (a fresh result of a launch, read only by the group) whose new
        value nothing outside the group reads: then it need not be written at all."""
        p = self.defs.get(old)
        return p is not None and self.info[p][0] in _FRESH and new not in self.keep \
            and all(u in inside for u in self.uses.get(new, ())) and all(u in inside for u in self.uses.get(old, ()))

    def program(self, members: list, cand: dict):
        """The FusedProgram of a group and the argument sources of its call."""
        rec, defs, uses, lines = self.rec, self.defs, self.uses, self.lines
        inside = set(members)
        views = [m for m in members if m in self.views]
        members = [m for m in members if m not in self.views]
        index = {m: j for j, m in enumerate(members)}
        for m in views:  # a view of a node's value is that node (linear index)
            index[m] = index[self.through(m, self.views[m][2][0], cand)[0]]
        inputs: list[Any] = []
        in_tok: list[str] = []
        in_key: dict[str, int] = {}
        scalars: list[Any] = []
        sc_tok: list[str] = []
        nodes: list[Any] = []
        outputs: list[Any] = []
        targets: dict[int, int] = {}
        shape = tuple(cand[members[-1]][4].shape)
        flat: set[int] = set()

        def slot(a, tok, other=False):
            k = in_key.get(tok)
            if k is None:
                k = in_key[tok] = len(inputs)
                inputs.append(a)
                in_tok.append(tok)
            if other:
                flat.add(k)
            return k
        last_update: dict[int, Any] = {}
        first_update: dict[int, Any] = {}
        for m in members:
            if m in self.conv:
                last_update[id(cand[m][2][0])] = m
                first_update.setdefault(id(cand[m][2][0]), m)
        for j, m in enumerate(members):
            name, table, args, kwargs, out = cand[m]
            toks = _call_args(self.conv[m][0] if m in self.conv else lines[m])
            other = tuple(out.shape) != shape
            ops = []
            for a, tok in zip(args, toks):
                if isinstance(a, rec._array_types):
                    p = defs.get(self.var_of(m, a))
                    ops.append(("node", index[p]) if p in index else ("in", slot(a, tok, other)))
                elif _is_scalar(a):
                    ops.append(("scalar", len(scalars)))
                    scalars.append(a)
                    sc_tok.append(tok)
                else:
                    ops.append(("const", a))
            nodes.append((name, ops, out.dtype))
            v = rec.var.get(id(out))
            f = first_update.get(id(args[0])) if m in self.conv else None
            if f is not None and last_update[id(args[0])] == m and defs.get(self.conv[f][2]) not in index \
                    and not self._dead_temp(v, self.conv[f][2], inside):
                # the array's last update in the group, the array made before the group: written into it
                targets[len(outputs)] = slot(args[0], self.conv[f][2], other)
                outputs.append(j)
            elif v in self.keep or any(u not in inside for u in uses.get(v, ())) or j == len(members) - 1:
                outputs.append(j)
        prog = FusedProgram(shape, inputs, scalars, nodes, outputs, targets,
                            [tuple(cand[members[j]][4].shape) for j in outputs], frozenset(flat))
        return prog, in_tok + sc_tok


def fuse(rec: Recorder, keep_src: str, split: int | None = None) -> int:
    """Fuse the recorded program in place (``rec.lines``; ``rec.launches`` lowered by the launches saved); returns
    how many launches were saved.  ``keep_src``: source whose variables stay materialised (the result, a module's
    outputs and gradients); ``split``: the line where a module's backward starts (no group spans it)."""
    info = getattr(rec, "info", None)
    if not info:
        return 0
    tables = {id(t): t for t in _backend._tables.values()}.values()
    hooks = {id(t): _hook(t) for t in tables}
    if not any(hooks.values()):
        return 0
    prologues = {n for h in hooks.values() if h for n in getattr(h, "prologues", ())}
    names = ELEMENTWISE | set(_INPLACE) | {"view"} | prologues
    owner = {id(getattr(t, n)): t for t in tables if hooks[id(t)] for n in names if n in t.names}
    ps = _Pass(rec, keep_src, split, hooks, owner)
    ps.functional()
    lines = rec.lines
    barriers: list[float] = [i for i, line in enumerate(lines)
                             if line and i not in ps.conv and _is_barrier(i, line, info)]
    if split is not None:
        barriers.append(split - 0.5)
    barriers.sort()
    cand = {}
    for i, (name, kernel, args, kwargs, out) in info.items():
        table = owner.get(id(kernel))
        if table is None or kwargs or not isinstance(out, ps.types) or not out.size \
                or not (name in ELEMENTWISE or i in ps.conv) or any(type(a) is Sym for a in args):
            continue  # (a float argument of the call, dynfloat.py: its number is the replay's, not the capture's)
        fusable = getattr(hooks[id(table)], "fusable", None)
        if fusable is not None and not fusable(name, args, out):
            continue
        cand[i] = (name, table, args, kwargs, out)
    groups: dict[int, list[int]] = {}   # group id (its first line) -> member lines
    group_of: dict[int, int] = {}
    for i in sorted(cand):
        name, table, args, kwargs, out = cand[i]
        join: dict[int, list[int]] = {}   # group -> the view lines read through to it
        for a in args:
            if not isinstance(a, ps.types):
                continue
            p, passed = ps.through(i, a, cand)
            g = group_of.get(p) if p is not None else None
            if g is None:
                continue
            first = cand[groups[g][0]]
            if first[4].size != out.size or first[1] is not table:
                continue
            join.setdefault(g, []).extend(passed)
        # the groups it reads, all of them if that is legal, else the latest ones that are
        chosen = sorted(join, key=lambda g: -groups[g][-1])
        while chosen:
            members = sorted({m for g in chosen for m in groups[g] + join[g]}) + [i]
            if ps.legal(members, cand, barriers):
                break
            chosen.pop()
        if chosen:
            gid = min(chosen)
            for g in chosen:
                for m in groups.pop(g):
                    group_of[m] = gid
            groups[gid] = members
            for m in members:
                group_of[m] = gid
        else:
            groups[i] = [i]
            group_of[i] = i
    saved = _prologues(ps, cand, groups, prologues, split) if prologues else 0
    by_table: dict[int, list] = {}
    for members in groups.values():
        if sum(m not in ps.views for m in members) > 1:
            prog, tokens = ps.program(members, cand)
            by_table.setdefault(id(cand[members[-1]][1]), []).append((members, prog, tokens))
    loads = _loads(rec)
    written: list[int] = []  # fused lines writing row-major where eager's results follow their operands' layouts
    for items in by_table.values():
        table = cand[items[0][0][-1]][1]
        follows = getattr(hooks[id(table)], "follows_operands", False)
        alias = [_alias_pairs(prog, loads) for _, prog, _ in items]  # (before the hook: it drops the arrays)
        try:
            fns = hooks[id(table)]([p for _, p, _ in items])
        except Exception as e:  # noqa: BLE001 - a device compiler failing must not fail the step: run unfused
            warnings.warn(f"coretorch.compile: fusing on '{table.device}' failed ({type(e).__name__}: {e}); the "
                          "replay runs the kernels unfused", RuntimeWarning, stacklevel=2)
            fns = [None] * len(items)
        for (members, prog, tokens), fn, pairs in zip(items, fns, alias):
            if fn is None:
                continue
            _check_apart(rec, pairs)
            nodes = [m for m in members if m not in ps.views]
            outs = [rec.var[id(cand[nodes[j]][4])] for j in prog.outputs]
            for m in members:
                lines[m] = ""
                ps.conv.pop(m, None)
            lines[members[-1]] = f"{', '.join(outs)}, = {rec.const(fn)}({', '.join(tokens)})"
            saved += len(members) - 1
            if follows:
                written.append(members[-1])
    _layouts.check(rec, written)
    for i in list(ps.conv):
        ps.restore(i)
    rec.launches -= saved
    return saved


def _loads(rec: Recorder) -> dict:
    """id(memory) -> the source of the first load of an array on that memory (an argument's, a parameter's, a
    .grad's, a buffer's, a closure tensor's)."""
    out: dict[int, str] = {}
    info = rec.info
    for i, line in enumerate(rec.lines):
        m = LOAD_LINE.match(line) if line and i not in info else None
        if m is not None:
            mem = _memory_of(rec.keep[int(m.group(1)[1:])])
            if mem is not None:
                out.setdefault(id(mem), m.group(2))
    return out


# in-place kernels: (destination, *operands); the arrays among the operands are read while the destination is written
_UPDATES = {"iadd", "isub", "imul", "idiv", "axpy_", "assign_", "setitem_"}


def _check_apart(rec: Recorder, pairs: list) -> None:
    """The replay checks first that each pair of loads (expressions of persistent arrays) is still on separate
    memory, and captures again where not."""
    for a, b in pairs:
        line = f"if MEMOF({a}) is MEMOF({b}): raise MISMATCH(False, True)"
        if line not in rec.checks:
            rec.checks.append(line)


def update_alias_checks(rec: Recorder) -> None:
    """An in-place launch (``w1.add_(w2.t())``) whose destination and an operand were loaded from persistent tensors
    on separate memory at the capture: eager's overlap check (``unsupported operation``, or an identical operand
    that is allowed) runs at the op level, which a replay skips, and such tensors are not keyed on their memory
    (``w2.data = w1.data`` after the capture).  The replay checks they are still apart, and captures again where
    not (the capture then runs the eager op: its error, or its result).  Runs before :func:`fuse` (which checks
    the pairs of the groups it fuses the same way); costs a pair of attribute reads per such pair and call."""
    info = rec.info
    if not info or not any(v[0] in _UPDATES for v in info.values()):
        return
    loads = _loads(rec)
    _check_apart(rec, [pair for name, _, args, kwargs, _ in info.values() if name in _UPDATES and args
                       for pair in _apart(loads, args[0], (*args[1:], *kwargs.values()))])
    _check_positions(rec, {id(_mem(v[2][0])) for v in info.values() if v[0] in _UPDATES and v[2]})


def position(a: Any) -> int:
    """Where array ``a`` starts in its memory: a byte offset (pyopencl) or address (numpy); ``POSOF`` of replays."""
    off = getattr(a, "offset", None)
    return off if isinstance(off, int) else a.__array_interface__["data"][0]


def _check_positions(rec: Recorder, updated: set) -> None:
    """Loads of persistent tensors and arguments on one memory an in-place launch updates (``W = B[:6]``, the
    argument ``B[6:12]``): eager's overlap check ran at the capture only, and such loads are not keyed on where in
    the memory they lie (the argument ``B[2:8]`` next: a partial overlap, eager's ``unsupported operation``).  The
    replay checks that those still on one memory keep the capture's distance, and captures again where not."""
    first: dict[int, tuple] = {}
    info = rec.info
    for i, line in enumerate(rec.lines):
        m = LOAD_LINE.match(line) if line and i not in info else None
        if m is None:
            continue
        arr = rec.keep[int(m.group(1)[1:])]
        mem = _memory_of(arr)
        if mem is None or id(mem) not in updated:
            continue
        src, a0 = first.setdefault(id(mem), (m.group(2), arr))
        if src != m.group(2):
            line = (f"if MEMOF({src}) is MEMOF({m.group(2)}) and POSOF({m.group(2)}) - POSOF({src}) != "
                    f"{position(arr) - position(a0)}: raise MISMATCH(False, True)")
            if line not in rec.checks:
                rec.checks.append(line)


def _apart(loads: dict, dst: Any, operands: Any) -> list:
    """The pairs of load sources (sorted) of ``dst`` and each of ``operands`` that were loaded from persistent
    tensors on separate memory (``loads``: :func:`_loads`); none where ``dst`` is a fresh array of the step (no
    tensor can share it)."""
    md = _mem(dst)
    ed = loads.get(id(md)) if md is not None else None
    if ed is None:
        return []
    pairs = []
    for a in operands:
        ma = _mem(a)
        ea = loads.get(id(ma)) if ma is not None else None
        if ea is not None and ea != ed:
            pairs.append((min(ed, ea), max(ed, ea)))
    return pairs


def _alias_pairs(prog: FusedProgram, loads: dict) -> list:
    """A fused kernel updating a loaded array in place was legal because no other input shared its memory at the
    capture (a read through another view would race with the writes; two updated arrays would each be written from
    the values loaded before either update).  Loads of persistent tensors are not keyed on their memory (``w2.data
    = w1.data`` after the capture): the pairs of load sources the replay checks are still apart (it captures again
    where not).  Costs a pair of attribute reads per updated persistent array and input, only for such groups."""
    return [pair for t in sorted(set(prog.targets.values()))  # (a bias added into a matmul's result: fresh)
            for pair in _apart(loads, prog.inputs[t], [a for i, a in enumerate(prog.inputs) if i != t])]


def _prologues(ps: _Pass, cand: dict, groups: dict, names: set, split: int | None) -> int:
    """Groups computed inside the row kernel that reads their last value (see the module docstring): the lines
    rewritten, the groups taken out of ``groups``; returns the launches saved."""
    rec, lines, info = ps.rec, ps.lines, ps.info
    last_of = {members[-1]: g for g, members in groups.items()}
    saved = 0
    for i in sorted(info):
        name, kernel, args, kwargs, out = info[i]
        table = ps.owner.get(id(kernel))
        if name not in names or table is None or kwargs or not args or not isinstance(args[0], ps.types):
            continue
        v = ps.var_of(i, args[0])
        p = ps.defs.get(v) if v is not None else None
        if p is None or p not in last_of or cand[p][1] is not table or (split is not None and p < split <= i):
            continue
        g = last_of[p]
        members = groups[g]
        if any(m in ps.conv or m in ps.views for m in members) \
                or any(lines[u] and not _LOAD.match(lines[u]) for u in range(p + 1, i)):
            continue
        prog, tokens = ps.program(members, cand)
        if prog.targets or prog.flat:
            continue
        try:
            fn = table.compile_fused.prologue(name, prog, args[1:])
        except Exception:  # noqa: BLE001 - a device compiler failing must not fail the step: run as it was
            fn = None
        if fn is None:
            continue
        outs = [rec.var[id(cand[members[j]][4])] for j in prog.outputs]
        target, call = lines[i].split(" = ", 1)
        rest = _call_args(call)[1:]
        for m in members:
            lines[m] = ""
        lines[i] = f"{', '.join(outs)}, {target.rstrip(',')}, = {rec.const(fn)}({', '.join(tokens + rest)})"
        del groups[g]
        saved += len(members)
    return saved


def _arr(a: Any) -> Any:
    return a.array if isinstance(a, _Value) else a


def _contiguous(table: Any, a: Any) -> bool:
    return bool(table.is_contiguous(_arr(a)))


def _flat(args) -> list:
    out = []
    for a in args:
        if isinstance(a, (tuple, list)):
            out.extend(_flat(a))
        else:
            out.append(a)
    return out


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


def _is_barrier(i: int, line: str, info: dict) -> bool:
    rec_ = info.get(i)
    if rec_ is not None:
        name = rec_[0]
        return name in MUTATING or name in _WRITES_OPERANDS or name.endswith("_")
    return not (_LOAD.match(line) or _WRITE_BACK.match(line))


def _call_args(line: str) -> list[str]:
    """The argument sources of a recorded launch line ``[aN = ]cK(arg, ...)``."""
    stmt = ast.parse(line).body[0]
    call: Any = getattr(stmt, "value", stmt)
    return [ast.unparse(a) for a in call.args]
