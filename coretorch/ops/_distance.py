"""cdist and dist: p-norm distances with PyTorch's backward (0 where the distance is 0).

Forward and backward are compositions of tensor ops (device kernels on every backend); the backward nodes are
written with differentiable ops, so double backward works too.
"""
from __future__ import annotations

import math

from .. import dtypes as _dt
from ..amp.autocast_mode import cast_inputs as _ac_cast, state as _ac
from ..autograd.grad_mode import state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make
from . import creation as _creation, indexing as _indexing, linalg as _linalg, pointwise as _pw
from . import reduction as _reduction, shape as _shape
from ._util import broadcast_shape, edge, sum_to

_MODES = {"use_mm_for_euclid_dist_if_necessary": 0, "use_mm_for_euclid_dist": 1, "donot_use_mm_for_euclid_dist": 2}


def _tn(dt) -> str:
    return dt._tname[:-6]


def _norm_last(diff: Tensor, p: float) -> Tensor:
    """The p-norm over the last dim (p = 0 counts nonzeros; p = inf is the largest |x|); float16/bfloat16 in
    float32, rounded once (PyTorch's norm kernels: dist of half [300, 300] and 0 is 424.25, not inf)."""
    if diff.dtype is _dt.float16 or diff.dtype is _dt.bfloat16:
        return _norm_last(diff.float(), p).to(diff.dtype)
    if diff.shape[-1] == 0:
        return _reduction.sum(diff, -1)
    if p == 0:
        return _reduction.sum(_pw.ne(diff, 0), -1).to(diff.dtype)
    a = _pw.abs(diff)
    if p == 1:
        return _reduction.sum(a, -1)
    if p == 2:
        return _pw.sqrt(_reduction.sum(_pw.mul(diff, diff), -1))
    if math.isinf(p):
        return _reduction.amax(a, -1)
    return _pw.pow(_reduction.sum(_pw.pow(a, p), -1), 1.0 / p)


def _norm_grad(diff: Tensor, res: Tensor, g: Tensor, p: float) -> Tensor:
    """d(p-norm over the last dim)/d diff times g, 0 where the norm is 0 (PyTorch's cdist/norm backward);
    ``res`` and ``g`` carry a trailing size-1 dim."""
    if p == 0:
        return _pw.mul(diff, 0.0)
    if p == 1:
        return _pw.mul(_pw.sign(diff), g)
    zero = _pw.eq(res, 0)
    safe = _pw.masked_fill(res, zero, 1.0)  # no 0/0 computed: the masked entries are 0 anyway
    if p == 2:
        return _pw.masked_fill(_pw.mul(diff, _pw.div(g, safe)), zero, 0.0)
    if math.isinf(p):
        hit = _pw.eq(_pw.abs(diff), res).to(diff.dtype)
        # every element that reaches the maximum gets the gradient (PyTorch's cdist p=inf backward)
        return _pw.masked_fill(_pw.mul(_pw.mul(_pw.sign(diff), hit), g), zero, 0.0)
    a = _pw.abs(diff)
    if p < 1:  # |x|^(p-1) is infinite at x = 0: PyTorch gives 0 there
        a = _pw.masked_fill(a, _pw.eq(a, 0), 1.0)
    r = _pw.mul(_pw.mul(_pw.sign(diff), _pw.pow(a, p - 1)), _pw.div(g, _pw.pow(safe, p - 1)))
    return _pw.masked_fill(r, zero, 0.0)


class CdistBackward0(Node):
    """Gradient of the direct (pairwise-difference) cdist."""
    __slots__ = ("p", "need", "bshape", "out")

    def backward(self, g):
        x1, x2, res = self.saved()
        e1, e2 = _expand_batch(x1, x2, self.bshape)
        n1, n2 = self.need
        parts1, g2 = [], None
        for start, rows in _row_chunks(e1, e2):  # the (.., P, R, M) differences a block of rows at a time
            c1 = e1 if rows == e1.shape[-2] else _indexing.narrow(e1, -2, start, rows)
            diff = _pw.sub(_shape.unsqueeze(c1, -2), _shape.unsqueeze(e2, -3))
            rc, gc = (res, g) if rows == e1.shape[-2] else \
                (_indexing.narrow(res, -2, start, rows), _indexing.narrow(g, -2, start, rows))
            gd = _norm_grad(diff, _shape.unsqueeze(rc, -1), _shape.unsqueeze(gc, -1), self.p)
            if n1:
                parts1.append(_reduction.sum(gd, -2))
            if n2:
                part = _reduction.sum(gd, -3)
                g2 = part if g2 is None else _pw.add(g2, part)
        g1 = sum_to(parts1[0] if len(parts1) == 1 else _shape.cat(parts1, -2), tuple(x1.shape)) if n1 else None
        g2 = sum_to(_pw.neg(g2), tuple(x2.shape)) if n2 else None
        return g1, g2


