"""More of torch.linalg composed of the decompositions and tensor ops (solve_triangular, cond, vander, tensorinv,
tensorsolve, torch.cholesky_solve / cholesky_inverse), and the ``out=`` keyword of the family's functions."""
from __future__ import annotations

import contextlib
import functools
import inspect
import math

from ..amp.autocast_mode import cast_inputs as _ac_cast, state as _ac, suspended as _ac_suspended
from .. import dtypes as _dt
from ..autograd.grad_mode import no_grad
from ..autograd.graph import Node
from ..tensor import Tensor
from ._out import write_out
from . import creation as _C, pointwise as _P, shape as _S
from ._decomp_composite import matrix_norm
from ._decomp_ops import _mT, _needs_grad, _record, check_float, check_matrix, inv_ex, solve, solve_ex, svdvals
from ._util import sum_to
from .linalg import matmul


def _keyword_aliases(fn) -> dict:
    """The keywords PyTorch's argument parser takes for ``fn``'s first two tensors where their names differ
    (``A=`` is ``input=`` or numpy's ``x=`` there, ``B=`` is ``other=``, ``b=`` or ``input2=``)."""
    names = [n for n, p in inspect.signature(fn).parameters.items() if p.kind is p.POSITIONAL_OR_KEYWORD][:2]
    aliases = {}
    for pos, alts in enumerate((("input", "x"), ("other", "b", "input2"))):
        if pos < len(names):
            aliases.update({a: names[pos] for a in alts if a not in names})
    return aliases


def _first_tensor(args: tuple):
    """The first tensor among ``args`` (or the first member of a leading list of tensors), else None."""
    a = args[0] if args else None
    return a[0] if isinstance(a, (list, tuple)) and a else a


def with_out(fn, name: str, out: bool = True):
    """``fn`` with PyTorch's ``out=`` keyword (the result, a tensor or a tuple of them, is written into ``out``)
    and PyTorch's keyword names of its tensor arguments; ``out=False``: the names only."""
    checked = name == "linalg.cross"  # (the one whose PyTorch kernel checks out against its inputs for overlap)
    aliases = _keyword_aliases(fn)

    @functools.wraps(fn)
    def wrapper(*args, out=None, **kwargs):
        if kwargs and len(args) < 2 and not aliases.keys().isdisjoint(kwargs):  # (a tensor passed by keyword)
            kwargs = {aliases.get(k, k): v for k, v in kwargs.items()}
        if out is not None and _ac.on and (off := _ac_suspended(_first_tensor(args))) is not None:
            with off:  # (an out= variant is on no autocast list: PyTorch runs it in its inputs' dtypes)
                return write_out(name, out, fn(*args, **kwargs), exact_dtype=True, inputs=args if checked else ())
        return write_out(name, out, fn(*args, **kwargs), exact_dtype=True, inputs=args if checked else ())

    @functools.wraps(fn)
    def named(*args, **kwargs):
        if kwargs and len(args) < 2 and not aliases.keys().isdisjoint(kwargs):
            kwargs = {aliases.get(k, k): v for k, v in kwargs.items()}
        return fn(*args, **kwargs)
    return wrapper if out else named


def _tri_mask(A: Tensor, upper: bool) -> Tensor:
    n, m = A.shape[-2], A.shape[-1]
    r = _C.arange(n, device=A.device).unsqueeze(-1)
    c = _C.arange(m, device=A.device).unsqueeze(0)
    return (c >= r) if upper else (c <= r)


def _triangular(A: Tensor, upper: bool, unitriangular: bool) -> Tensor:
    """A's triangle (the other one zeroed, its diagonal 1 with ``unitriangular``): what the solver reads."""
    T = _P.where(_tri_mask(A, upper), A, 0.0)
    if unitriangular:
        eye = _C.eye(A.shape[-1], dtype=A.dtype, device=A.device)
        T = T * (1 - eye) + eye
    return T


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False) -> Tensor:
    """X with A X = B (X A = B for left=False), reading only A's upper or lower triangle; no error for a zero on
    the diagonal (the result then holds inf/nan, as LAPACK's trsm)."""
    check_matrix("linalg.solve_triangular", A)
    if isinstance(B, Tensor) and B.dtype is not A.dtype and not B.dtype.is_complex:
        B = B.to(A.dtype)  # as PyTorch 2.13: B is solved in A's dtype (a float64 B with a float32 A gives float32)
    check_float("linalg.solve_triangular", B)
    if B.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 dimensions.")
    T = _triangular(A, upper, unitriangular)
    return solve_ex(T, B, left=left, _matrix=True, _api="linalg.solve_triangular").result


class CholeskySolveBackward0(Node):
    """PyTorch's cholesky_solve_backward: gB = cholesky_solve(gX, L) and the factor's gradient -(C + C^T) L
    (-L (C + C^T) for upper), C = gB X^T: a full matrix, as PyTorch's (it does not project it onto the triangle the
    solver reads, so a factor held as a plain parameter gets its other triangle's gradient too)."""
    __slots__ = ("upper", "sb", "sl")

    def backward(self, gX):
        B, L, X = self.saved()
        gB = cholesky_solve(gX, L, self.upper)
        c = matmul(gB, _mT(X))
        c = c + _mT(c)
        gL = -matmul(L, c) if self.upper else -matmul(c, L)
        return sum_to(gB, self.sb), sum_to(gL, self.sl)


