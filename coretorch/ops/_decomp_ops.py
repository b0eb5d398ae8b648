"""The decompositions of coretorch.linalg on primitive kernels (inv, det, slogdet, solve, cholesky, qr, svd, eigh,
lstsq), with PyTorch's backward formulas (FunctionsManual.cpp) written with Tensor ops, so double backward works."""
from __future__ import annotations


import numpy as np

from .. import dtypes as _dt
from ..amp.autocast_mode import cast_inputs as _ac_cast, state as _ac
from ..autograd.grad_mode import no_grad, state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make
from . import creation as _C, indexing as _I, pointwise as _P, shape as _S
from ._own import own
from ._linalg_host import LinAlgError  # (defined with the host kernels, which raise it too)
from ._util import broadcast_shape, edge, return_type, sum_to
from .linalg import matmul



# ---- checks ---------------------------------------------------------------------------------------------------
# the ops whose PyTorch kernel has no half/bfloat16 variant and says so by its dispatch (NotImplementedError, named
# after the LAPACK-backed kernel) where the others check the dtype first (RuntimeError "Low precision dtypes ...")
LOW_PRECISION_KERNEL = {
    "linalg.det": "lu_cpu", "linalg.solve": "lu_cpu", "linalg.solve_ex": "lu_cpu", "linalg.cholesky": "cholesky_cpu",
    "linalg.cholesky_ex": "cholesky_cpu", "cholesky": "cholesky_cpu", "linalg.qr": "geqrf_cpu",
    "linalg.eigh": "linalg_eigh_cpu", "linalg.eigvalsh": "linalg_eigh_cpu", "linalg.svd": "linalg_svd_cpu",
    "linalg.svdvals": "linalg_svd_cpu", "linalg.solve_triangular": "triangular_solve_cpu",
    "cholesky_inverse": "cholesky_inverse_out_cpu", "cholesky_solve": "cholesky_solve_cpu",
    "linalg.lu_solve": "linalg.lu_solve_cpu"}


def check_float(op: str, A: Tensor) -> None:
    if not isinstance(A, Tensor):
        raise TypeError(f"{op}(): argument 'A' (position 1) must be Tensor, not {type(A).__name__}")
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {A.dtype._tname[:-6]}")
    if A.dtype not in (_dt.float32, _dt.float64):
        if op in LOW_PRECISION_KERNEL:
            raise NotImplementedError(f"\"{LOW_PRECISION_KERNEL[op]}\" not implemented for '{A.dtype._tname[:-6]}'")
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {A.dtype._tname[:-6]}")


def check_matrix(op: str, A: Tensor, square: bool = True, name: str = "A") -> None:
    check_float(op, A)
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor {name} must have at least 2 dimensions.")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: {name} must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")


def check_info(api: str, info: Tensor, kind: str) -> None:
    """Raise PyTorch's LinAlgError for the first failed batch member (``info`` from a *_ex kernel)."""
    if info.numel() > 1:  # one host read of whether any failed: a compiled step checks it again (the whole batch's
        from . import pointwise as _P, reduction as _Rd  # codes were a whole-array read, a graph break)
        if not _Rd.any(_P.ne(info, 0)).item():
            return
    arr = info._be.to_numpy(info._data)
    bad = np.flatnonzero(arr.reshape(-1))
    if not bad.size:
        return
    i, code = int(bad[0]), int(arr.reshape(-1)[bad[0]])
    where = f"{api}: (Batch element {i})" if arr.ndim else api
    if kind == "inv":
        msg = (f"{where}: The diagonal element {code} is zero, the inversion could not be completed because the "
               "input matrix is singular.")
    elif kind == "solve":
        msg = f"{where}: The solver failed because the input matrix is singular."
    else:
        msg = (f"{where}: The factorization could not be completed because the input is not positive-definite "
               f"(the leading minor of order {code} is not positive-definite).")
    raise LinAlgError(msg)


def _record(node: Node | None, inputs: tuple, outs: list, table) -> list:
    """Wrap the output arrays [(array, dtype)], recording ``node`` (None: no graph) for every one of them."""
    if node is None:
        return [_make(a, d, table) for a, d in outs]
    node.next_functions = tuple(edge(t) for t in inputs)
    if len(outs) > 1:
        node._out_meta = tuple((a.shape, d, table) for a, d in outs)
    return [_make(a, d, table, node, out_nr=k) for k, (a, d) in enumerate(outs)]


