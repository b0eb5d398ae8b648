"""Float arguments as inputs of the replay (PyTorch's automatic dynamic floats: ``specialize_float=False``).

A compiled function's Python float arguments are keyed by value, so a step called with a new ``lam`` (mixup), a
``beta`` (a VAE's KL weight annealed every epoch) or a temperature each call captured again until
``recompile_limit`` and then ran eagerly. As PyTorch, the first capture is specialised to the value; when a call
misses only because a top-level float argument changed, the next capture passes those arguments as
:class:`~.symbolic.Sym` floats named ``A[i]`` (the replay's argument list): the Python arithmetic the step does on
them is recorded into the replay's prologue (``s0_3 = (1 - A[2])``) and recomputed at each replay with the same
float operations (bitwise eager's numbers), a comparison or truth test on one becomes a check of the prologue
(``MISMATCH(..., branch=True)``), and elementwise kernels take them as scalar operands. The key then holds such an
argument's type, not its value. A call going another way at such a check is captured that way with Syms too: as
PyTorch compiles a graph for each outcome of its guards, the masked key keeps one Sym capture for each way
(``CompiledFunction._alts``, tried in turn, each counted against ``recompile_limit``; see dynways.py). A compiled
module's forward does the same (``ModuleCapture``): its recorded backward has no ``A``, so the float arguments and
the numbers computed from them that its kernels take travel in the forward's context (replay.backward_numbers).

Soundness: ``float(lam)``, ``int(lam)``, ``round(lam)`` and their kin are refused where they happen (the Sym's
methods say so). A float that C code took out of a Sym without asking it (``math.exp(lam)``) is a plain constant of
the recording, which the replay would reuse. So the Sym capture is compared with the captures of other values before
it (under the same masked key; the first time, the specialised one it missed): line by line the two must be the same
program, their constants equal, except where the Sym capture has a Sym. A constant that differs between the two
captures came from the argument outside the recorded arithmetic (or from a branch that went another way: the two
cannot be told apart): the Sym capture then serves only its own values and is compared with the next Sym capture (of
other values: the same Sym in both passes). A capture whose Syms escaped keeps the function specialised. A Sym
reaching a kernel that is not elementwise (a size, a dropout probability, a host read) is refused the same way, as
is one in a fused group (the capture is not fused there)."""
from __future__ import annotations

import functools
import math
import re
import types
from typing import Any

import numpy as np

from .._backend import BINARY, UNARY
from .tailreads import ListRef

# kernels that take a float only as a scalar operand of an elementwise expression (never a size or a layout)
KERNELS = frozenset(UNARY) | frozenset(BINARY) | {"cast", "where", "clamp", "erf", "full", "iadd", "isub", "imul",
                                                  "idiv", "axpy_", "assign_", "fill_"}
DYN = ("float", "dynamic")  # the leaf key of a dynamic float argument
_TOKEN = re.compile(r"A\[\d+\]|s\d+_\d+|\bc\d+\b|[A-Za-z_]\w*|\d[\w.]*|\S")
_SYM = re.compile(r"s\d+_\d+")


def positions(args: tuple, kwargs: dict, count: Any) -> tuple:
    """``((leaf index, ("a", i) or ("k", name)), ...)``: the top-level float arguments and where they lie in the
    flattened leaves (``count(obj)``: the number of leaves an argument flattens to, guards.leaves')."""
    out = []
    n = 0
    for i, a in enumerate(args):
        if type(a) is float:
            out.append((n, ("a", i)))
        n += count(a)
    for k in sorted(kwargs, key=repr):  # (guards.leaves walks a dict's keys in this order)
        v = kwargs[k]
        if type(v) is float:
            out.append((n, ("k", k)))
        n += count(v)
    return tuple(out)


def masked(k: tuple, lv: list, pos: tuple, at: int = 2) -> tuple:
    """The cache key ``k`` with the leaf keys of the float arguments at ``pos`` made :data:`DYN` (``k[at]``: the
    guards' key of the leaves; a compiled module's key holds it at 1)."""
    g = k[at]
    lk = list(g[0])
    for i, _ in pos:
        if i < len(lk) and type(lv[i]) is float:
            lk[i] = DYN
    return (*k[:at], (tuple(lk), *g[1:]), *k[at + 1:])


