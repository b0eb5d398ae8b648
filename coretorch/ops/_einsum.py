"""einsum: PyTorch's notation (ellipsis, repeated labels, implicit output, size-1 broadcasting) lowered to
views, sums and batched matmul.

The equation is parsed once per (equation, operand ranks); the contraction order comes from
``opt_einsum.contract_path`` (3+ operands, as PyTorch does), cached per (labels, shapes, strategy). Each pairwise
contraction is a permute (a view) + reshape + one ``matmul`` (or a broadcast ``mul`` when nothing is summed), so
both devices use their fast matmul and autograd comes from those ops.
"""
from __future__ import annotations

import sys
from typing import Any

try:
    import opt_einsum  # the extra coretorch[opt-einsum], as PyTorch's: without it, the written order (PyTorch's too)
except ImportError:
    opt_einsum = None

from .. import dtypes as _dt
from ..tensor import Tensor
from . import indexing as _indexing, linalg as _linalg, pointwise as _pointwise
from . import reduction as _reduction, shape as _shape

_ELL = -1           # the ellipsis marker while parsing
_ELL_BASE = 1000    # ellipsis dim j (of ell_num_dim, right-aligned) gets label _ELL_BASE + j
_parse_cache: dict = {}
_path_cache: dict = {}
_plan_cache: dict = {}


def _label_index(c: str) -> int:
    """A-Z -> 0..25, a-z -> 26..51: PyTorch's label order (the implicit output is sorted by it)."""
    return ord(c) - 65 if c <= "Z" else ord(c) - 97 + 26


def _label_char(s: int) -> str:
    return chr(s + 65) if s < 26 else chr(s - 26 + 97)


def _is_label(c: str) -> bool:
    return ("a" <= c <= "z") or ("A" <= c <= "Z")


def _parse(equation: str, ndims: tuple) -> tuple:
    """(labels per operand with ellipsis dims expanded, output labels); PyTorch's checks and messages."""
    num_ops = len(ndims)
    arrow = equation.find("->")
    lhs = equation if arrow < 0 else equation[:arrow]
    op_labels: list = [[] for _ in range(num_ops)]
    cur, i, ell_seen = 0, 0, False
    while i < len(lhs):
        c = lhs[i]
        if c == " ":
            pass
        elif c == ".":
            if ell_seen:
                raise RuntimeError(f"einsum(): found '.' for operand {cur} for which an ellipsis was already found")
            if not (i + 2 < len(lhs) and lhs[i + 1] == "." and lhs[i + 2] == "."):
                raise RuntimeError(f"einsum(): found '.' for operand {cur} that is not part of any ellipsis")
            i += 2
            op_labels[cur].append(_ELL)
            ell_seen = True
        elif c == ",":
            cur += 1
            if cur >= num_ops:
                raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
            ell_seen = False
        elif _is_label(c):
            op_labels[cur].append(_label_index(c))
        else:
            raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation string, subscripts "
                               "must be in [a-zA-Z]")
        i += 1
    if cur != num_ops - 1:
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    count = [0] * 52
    ell_num = 0
    for k, labels in enumerate(op_labels):
        nl = sum(1 for s in labels if s != _ELL)
        has_ell = _ELL in labels
        for s in labels:
            if s != _ELL:
                count[s] += 1
        if has_ell:
            if nl > ndims[k]:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({nl}) is more than the "
                                   f"number of dimensions ({ndims[k]}) for operand {k}")
            ell_num = max(ell_num, ndims[k] - nl)
        elif nl != ndims[k]:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({nl}) does not match the number "
                               f"of dimensions ({ndims[k]}) for operand {k} and no ellipsis was given")
    expanded = []
    for k, labels in enumerate(op_labels):
        out: list = []
        for s in labels:
            if s == _ELL:
                n = ndims[k] - (len(labels) - 1)
                out.extend(_ELL_BASE + j for j in range(ell_num - n, ell_num))
            else:
                out.append(s)
        expanded.append(tuple(out))
    ell_labels = [_ELL_BASE + j for j in range(ell_num)]
    if arrow < 0:
        output = ell_labels + [s for s in range(52) if count[s] == 1]
    else:
        rhs = equation[arrow + 2:]
        output, i, ell_out = [], 0, False
        while i < len(rhs):
            c = rhs[i]
            if c == " ":
                pass
            elif c == ".":
                if ell_out:
                    raise RuntimeError("einsum(): found '.' for output but an ellipsis (...) was already found")
                if not (i + 2 < len(rhs) and rhs[i + 1] == "." and rhs[i + 2] == "."):
                    raise RuntimeError("einsum(): found '.' for output that is not part of any ellipsis (...)")
                i += 2
                output.extend(ell_labels)
                ell_out = True
            elif _is_label(c):
                s = _label_index(c)
                if count[s] == 0 or s in output:
                    raise RuntimeError(f"einsum(): output subscript {c}"
                                       + (" appears more than once in the output" if s in output else
                                          " does not appear in the equation for any input operand"))
                output.append(s)
            else:
                raise RuntimeError(f"einsum(): invalid subscript given at index {len(lhs) + 2 + i} in the equation "
                                   "string, subscripts must be in [a-zA-Z]")
            i += 1
    return tuple(expanded), tuple(output)