def _needs_grad(*ts) -> bool:
    return _gs.enabled and any(t._rg for t in ts)


def _eye_like(A: Tensor) -> Tensor:
    return _C.eye(A.shape[-1], dtype=A.dtype, device=A.device)


def _tril_mask(n: int, A: Tensor, k: int = 0) -> Tensor:
    return _C.tensor(np.tri(n, n, k), dtype=A.dtype, device=A.device)


def _mT(x: Tensor) -> Tensor:
    return _S.transpose(x, -2, -1)


def diag_embed(v: Tensor) -> Tensor:
    """(..., n) -> (..., n, n) with v on the diagonal (a differentiable composite)."""
    return _P.mul(_S.unsqueeze(v, -1), _C.eye(v.shape[-1], dtype=v.dtype, device=v.device))


def diag(M: Tensor) -> Tensor:
    """(..., n, n) -> its diagonal (..., n) (a differentiable composite)."""
    return (M * _C.eye(M.shape[-1], dtype=M.dtype, device=M.device)).sum(-1)


# ---- inverse ---------------------------------------------------------------------------------------------------
class LinalgInvExBackward0(Node):
    def backward(self, g):
        (inv,) = self.saved()
        iT = _mT(inv)
        return (-matmul(iT, matmul(g, iT)),)


def inv_ex(A: Tensor, *, check_errors: bool = False):
    """:func:`inv` returning ``(inverse, info)`` instead of raising (``info`` 0 when invertible)."""
    if _ac.on:  # autocast: on the CPU float32 list (one attribute check when off)
        A, = _ac_cast("linalg_inv_ex", A)
    check_matrix("linalg.inv_ex", A)
    table = A._be
    x, info = table.linalg_inv_ex(A._data)
    infot = _make(info, _dt.int32, table)
    if check_errors:
        check_info("linalg.inv_ex", infot, "inv")
    node = LinalgInvExBackward0() if _needs_grad(A) else None
    (res,) = _record(node, (A,), [(x, A.dtype)], table)
    if node is not None:
        node.save(res)
    return return_type("linalg_inv_ex", ("inverse", "info"))(res, infot)


def inv(A: Tensor) -> Tensor:
    """The inverse of a square matrix (or batch ``(*, n, n)``); raises ``LinAlgError`` when singular."""
    if _ac.on:  # autocast: on the CPU float32 list (one attribute check when off)
        A, = _ac_cast("linalg_inv", A)
    check_matrix("linalg.inv", A)
    res, info = inv_ex(A)
    check_info("linalg.inv", info, "inv")
    return res


# ---- solve -----------------------------------------------------------------------------------------------------
class LinalgSolveExBackward0(Node):
    __slots__ = ("sa", "sb")

    def backward(self, g):
        A, X = self.saved()
        gB = solve(_mT(A), g)
        gA = -matmul(gB, _mT(X))
        return sum_to(gA, self.sa), sum_to(gB, self.sb)


