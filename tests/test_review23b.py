"""Review 23b: eager linear algebra (second pass: lstsq's returned fields and their gradients, the Cholesky
solvers' gradients, the triangular solvers) and sorting/searching/counting (second pass: bincount, searchsorted's
sorter, histc's checks) against PyTorch 2.13, on every installed device.  Each test states what PyTorch gives and
what coretorch gave before the fix; reference values are numpy's or the closed-form math, or PyTorch 2.13's own
(written down as literals only where they are the spec, and said so)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import coretorch as torch


def _np(t):
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("driver", ["gels", "gelsd", "gelss"])
def test_lstsq_residuals_carry_gradients(device, driver):
    """PyTorch 2.13's linalg.lstsq residuals (returned for a tall full-rank A by gels/gelsd/gelss) are
    differentiable in A and B: d res_j/dA = 2 R[:, j] X[:, j]^T and d res_j/dB = -2 R[:, j], R = A X - B (the term
    through X vanishes at the least-squares optimum).  Before: the residuals were computed under no_grad, so
    ``res.sum().backward()`` raised "does not require grad" and ``(X.sum() + res.sum())`` silently lost the
    residuals' part of the gradient."""
    a = np.array([[1.0, 2], [3, 4], [5, 7]])
    b = np.array([[1.0, 0.5], [2, -1], [4, 2]])
    A = torch.tensor(a, dtype=torch.float64, device=device, requires_grad=True)
    B = torch.tensor(b, dtype=torch.float64, device=device, requires_grad=True)
    out = torch.linalg.lstsq(A, B, driver=driver)
    assert out.residuals.requires_grad
    g = torch.tensor([0.3, -0.7], dtype=torch.float64, device=device)
    (out.residuals * g).sum().backward()
    x = np.linalg.lstsq(a, b, rcond=None)[0]
    r = a @ x - b
    np.testing.assert_allclose(_np(out.residuals), (r ** 2).sum(0), rtol=1e-10)
    np.testing.assert_allclose(_np(A.grad), 2 * (r * g.tolist()) @ x.T, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(_np(B.grad), -2 * r * g.tolist(), rtol=1e-8, atol=1e-12)
    # together with the solution: both parts arrive (the solution's alone, plus the residuals')
    A2 = A.detach().clone().requires_grad_()
    o2 = torch.linalg.lstsq(A2, B.detach(), driver=driver)
    (o2.solution.sum() + (o2.residuals * g).sum()).backward()
    A3 = A.detach().clone().requires_grad_()
    torch.linalg.lstsq(A3, B.detach(), driver=driver).solution.sum().backward()
    np.testing.assert_allclose(_np(A2.grad), _np(A3.grad) + 2 * (r * g.tolist()) @ x.T, rtol=1e-8, atol=1e-12)


def test_lstsq_residuals_of_a_vector_rhs_and_of_gelsy_stay_as_pytorch(device):
    """PyTorch: a vector B gives residuals of shape (1,) (differentiable too); gelsy (the CPU default) and a
    wide A return empty residuals that do not require grad."""
    A = torch.tensor([[1.0, 2], [3, 4], [5, 7]], dtype=torch.float64, device=device, requires_grad=True)
    B = torch.tensor([1.0, 2, 4], dtype=torch.float64, device=device)
    res = torch.linalg.lstsq(A, B, driver="gelsd").residuals
    assert tuple(res.shape) == (1,) and res.requires_grad
    res.sum().backward()
    assert A.grad is not None and np.isfinite(_np(A.grad)).all()
    r = torch.linalg.lstsq(A, B).residuals
    assert tuple(r.shape) == (0,) and not r.requires_grad
    r = torch.linalg.lstsq(A.detach().mT, torch.tensor([1.0, 2], dtype=torch.float64, device=device),
                           driver="gelsd").residuals
    assert tuple(r.shape) == (0,)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.int8, torch.int16])