def with_syms(args: tuple, kwargs: dict, pos: tuple, make: Any) -> tuple[tuple, dict]:
    """The call's arguments with the floats at ``pos`` replaced by ``make(value, "A[i]")``."""
    a, kw = list(args), dict(kwargs)
    for i, (kind, where) in pos:
        if kind == "a":
            a[where] = make(a[where], f"A[{i}]")
        else:
            kw[where] = make(kw[where], f"A[{i}]")
    return tuple(a), kw


def checks_type(fn: Any) -> bool:
    """Whether ``fn``'s own code (its nested functions' too) names ``type`` or ``__class__``: a Sym is a float
    subclass, so ``type(lam) in (int, float)`` would go another way in the Sym capture, which is the eager call (a
    helper doing it is not seen: a known limit)."""
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    todo = [code] if code is not None else []
    while todo:
        c = todo.pop()
        if "type" in c.co_names or "__class__" in c.co_names:
            return True
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return False


def fingerprint(rec: Any, result_src: str) -> tuple:
    """What the comparison needs of a capture, taken before the replay is built (fusion and planning rewrite it)."""
    return list(rec.checks), [ln for ln in rec.lines if ln], list(rec.consts), result_src


def same_program(plain: tuple, dyn: tuple, pos: tuple) -> bool:
    """Whether the Sym capture ``dyn`` (of the float arguments at ``pos``) records the program of the specialised
    capture ``plain``, its constants equal where it has no Sym (see the module docstring)."""
    args = {f"A[{i}]" for i, _ in pos}
    c1, l1, k1, r1 = plain
    c2, l2, k2, r2 = dyn
    seq1, seq2 = [*c1, *l1, r1], [*c2, *l2, r2]
    if len(seq1) != len(seq2):
        return False
    for a, b in zip(seq1, seq2):
        ta, tb = _TOKEN.findall(a), _TOKEN.findall(b)
        if len(ta) != len(tb):
            return False
        for j, (x, y) in enumerate(zip(ta, tb)):
            if y in args and x == y:  # (the argument itself, in both: a result returning it)
                continue
            cx, cy = _const(x), _const(y)
            if j > 1 and tb[j - 2] == "REOBJ" and cx is not None and cy is not None:  # a result object's template:
                if not _same_template(k1[cx], k2[cy]):  # (its attributes are the REOBJ's dict)
                    return False
                continue
            if y in args or _SYM.fullmatch(y):  # the Sym's place: a float constant in the specialised capture
                if x == y:  # (or the same Sym in another Sym capture: of other values, taking other branches)
                    continue
                if cx is None or type(k1[cx]) is not float:
                    return False
            elif cx is not None and cy is not None:
                if not _same(k1[cx], k2[cy]):
                    return False
            elif x != y:
                return False
    return True


def _const(token: str) -> int | None:
    """The index of the constant a token ``cN`` names, else None."""
    return int(token[1:]) if token[0] == "c" and token[1:].isdigit() else None


def _same_template(a: Any, b: Any) -> bool:
    """Whether two captures' copies of a result object (a namespace, a dataclass: ``REOBJ(template, {...})``, the
    dict giving every attribute of ``vars(obj)``) rebuild the same: the same type and attribute names."""
    return type(a) is type(b) and type(getattr(a, "__dict__", None)) is dict and vars(a).keys() == vars(b).keys()


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or math.isnan(a) and math.isnan(b)
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, types.MethodType):  # (a bound method read again per capture: ``sched.step``'s segment)
        return a.__func__ is b.__func__ and a.__self__ is b.__self__
    if isinstance(a, functools.partial):
        return _same(a.func, b.func) and _same(a.args, b.args) and _same(a.keywords, b.keywords)
    if isinstance(a, types.FunctionType):  # (one made per capture: a closure over the same code and values)
        ca, cb = a.__closure__ or (), b.__closure__ or ()
        return a.__code__ is b.__code__ and len(ca) == len(cb) and \
            all(_same(x.cell_contents, y.cell_contents) for x, y in zip(ca, cb))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, ListRef):  # (made per capture: ``hist.append(loss.item())``'s list, by where it lives)
        return a.ns is b.ns and a.name == b.name and a.cell is b.cell
    if isinstance(a, (int, str, bytes, bool, np.generic, np.dtype, type(None), slice, range)):
        try:
            return bool(a == b) or a != a and b != b
        except Exception:  # noqa: BLE001 - an exotic value: not provably the same
            return False
    return False