def _vector_rhs(A: Tensor, B: Tensor) -> bool:
    """PyTorch's rule: B is a (batch of) vector(s) when it is 1-D or has the shape of A without its last dim."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False, _matrix: bool = False,
             _api: str = "linalg.solve"):
    """:func:`solve` returning ``(result, info)`` instead of raising (``info`` 0 when ``A`` is invertible).
    ``_matrix``: B is a matrix whatever its shape (solve_triangular's, which has no vector case)."""
    check_matrix(_api, A)
    check_float(_api, B)
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{_api}: Expected A and B to have the same dtype, but found A of type "
                           f"{A.dtype._tname[:-6]} and B of type {B.dtype._tname[:-6]} instead")
    if not left:  # X A = B  <=>  A^T X^T = B^T
        if not _matrix and _vector_rhs(A, B):
            raise RuntimeError("linalg.solve: Vector broadcasting of the left hand side is not supported for "
                               "left=False. In this case linalg.solve is equivalent to B / A.squeeze(-1)")
        if B.ndim < 2 or B.shape[-1] != A.shape[-1]:  # (checked as given: B^T has no vector case either)
            raise RuntimeError(f"{_api}: Incompatible shapes of A and B for the equation XA = B "
                               f"({A.shape[-2]}x{A.shape[-1]} and {'x'.join(str(d) for d in B.shape[-2:])})")
        r = solve_ex(_mT(A), _mT(B), check_errors=check_errors, _matrix=True, _api=_api)
        return return_type("linalg_solve_ex", ("result", "info"))(_mT(r.result), r.info)
    vec = not _matrix and _vector_rhs(A, B)
    Bm = _S.unsqueeze(B, -1) if vec else B
    n = A.shape[-1]
    if Bm.ndim < 2 or Bm.shape[-2] != n:
        raise RuntimeError(f"{_api}: Incompatible shapes of A and B for the equation AX = B "
                           f"({A.shape[-2]}x{A.shape[-1]} and {'x'.join(str(d) for d in Bm.shape[-2:])})")
    batch = broadcast_shape(tuple(A.shape[:-2]), tuple(Bm.shape[:-2]), "linalg.solve")
    table = A._be
    xa = A._data if tuple(A.shape[:-2]) == batch else table.expand(A._data, batch + (n, n))
    xb = Bm._data if tuple(Bm.shape[:-2]) == batch else table.expand(Bm._data, batch + tuple(Bm.shape[-2:]))
    x, info = table.linalg_solve_ex(xa, xb)
    infot = _make(info, _dt.int32, table)
    if check_errors:
        check_info("torch.linalg.solve_ex", infot, "solve")
    node = LinalgSolveExBackward0() if _needs_grad(A, Bm) else None
    (X,) = _record(node, (A, Bm), [(x, A.dtype)], table)
    if node is not None:
        node.sa, node.sb = tuple(A.shape), tuple(Bm.shape)
        node.save(A, X)
    if vec:
        X = own(_S.squeeze(X, -1))  # (not a view of the matrix solve's temporary: PyTorch's is new)
    return return_type("linalg_solve_ex", ("result", "info"))(X, infot)


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """The solution ``X`` of ``A @ X = B`` (or ``X @ A = B`` with ``left=False``).

    Args:
        A (Tensor): shape ``(*, n, n)``, invertible.
        B (Tensor): shape ``(*, n, k)`` or ``(*, n)``; batch dimensions broadcast.
    """
    if _ac.on:  # autocast: on the CPU float32 list (one attribute check when off)
        A, B = _ac_cast("linalg_solve", A, B)
    X, info = solve_ex(A, B, left=left)
    check_info("torch.linalg.solve", info, "solve")
    return X


# ---- determinants ----------------------------------------------------------------------------------------------
def _prod_others(S: Tensor) -> Tensor:
    """prod_{j != i} S_j for each i (finite with zeros in S: the products of the other factors, no division)."""
    n = S.shape[-1]
    eye = _C.eye(n, dtype=S.dtype, device=S.device)
    M = _S.unsqueeze(S, -2) * (1 - eye) + eye  # row i: S with S_i replaced by 1
    return M.prod(-1)


def _det_grad_svd(A: Tensor, g: Tensor) -> Tensor:
    """g * d det(A) / dA through A = U diag(S) Vh (valid for singular A): U diag(g det(U) det(Vh) prod_{j!=i} S_j)
    Vh, as PyTorch's linalg_det_backward does for singular inputs."""
    U, S, Vh = svd(A, full_matrices=False)
    with no_grad():
        sgn = det(U.detach()) * det(Vh.detach())
    d = _S.unsqueeze(g * sgn, -1) * _prod_others(S)
    return matmul(U * _S.unsqueeze(d, -2), Vh)


class LinalgDetBackward0(Node):
    def backward(self, g):
        A, d = self.saved()
        if not _gs.enabled:
            # first order: the SVD formula is accurate for every matrix, singular or nearly so (where g det A^{-T}
            # multiplies a tiny det by a huge, inaccurate inverse)
            return (_det_grad_svd(A, g),)
        # double backward: g det A^{-T} through the differentiable solve, as PyTorch (the SVD's backward would divide
        # by zero at repeated singular values); exactly singular matrices take the SVD formula
        gd = _S.unsqueeze(_S.unsqueeze(g * d, -1), -1)
        X, info = solve_ex(_mT(A), gd * _eye_like(A))
        if bool((info != 0).any()):
            return (_det_grad_svd(A, g),)
        return (X,)


