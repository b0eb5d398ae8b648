"""Products: einsum (opt_einsum picks the contraction order), tensordot, kron, cross, baddbmm, addbmm,
addmv, addr, block_diag, cartesian_prod, combinations, cdist, dist, inner, vdot, chain_matmul.

Every op is a composition of differentiable views, ``matmul`` and elementwise ops (no kernels of its own): both
devices get their fast matmul and autograd comes with it.  cdist and dist have their own backward nodes (the
gradient at zero distance is 0, as in PyTorch).
"""
from __future__ import annotations

from typing import Any

import itertools

import numpy as np

from .. import dtypes as _dt
from .._warn_once import warn_once
from ..amp.autocast_mode import cast_inputs as _ac_cast, state as _ac
from ..autograd._node_names import named_node
from ..autograd._zero import keep_graph as _keep_graph
from ..tensor import Tensor
from . import _einsum, creation as _creation, indexing as _indexing, inplace as _inplace, linalg as _linalg
from . import pointwise as _pw, reduction as _reduction, shape as _shape
from ._distance import cdist, dist
from ._out import write_out
from ._own import own
from ._util import broadcast_shape, norm_dim, norm_dims
from .scatter import _renamed

__all__ = ["addmm", "einsum", "tensordot", "kron", "cross", "baddbmm", "addbmm", "addmv", "addr", "block_diag",
           "cartesian_prod", "combinations", "cdist", "dist", "inner", "vdot", "chain_matmul"]


# ---------------------------------------------------------------------------------------------
# out= and in-place helpers
# ---------------------------------------------------------------------------------------------
def _write_out(out, r: Tensor, op: str, *inputs: Tensor) -> Tensor:
    """``inputs``: checked against ``out`` for memory overlap (only those PyTorch's kernel checks)."""
    return write_out(op, out, r, inputs=inputs)


def _inplace_op(fn, name: str):
    def method(self, *args, **kwargs):
        return _inplace.apply_inplace(self, name, lambda s: fn(s, *args, **kwargs),
                                      next((a for a in args if isinstance(a, Tensor) and a._rg), None))
    method.__name__ = name
    return method


def _check_addr_scalars(rt, beta, alpha) -> None:
    """PyTorch's addr checks of its scalars against the result dtype ``rt`` (beta first); the matrix products
    convert theirs instead (checked, 0.5 is 0)."""
    for name, v in (("beta", beta), ("alpha", alpha)):
        if isinstance(v, bool) and rt is not _dt.bool_:
            raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
        if isinstance(v, float) and not rt.is_floating_point:
            raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating point number.")


def _cname(t: Tensor) -> str:
    """A tensor's dtype as PyTorch's C++ messages name it (``float``, ``double``, ``long int``)."""
    return _dt.cpp_name(t.dtype)


def _half_math(input, a: Tensor, b: Tensor) -> bool:
    """Whether a fused product-and-add is computed in float32 and rounded once: float16 and bfloat16 operands of one
    dtype (PyTorch's op math for baddbmm/addbmm/addmv; the product rounded to half first was an ulp off in a quarter of
    the elements)."""
    return (a.dtype is _dt.float16 or a.dtype is _dt.bfloat16) and isinstance(input, Tensor) and \
        input.dtype is a.dtype is b.dtype


def _scaled_sum(input, beta, p: Tensor, alpha, op: str) -> Tensor:
    """beta * input + alpha * p; beta == 0 ignores input (NaN and inf in it do not propagate), as PyTorch."""
    if not p.dtype.is_floating_point and p.dtype is not _dt.bool_:
        beta, alpha = _linalg.int_scalar(beta, p.dtype), _linalg.int_scalar(alpha, p.dtype)
    if alpha != 1:
        p = _pw.mul(p, alpha)
    _linalg.check_expand(input, tuple(p.shape))
    if beta == 0:  # input ignored (its nan/inf too), yet in the graph with a zero gradient, as PyTorch
        r = p if input.dtype is p.dtype else p.to(_dt.promote_types(input.dtype, p.dtype))
        return _keep_graph(r, (input,), f"{op[0].upper()}{op[1:]}Backward0")
    return _pw.add(_pw.mul(input, beta) if beta != 1 else input, p)