@pytest.mark.parametrize("wdtype", [torch.float32, torch.float64])
def test_bincount_of_an_empty_input_is_int64_whatever_the_weights(device, dtype, wdtype):
    """PyTorch's bincount returns ``zeros(minlength, dtype=int64)`` for an empty 1-D input before it looks at the
    weights (their dtype and even their length).  Before: float32/float64 zeros (the weights' dtype), and weights of
    another length raised."""
    x = torch.zeros(0, dtype=dtype, device=device)
    for w in (torch.zeros(0, dtype=wdtype, device=device), torch.ones(2, dtype=wdtype, device=device)):
        r = torch.bincount(x, weights=w, minlength=3)
        assert r.dtype == torch.int64 and tuple(r.shape) == (3,) and not _np(r).any()
    assert torch.bincount(x, weights=torch.zeros(0, dtype=wdtype, device=device)).shape == (0,)
    # a non-empty input keeps the weights' dtype (float32 stays, others become float64)
    r = torch.bincount(torch.tensor([0, 2], dtype=dtype, device=device),
                       weights=torch.tensor([0.5, 1.5], dtype=wdtype, device=device))
    assert r.dtype == wdtype and _np(r).tolist() == [0.5, 0.0, 1.5]


def test_bincount_of_a_non_integral_input_raises_not_implemented(device):
    """PyTorch dispatches bincount's kernel on integral dtypes first: a float or bool input raises
    NotImplementedError '"bincount_cpu" not implemented for 'Float'' (whatever its shape).  Before: RuntimeError
    "bincount only supports 1-d non-negative integral inputs."."""
    for data, name in [([0.0, 1.0], "Float"), ([[1.0]], "Float"), ([True, False], "Bool")]:
        with pytest.raises(NotImplementedError, match=f"\"bincount_cpu\" not implemented for '{name}'"):
            torch.bincount(torch.tensor(data, device=device))
    with pytest.raises(NotImplementedError, match="'Double'"):
        torch.bincount(torch.tensor([1.0], dtype=torch.float64, device=device))
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative integral inputs"):
        torch.bincount(torch.tensor([0, -1], device=device))
    with pytest.raises(RuntimeError, match="minlength should be >= 0"):
        torch.bincount(torch.zeros(0, dtype=torch.int64, device=device), minlength=-1)


def test_searchsorted_sorter_checks_as_pytorch(device):
    """PyTorch checks the sorter itself: "boundary and sorter must have the same size", "sorter must be a tensor
    of long dtype but got dtype Int", and "sorter index out of range" for an index < 0 or >= the boundaries' length
    (even with nothing to search).  Before: one message for shape and dtype, and an out-of-range index raised
    gather()'s "index 3 is out of bounds for dimension 0 with size 3"."""
    s = torch.tensor([5.0, 1.0, 9.0], device=device)
    v = torch.tensor([2.0], device=device)
    with pytest.raises(RuntimeError, match=r"boundary and sorter must have the same size, but got boundary tensor "
                                           r"\[3\]and got sorter tensor \[2\]"):
        torch.searchsorted(s, v, sorter=torch.tensor([1, 0], device=device))
    with pytest.raises(RuntimeError, match="sorter must be a tensor of long dtype but got dtype Int"):
        torch.searchsorted(s, v, sorter=torch.tensor([1, 0, 2], dtype=torch.int32, device=device))
    for bad in ([1, 0, 3], [1, 0, -1]):
        for vals in (v, torch.zeros(0, device=device)):
            with pytest.raises(RuntimeError, match=r"torch.searchsorted\(\): sorter index out of range"):
                torch.searchsorted(s, vals, sorter=torch.tensor(bad, device=device))
    r = torch.searchsorted(s, torch.tensor([0.0, 2.0, 5.0, 10.0], device=device),
                           sorter=torch.tensor([1, 0, 2], device=device), side="right")
    assert _np(r).tolist() == [0, 1, 2, 3]