def det(A: Tensor) -> Tensor:
    """The determinant of a square matrix or of each matrix of a batch ``(*, n, n)``; differentiable."""
    check_matrix("linalg.det", A)
    table = A._be
    node = LinalgDetBackward0() if _needs_grad(A) else None
    (d,) = _record(node, (A,), [(table.linalg_det(A._data), A.dtype)], table)
    if node is not None:
        node.save(A, d)
    return d


class LinalgSlogdetBackward0(Node):
    def backward(self, g_logabs):
        (A,) = self.saved()
        return (_S.unsqueeze(_S.unsqueeze(g_logabs, -1), -1) * _mT(inv(A)),)


def slogdet(A: Tensor, *, _name: str = "linalg_slogdet", _op: str = "linalg.slogdet"):
    """The sign and the log of the absolute value of the determinant: a named tuple ``(sign, logabsdet)``."""
    check_matrix(_op, A)
    table = A._be
    sign, logabs = table.linalg_slogdet(A._data)
    node = LinalgSlogdetBackward0() if _needs_grad(A) else None
    (la,) = _record(node, (A,), [(logabs, A.dtype)], table)
    if node is not None:
        node.save(A)
    return return_type(_name, ("sign", "logabsdet"))(_make(sign, A.dtype, table), la)


def logdet(input: Tensor) -> Tensor:
    """log det(A): NaN where det < 0, -inf where det == 0 (as torch.logdet)."""
    check_matrix("logdet", input)
    sign, logabs = slogdet(input, _op="logdet")
    return _P.where(_P.eq(sign, -1), float("nan"), logabs)


# ---- cholesky --------------------------------------------------------------------------------------------------
class LinalgCholeskyExBackward0(Node):
    __slots__ = ("upper",)

    def backward(self, gL):
        (L,) = self.saved()
        if self.upper:
            L, gL = _mT(L), _mT(gL)
        n = L.shape[-1]
        Linv = inv(L)
        phi = matmul(_mT(L), gL) * (_tril_mask(n, L) - 0.5 * _eye_like(L))  # tril with the diagonal halved
        gA = matmul(matmul(_mT(Linv), phi), Linv)
        return ((gA + _mT(gA)) * 0.5,)


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False,
                _api: str = "linalg.cholesky_ex"):
    """:func:`cholesky` returning ``(L, info)`` instead of raising: ``info`` is 0, or the order of the leading
    minor that is not positive definite (int32, one per matrix).
    """
    if _ac.on:  # autocast: on the CPU float32 list (one attribute check when off)
        A, = _ac_cast("linalg_cholesky_ex", A)
    check_matrix(_api, A)
    table = A._be
    L, info = table.linalg_cholesky_ex(A._data, bool(upper))
    infot = _make(info, _dt.int32, table)
    if check_errors:
        check_info(_api, infot, "cholesky")
    node = LinalgCholeskyExBackward0() if _needs_grad(A) else None
    (Lt,) = _record(node, (A,), [(L, A.dtype)], table)
    if node is not None:
        node.upper = bool(upper)
        node.save(Lt)
    return return_type("linalg_cholesky_ex", ("L", "info"))(Lt, infot)


def cholesky(A: Tensor, *, upper: bool = False, _api: str = "linalg.cholesky") -> Tensor:
    """The Cholesky factor ``L`` of a symmetric positive-definite matrix, ``A = L @ L.mT`` (or ``U`` with ``upper``).

    Args:
        A (Tensor): shape ``(*, n, n)``, float.
        upper (bool): return the upper factor ``U = L.mT`` (default False).

    Raises ``LinAlgError`` (a RuntimeError) when ``A`` is not positive definite.
    """
    L, info = cholesky_ex(A, upper=upper, _api=_api)
    check_info(_api, info, "cholesky")
    return L


# ---- qr --------------------------------------------------------------------------------------------------------
def _qr_backward_tall(gQ: Tensor, gR: Tensor, Q: Tensor, R: Tensor) -> Tensor:
    """m >= n, reduced: gA = (gQ + Q copyltu(M)) R^{-T}, M = R gR^T - gQ^T Q (copyltu: the lower triangle
    mirrored onto the upper one)."""
    n = R.shape[-1]
    M = matmul(R, _mT(gR)) - matmul(_mT(gQ), Q)
    low = M * _tril_mask(n, M, -1)
    sym = low + _mT(low) + diag_embed(diag(M))
    return _mT(solve(R, _mT(gQ + matmul(Q, sym))))