# ---------------------------------------------------------------------------------------------
# einsum, tensordot, inner, vdot, kron
# ---------------------------------------------------------------------------------------------
def einsum(*args) -> Tensor:
    """Einstein summation: ``einsum("bij,bjk->bik", a, b)``, ``einsum(eq, [a, b])`` or the sublist form.

    Ellipsis, repeated labels (diagonals), implicit output, size-1 broadcasting; 3+ operands are contracted in the
    order ``opt_einsum.contract_path`` picks (``torch.backends.opt_einsum.enabled`` / ``.strategy``)."""
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        args = _ac_cast("einsum", *args)
    return _einsum.einsum(*args)


def _as_dims(d, op: str = "tensordot") -> list:
    if isinstance(d, Tensor):
        d = d.tolist()
    if isinstance(d, int) and not isinstance(d, bool):
        return [d]
    if isinstance(d, (list, tuple)) and all(isinstance(x, int) and not isinstance(x, bool) for x in d):
        return list(d)
    raise TypeError(f"{op}(): argument 'dims' must be an int, a pair of lists of ints or a Tensor")


def tensordot(a: Tensor, b: Tensor, dims=2, out=None) -> Tensor:
    """Sum over ``dims`` (the last/first ``dims`` dims, or two lists of dims) of a and b: one matmul."""
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError("tensordot(): arguments 'a' and 'b' must be Tensors")
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        a, b = _ac_cast("tensordot", a, b)
    if isinstance(dims, Tensor):
        dims = int(dims.item()) if dims.numel() == 1 else dims.tolist()
    if isinstance(dims, int) and not isinstance(dims, bool):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.ndim or dims > b.ndim:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    elif isinstance(dims, (list, tuple)) and len(dims) == 2:
        da, db = _as_dims(dims[0]), _as_dims(dims[1])
    else:
        raise RuntimeError(f"tensordot expects dims to be an int, a pair of dim lists or a Tensor, but got {dims!r}")
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    da = list(norm_dims(da, a.ndim, "tensordot"))
    db = list(norm_dims(db, b.ndim, "tensordot"))
    for x, y in zip(da, db):
        sa, sb = a.shape[x], b.shape[y]
        if sa != sb and sa != 1 and sb != 1:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {sa} in dim {x} and second "
                               f"has size {sb} in dim {y}")
    # a size-1 contracted dim against a bigger one broadcasts: sum the other side over it first (as PyTorch)
    sum_a = [x for x, y in zip(da, db) if b.shape[y] == 1 and a.shape[x] != 1]
    sum_b = [y for x, y in zip(da, db) if a.shape[x] == 1 and b.shape[y] != 1]
    if sum_a:
        a = _reduction.sum(a, sum_a, keepdim=True)
    if sum_b:
        b = _reduction.sum(b, sum_b, keepdim=True)
    fa = [d for d in range(a.ndim) if d not in da]
    fb = [d for d in range(b.ndim) if d not in db]
    k = 1
    for x in da:
        k *= a.shape[x]
    ma = [a.shape[d] for d in fa]
    nb = [b.shape[d] for d in fb]
    xa = _shape.reshape(_einsum._permute(a, fa + da), (_einsum._prod(ma), k))
    xb = _shape.reshape(_einsum._permute(b, db + fb), (k, _einsum._prod(nb)))
    r = _shape.reshape(_linalg._matmul_nd(xa, xb), tuple(ma + nb))
    return _write_out(out, r, "tensordot")