def test_histc_bins_message_as_pytorch(device):
    """PyTorch's histc reports a non-positive bin count through histogram's check: "torch.histogram(): bins must be
    > 0, but got 0 for dimension 0".  Before: "torch.histc: bins must be > 0"."""
    x = torch.tensor([1.0, 2.0], device=device)
    for bins in (0, -2):
        with pytest.raises(RuntimeError, match=rf"torch.histogram\(\): bins must be > 0, but got {bins} for "
                                               "dimension 0"):
            torch.histc(x, bins=bins)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse_factor_gradient_is_pytorchs_full_matrix(device, upper):
    """PyTorch's cholesky_solve_backward gives the factor the full matrix -(C + C^T) L (-U (C + C^T) for upper),
    C = gB X^T with gB = (L L^T)^{-1} gX; cholesky_inverse's is the same with B = I.  It is not projected onto the
    triangle the solver reads, so a factor held as a plain parameter gets its other triangle's gradient too (PyTorch's
    own gradcheck of these ops wraps the input in tril/triu for that reason).  Before: coretorch's masked triangular
    solves gave only the read triangle's part (the other one zero)."""
    low = np.array([[2.0, 0, 0], [0.5, 1.5, 0], [1, 0.2, 2]])
    f = low.T if upper else low
    b = np.array([[1.0, -1], [2, 0.5], [3, 1]])
    gx = np.array([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]])
    a_inv = np.linalg.inv(low @ low.T)
    x = a_inv @ b
    gb = a_inv @ gx
    c = gb @ x.T
    c = c + c.T
    L = torch.tensor(f, dtype=torch.float64, device=device, requires_grad=True)
    B = torch.tensor(b, dtype=torch.float64, device=device, requires_grad=True)
    X = torch.cholesky_solve(B, L, upper=upper)
    np.testing.assert_allclose(_np(X), x, rtol=1e-12)
    (X * torch.tensor(gx, dtype=torch.float64, device=device)).sum().backward()
    np.testing.assert_allclose(_np(B.grad), gb, rtol=1e-10)
    np.testing.assert_allclose(_np(L.grad), -(f @ c) if upper else -(c @ f), rtol=1e-10, atol=1e-14)
    assert np.abs(np.triu(_np(L.grad), 1) if not upper else np.tril(_np(L.grad), -1)).max() > 1e-3
    # cholesky_inverse: the same formula with B = I
    L2 = torch.tensor(f, dtype=torch.float64, device=device, requires_grad=True)
    g = np.arange(9.0).reshape(3, 3) / 10
    inv = torch.cholesky_inverse(L2, upper=upper)
    assert type(inv.grad_fn).__name__ == "CholeskyInverseBackward0"  # (PyTorch's node names)
    assert type(X.grad_fn).__name__ == "CholeskySolveBackward0"
    (inv * torch.tensor(g, dtype=torch.float64, device=device)).sum().backward()
    c2 = a_inv @ (g + g.T) @ a_inv
    np.testing.assert_allclose(_np(L2.grad), -(f @ c2) if upper else -(c2 @ f), rtol=1e-10, atol=1e-14)


def test_cholesky_solve_gradients_broadcast(device):
    """PyTorch: cholesky_solve broadcasts the batch dims of B and L and sums each gradient back to its input's
    shape.  (float32: this PoCL build's LLVM aborts compiling the float64 sum over a leading dim.)"""
    L = torch.tensor([[2.0, 0, 0], [0.5, 1.5, 0], [1, 0.2, 2]], device=device, requires_grad=True)
    B = torch.tensor(np.linspace(-1, 1, 12).reshape(2, 3, 2), device=device, requires_grad=True)
    X = torch.cholesky_solve(B, L)
    assert tuple(X.shape) == (2, 3, 2)
    X.sum().backward()
    assert tuple(L.grad.shape) == (3, 3) and tuple(B.grad.shape) == (2, 3, 2)
    gl = np.zeros((3, 3))
    low = _np(L).astype(np.float64)
    a_inv = np.linalg.inv(low @ low.T)
    for b in _np(B):  # the batch's factor gradients, summed
        x, gb = a_inv @ b, a_inv @ np.ones((3, 2))
        c = gb @ x.T
        gl -= (c + c.T) @ low
    np.testing.assert_allclose(_np(L.grad), gl, rtol=1e-4, atol=1e-6)
    with torch.no_grad():
        assert not torch.cholesky_solve(B, L).requires_grad


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_gradcheck_and_gradgradcheck(upper):
    """PyTorch's gradcheck of cholesky_solve / cholesky_inverse (a factor wrapped in tril/triu, as PyTorch's own
    OpInfo does) passes to second order: the new backward is itself differentiable.  (CPU tensors: this PoCL build
    aborts compiling some of the float64 kernels a gradgradcheck runs.)"""
    L = torch.tensor([[2.0, 0, 0], [0.5, 1.5, 0], [1, 0.2, 2]], dtype=torch.float64)
    L = (L.mT if upper else L).requires_grad_()
    B = torch.tensor(np.linspace(-1, 1, 12).reshape(2, 3, 2), dtype=torch.float64, requires_grad=True)
    tri = (lambda f: f.triu()) if upper else (lambda f: f.tril())
    fn = lambda b, f: torch.cholesky_solve(b, tri(f), upper=upper)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (B, L))
    assert torch.autograd.gradgradcheck(fn, (B, L))
    inv = lambda f: torch.cholesky_inverse(tri(f), upper=upper)  # noqa: E731
    assert torch.autograd.gradcheck(inv, (L,))
    assert torch.autograd.gradgradcheck(inv, (L,))