_CHUNK = 1 << 24  # elements of the pairwise-difference temporary the direct cdist allocates at once


def _row_chunks(e1: Tensor, e2: Tensor) -> list:
    """(start, rows) blocks of x1's rows whose (.., rows, R, M) differences hold about _CHUNK elements."""
    p = e1.shape[-2]
    per_row = max(1, e2.shape[-2] * e2.shape[-1])
    for d in e1.shape[:-2]:
        per_row *= d
    rows = max(1, _CHUNK // per_row)
    if rows >= p:
        return [(0, p)]
    return [(s, min(rows, p - s)) for s in range(0, p, rows)]


class EuclideanDistBackward0(Node):
    """Gradient of the matmul form of the p = 2 cdist (PyTorch's _euclidean_dist_backward)."""
    __slots__ = ("need", "bshape", "out")

    def backward(self, g):
        x1, x2, res = self.saved()
        e1, e2 = _expand_batch(x1, x2, self.bshape)
        zero = _pw.eq(res, 0)
        ratio = _pw.masked_fill(_pw.div(g, _pw.masked_fill(res, zero, 1.0)), zero, 0.0)
        n1, n2 = self.need
        g1 = g2 = None
        if n1:
            g1 = _pw.sub(_pw.mul(e1, _reduction.sum(ratio, -1, keepdim=True)), _linalg._matmul_nd(ratio, e2))
            g1 = sum_to(g1, tuple(x1.shape))
        if n2:
            g2 = _pw.sub(_pw.mul(e2, _shape.unsqueeze(_reduction.sum(ratio, -2), -1)),
                         _linalg._matmul_nd(_linalg._mT(ratio), e1))
            g2 = sum_to(g2, tuple(x2.shape))
        return g1, g2


def _expand_batch(x1: Tensor, x2: Tensor, bshape: tuple) -> tuple:
    s1 = bshape + tuple(x1.shape[-2:])
    s2 = bshape + tuple(x2.shape[-2:])
    return (x1 if tuple(x1.shape) == s1 else _shape.expand(x1, s1),
            x2 if tuple(x2.shape) == s2 else _shape.expand(x2, s2))


def _euclid_mm(e1: Tensor, e2: Tensor) -> Tensor:
    """sqrt(|x|^2 - 2 x.y + |y|^2) as one matmul of augmented rows [-2x, |x|^2, 1] . [y, 1, |y|^2] (PyTorch's
    _euclidean_dist: one pass over the (P, R) result instead of three), clamped at 0 against rounding."""
    n1 = _reduction.sum(_pw.mul(e1, e1), -1, keepdim=True)
    n2 = _reduction.sum(_pw.mul(e2, e2), -1, keepdim=True)
    a = _shape.cat([_pw.mul(e1, -2.0), n1, _creation.ones_like(n1)], -1)
    b = _shape.cat([e2, _creation.ones_like(n2), n2], -1)
    d2 = _linalg._matmul_nd(a, _linalg._mT(b))
    return _pw.sqrt(_pw.clamp_min(d2, 0.0))


def _direct(e1: Tensor, e2: Tensor, p: float) -> Tensor:
    """The p-norms of the pairwise differences, a block of x1's rows at a time (bounded temporaries)."""
    parts = []
    for start, rows in _row_chunks(e1, e2):
        c1 = e1 if rows == e1.shape[-2] else _indexing.narrow(e1, -2, start, rows)
        parts.append(_norm_last(_pw.sub(_shape.unsqueeze(c1, -2), _shape.unsqueeze(e2, -3)), p))
    return parts[0] if len(parts) == 1 else _shape.cat(parts, -2)


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """Pairwise p-norm distances between the rows of x1 (B.., P, M) and x2 (B.., R, M) -> (B.., P, R)."""
    if compute_mode not in _MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    mode = _MODES[compute_mode]
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        x1, x2 = _ac_cast("cdist", x1, x2)
    for name, x in (("X1", x1), ("X2", x2)):
        if not isinstance(x, Tensor):
            raise TypeError(f"cdist(): argument '{name.lower()}' must be Tensor, not {type(x).__name__}")
        if x.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {x.ndim}D")
        if not x.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {_tn(x.dtype)}")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"cdist: expected X1 and X2 to have the same dtype, but got {_tn(x1.dtype)} and "
                           f"{_tn(x2.dtype)}")
    if x1.device != x2.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                           f"{x1.device} and {x2.device}! (when checking arguments for cdist)")
    p = float(p)
    if p < 0 or math.isnan(p):
        raise RuntimeError("cdist only supports non-negative p values")
    bshape = broadcast_shape(tuple(x1.shape[:-2]), tuple(x2.shape[:-2]), "cdist")
    r1, r2 = x1.shape[-2], x2.shape[-2]
    use_mm = p == 2 and (mode == 1 or (mode == 0 and (r1 > 25 or r2 > 25)))
    prev = _gs.enabled
    _gs.enabled = False  # the result is recorded below as one node
    try:
        e1, e2 = _expand_batch(x1, x2, bshape)
        if use_mm and x1.shape[-1] != 0:
            r = _euclid_mm(e1, e2)
        else:
            use_mm = False
            r = _direct(e1, e2, p)
    finally:
        _gs.enabled = prev
    if _gs.enabled and (x1._rg or x2._rg):
        node = EuclideanDistBackward0() if use_mm else CdistBackward0()
        if not use_mm:
            node.p = p
        node.need = (x1._rg, x2._rg)
        node.bshape = bshape
        node.next_functions = (edge(x1), edge(x2))
        out = _make(r._data, r.dtype, r._be, node)
        node.out = out
        node.save(x1, x2, out)  # the result too: the backward reads it, so an in-place change of it raises
        return out
    return r