def inner(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """Sum over the last dims: result shape input.shape[:-1] + other.shape[:-1] (a 0-d operand multiplies)."""
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, other = _ac_cast("inner", input, other)
    if input.ndim == 0 or other.ndim == 0:
        return _write_out(out, _pw.mul(input, other), "inner")
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    return _write_out(out, tensordot(input, other, ([input.ndim - 1], [other.ndim - 1])), "inner")


def vdot(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """Dot product of two 1-D tensors (the first conjugated: real dtypes only here, so plain dot)."""
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if _ac.on and out is None:  # autocast: the op's dtype policy (one attribute check when off)
        input, other = _ac_cast("vdot", input, other)
    if input.dtype is not other.dtype:
        raise RuntimeError(f"vdot : expected both vectors to have same dtype, but found {input.dtype._tname[:-6]} "
                           f"and {other.dtype._tname[:-6]}")
    if input.shape[0] != other.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src [{other.shape[0]}] "
                           f"to have the same number of elements, but got {input.shape[0]} and {other.shape[0]} "
                           "elements respectively")
    r = _linalg._matmul(input, other)  # (not matmul: vdot is not autocast's)
    return _write_out(out, named_node(r, "VdotBackward0"), "vdot")


def kron(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """Kronecker product: dims paired up (the shorter shape padded with leading 1s), sizes multiplied."""
    nd = max(input.ndim, other.ndim)
    sa = (1,) * (nd - input.ndim) + tuple(input.shape)
    sb = (1,) * (nd - other.ndim) + tuple(other.shape)
    ia = _shape.reshape(input, tuple(v for s in sa for v in (s, 1)))
    ib = _shape.reshape(other, tuple(v for s in sb for v in (1, s)))
    r = own(_shape.reshape(_pw.mul(ia, ib), tuple(x * y for x, y in zip(sa, sb))))
    return _write_out(out, r, "kron", input, other)


# ---------------------------------------------------------------------------------------------
# cross
# ---------------------------------------------------------------------------------------------
def _cross(input: Tensor, other: Tensor, dim: int, op: str = "linalg.cross") -> Tensor:
    """The cross product along ``dim`` (torch.linalg.cross's checks; other dims broadcast)."""
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, other = _ac_cast("cross", input, other)
    if input.ndim != other.ndim:
        raise RuntimeError(f"{op}: inputs must have the same number of dimensions.")
    d = norm_dim(dim, input.ndim, op)
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"{op}: inputs dimension {dim} must have length 3. Got {input.shape[d]} and "
                           f"{other.shape[d]}")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype._tname[:-6]} but found {other.dtype._tname[:-6]}")
    if input.dtype is _dt.bool_:
        raise RuntimeError("\"cross\" not implemented for 'Bool'")
    broadcast_shape(tuple(input.shape), tuple(other.shape), op)

    a0, a1, a2 = (_indexing.narrow(input, d, i, 1) for i in range(3))
    b0, b1, b2 = (_indexing.narrow(other, d, i, 1) for i in range(3))
    return _shape.cat([_pw.sub(_pw.mul(a1, b2), _pw.mul(a2, b1)), _pw.sub(_pw.mul(a2, b0), _pw.mul(a0, b2)),
                       _pw.sub(_pw.mul(a0, b1), _pw.mul(a1, b0))], d)