class LinalgQrBackward0(Node):
    __slots__ = ("mode",)

    def backward(self, gQ, gR):
        if self.mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
                               "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through "
                               "linalg.qr.")
        Q, R = self.saved()
        m, n = Q.shape[-2], R.shape[-1]
        if self.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
        if m >= n:
            return (_qr_backward_tall(gQ, gR, Q, R),)
        # m < n: A = [X | Y] with X = Q U (square), Y = Q V: Y's gradient is Q gV; V = Q^T Y feeds back into gQ
        U, gU = _I.narrow(R, -1, 0, m), _I.narrow(gR, -1, 0, m)
        V, gV = _I.narrow(R, -1, m, n - m), _I.narrow(gR, -1, m, n - m)
        gX = _qr_backward_tall(gQ + matmul(matmul(Q, V), _mT(gV)), gU, Q, U)
        return (_S.cat([gX, matmul(Q, gV)], -1),)


def qr(A: Tensor, mode: str = "reduced"):
    """The QR decomposition ``A = Q @ R``: a named tuple ``(Q, R)``.

    Args:
        A (Tensor): shape ``(*, m, n)``.
        mode (str): ``"reduced"`` (default: ``Q`` is ``(m, k)``, ``k = min(m, n)``), ``"complete"`` or ``"r"``.
    """
    if _ac.on:  # autocast: on the CPU float32 list (one attribute check when off)
        A, = _ac_cast("linalg_qr", A)
    check_matrix("linalg.qr", A, square=False)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           "or 'complete'")
    table = A._be
    q, r = table.linalg_qr(A._data, mode)
    node = LinalgQrBackward0() if _needs_grad(A) else None
    Q, R = _record(node, (A,), [(q, A.dtype), (r, A.dtype)], table)
    if node is not None:
        node.mode = mode
        node.save(Q, R)
    return return_type("linalg_qr", ("Q", "R"))(Q, R)


# ---- svd -------------------------------------------------------------------------------------------------------
def _skew(X: Tensor) -> Tensor:
    return X - _mT(X)


class LinalgSvdBackward0(Node):
    __slots__ = ("full",)
    _materialize = False  # an output without a gradient gets None (svdvals: only S's)

    def backward(self, gU, gS, gVh):
        U, S, Vh = self.saved()
        k = S.shape[-1]
        m, n = U.shape[-2], Vh.shape[-1]
        if self.full:  # only the first k columns of U / rows of Vh are determined by A
            U, Vh = _I.narrow(U, -1, 0, k), _I.narrow(Vh, -2, 0, k)
            gU = None if gU is None else _I.narrow(gU, -1, 0, k)
            gVh = None if gVh is None else _I.narrow(gVh, -2, 0, k)
        if gU is None and gVh is None:
            return (matmul(U * _S.unsqueeze(gS, -2), Vh) if gS is not None else None,)
        S2 = S * S
        E = _S.unsqueeze(S2, -2) - _S.unsqueeze(S2, -1) + _C.eye(k, dtype=S.dtype, device=S.device)
        if gU is not None and gVh is not None:
            gA = (_skew(matmul(_mT(U), gU)) * _S.unsqueeze(S, -2)
                  + _S.unsqueeze(S, -1) * _skew(matmul(Vh, _mT(gVh)))) / E
        elif gU is not None:
            gA = _skew(matmul(_mT(U), gU)) / E * _S.unsqueeze(S, -2)
        else:
            gA = _S.unsqueeze(S, -1) * (_skew(matmul(Vh, _mT(gVh))) / E)
        if gS is not None:
            gA = gA + diag_embed(gS)
        if m > n and gU is not None:  # the component of gU outside U's column space
            gUSinv = gU / _S.unsqueeze(S, -2)
            gA = matmul(matmul(U, gA) + gUSinv - matmul(U, matmul(_mT(U), gUSinv)), Vh)
        elif m < n and gVh is not None:
            SinvgVh = gVh / _S.unsqueeze(S, -1)
            gA = matmul(U, matmul(gA, Vh) + SinvgVh - matmul(matmul(SinvgVh, _mT(Vh)), Vh))
        else:
            gA = matmul(matmul(U, gA), Vh)
        return (gA,)