class DistBackward0(Node):
    __slots__ = ("p", "need", "out")

    def backward(self, g):
        a, b, res = self.saved()
        diff = _pw.sub(a, b)
        flat = _shape.reshape(diff, (-1,))
        gd = _shape.reshape(_norm_grad(flat, _shape.reshape(res, (1,)), _shape.reshape(g, (1,)), self.p),
                            tuple(diff.shape))
        na, nb = self.need
        ga = sum_to(gd, tuple(a.shape)) if na else None
        gb = sum_to(_pw.neg(gd), tuple(b.shape)) if nb else None
        if ga is not None and ga.dtype is not a.dtype:
            ga = ga.to(a.dtype)
        if gb is not None and gb.dtype is not b.dtype:
            gb = gb.to(b.dtype)
        return ga, gb


def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """The p-norm of input - other (broadcast), a 0-d tensor; p may be 0, inf, -inf or any real."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError("dist(): arguments 'input' and 'other' must be Tensors")
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, other = _ac_cast("dist", input, other)
    if isinstance(p, Tensor):
        p = p.item()
    p = float(p)
    prev = _gs.enabled
    _gs.enabled = False
    try:
        diff = _pw.sub(input, other)
        if not diff.dtype.is_floating_point:
            raise RuntimeError(f"dist(): only supports floating-point dtypes, got: {_tn(diff.dtype)}")
        flat = _shape.reshape(diff, (-1,))
        if p == -math.inf:
            r = _reduction.amin(_pw.abs(flat)) if flat.shape[0] else _reduction.sum(flat)
        else:
            r = _norm_last(flat, p)
    finally:
        _gs.enabled = prev
    if _gs.enabled and (input._rg or other._rg):
        node = DistBackward0()
        node.p = p
        node.need = (input._rg, other._rg)
        node.next_functions = (edge(input), edge(other))
        out = _make(r._data, r.dtype, r._be, node)
        node.out = out
        node.save(input, other, out)  # the result too: the backward reads it, so an in-place change of it raises
        return out
    return r