def cross(input: Tensor, other: Tensor, dim=None, *, out=None) -> Tensor:
    """torch.cross: without ``dim`` the first dim of size 3 (deprecated, with PyTorch's warning)."""
    if dim is None:
        warn_once("cross.dim", "Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass "
                  "the dim explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to "
                  "agree with that of linalg.cross in a future release.", stacklevel=2)  # (TORCH_WARN_ONCE)
        dim = next((i for i, s in enumerate(input.shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return _write_out(out, _cross(input, other, dim), "cross", input, other)


# ---------------------------------------------------------------------------------------------
# the BLAS-style fused forms
# ---------------------------------------------------------------------------------------------
def _check_batches(batch1: Tensor, batch2: Tensor, op: str) -> None:
    if batch1.ndim != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor (got {batch1.ndim}-D) in {op}")
    if batch2.ndim != 3:
        raise RuntimeError(f"batch2 must be a 3D tensor (got {batch2.ndim}-D) in {op}")
    if batch1.shape[0] != batch2.shape[0] or batch1.shape[2] != batch2.shape[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{batch1.shape[0]}, "
                           f"{batch1.shape[2]}] but got: [{batch2.shape[0]}, {batch2.shape[1]}].")


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1, out=None) -> Tensor:
    """beta * input + alpha * (batch1 @ batch2), batched (b, n, m); input broadcasts."""
    _check_batches(batch1, batch2, "baddbmm")
    if _ac.on and out is None:  # autocast: the op's dtype policy (one attribute check when off)
        input, batch1, batch2 = _ac_cast("baddbmm", input, batch1, batch2)
    if input.dtype is not batch1.dtype:  # (batch2 alone: the bmm's error)
        raise RuntimeError(f"Input dtypes must be the same, got: input {_cname(input)}, batch1: {_cname(batch1)}, "
                           f"batch2: {_cname(batch2)}")
    if _half_math(input, batch1, batch2):
        r = _linalg.in_float32(baddbmm, input, batch1, batch2, beta=beta, alpha=alpha)
        return _write_out(out, named_node(r, "BaddbmmBackward0"), "baddbmm", input)
    r = _scaled_sum(input, beta, _linalg._matmul_nd(batch1, batch2), alpha, "baddbmm")
    return _write_out(out, _renamed(r, _NAMES["baddbmm"]), "baddbmm", input)


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1, out=None) -> Tensor:
    """beta * input + alpha * sum_b(batch1[b] @ batch2[b]): one (n, b*k) @ (b*k, m) matmul."""
    _check_batches(batch1, batch2, "addbmm")
    if _ac.on and out is None:  # autocast: the op's dtype policy (one attribute check when off)
        input, batch1, batch2 = _ac_cast("addbmm", input, batch1, batch2)
    if input.dtype is not batch2.dtype and batch1.dtype is batch2.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {input.dtype._tname[:-6]} and "
                           f"{batch2.dtype._tname[:-6]}")
    if _half_math(input, batch1, batch2):
        r = _linalg.in_float32(addbmm, input, batch1, batch2, beta=beta, alpha=alpha)
        return _write_out(out, named_node(r, "AddbmmBackward0"), "addbmm", input)
    b, n, k = batch1.shape
    m = batch2.shape[2]
    x1 = _shape.reshape(_shape.permute(batch1, (1, 0, 2)), (n, b * k))
    x2 = _shape.reshape(batch2, (b * k, m))
    r = _scaled_sum(input, beta, _linalg._matmul_nd(x1, x2), alpha, "addbmm")
    return _write_out(out, _renamed(r, _NAMES["addbmm"]), "addbmm", input)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1, out=None) -> Tensor:
    """beta * input + alpha * (mat @ vec)."""
    if mat.ndim != 2 or vec.ndim != 1 or input.ndim > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.ndim}, {mat.ndim}, {vec.ndim}")
    if mat.shape[1] != vec.shape[0] or (input.ndim and input.shape[0] not in (1, mat.shape[0])):
        raise RuntimeError(f"size mismatch, got input ({input.shape[0] if input.ndim else 1}), mat "
                           f"({mat.shape[0]}x{mat.shape[1]}), vec ({vec.shape[0]})")
    if _ac.on and out is None:  # autocast: the op's dtype policy (one attribute check when off)
        input, mat, vec = _ac_cast("addmv", input, mat, vec)
    if not input.dtype is mat.dtype is vec.dtype:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {input.dtype._tname[:-6]}, "
                           f"{mat.dtype._tname[:-6]}, and {vec.dtype._tname[:-6]}")
    if _half_math(input, mat, vec):  # (alpha == 1 bitwise PyTorch's; its gemv scales by another alpha in between)
        r = _linalg.in_float32(addmv, input, mat, vec, beta=beta, alpha=alpha)
        return _write_out(out, named_node(r, "AddmvBackward0"), "addmv", input)
    r = _scaled_sum(input, beta, _linalg.mv(mat, vec), alpha, "addmv")
    return _write_out(out, _renamed(r, _NAMES["addmv"]), "addmv", input)


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1, out=None) -> Tensor:
    """beta * input + alpha * outer(vec1, vec2)."""
    if vec1.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {vec1.ndim}-D" if vec1.ndim != 1 else
                           f"addr: Expected 1-D argument vec2, but got {vec2.ndim}-D")
    if _ac.on and out is None:  # autocast: the op's dtype policy (one attribute check when off)
        input, vec1, vec2 = _ac_cast("addr", input, vec1, vec2)
    rt = _dt.promote_types(_dt.promote_types(input.dtype, vec1.dtype), vec2.dtype)
    _check_addr_scalars(rt, beta, alpha)
    if rt is _dt.bool_:  # (PyTorch: beta && input || alpha && (vec1 outer vec2), the scalars taken as truth values)
        p = _pw.logical_and(_shape.unsqueeze(vec1, 1), _shape.unsqueeze(vec2, 0))
        if not alpha:
            p = _pw.logical_and(p, False)
        shape = broadcast_shape(tuple(input.shape), tuple(p.shape), "addr")
        r = _pw.logical_or(_shape.expand(input, shape), p) if beta else _shape.expand(p, shape).clone()
        return _write_out(out, r, "addr", input, vec1, vec2)
    # (PyTorch's addr is elementwise in the common dtype: float32 vectors with a float64 input multiply in float64)
    r = _scaled_sum(input, beta, _linalg.outer(vec1.to(rt), vec2.to(rt)), alpha, "addr")
    return _write_out(out, _renamed(r, _NAMES["addr"]), "addr", input, vec1, vec2)