def svd(A: Tensor, full_matrices: bool = True, *, driver=None):
    """The singular value decomposition ``A = U @ diag(S) @ Vh``: a named tuple ``(U, S, Vh)``.

    Args:
        A (Tensor): shape ``(*, m, n)``.
        full_matrices (bool): full ``U`` ``(m, m)`` and ``Vh`` ``(n, n)`` (default True), else reduced.
    """
    if _ac.on:  # autocast: on the CPU float32 list (one attribute check when off)
        A, = _ac_cast("linalg_svd", A)
    check_matrix("linalg.svd", A, square=False)
    table = A._be
    u, s, vh = table.linalg_svd(A._data, bool(full_matrices), True)
    node = LinalgSvdBackward0() if _needs_grad(A) else None
    U, S, Vh = _record(node, (A,), [(u, A.dtype), (s, A.dtype), (vh, A.dtype)], table)
    if node is not None:
        node.full = bool(full_matrices) and A.shape[-1] != A.shape[-2]
        node.save(U, S, Vh)
    return return_type("linalg_svd", ("U", "S", "Vh"))(U, S, Vh)


def svdvals(A: Tensor, *, driver=None) -> Tensor:
    """The singular values of a matrix (or batch), in descending order."""
    if _ac.on:  # autocast: on the CPU float32 list (one attribute check when off)
        A, = _ac_cast("linalg_svdvals", A)
    check_matrix("linalg.svdvals", A, square=False)
    if _needs_grad(A):
        return svd(A, full_matrices=False).S
    table = A._be
    return _make(table.linalg_svd(A._data, False, False)[1], A.dtype, table)


# ---- eigh ------------------------------------------------------------------------------------------------------
class LinalgEighBackward0(Node):
    _materialize = False

    def backward(self, gL, gV):
        L, V = self.saved()
        if gV is None:
            return (matmul(V * _S.unsqueeze(gL, -2), _mT(V)) if gL is not None else None,)
        n = L.shape[-1]
        E = _S.unsqueeze(L, -2) - _S.unsqueeze(L, -1) + _C.eye(n, dtype=L.dtype, device=L.device)
        gA = _skew(matmul(_mT(V), gV)) * 0.5 / E  # projected onto the symmetric matrices
        if gL is not None:
            gA = gA + diag_embed(gL)
        return (matmul(matmul(V, gA), _mT(V)),)


def _uplo(op: str, UPLO: str) -> str:
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"{op}: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO.upper()


def eigh(A: Tensor, UPLO: str = "L"):
    """Eigenvalues (ascending) and eigenvectors of a symmetric matrix: a named tuple ``(eigenvalues, eigenvectors)``.

    Args:
        A (Tensor): shape ``(*, n, n)``; only the triangle ``UPLO`` is read.
        UPLO (str): ``"L"`` (default) or ``"U"``.
    """
    if _ac.on:  # autocast: on the CPU float32 list (one attribute check when off)
        A, = _ac_cast("linalg_eigh", A)
    check_matrix("linalg.eigh", A)
    table = A._be
    lam, v = table.linalg_eigh(A._data, _uplo("linalg.eigh", UPLO), True)
    node = LinalgEighBackward0() if _needs_grad(A) else None
    L, V = _record(node, (A,), [(lam, A.dtype), (v, A.dtype)], table)
    if node is not None:
        node.save(L, V)
    return return_type("linalg_eigh", ("eigenvalues", "eigenvectors"))(L, V)


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """The eigenvalues (ascending) of a symmetric matrix (``eigh`` without the vectors)."""
    if _ac.on:  # autocast: on the CPU float32 list (one attribute check when off)
        A, = _ac_cast("linalg_eigvalsh", A)
    check_matrix("linalg.eigvalsh", A)
    if _needs_grad(A):
        return eigh(A, UPLO).eigenvalues
    table = A._be
    return _make(table.linalg_eigh(A._data, _uplo("linalg.eigvalsh", UPLO), False)[0], A.dtype, table)


# ---- pinv, matrix_rank, lstsq ----------------------------------------------------------------------------------
def _tolerance(smax: Tensor, m: int, n: int, dt, atol, rtol, rcond=None):
    """max(atol, rtol * smax) with PyTorch's defaults (rtol = eps * max(m, n) when neither is given, else 0)."""
    if rcond is not None:
        atol, rtol = None, rcond
    if rtol is None:
        rtol = float(np.finfo(dt.np).eps) * max(m, n) if atol is None else 0.0
    tol = smax * (_S.unsqueeze(rtol, -1) if isinstance(rtol, Tensor) and rtol.ndim else rtol)
    if atol is not None:
        tol = _P.maximum(tol, atol if isinstance(atol, Tensor) and atol.ndim == 0 else
                         _S.unsqueeze(atol, -1) if isinstance(atol, Tensor) else _C.full_like(tol, float(atol)))
    return tol