def test_deprecated_linalg_aliases_warn_once_a_process():
    """PyTorch warns with TORCH_WARN_ONCE for torch.triangular_solve, torch.lu, torch.lu_solve, torch.chain_matmul
    and torch.cross without dim: once a process, even under ``simplefilter("always")`` and from different lines
    (as torch.cholesky and torch.qr already did here).  Before: a warnings.warn on every call."""
    import warnings

    from coretorch import _warn_once
    A = torch.tensor([[2.0, 0], [1, 3]], dtype=torch.float64)
    b = torch.ones(2, 1, dtype=torch.float64)
    LU, piv = torch.linalg.lu_factor(A)
    calls = {"triangular_solve": lambda: torch.triangular_solve(b, A, upper=False),
             "lu": lambda: torch.lu(A), "lu_solve": lambda: torch.lu_solve(b, LU, piv),
             "chain_matmul": lambda: torch.chain_matmul(A, A),
             "cross.dim": lambda: torch.cross(torch.ones(3, 3), torch.ones(3, 3))}
    for key, call in calls.items():
        _warn_once.GIVEN.discard(key)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            call()
            call()
        assert len(w) == 1 and issubclass(w[0].category, UserWarning) and "deprecated" in str(w[0].message), key
        if key != "cross.dim":  # (cross is reached through an argument wrapper: its warning points there)
            assert w[0].filename == __file__, key  # (pointing at the caller's line)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_linalg_half_inputs_raise_pytorchs_not_implemented(device, dtype):
    """PyTorch 2.13 (CPU): the LAPACK-backed ops have no half/bfloat16 kernel and say so from their dispatch,
    NotImplementedError '"lu_cpu" not implemented for 'Half'' (det, solve, lu, lu_factor, tensorsolve),
    "cholesky_cpu", "geqrf_cpu", "linalg_eigh_cpu", "linalg_svd_cpu" (svd, svdvals, cond with an SVD order),
    "triangular_solve_cpu", "cholesky_solve_cpu", "cholesky_inverse_out_cpu", "linalg.lu_solve_cpu"; inv, slogdet,
    pinv, matrix_rank and cond with another order keep a RuntimeError.  Before: RuntimeError "...: Low precision
    dtypes not supported" (or "Expected a floating point ... tensor") for all of them, which ``except
    NotImplementedError`` does not catch."""
    L = torch.linalg
    name = "Half" if dtype == torch.float16 else "BFloat16"
    A = torch.tensor([[4.0, 1.0], [1.0, 3.0]], dtype=dtype, device=device)
    piv = torch.tensor([1, 2], dtype=torch.int32, device=device)
    cases = {"lu_cpu": [lambda: L.det(A), lambda: torch.det(A), lambda: L.solve(A, A), lambda: L.solve_ex(A, A),
                        lambda: L.lu(A), lambda: L.lu_factor(A), lambda: L.lu_factor_ex(A),
                        lambda: L.tensorsolve(A, A[0])],
             "cholesky_cpu": [lambda: L.cholesky(A), lambda: L.cholesky_ex(A)],
             "geqrf_cpu": [lambda: L.qr(A)],
             "linalg_eigh_cpu": [lambda: L.eigh(A), lambda: L.eigvalsh(A)],
             "linalg_svd_cpu": [lambda: L.svd(A), lambda: L.svdvals(A), lambda: L.cond(A), lambda: L.cond(A, -2)],
             "triangular_solve_cpu": [lambda: L.solve_triangular(A, A, upper=True)],
             "cholesky_solve_cpu": [lambda: torch.cholesky_solve(A, A)],
             "cholesky_inverse_out_cpu": [lambda: torch.cholesky_inverse(A)],
             "linalg.lu_solve_cpu": [lambda: L.lu_solve(A, piv, A)]}
    for kernel, calls in cases.items():
        for call in calls:
            with pytest.raises(NotImplementedError, match=f"\"{kernel}\" not implemented for '{name}'"):
                call()
    for call in (lambda: L.inv(A), lambda: L.slogdet(A), lambda: L.pinv(A), lambda: L.matrix_rank(A),
                 lambda: L.cond(A, 1), lambda: L.cond(A, "fro")):
        with pytest.raises(RuntimeError, match="Low precision dtypes not supported") as e:
            call()
        assert not isinstance(e.value, NotImplementedError)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_nuclear_norm_and_linalg_vander_raise_as_pytorch(device, dtype):
    """PyTorch 2.13: torch.norm(x, 'nuc') of a half tensor goes to linalg.matrix_norm, whose SVD order raises
    "linalg.matrix_norm: Low precision dtypes not supported. Got Half" (torch.norm's other orders compute in float32);
    linalg.vander raises "linalg.vander supports floating point, complex, and integer tensors, but got Half"
    (torch.vander computes).  Before: torch.norm(x, 'nuc') computed in float32 (7.0 for [[4, 1], [1, 3]]) and
    linalg.vander gave a half matrix."""
    name = "Half" if dtype == torch.float16 else "BFloat16"
    x = torch.tensor([[4.0, 1.0], [1.0, 3.0]], dtype=dtype, device=device)
    for call in (lambda: torch.norm(x, "nuc"), lambda: torch.norm(x, "nuc", dim=(0, 1)),
                 lambda: torch.linalg.norm(x, "nuc"), lambda: torch.linalg.matrix_norm(x, "nuc")):
        with pytest.raises(RuntimeError, match=f"linalg.matrix_norm: Low precision dtypes not supported. Got {name}"):
            call()
    xc = x.cpu()  # (on the CPU: this PoCL build's LLVM aborts compiling the opencl float32 vector sqrt)
    assert torch.norm(xc, "fro").dtype == dtype and abs(torch.norm(xc).item() - math.sqrt(27)) < 0.05
    with pytest.raises(RuntimeError, match=f"linalg.vander supports floating point, complex, and integer tensors, "
                                           f"but got {name}"):
        torch.linalg.vander(x[0])
    assert torch.vander(x[0]).dtype == dtype
    assert _np(torch.linalg.vander(torch.tensor([1, 2], dtype=torch.int32, device=device))).tolist() == [[1, 1],
                                                                                                         [1, 2]]


