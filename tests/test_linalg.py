"""coretorch.linalg beyond the OpCase table: PyTorch's errors and messages, the *_ex infos, named tuple fields,
lstsq's fields per driver, norms of every ord against numpy.linalg.norm, matrix_exp against scipy, gradients at
singular matrices, on every installed device."""
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.linalg

import coretorch as torch
from coretorch.autograd import gradcheck, gradgradcheck

L = torch.linalg
INF = float("inf")


def t(a, device, dtype=torch.float64, **kw):
    return torch.tensor(np.asarray(a), dtype=dtype, device=device, **kw)


def host(x):
    return x.detach().cpu().numpy()


# ---- errors ------------------------------------------------------------------------------------------------------
def test_linalg_error_is_runtime_error():
    assert issubclass(L.LinAlgError, RuntimeError)


def test_inv_singular_message(device):
    with pytest.raises(L.LinAlgError, match=r"^linalg.inv: The diagonal element 2 is zero, the inversion could not "
                                            r"be completed because the input matrix is singular.$"):
        L.inv(t([[1.0, 2.0], [2.0, 4.0]], device))
    batch = t([np.eye(2), [[1.0, 2.0], [2.0, 4.0]]], device)
    with pytest.raises(L.LinAlgError, match=r"linalg.inv: \(Batch element 1\): The diagonal element 2 is zero"):
        torch.inverse(batch)