def pinv_backward(g: Tensor, pinvA: Tensor, A: Tensor) -> Tensor:
    """PyTorch's pinv_backward (FunctionsManual.cpp), real case, with the smaller products first."""
    m, n = A.shape[-2], A.shape[-1]
    pinvAh, gh = _mT(pinvA), _mT(g)
    if m <= n:
        K = matmul(gh, pinvA)
        KpinvAh = matmul(K, pinvAh)
        return (-_mT(matmul(pinvA, K)) + KpinvAh - matmul(matmul(A, pinvA), KpinvAh)
                + matmul(matmul(pinvAh, pinvA), gh - matmul(K, A)))
    K = matmul(pinvA, gh)
    pinvAhK = matmul(pinvAh, K)
    return (-_mT(matmul(K, pinvA)) + matmul(matmul(gh - matmul(A, K), pinvA), pinvAh) + pinvAhK
            - matmul(matmul(pinvAhK, pinvA), A))


class LinalgPinvBackward0(Node):
    def backward(self, g):
        A, P = self.saved()
        return (pinv_backward(g, P, A),)


def _scalar_tol(x):
    return x if x is None or isinstance(x, Tensor) else float(x)


def pinv(A: Tensor, rcond=None, hermitian: bool = False, *, atol=None, rtol=None) -> Tensor:
    """The Moore-Penrose pseudo-inverse of a matrix (or batch), through the SVD; singular values under the
    tolerance are dropped."""
    check_matrix("linalg.pinv", A, square=False)
    m, n = A.shape[-2], A.shape[-1]
    with no_grad():
        Ad = A.detach()
        if hermitian and A.numel() == 0:  # (PyTorch returns early for empty input, whatever its shape)
            P = _C.zeros(tuple(A.shape[:-2]) + (n, m), dtype=A.dtype, device=A.device)
        elif hermitian:
            lam, V = eigh(Ad)
            tol = _tolerance(lam.abs().amax(-1, keepdim=True), m, n, A.dtype, _scalar_tol(atol), _scalar_tol(rtol),
                             _scalar_tol(rcond))
            keep = lam.abs() > tol
            inv_s = _P.where(keep, 1 / _P.where(keep, lam, 1.0), 0.0)
            P = matmul(V * _S.unsqueeze(inv_s, -2), _mT(V))
        else:
            U, S, Vh = svd(Ad, full_matrices=False)
            smax = S.amax(-1, keepdim=True) if S.shape[-1] else S.sum(-1, keepdim=True)
            tol = _tolerance(smax, m, n, A.dtype, _scalar_tol(atol), _scalar_tol(rtol), _scalar_tol(rcond))
            keep = S > tol
            inv_s = _P.where(keep, 1 / _P.where(keep, S, 1.0), 0.0)
            P = matmul(_mT(Vh) * _S.unsqueeze(inv_s, -2), _mT(U))
    if not _needs_grad(A):
        return P
    node = LinalgPinvBackward0()
    (res,) = _record(node, (A,), [(P._data, A.dtype)], A._be)
    node.save(A, res)
    return res


def matrix_rank(A: Tensor, tol=None, hermitian: bool = False, *, atol=None, rtol=None) -> Tensor:
    """The numerical rank of a matrix (or batch): the number of singular values above the tolerance."""
    if _ac.on:  # autocast: on the CPU float32 list (one attribute check when off)
        A, = _ac_cast("linalg_matrix_rank", A)
    check_matrix("linalg.matrix_rank", A, square=False)
    m, n = A.shape[-2], A.shape[-1]
    with no_grad():
        s = eigvalsh(A).abs() if hermitian and A.numel() else svdvals(A)  # (an empty A: rank 0, any shape)
        smax = s.amax(-1, keepdim=True) if s.shape[-1] else s.sum(-1, keepdim=True)
        if tol is not None:  # the legacy tol: an absolute tolerance
            atol, rtol = tol, 0.0
        t = _tolerance(smax, m, n, A.dtype, _scalar_tol(atol), _scalar_tol(rtol))
        return (s > t).sum(-1)