def test_unique_backward_raises_not_implemented_from_its_own_node(device):
    """PyTorch: unique's values require grad through Unique2Backward0 (UniqueDimBackward0 with dim=,
    UniqueConsecutiveBackward0 for unique_consecutive with or without dim) whose backward raises NotImplementedError
    "the derivative for '_unique2' is not implemented." ('unique_dim', 'unique_consecutive').  Before: every one was a
    "torch::autograd::NotImplemented" node raising RuntimeError, and unique_consecutive with dim= named
    'unique_dim_consecutive'."""
    x = torch.tensor([3.0, 1.0, 1.0, 2.0], device=device, requires_grad=True)
    cases = [(lambda: torch.unique(x), "Unique2Backward0", "_unique2"),
             (lambda: torch.unique(x, return_counts=True)[0], "Unique2Backward0", "_unique2"),
             (lambda: torch.unique(x.view(2, 2), dim=0), "UniqueDimBackward0", "unique_dim"),
             (lambda: torch.unique_consecutive(x), "UniqueConsecutiveBackward0", "unique_consecutive"),
             (lambda: torch.unique_consecutive(x.view(2, 2), dim=0), "UniqueConsecutiveBackward0",
              "unique_consecutive")]
    for call, node, op in cases:
        y = call()
        assert y.requires_grad and y.grad_fn.name() == node
        with pytest.raises(NotImplementedError, match=f"the derivative for '{op}' is not implemented."):
            y.sum().backward()


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64, torch.bfloat16])
def test_cummin_cummax_value_is_the_element_at_the_index(device, dtype):
    """PyTorch's cummin/cummax move the index to every element equal to the running extreme (the last of equal
    ones) and return that element: over [0.0, -0.0, 0.0] cummin gives [0.0, -0.0, 0.0] with indices [0, 1, 2].
    Before: float16 on the cpu backend gave [0.0, 0.0, 0.0] (numpy's minimum keeps the first of equal zeros there)
    while the indices said [0, 1, 2]."""
    x = torch.tensor([0.0, -0.0, 0.0, -0.0, 1.0], dtype=dtype, device=device)
    for fn in (torch.cummin, torch.cummax):
        v, i = fn(x, 0)
        assert _np(i).tolist() == [0, 1, 2, 3, 3 if fn is torch.cummin else 4]
        assert _np(v.signbit()).tolist() == _np(x.signbit()[i]).tolist()
    v, i = torch.cummin(torch.tensor([2.0, float("nan"), 0.0], dtype=dtype, device=device), 0)
    assert _np(i).tolist() == [0, 1, 1] and np.isnan(_np(v.float())[1:]).all()