def test_inv_ex_info(device):
    batch = t([np.eye(2) * 2, [[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [0.0, 0.0]]], device)
    inverse, info = L.inv_ex(batch)
    assert info.dtype is torch.int32 and info.device.type == device
    assert host(info).tolist() == [0, 2, 1]
    np.testing.assert_allclose(host(inverse)[0], np.eye(2) / 2)
    with pytest.raises(L.LinAlgError, match=r"\(Batch element 1\)"):
        L.inv_ex(batch, check_errors=True)


def test_solve_singular(device):
    A = t([[1.0, 2.0], [2.0, 4.0]], device)
    with pytest.raises(L.LinAlgError, match="^torch.linalg.solve: The solver failed because the input matrix is "
                                            "singular.$"):
        L.solve(A, t([1.0, 2.0], device))
    res, info = L.solve_ex(A, t([1.0, 2.0], device))
    assert host(info).tolist() == 2 and res.shape == (2,)
    with pytest.raises(RuntimeError, match="Vector broadcasting of the left hand side is not supported"):
        L.solve(A, t([1.0, 2.0], device), left=False)
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        L.solve(t(np.eye(3), device), t(np.ones((2, 1)), device))


def test_cholesky_not_positive_definite(device):
    A = t(np.diag([1.0, -1.0, 1.0]), device)
    msg = (r"^linalg.cholesky: The factorization could not be completed because the input is not positive-definite "
           r"\(the leading minor of order 2 is not positive-definite\).$")
    with pytest.raises(L.LinAlgError, match=msg):
        L.cholesky(A)
    with pytest.raises(L.LinAlgError, match=r"linalg.cholesky: \(Batch element 1\): .* order 1 is not"):
        L.cholesky(t([np.eye(3), -np.eye(3)], device), upper=True)
    Lf, info = L.cholesky_ex(t([np.eye(3), np.diag([1.0, 1.0, 0.0]), np.diag([2.0, -1.0, 1.0])], device))
    assert host(info).tolist() == [0, 3, 2]
    np.testing.assert_allclose(host(Lf)[0], np.eye(3))


@pytest.mark.parametrize("fn", [L.inv, L.det, L.slogdet, L.cholesky, L.eigh, L.eigvalsh, L.matrix_exp,
                                lambda a: L.matrix_power(a, 2)])
def test_non_square_and_1d(fn, device):
    with pytest.raises(RuntimeError, match="must be batches of square matrices, but they are 2 by 3 matrices"):
        fn(t(np.ones((2, 3)), device))
    with pytest.raises(RuntimeError, match="must have at least 2 dimensions"):
        fn(t(np.ones(3), device))


@pytest.mark.parametrize("fn", [L.inv, L.det, L.svd, L.qr, L.cholesky, L.pinv, L.matrix_exp, L.svdvals])
def test_integer_and_half_inputs(fn, device):
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. Got Long"):
        fn(torch.ones(3, 3, dtype=torch.int64, device=device))
    if device == "cpu":
        # (PyTorch: the LAPACK-backed kernels' dispatch raises NotImplementedError "lu_cpu"/"linalg_svd_cpu"/...
        # "not implemented for 'Half'", a RuntimeError subclass; inv/pinv check the dtype first)
        with pytest.raises(RuntimeError, match="Low precision dtypes not supported. Got Half|_cpu\" not implemented "
                                               "for 'Half'"):
            fn(torch.ones(3, 3, dtype=torch.float16))


def test_non_finite_inputs(device):
    nan = t([[1.0, float("nan")], [0.0, 1.0]], device)
    with pytest.raises(L.LinAlgError, match="^linalg.svd: The algorithm failed to converge because the input matrix "
                                            "contained non-finite values.$"):
        L.svd(nan)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NaN determinants come quietly
        assert np.isnan(float(L.det(nan.mT * float("nan"))))


def test_misc_argument_errors(device):
    A = t(np.eye(3), device)
    with pytest.raises(RuntimeError, match="qr received unrecognized mode 'full'"):
        L.qr(A, mode="full")
    with pytest.raises(RuntimeError, match="UPLO"):
        L.eigh(A, UPLO="X")
    with pytest.raises(RuntimeError, match="driver"):
        L.lstsq(A, A, driver="gelsx")
    with pytest.raises(RuntimeError, match="expected at least 2 tensors"):
        L.multi_dot([A])
    with pytest.raises(RuntimeError, match=r"tensors 0 and 1 with shapes \[3, 3\] and \[2, 2\] cannot be multiplied"):
        L.multi_dot([A, t(np.eye(2), device)])
    with pytest.raises(RuntimeError, match="tensor 1 must be 2D but got 1D"):
        L.multi_dot([A, t(np.ones(3), device), A])
    with pytest.raises(RuntimeError, match="must have length 3"):
        L.cross(t(np.ones((2, 4)), device), t(np.ones((2, 4)), device))
    with pytest.raises(RuntimeError, match="Order 3 not supported"):
        L.matrix_norm(A, 3)
    with pytest.raises(RuntimeError, match="mode='r'"):
        L.qr(A.clone().requires_grad_(), mode="r").R.sum().backward()


# ---- named tuples and the top-level API --------------------------------------------------------------------------
def test_named_tuples(device):
    A = t(np.random.default_rng(0).standard_normal((2, 4, 3)), device)
    cases = [(L.svd(A), "linalg_svd", ("U", "S", "Vh")), (L.qr(A), "linalg_qr", ("Q", "R")),
             (L.slogdet(A[..., :3, :]), "linalg_slogdet", ("sign", "logabsdet")),
             (torch.slogdet(A[..., :3, :]), "slogdet", ("sign", "logabsdet")),
             (L.eigh(A[..., :3, :]), "linalg_eigh", ("eigenvalues", "eigenvectors")),
             (L.inv_ex(A[..., :3, :]), "linalg_inv_ex", ("inverse", "info")),
             (L.cholesky_ex(torch.eye(3, dtype=torch.float64, device=device)), "linalg_cholesky_ex", ("L", "info")),
             (L.lstsq(A, A), "linalg_lstsq", ("solution", "residuals", "rank", "singular_values")),
             (torch.svd(A), "svd", ("U", "S", "V"))]
    for res, name, fields in cases:
        assert type(res).__name__ == name and res._fields == fields
        assert repr(res).startswith(f"coretorch.return_types.{name}(\n{fields[0]}=tensor(")
        assert all(getattr(res, f) is res[i] for i, f in enumerate(fields))


def test_old_svd_and_qr(device):
    a = np.random.default_rng(1).standard_normal((5, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        U, S, V = torch.svd(t(a, device))
        assert U.shape == (5, 3) and V.shape == (3, 3)
        np.testing.assert_allclose(host(U) * host(S) @ host(V).T, a, atol=1e-12)
        U, S, V = torch.svd(t(a, device), some=False)
        assert U.shape == (5, 5) and V.shape == (3, 3)
        Q, R = torch.qr(t(a, device), some=False)
        assert Q.shape == (5, 5) and R.shape == (5, 3)
        np.testing.assert_allclose(host(Q) @ host(R), a, atol=1e-12)
    Q, R = t(a, device).qr()
    np.testing.assert_allclose(host(Q) @ host(R), a, atol=1e-12)


def test_deprecation_warnings():
    from coretorch import _warn_once
    _warn_once.GIVEN.difference_update({"cholesky", "qr"})
    with pytest.warns(UserWarning, match="torch.cholesky is deprecated"):
        torch.cholesky(torch.eye(2))
    with pytest.warns(UserWarning, match="torch.qr is deprecated"):
        torch.qr(torch.eye(2))


def test_tensor_methods(device):
    a = np.random.default_rng(2).standard_normal((3, 3)) + 3 * np.eye(3)
    x = t(a, device)
    np.testing.assert_allclose(host(x.det()), np.linalg.det(a))
    np.testing.assert_allclose(host(x.inverse()), np.linalg.inv(a))
    np.testing.assert_allclose(host(x.pinverse()), np.linalg.pinv(a), atol=1e-12)
    np.testing.assert_allclose(host(x.matrix_power(-1)), np.linalg.inv(a))
    np.testing.assert_allclose(host(x.matrix_exp()), scipy.linalg.expm(a), rtol=1e-12)
    sign, logabs = x.slogdet()
    np.testing.assert_allclose(host(sign) * np.exp(host(logabs)), np.linalg.det(a))


# ---- lstsq -------------------------------------------------------------------------------------------------------
def test_lstsq_fields(device):
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, 6, 3)), rng.standard_normal((2, 6, 2))
    A, B = t(a, device), t(b, device)
    sol, res, rank, sv = L.lstsq(A, B)  # the default driver (gelsy): no residuals, no singular values
    np.testing.assert_allclose(host(sol), np.linalg.pinv(a) @ b, atol=1e-12)
    assert res.shape == (0,) and sv.shape == (0,) and res.dtype is torch.float64
    assert rank.dtype is torch.int64 and host(rank).tolist() == [3, 3]
    sol, res, rank, sv = L.lstsq(A, B, driver="gelsd")
    np.testing.assert_allclose(host(sv), np.linalg.svd(a, compute_uv=False), atol=1e-12)
    want_res = np.stack([np.linalg.lstsq(a[i], b[i], rcond=None)[1] for i in range(2)])
    np.testing.assert_allclose(host(res), want_res, rtol=1e-10)
    sol, res, rank, sv = L.lstsq(A, B, driver="gels")
    assert rank.shape == (0,) and sv.shape == (0,) and res.shape == (2, 2)
    # rank-deficient: gelsd's rank drops and no residuals come back
    low = t(rng.standard_normal((6, 2)) @ rng.standard_normal((2, 3)), device)
    out = L.lstsq(low, t(b[0], device), driver="gelss")
    assert int(out.rank) == 2 and out.residuals.shape == (0,)
    assert int(L.lstsq(low, t(b[0], device)).rank) == 2


def test_lstsq_errors_and_shapes(device):
    a, b = t(np.random.default_rng(16).standard_normal((2, 3)), device), t(np.ones(3), device)
    with pytest.raises(RuntimeError, match="input must have at least 2 dimensions"):
        L.lstsq(b, b)
    with pytest.raises(RuntimeError, match="other must have at least 1 dimension"):
        L.lstsq(a, t(1.0, device))
    with pytest.raises(RuntimeError, match=r"input.size\(-2\) should match other.size\(-1\)"):
        L.lstsq(a, b)
    with pytest.raises(RuntimeError, match=r"input.size\(-2\) should match other.size\(-2\)"):
        L.lstsq(a, b.unsqueeze(-1))
    with pytest.raises(RuntimeError, match="the same dtype"):
        L.lstsq(a, torch.ones(2, 2, dtype=torch.int64, device=device))
    tall = t(np.random.default_rng(17).standard_normal((4, 5, 3)), device)
    out = L.lstsq(tall, t(np.ones((4, 5)), device), driver="gels")
    assert out.solution.shape == (4, 3) and out.residuals.shape == (4, 1)  # a vector b keeps (*, 1) residuals
    assert L.lstsq(t(np.zeros((2, 2, 3, 0)), device), t(np.ones((2, 2, 3, 2)), device)).solution.shape == (2, 2, 0, 2)
    np.testing.assert_array_equal(host(L.lstsq(t(np.zeros((2, 0, 3)), device), t(np.zeros((2, 0, 3)), device))[0]),
                                  np.zeros((2, 3, 3)))


def test_lstsq_grad_underdetermined(device):
    rng = np.random.default_rng(4)
    A = t(rng.standard_normal((3, 5)), device, requires_grad=True)
    B = t(rng.standard_normal((3, 2)), device, requires_grad=True)
    assert gradcheck(lambda a, b: L.lstsq(a, b).solution, (A, B))


# ---- norms -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ord", [None, 0, 1, 2, INF, -INF, 3, -1.5, 0.5])
def test_vector_norms_vs_numpy(ord, device):
    a = np.random.default_rng(5).standard_normal(7)
    got = L.norm(t(a, device), ord)
    np.testing.assert_allclose(host(got), np.linalg.norm(a, ord), rtol=1e-12)
    np.testing.assert_allclose(host(L.vector_norm(t(a, device), 2 if ord is None else ord)), np.linalg.norm(a, ord),
                               rtol=1e-12)


@pytest.mark.parametrize("ord", [None, "fro", "nuc", 1, -1, 2, -2, INF, -INF])
def test_matrix_norms_vs_numpy(ord, device):
    a = np.random.default_rng(6).standard_normal((2, 4, 3))
    got = L.norm(t(a, device), ord, dim=(-2, -1)) if ord is not None else L.norm(t(a[0], device))
    want = np.linalg.norm(a, ord, axis=(-2, -1)) if ord is not None else np.linalg.norm(a[0])
    np.testing.assert_allclose(host(got), want, rtol=1e-12)
    if ord is not None:
        got = L.matrix_norm(t(a, device), ord, dim=(0, 2), keepdim=True)
        np.testing.assert_allclose(host(got), np.linalg.norm(a, ord, axis=(0, 2), keepdims=True), rtol=1e-12)


def test_norm_of_empty(device):
    e = torch.zeros(0, 3, device=device)
    assert float(L.vector_norm(e)) == 0.0
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on an empty tensor"):
        L.vector_norm(e, INF)


def test_norm_dtype_and_grad_at_zero(device):
    x = torch.zeros(3, dtype=torch.float64, device=device, requires_grad=True)
    L.vector_norm(x).backward()
    assert host(x.grad).tolist() == [0.0, 0.0, 0.0]  # PyTorch's subgradient at 0
    y = L.vector_norm(torch.ones(4, device=device), dtype=torch.float64)
    assert y.dtype is torch.float64 and float(y) == 2.0


# ---- matrix functions --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("scale", [0.0, 0.3, 2.0, 25.0])
def test_matrix_exp_vs_scipy(scale, device):
    a = np.random.default_rng(7).standard_normal((3, 4, 4)) * scale
    got = L.matrix_exp(t(a, device))
    want = np.stack([scipy.linalg.expm(m) for m in a])
    np.testing.assert_allclose(host(got), want, rtol=1e-10, atol=1e-12 * max(1.0, np.abs(want).max()))
    got32 = L.matrix_exp(t(a, device, torch.float32))
    assert got32.dtype is torch.float32 and got32.device.type == device
    np.testing.assert_allclose(host(got32), want, rtol=2e-4, atol=2e-5 * max(1.0, np.abs(want).max()))


def test_matrix_exp_grad_large_norm(device):
    A = t(np.random.default_rng(8).standard_normal((3, 3)) * 3, device, requires_grad=True)
    assert gradcheck(L.matrix_exp, (A,))


def test_multi_dot_and_matrix_power(device):
    rng = np.random.default_rng(9)
    ms = [rng.standard_normal(s) for s in ((10,), (10, 3), (3, 30), (30, 2))]
    got = L.multi_dot([t(m, device) for m in ms])
    np.testing.assert_allclose(host(got), np.linalg.multi_dot(ms), rtol=1e-12)
    a = rng.standard_normal((2, 3, 3))
    for n in (0, 1, 2, 7, -3):
        np.testing.assert_allclose(host(L.matrix_power(t(a, device), n)), np.linalg.matrix_power(a, n), rtol=1e-9)


# ---- gradients at and near the special points -------------------------------------------------------------------
def _adjugate_T(a):
    n = a.shape[0]
    cof = np.empty_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, 0), j, 1)
            cof[i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return cof


def test_det_grad_singular(device):
    rng = np.random.default_rng(10)
    a = rng.standard_normal((4, 3)) @ rng.standard_normal((3, 4))  # rank 3: det 0, gradient adj(A)^T != 0
    A = t(a, device, requires_grad=True)
    L.det(A).backward()
    np.testing.assert_allclose(host(A.grad), _adjugate_T(a), atol=1e-10)
    b = np.random.default_rng(15).standard_normal((2, 3, 3)) + 3 * np.eye(3)
    assert gradgradcheck(L.det, (t(b, device, requires_grad=True),))


def test_slogdet_and_inv_double_backward(device):
    a = np.random.default_rng(11).standard_normal((2, 3, 3)) + 3 * np.eye(3)
    assert gradgradcheck(lambda x: L.slogdet(x).logabsdet, (t(a, device, requires_grad=True),))
    assert gradgradcheck(L.inv, (t(a, device, requires_grad=True),))


def test_svd_gauge_invariant_grad(device):
    a = np.random.default_rng(12).standard_normal((2, 3, 5))
    A = t(a, device, requires_grad=True)
    # U diag(S) Vh reconstructs A whatever the signs: its gradient is the incoming one
    f = lambda x: (lambda r: r.U @ (r.S.unsqueeze(-1) * r.Vh))(L.svd(x, full_matrices=False))  # noqa: E731
    assert gradcheck(f, (A,))
    assert gradcheck(lambda x: torch.svd(x).V.abs(), (A,))
    assert gradcheck(lambda x: L.svd(x).Vh[..., :3, :].abs(), (A,))


def test_pinv_and_matrix_rank_rank_deficient(device):
    rng = np.random.default_rng(13)
    a = rng.standard_normal((2, 5, 2)) @ rng.standard_normal((2, 2, 4))
    np.testing.assert_allclose(host(L.pinv(t(a, device))), np.linalg.pinv(a), atol=1e-10)
    assert host(L.matrix_rank(t(a, device))).tolist() == [2, 2]
    assert host(L.matrix_rank(t(a, device), atol=1e3)).tolist() == [0, 0]
    per_matrix = t([1e-8, 1e3], device)  # batched tolerances broadcast over the batch
    assert host(L.matrix_rank(t(a, device), atol=per_matrix)).tolist() == [2, 0]
    assert host(L.matrix_rank(t(a, device), rtol=t([0.7, 2.0], device))).tolist() == [1, 0]
    assert float(L.pinv(t(a, device), atol=per_matrix)[1].abs().max()) == 0.0
    s = a @ np.swapaxes(a, -1, -2)
    assert host(L.matrix_rank(t(s, device), hermitian=True)).tolist() == [2, 2]
    np.testing.assert_allclose(host(L.pinv(t(s, device), hermitian=True)), np.linalg.pinv(s, hermitian=True),
                               atol=1e-8)


def test_eigh_grad_through_eigenvectors(device):
    a = np.random.default_rng(14).standard_normal((3, 3))
    A = t(a, device, requires_grad=True)
    # V diag(L) V^T and |V| are invariant under the eigenvectors' signs
    f = lambda x: (lambda r: (r.eigenvectors * r.eigenvalues.unsqueeze(-2)) @ r.eigenvectors.mT)(L.eigh(x @ x.mT))  # noqa: E731
    assert gradcheck(f, (A,))
    assert gradcheck(lambda x: L.eigh(x + x.mT, UPLO="U").eigenvectors.abs(), (A,))


def test_opencl_host_fallbacks_are_listed():
    from coretorch_opencl import linalg as cl_linalg  # (the repository's own plugin: installed with the core)
    assert {"cholesky", "qr", "svd", "eigh", "lstsq", "solve", "inv", "det"} <= cl_linalg.HOST
    assert not {"norm", "vector_norm", "matrix_norm", "matrix_power", "matrix_exp", "multi_dot", "pinv",
                "matrix_rank", "vecdot", "cross"} & cl_linalg.HOST
    table = torch._backend.get_table(torch.device("opencl"))
    from coretorch.plugins import HOST_SPECIAL_KERNELS  # (review 21b: scipy's Bessel/Airy/zeta kernels too)
    assert cl_linalg.HOST_KERNELS == {n for n in torch._backend.PRIMITIVES if n.startswith("linalg_")} | \
        set(HOST_SPECIAL_KERNELS)
    assert all(getattr(table, n).host_fallback for n in cl_linalg.HOST_KERNELS)


def test_program_linalg_gradients(device):
    """tests/programs/linalg_gradients.py (GP fit through cholesky/logdet, ridge tuning through solve, qr, svd,
    matrix_exp) runs unchanged with `import coretorch as torch`."""
    prog = pathlib.Path(__file__).resolve().parent / "programs" / "linalg_gradients.py"
    r = subprocess.run([sys.executable, str(prog), device], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1] == "ok"


def test_out_keyword(device):
    a = np.random.default_rng(18).standard_normal((3, 3)) + 3 * np.eye(3)
    A = t(a, device)
    out = torch.empty(3, 3, dtype=torch.float64, device=device)
    assert L.inv(A, out=out) is out
    np.testing.assert_allclose(host(out), np.linalg.inv(a))
    empty = torch.empty(0, dtype=torch.float64, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an empty out is resized silently
        assert torch.det(A, out=empty) is empty
    np.testing.assert_allclose(host(empty), np.linalg.det(a))
    with pytest.warns(UserWarning, match="was resized"):
        L.matrix_power(A, 2, out=torch.empty(2, dtype=torch.float64, device=device))
    Q, R = torch.empty(0, dtype=torch.float64, device=device), torch.empty(0, dtype=torch.float64, device=device)
    res = L.qr(A, out=(Q, R))
    assert res.Q is Q and res.R is R and type(res).__name__ == "linalg_qr"
    np.testing.assert_allclose(host(Q) @ host(R), a, atol=1e-12)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
        L.inv(A, out=torch.empty(3, 3, device=device))
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        L.inv(A.clone().requires_grad_(), out=torch.empty(3, 3, dtype=torch.float64, device=device))
    with pytest.raises(TypeError, match="a tuple of 2 Tensors"):
        L.qr(A, out=Q)


def test_cond_and_solve_triangular_edge_cases(device):
    sing = t([[1.0, 2.0], [2.0, 4.0]], device)
    assert float(L.cond(sing, "fro")) == INF
    assert float(L.cond(sing)) > 1e15
    with pytest.raises(RuntimeError, match="invalid norm type"):
        L.cond(sing, 3)
    Lo = t([[2.0, 99.0], [1.0, 4.0]], device)  # the upper entry is never read with upper=False
    np.testing.assert_allclose(host(L.solve_triangular(Lo, t([[2.0], [9.0]], device), upper=False)), [[1.0], [2.0]])
    with pytest.raises(RuntimeError, match="B must have at least 2 dimensions"):
        L.solve_triangular(Lo, t([1.0, 2.0], device), upper=False)
    assert L.vander(torch.tensor([1, 2, 3], device=device)).dtype is torch.int64