# PyTorch's grad_fn names of the fused forms (coretorch composes them; the last op's node is renamed)
_NAMES = {op: {"name": f"{op[0].upper()}{op[1:]}Backward0"} for op in ("baddbmm", "addbmm", "addmv", "addr")}


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1, out=None) -> Tensor:
    """torch.addmm with out= (the op itself is coretorch.ops.linalg.addmm)."""
    return _write_out(out, _linalg.addmm(input, mat1, mat2, beta=beta, alpha=alpha), "addmm", input)


def chain_matmul(*matrices, out=None) -> Tensor:
    """Deprecated in PyTorch for torch.linalg.multi_dot: the product of 2-D matrices, in the cheapest order."""
    warn_once("chain_matmul", "torch.chain_matmul is deprecated and will be removed in a future PyTorch release. "
              "Use torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than multiple "
              "parameters.", stacklevel=2)  # (TORCH_WARN_ONCE, as PyTorch)
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    if _ac.on and out is None:  # autocast: the op's dtype policy (one attribute check when off)
        matrices = _ac_cast("chain_matmul", *matrices)
    for t in matrices:
        if t.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {t.ndim}, expected 2 instead.")
    if len(matrices) == 1:
        return _write_out(out, _shape.clone(matrices[0]), "chain_matmul")
    return _write_out(out, _chain(list(matrices)), "chain_matmul")