def test_multi_dot_of_mixed_dtypes_raises_pytorchs_message(device):
    """PyTorch's multi_dot checks the dtypes with the dims, before the shapes: "multi_dot(): all tensors must have
    be the same dtype but tensor 0 is float and tensor 1 double" (C++ type names).  Before: the matmul's "expected
    m1 and m2 to have the same dtype", or a shape error first."""
    f = torch.ones(2, 3, device=device)
    for ts, msg in [([torch.ones(2, device=device), torch.ones(2, dtype=torch.float64, device=device)],
                     "tensor 0 is float and tensor 1 double"),
                    ([f, torch.ones(2, 2, dtype=torch.float64, device=device)],
                     "tensor 0 is float and tensor 1 double"),
                    ([torch.ones(2, 2, device=device), torch.ones(2, 2, device=device),
                      torch.ones(2, dtype=torch.int64, device=device)], "tensor 0 is float and tensor 2 long int")]:
        with pytest.raises(RuntimeError, match=f"multi_dot\\(\\): all tensors must have be the same dtype but {msg}$"):
            torch.linalg.multi_dot(ts)
    r = torch.linalg.multi_dot([torch.ones(2, 2, dtype=torch.int64, device=device)] * 2)
    assert r.dtype == torch.int64 and _np(r).tolist() == [[2, 2], [2, 2]]


def test_searchsorted_warns_once_about_non_contiguous_operands(device):
    """PyTorch warns (once a program) "torch.searchsorted(): input value tensor is non-contiguous, this will lower
    the performance ..." and the same for the boundary tensor; results are unchanged.  Before: no warning."""
    import warnings

    from coretorch import _warn_once
    _warn_once.GIVEN.difference_update({"searchsorted.input value", "searchsorted.boundary"})
    b = torch.tensor([[1.0, 3.0], [2.0, 4.0]], device=device).T  # rows [1, 2] and [3, 4]; values [1, 3], [5, 2]
    v = torch.tensor([[1.0, 5.0], [3.0, 2.0]], device=device).T
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = torch.searchsorted(b, v)
        torch.searchsorted(b, v)
        torch.bucketize(v, torch.tensor([2.0, 4.0], device=device))
    msgs = [str(x.message) for x in w]
    assert len(msgs) == 2 and "input value tensor is non-contiguous" in msgs[0] and "boundary tensor" in msgs[1]
    assert msgs[0].endswith("This message will only appear once per program.")
    assert _np(r).tolist() == [[0, 2], [2, 0]]