def _sublist_equation(args) -> tuple:
    """einsum(op1, sublist1, op2, sublist2, ..., [sublist_out]) -> (equation, operands)."""
    def sub(lst):
        out = []
        for s in lst:
            if s is Ellipsis:
                out.append("...")
            elif isinstance(s, int) and 0 <= s < 52:
                out.append(_label_char(s))
            else:
                raise ValueError(f"einsum(): expected subscript to be within the range [0, 52) but got {s}")
        return "".join(out)
    ops = list(args[0::2][:len(args) // 2])
    subs = [sub(s) for s in args[1::2][:len(args) // 2]]
    eq = ",".join(subs)
    if len(args) % 2 == 1:
        eq += "->" + sub(args[-1])
    return eq, ops


def _opt_flags() -> tuple:
    """torch.backends.opt_einsum.enabled / .strategy when coretorch.backends provides them (else the defaults);
    read per call, so a script's setting takes effect at once."""
    oe = sys.modules.get("coretorch.backends.opt_einsum")
    if oe is None:
        oe = getattr(getattr(sys.modules.get("coretorch"), "backends", None) or sys.modules.get("coretorch.backends"),
                     "opt_einsum", None)
    if oe is None:
        return True, "auto"
    return bool(getattr(oe, "enabled", True)), getattr(oe, "strategy", None) or "auto"


def _symbol(s: int) -> str:
    return opt_einsum.get_symbol(s if s < _ELL_BASE else 52 + s - _ELL_BASE)


def _path(labels: list, output: tuple, shapes: list, strategy: str) -> list:
    key = (tuple(map(tuple, labels)), output, tuple(shapes), strategy)
    p = _path_cache.get(key)
    if p is None:
        eq = ",".join("".join(map(_symbol, ls)) for ls in labels) + "->" + "".join(map(_symbol, output))
        p = opt_einsum.contract_path(eq, *shapes, shapes=True, optimize=strategy)[0]
        if len(_path_cache) > 4096:
            _path_cache.clear()
        _path_cache[key] = p
    return p


class _Operand:
    """An operand while planning: its labels and shape (no data)."""
    __slots__ = ("labels", "shape")

    def __init__(self, labels: list, shape: tuple):
        self.labels, self.shape = labels, shape


def _plan_diagonal(plan: list, k: int, op: _Operand, s: int, num: int) -> None:
    """The diagonal over every dim labelled ``s`` (a repeated label) becomes the last dim: the repeated dims moved
    last, merged into one, and every (n^(r-1) + ... + n + 1)-th element taken (a strided view where the merge is)."""
    ls, shape = op.labels, op.shape
    pos = [i for i, t in enumerate(ls) if t == s]
    n = shape[pos[0]]
    for d in pos[1:]:
        if shape[d] != n:
            raise RuntimeError(f"einsum(): subscript {_label_char(s)} is repeated for operand {num} but the sizes "
                               f"don't match, {shape[d]} != {n}")
    rest = [i for i in range(len(ls)) if ls[i] != s]
    perm = rest + pos
    flat = tuple(shape[i] for i in rest) + (n ** len(pos),)
    step = sum(n ** i for i in range(len(pos)))
    key = (Ellipsis, slice(None, None, step))
    plan.append(("diag", k, perm if perm != list(range(len(perm))) else None, flat, key))
    op.labels = [ls[i] for i in rest] + [s]
    op.shape = tuple(shape[i] for i in rest) + (n,)


def _plan_prepare(plan: list, op_labels: tuple, shapes: tuple, output: tuple) -> tuple:
    """Diagonals of repeated labels, sizes checked and size-1 broadcast dims dropped, labels that only one operand
    has (and the output lacks) summed: -> (operands, label sizes)."""
    size: dict = {}
    ops = []
    for k, (ls, shape) in enumerate(zip(op_labels, shapes)):
        op = _Operand(list(ls), tuple(shape))
        for s in sorted(set(ls)):
            if op.labels.count(s) > 1:
                _plan_diagonal(plan, k, op, s, k)
        for d, s in enumerate(op.labels):
            n = op.shape[d]
            if n != 1:
                prev = size.get(s, 1)
                if prev != 1 and prev != n:
                    if s >= _ELL_BASE:
                        raise RuntimeError(f"einsum(): dimension {d} covered by ellipsis in operand {k} has size {n} "
                                           f"which does not broadcast with previously seen ellipsis with size "
                                           f"{prev} for the respective dimension")
                    raise RuntimeError(f"einsum(): subscript {_label_char(s)} has size {n} for operand {k} which "
                                       f"does not broadcast with previously seen size {prev}")
                size[s] = n
            else:
                size.setdefault(s, 1)
        ops.append(op)
    for k, op in enumerate(ops):
        drop = [d for d, s in enumerate(op.labels) if op.shape[d] == 1 and size[s] != 1]
        if drop:  # a size-1 dim broadcast against a bigger one: the operand does not depend on that label
            op.shape = tuple(n for d, n in enumerate(op.shape) if d not in drop)
            op.labels = [s for d, s in enumerate(op.labels) if d not in drop]
            plan.append(("reshape", k, op.shape))
        others = set(output)
        for j, other in enumerate(ops):
            if j != k:
                others.update(other.labels)
        lone = [d for d, s in enumerate(op.labels) if s not in others]
        if lone and len(ops) > 1 and all(op.shape[d] == 1 for d in lone):
            # PyTorch sums only the lone labels of size > 1 when there are several operands (size-1 ones are
            # viewed away at the end): no sum, so an integer or bool dtype stays
            plan.append(("reshape", k, tuple(n for d, n in enumerate(op.shape) if d not in lone)))
        elif lone:
            plan.append(("sum", k, lone, len(ops) > 1))
        if lone:
            op.labels = [s for d, s in enumerate(op.labels) if d not in lone]
            op.shape = tuple(size[s] for s in op.labels)
    return ops, size


def _plan_contract(a: _Operand, b: _Operand, keep: set, size: dict) -> tuple:
    """One pairwise contraction: labels in both and not kept are summed (by matmul), the rest stay.
    -> (instruction without operand indices, result operand)."""
    la, lb = a.labels, b.labels
    sa, sb = set(la), set(lb)
    batch = [s for s in la if s in sb and s in keep]
    contr = [s for s in la if s in sb and s not in keep]
    a_only = [s for s in la if s not in sb]
    b_only = [s for s in lb if s not in sa]
    bshape = tuple(size[s] for s in batch)
    mshape = tuple(size[s] for s in a_only)
    nshape = tuple(size[s] for s in b_only)
    ia = {s: d for d, s in enumerate(la)}
    ib = {s: d for d, s in enumerate(lb)}
    res = _Operand(batch + a_only + b_only, bshape + mshape + nshape)
    if not contr:  # nothing summed: a broadcast product
        pa = _perm_or_none([ia[s] for s in batch + a_only])
        pb = _perm_or_none([ib[s] for s in batch + b_only])
        ra = bshape + mshape + (1,) * len(nshape)
        rb = bshape + (1,) * len(mshape) + nshape
        return ("mul", pa, ra, pb, rb, None), res
    kshape = tuple(size[s] for s in contr)
    pa = _perm_or_none([ia[s] for s in batch + a_only + contr])
    pb = _perm_or_none([ib[s] for s in batch + contr + b_only])
    m, n, k = _prod(mshape), _prod(nshape), _prod(kshape)
    ra2, rb2 = bshape + (m, k), bshape + (k, n)
    ra3 = None if ra2 == bshape + mshape + kshape and len(mshape) == 1 and len(kshape) == 1 else ra2
    rb3 = None if rb2 == bshape + kshape + nshape and len(nshape) == 1 and len(kshape) == 1 else rb2
    ro = None if len(mshape) == 1 and len(nshape) == 1 else res.shape
    return ("mm", pa, ra3, pb, rb3, ro), res


def _prod(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _perm_or_none(dims: list):
    return None if dims == list(range(len(dims))) else dims


def _permute(x: Tensor, dims: list) -> Tensor:
    if dims == list(range(len(dims))):
        return x
    return _shape.permute(x, dims)


def _build_plan(op_labels: tuple, output: tuple, shapes: tuple) -> list:
    plan: list = []
    ops, size = _plan_prepare(plan, op_labels, shapes, output)
    path = None
    if len(ops) > 2:
        enabled, strategy = _opt_flags()
        if enabled and opt_einsum is not None:
            path = _path([o.labels for o in ops], output, [o.shape for o in ops], strategy)
    out_set = set(output)
    steps = path if path is not None else [(0, 1)] * (len(ops) - 1)
    for step in steps:
        idx = sorted(step)
        group = [ops[i] for i in idx]
        for i in reversed(idx):
            del ops[i]
        keep = set(out_set)
        for o in ops:
            keep.update(o.labels)
        r = group[0]
        for k in range(1, len(group)):
            later = set(keep)
            for o in group[k + 1:]:
                later.update(o.labels)
            instr, r = _plan_contract(r, group[k], later, size)
            plan.append(("pair", idx[0] if k == 1 else -1, idx[k]) + instr)
        front = path is None  # left to right, the result first (PyTorch without opt_einsum); else it goes last
        plan.append(("place", tuple(idx), front))
        if front:
            ops.insert(0, r)
        else:
            ops.append(r)
    op = ops[0]
    extra = [d for d, s in enumerate(op.labels) if s not in out_set]
    if extra:
        plan.append(("sum", 0, extra, False))
        op.labels = [s for s in op.labels if s in out_set]
    pos = {s: d for d, s in enumerate(op.labels)}
    perm = _perm_or_none([pos[s] for s in output])
    if perm is not None:
        plan.append(("permute", 0, perm))
    return plan


def _pair(a: Tensor, b: Tensor, kind, pa, ra, pb, rb, ro) -> Tensor:
    if pa is not None:
        a = _shape.permute(a, pa)
    if pb is not None:
        b = _shape.permute(b, pb)
    if ra is not None and a.shape != ra:
        a = _shape.reshape(a, ra)
    if rb is not None and b.shape != rb:
        b = _shape.reshape(b, rb)
    if kind == "mul":
        return _pointwise.mul(a, b)
    if (a.dtype is not b.dtype or a.dtype is _dt.bool_) and a.shape[-1] == 1:
        # only size-1 dims contracted: PyTorch multiplies (no bmm, so bool and mixed dtypes work, promoted)
        r = _pointwise.mul(a, b)
        return r if ro is None else _shape.reshape(r, ro)
    if (a.dtype is not b.dtype or a.dtype is _dt.bool_) and a.numel() and b.numel():
        _linalg.bmm_dtype_check(a, b)  # PyTorch's einsum contracts with bmm: its errors
    r = _linalg._matmul_nd(a, b)
    return r if ro is None else _shape.reshape(r, ro)


def _run(plan: list, ops: list) -> Tensor:
    """Execute a plan on the operands (a list, consumed)."""
    pending: Any = None  # the last pair's result: the operand a plan names with index -1
    for ins in plan:
        kind = ins[0]
        if kind == "pair":
            _, i, j, how, pa, ra, pb, rb, ro = ins
            pending = _pair(ops[i] if i >= 0 else pending, ops[j], how, pa, ra, pb, rb, ro)
        elif kind == "place":
            _, idx, front = ins
            for i in reversed(idx):
                del ops[i]
            if front:
                ops.insert(0, pending)
            else:
                ops.append(pending)
        elif kind == "diag":
            _, k, perm, flat, key = ins
            x = ops[k] if perm is None else _shape.permute(ops[k], perm)
            ops[k] = _indexing._index(_shape.reshape(x, flat), key, False)  # a basic key: a strided view
        elif kind == "reshape":
            ops[ins[1]] = _shape.reshape(ops[ins[1]], ins[2])
        elif kind == "sum":
            x = ops[ins[1]]
            dims = ins[2] if len(ins[2]) < x.ndim else None  # all dims: the fast path
            # PyTorch's plain sum: integers and bools become int64 (a later bmm with an int32 operand then raises
            # PyTorch's "expected scalar type Long but found Int")
            ops[ins[1]] = _reduction.sum(x, dims)
        else:  # permute
            ops[ins[1]] = _shape.permute(ops[ins[1]], ins[2])
    return ops[0]


def einsum(*args) -> Tensor:
    """einsum(equation, *operands), einsum(equation, [operands]) or the sublist form einsum(op1, sub1, ...)."""
    if not args:
        raise TypeError("einsum(): must specify the equation string and at least one operand, or at least one "
                        "operand and its subscripts list")
    if isinstance(args[0], Tensor):
        equation, operands = _sublist_equation(args)
    else:
        equation, operands = args[0], args[1:]
        if not isinstance(equation, str):
            raise TypeError(f"einsum(): argument 'equation' must be str, not {type(equation).__name__}")
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = operands[0]
    operands = list(operands)
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    for o in operands:
        if not isinstance(o, Tensor):
            raise TypeError(f"einsum(): expected every operand to be a Tensor, got {type(o).__name__}")
    ndims = tuple(o.ndim for o in operands)
    key = (equation, ndims)
    parsed = _parse_cache.get(key)
    if parsed is None:
        parsed = _parse(equation, ndims)
        if len(_parse_cache) > 4096:
            _parse_cache.clear()
        _parse_cache[key] = parsed
    op_labels, output = parsed
    shapes = tuple(o.shape for o in operands)
    pkey = (equation, shapes) + (_opt_flags() if len(operands) > 2 else ())
    plan = _plan_cache.get(pkey)
    if plan is None:
        plan = _build_plan(op_labels, output, shapes)
        if len(_plan_cache) > 4096:
            _plan_cache.clear()
        _plan_cache[pkey] = plan
    r = _run(plan, list(operands))
    return _shape.view(r, r.shape) if r is operands[0] else r  # a view, never the input itself