def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:
    """torch.cholesky_solve: X with (L L^T) X = B from the Cholesky factor L (U^T U with upper=True)."""
    if _ac.on:  # autocast: on the CPU float32 list (one attribute check when off)
        B, L = _ac_cast("cholesky_solve", B, L)
    check_float("cholesky_solve", B)
    grad = _needs_grad(B, L)
    with no_grad() if grad else contextlib.nullcontext():
        Bd, Ld = (B.detach(), L.detach()) if grad else (B, L)
        if upper:
            X = solve_triangular(Ld, solve_triangular(_mT(Ld), Bd, upper=False), upper=True)
        else:
            X = solve_triangular(_mT(Ld), solve_triangular(Ld, Bd, upper=False), upper=True)
    if not grad:
        return X
    node = CholeskySolveBackward0()
    node.upper, node.sb, node.sl = bool(upper), tuple(B.shape), tuple(L.shape)
    (res,) = _record(node, (B, L), [(X._data, X.dtype)], X._be)
    node.save(B, L, res)
    return res


def cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:
    """torch.cholesky_inverse: (L L^T)^{-1} from the Cholesky factor L (U^T U with upper=True)."""
    if _ac.on:  # autocast: on the CPU float32 list (one attribute check when off)
        L, = _ac_cast("cholesky_inverse", L)
    check_matrix("cholesky_inverse", L)
    eye = _C.eye(L.shape[-1], dtype=L.dtype, device=L.device).expand(tuple(L.shape))
    if not _needs_grad(L):
        return cholesky_solve(eye, L, upper)
    with no_grad():
        inv = cholesky_solve(eye, L.detach(), upper)
    node = CholeskyInverseBackward0()
    node.upper = bool(upper)
    (res,) = _record(node, (L,), [(inv._data, inv.dtype)], inv._be)
    node.save(L, res)
    return res


class CholeskyInverseBackward0(Node):
    """PyTorch's cholesky_inverse_backward: -(X (g + g^T) X) L (-L (...) for upper), X the inverse: a full
    matrix, as cholesky_solve's."""
    __slots__ = ("upper",)

    def backward(self, g):
        L, X = self.saved()
        c = matmul(X, matmul(g + _mT(g), X))
        return (-matmul(L, c) if self.upper else -matmul(c, L)),


def cond(A: Tensor, p=None) -> Tensor:
    """The condition number of A in the norm ``p`` (None/2/-2: singular values; else norm(A) norm(A^-1), inf for a
    singular matrix)."""
    if _ac.on:  # autocast: on the CPU float32 list (one attribute check when off)
        A, = _ac_cast("linalg_cond", A)
    if isinstance(A, Tensor) and A.dtype in (_dt.float16, _dt.bfloat16):
        # PyTorch: the SVD orders reach the SVD kernel's dispatch, the others linalg.inv's dtype check
        check_float("linalg.svd" if p is None or p in (2, -2) else "linalg.inv", A)
    check_float("linalg.cond", A)
    if A.ndim < 2:
        raise RuntimeError("linalg.cond: The input tensor A must have at least 2 dimensions.")
    if p not in (None, 2, -2, "fro", "nuc", 1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    if isinstance(p, str):  # (PyTorch checks the shape of a string order first, of a number after the size)
        check_matrix(f"linalg.cond(ord={p})", A)
    if A.numel() == 0:  # PyTorch (numpy defines none): 0 for empty matrices, whatever their shape
        return _C.zeros(tuple(A.shape[:-2]), dtype=A.dtype, device=A.device)
    if p is None or p in (2, -2):
        s = svdvals(A)
        return s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
    check_matrix("linalg.cond", A)
    Ainv, info = inv_ex(A)
    r = matrix_norm(A, p) * matrix_norm(_P.where(_S.unsqueeze(_S.unsqueeze(info == 0, -1), -1), Ainv, 0.0), p)
    return _P.where(info == 0, r, math.inf)


def vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """(..., n) -> (..., n, N): the powers x^0, x^1, ..., x^(N-1) (increasing, as torch.linalg.vander)."""
    if x.dtype is _dt.bool_ or x.dtype is _dt.float16 or x.dtype is _dt.bfloat16:  # (PyTorch's check: no half)
        raise RuntimeError(f"linalg.vander supports floating point, complex, and integer tensors, but got "
                           f"{x.dtype._tname[:-6]}")
    if x.ndim == 0:  # (PyTorch: a 0-d x is one point)
        x = _S.unsqueeze(x, 0)
    N = x.shape[-1] if N is None else N
    if N <= 1:
        raise RuntimeError("N must be greater than 1.")
    cols = [_C.ones_like(x)]
    for _ in range(N - 1):
        cols.append(cols[-1] * x)
    return _S.stack(cols, -1)


def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """The inverse of A seen as a matrix from its first ``ind`` dims to the rest, reshaped to rest + first."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    if ind > A.ndim:  # (PyTorch's slice of the shape fails: Python's slice would give a 0-d A a 1x1 "inverse")
        raise RuntimeError(f"ArrayRef: invalid slice, N = {ind}; size = {A.ndim}")
    out_shape, in_shape = tuple(A.shape[ind:]), tuple(A.shape[:ind])
    rows = math.prod(out_shape)
    if math.prod(in_shape) != rows:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {rows} != {math.prod(in_shape)}")
    from ._decomp_ops import inv
    return inv(A.reshape(math.prod(in_shape), rows)).reshape(out_shape + in_shape)


def tensorsolve(A: Tensor, B: Tensor, dims=None) -> Tensor:
    """X with tensordot(A, X, X.ndim) = B (``dims``: A's dims moved to the end first)."""
    if dims is not None:
        nd = A.ndim
        dims = [d % nd for d in dims]
        A = _S.permute(A, [d for d in range(nd) if d not in dims] + dims)
    res_shape = tuple(A.shape[B.ndim:])
    n = math.prod(res_shape)
    if math.prod(tuple(B.shape)) != n:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           "prod(self.shape[:other.ndim]), but got " f"{n} != {math.prod(tuple(B.shape))}")
    return solve(A.reshape(n, n), B.reshape(n)).reshape(res_shape)