class LinalgLstsqBackward0(Node):
    __slots__ = ("sa", "sb")

    def backward(self, gX):
        A, B = self.saved()
        P = pinv(A)
        gA = pinv_backward(matmul(gX, _mT(B)), P, A)
        gB = matmul(_mT(P), gX)
        return sum_to(gA, self.sa), sum_to(gB, self.sb)


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A: Tensor, B: Tensor, rcond=None, *, driver=None):
    """The least-squares solution ``X`` of ``A @ X = B``: a named tuple ``(solution, residuals, rank,
    singular_values)``.

    Args:
        A (Tensor): shape ``(*, m, n)``.
        B (Tensor): shape ``(*, m, k)``.
        rcond (float, optional): cut-off for small singular values.
        driver (str, optional): accepted for compatibility.
    """
    op = "torch.linalg.lstsq"
    if not isinstance(A, Tensor) or not isinstance(B, Tensor):
        raise TypeError("linalg.lstsq(): arguments 'A' and 'B' must be Tensors")
    if _ac.on:  # autocast: on the CPU float32 list (one attribute check when off)
        A, B = _ac_cast("linalg_lstsq", A, B)
    if A.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    if B.ndim < 1:
        raise RuntimeError(f"{op}: other must have at least 1 dimension.")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{op}: Expected input and other to have the same dtype, but got input's dtype "
                           f"{A.dtype._tname[:-6]} and other's dtype {B.dtype._tname[:-6]}")
    check_float(op, A)
    driver = "gelsy" if driver is None else driver
    if driver not in _DRIVERS:
        raise RuntimeError(f"{op}: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if B.ndim > A.ndim:
        raise RuntimeError(f"{op}: input.dim() must be greater or equal to other.dim() and (input.dim() - "
                           "other.dim()) <= 1")
    vec = _vector_rhs(A, B)  # (PyTorch's rule: a (4, 3) B against a (1, 3, 3) A is a 4 x 3 matrix, not 4 vectors)
    m, n = A.shape[-2], A.shape[-1]
    if vec and B.shape[-1] != m:
        raise RuntimeError(f"{op}: input.size(-2) should match other.size(-1)")
    Bm = _S.unsqueeze(B, -1) if vec else B
    if not vec and (Bm.ndim < 2 or Bm.shape[-2] != m):
        raise RuntimeError(f"{op}: input.size(-2) should match other.size(-2)")
    batch = broadcast_shape(tuple(A.shape[:-2]), tuple(Bm.shape[:-2]), "torch.linalg.lstsq")
    table = A._be
    xa = A._data if tuple(A.shape[:-2]) == batch else table.expand(A._data, batch + (m, n))
    xb = Bm._data if tuple(Bm.shape[:-2]) == batch else table.expand(Bm._data, batch + tuple(Bm.shape[-2:]))
    eps = float(np.finfo(A.dtype.np).eps)  # rcond < 0: LAPACK's machine precision
    rc = eps * max(m, n) if rcond is None else eps if rcond < 0 else float(rcond)
    x, rank, sv = table.linalg_lstsq(xa, xb, rc)
    node = LinalgLstsqBackward0() if _needs_grad(A, Bm) else None
    (X,) = _record(node, (A, Bm), [(x, A.dtype)], table)
    if node is not None:
        node.sa, node.sb = tuple(A.shape), tuple(Bm.shape)
        node.save(A, Bm)
    rank_t = _make(rank, _dt.int64, table)
    empty = _C.empty((0,), dtype=A.dtype, device=A.device)
    # residuals: ||A X - B||^2 per column where the driver's LAPACK routine leaves them (a vector B keeps their
    # last dim of 1, as PyTorch).  Differentiable in A and B as PyTorch's: X is detached because at the least-squares
    # optimum the residuals are stationary in X (A^T (A X - B) = 0), so only the explicit A and B terms remain
    full = driver == "gels" or (driver in ("gelsd", "gelss") and bool((rank_t == n).all()))
    res = ((matmul(A, X.detach()) - Bm) ** 2).sum(-2) if m > n and full else empty
    if vec:
        X = own(_S.squeeze(X, -1))
    return return_type("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))(
        X, res, rank_t if driver != "gels" else _C.empty((0,), dtype=_dt.int64, device=A.device),
        _make(sv, A.dtype, table) if driver in ("gelsd", "gelss") else empty)