def _chain(ms: list) -> Tensor:
    """Matrix chain product in the order of fewest multiplications (the classic dynamic programme)."""
    n = len(ms)
    for i in range(n - 1):
        if ms[i].shape[1] != ms[i + 1].shape[0]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({ms[i].shape[0]}x{ms[i].shape[1]} and "
                               f"{ms[i + 1].shape[0]}x{ms[i + 1].shape[1]})")
    if n == 2:
        return _linalg._matmul_nd(ms[0], ms[1])
    p = [ms[0].shape[0]] + [m.shape[1] for m in ms]
    cost: list[list[Any]] = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for s in range(i, j):
                c = cost[i][s] + cost[s + 1][j] + p[i] * p[s + 1] * p[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, s

    def build(i, j):
        if i == j:
            return ms[i]
        s = split[i][j]
        return _linalg._matmul_nd(build(i, s), build(s + 1, j))
    return build(0, n - 1)


# ---------------------------------------------------------------------------------------------
# block_diag, cartesian_prod, combinations
# ---------------------------------------------------------------------------------------------
def block_diag(*tensors) -> Tensor:
    """The 2-D block-diagonal matrix of the inputs (0-d -> 1x1, 1-d -> 1xn); dtypes promote."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    mats = []
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"block_diag(): argument 'tensors' must be tuple of Tensors, not {type(t).__name__}")
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.ndim} dimensions")
        mats.append(_shape.reshape(t, (1, 1)) if t.ndim == 0 else _shape.unsqueeze(t, 0) if t.ndim == 1 else t)
    if not mats:
        return _creation.empty((1, 0))
    dev = mats[0].device
    for t in mats[1:]:
        if t.device != dev:
            raise RuntimeError(f"torch.block_diag: input tensors must all be on the same device. Input 0 is on "
                               f"device {dev} and input {mats.index(t)} is on device {t.device}.")
    dt = mats[0].dtype
    for t in mats[1:]:
        dt = _dt.promote_types(dt, t.dtype)
    cols = sum(t.shape[1] for t in mats)
    rows, c0 = [], 0
    for t in mats:
        r, c = t.shape
        t = t.to(dt) if t.dtype is not dt else t
        parts = []
        if c0:
            parts.append(_creation.zeros((r, c0), dtype=dt, device=dev))
        parts.append(t)
        if cols - c0 - c:
            parts.append(_creation.zeros((r, cols - c0 - c), dtype=dt, device=dev))
        rows.append(_shape.cat(parts, 1) if len(parts) > 1 else t)
        c0 += c
    return _shape.cat(rows, 0) if len(rows) > 1 else _shape.clone(rows[0])


def cartesian_prod(*tensors) -> Tensor:
    """Every combination of one element from each 1-D input, as rows (one input: returned as is)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if not tensors:
        raise RuntimeError("cartesian_prod expects at least one tensor")
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    dt = tensors[0].dtype
    for t in tensors[1:]:
        if t.dtype is not dt:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if t.device != tensors[0].device:
            raise RuntimeError("meshgrid expects all tensors to have the same device")
    shape = tuple(t.shape[0] for t in tensors)
    cols = []
    for i, t in enumerate(tensors):
        v = _shape.reshape(t, tuple(s if j == i else 1 for j, s in enumerate(shape)))
        cols.append(_shape.reshape(_shape.expand(v, shape), (-1,)))
    return _shape.stack(cols, 1)


def _combination_indices(n: int, r: int, with_replacement: bool) -> np.ndarray:
    if r == 2 and not with_replacement:
        return np.stack(np.triu_indices(n, 1), 1)
    gen = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = np.fromiter(itertools.chain.from_iterable(gen(range(n), r)), dtype=np.int64)
    return idx.reshape(-1, r)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """Length-r combinations of the elements of a 1-D tensor, as rows (itertools.combinations order)."""
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _creation.empty((0,), dtype=input.dtype, device=input.device)
    idx = _combination_indices(input.shape[0], r, with_replacement)
    it = _creation.tensor(idx.reshape(-1), device=input.device)
    return own(_shape.reshape(input.index_select(0, it), (idx.shape[0], r)))


# ---------------------------------------------------------------------------------------------
# Tensor methods
# ---------------------------------------------------------------------------------------------
METHODS: dict = {
    "inner": inner, "vdot": vdot, "kron": kron,
    "cross": cross, "baddbmm": baddbmm, "addbmm": addbmm, "addmv": addmv, "addr": addr, "dist": dist,
    "baddbmm_": _inplace_op(baddbmm, "baddbmm_"), "addbmm_": _inplace_op(addbmm, "addbmm_"),
    "addmv_": _inplace_op(addmv, "addmv_"), "addr_": _inplace_op(addr, "addr_"),
    "addmm_": _inplace_op(_linalg.addmm, "addmm_"),
}
