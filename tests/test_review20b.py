"""Review 20b: eager linear algebra (``torch.linalg`` and the torch-level aliases, the BLAS-style fused products)
and sorting/searching/histograms against PyTorch 2.13, on every installed device.  Each test states what PyTorch
gives (numpy/scipy/math values or documented facts) and what coretorch gave before the fix."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import coretorch as torch


def _np(t):
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_histc_of_data_with_nan_or_inf_raises(device, dtype):
    """PyTorch's histc reads the data's range (min == max == 0, its default) to the host and raises "torch.histc:
    range of [nan, nan] is not finite" for data holding a NaN or an inf (and for an infinite or NaN ``min``/
    ``max``); data with NaN inside a given finite range is counted without it.  Before: the range stayed on the
    device, so data with a NaN gave an all-zero histogram silently, ``[0, -inf]`` raised scatter_add's "index
    -9223372036854775808 is out of bounds" and ``max=inf`` put everything in the first bin."""
    nan, inf = math.nan, math.inf
    for data, kw in [([0.0, nan, 1.0], {}), ([nan, nan], {}), ([0.0, -inf], {}), ([0.0, inf, 2.0], {}),
                     ([0.0, 1.0], dict(min=0, max=inf)), ([0.0, 1.0], dict(min=nan, max=1))]:
        with pytest.raises(RuntimeError, match="is not finite"):
            torch.histc(torch.tensor(data, dtype=dtype, device=device), bins=2, **kw)
    x = torch.tensor([0.0, nan, 1.0, inf, 0.2], dtype=dtype, device=device)
    np.testing.assert_array_equal(_np(torch.histc(x, bins=2, min=0, max=1)), [2.0, 1.0])
    np.testing.assert_array_equal(_np(torch.histc(torch.tensor([1.0, 2.0, 2.0, 4.0], dtype=dtype, device=device),
                                                  bins=3)), [1.0, 2.0, 1.0])


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0), (2, 0, 3)])
def test_matrix_norm_of_an_empty_matrix_is_zero_for_the_maximum_orders(device, shape):
    """PyTorch: the 1-, inf- and 2-norms of an empty matrix are 0 (the maximum of non-negative sums or singular
    values over nothing, taken as an inf vector norm), like its 'fro' and 'nuc' norms; only the minimum orders
    (-1, -inf, -2) over an empty dimension raise IndexError.  Before: ord 1, inf and 2 raised "amax(): Expected
    reduction dim ... to have non-zero size" for every empty matrix shape."""
    x = torch.zeros(shape, device=device)
    for o in ("fro", "nuc", 1, 2, math.inf):
        r = torch.linalg.matrix_norm(x, ord=o)
        assert r.shape == shape[:-2] and not _np(r).any(), o
    with pytest.raises(IndexError):
        torch.linalg.matrix_norm(torch.zeros(3, 0, device=device), ord=-1)
    assert torch.linalg.norm(torch.zeros(0, 3, device=device), ord=2).item() == 0.0


def test_cond_of_empty_matrices_is_zero(device):
    """PyTorch's linalg.cond returns 0 for empty matrices (numpy defines none), of the batch's shape; a numeric
    order checks the size before the shape (a 0 x 3 matrix gives 0), 'fro'/'nuc' check squareness first.  Before:
    p=None/2/-2 raised IndexError ("index 0 is out of bounds"), 1/-1/inf/-inf raised amax's IndexError."""
    for p in (None, 2, -2, 1, -1, math.inf, -math.inf, "fro", "nuc"):
        for shape in [(0, 0), (2, 0, 0)]:
            r = torch.linalg.cond(torch.zeros(shape, dtype=torch.float64, device=device), p=p)
            assert r.shape == shape[:-2] and r.dtype == torch.float64 and not _np(r).any(), p
    assert torch.linalg.cond(torch.zeros(0, 3, device=device), p=1).shape == ()
    with pytest.raises(RuntimeError, match=r"linalg.cond\(ord=fro\): A must be batches of square matrices"):
        torch.linalg.cond(torch.zeros(0, 3, device=device), p="fro")
    a = torch.tensor([[2.0, 1.0], [0.0, 0.5]], dtype=torch.float64, device=device)
    assert torch.linalg.cond(a, p=1).item() == pytest.approx(np.linalg.cond(_np(a), 1))


def test_torch_triangular_solve_and_ger_exist(device):
    """PyTorch 2.13 still has the deprecated ``torch.triangular_solve(b, A, upper=True, transpose=False,
    unitriangular=False)`` returning ``(solution, cloned_coefficient)`` (with a deprecation warning) and
    ``torch.ger`` (outer).  Before: only the Tensor methods existed; the torch functions raised AttributeError."""
    v = torch.tensor([1.0, 2.0], device=device)
    np.testing.assert_array_equal(_np(torch.ger(v, torch.tensor([3.0], device=device))), [[3.0], [6.0]])
    A = torch.tensor([[2.0, 1.0], [0.0, 4.0]], dtype=torch.float64, device=device)
    b = torch.tensor([[1.0], [2.0]], dtype=torch.float64, device=device)
    from coretorch import _warn_once  # PyTorch warns once a process (TORCH_WARN_ONCE): see it again here
    _warn_once.GIVEN.discard("triangular_solve")
    with pytest.warns(UserWarning, match="deprecated"):
        r = torch.triangular_solve(b, A)
    assert isinstance(r, torch.return_types.triangular_solve)
    np.testing.assert_allclose(_np(r.solution), [[0.25], [0.5]])
    np.testing.assert_array_equal(_np(r.cloned_coefficient), _np(A))
    x = torch.triangular_solve(b, A, upper=False, transpose=True, unitriangular=True).solution  # (warned once)
    np.testing.assert_allclose(_np(x), [[1.0], [2.0]])  # A's strict upper part is not read: the identity's solve


@pytest.mark.parametrize("op", ["addr", "addmv", "addbmm", "baddbmm"])
def test_fused_products_with_beta_zero_keep_input_in_the_graph(device, op):
    """PyTorch: with ``beta=0`` the input of addr/addmv/addbmm/baddbmm is ignored (its NaN too) but stays in the
    graph: the result requires grad when only the input does, and the input's ``.grad`` after backward is zeros
    (as addmm's, which coretorch did already).  Before: the input was left out of the graph (``.grad`` None, and
    a result that did not require grad when only the input did)."""
    f64 = dict(dtype=torch.float64, device=device)
    mk = {"addr": lambda: (torch.full((2, 3), math.nan, **f64), torch.ones(2, **f64), torch.ones(3, **f64)),
          "addmv": lambda: (torch.full((2,), math.nan, **f64), torch.ones(2, 3, **f64), torch.ones(3, **f64)),
          "addbmm": lambda: (torch.full((2, 3), math.nan, **f64), torch.ones(4, 2, 5, **f64),
                             torch.ones(4, 5, 3, **f64)),
          "baddbmm": lambda: (torch.full((4, 2, 3), math.nan, **f64), torch.ones(4, 2, 5, **f64),
                              torch.ones(4, 5, 3, **f64))}[op]
    fn = getattr(torch, op)
    c, a, b = mk()
    c.requires_grad_(True)
    a.requires_grad_(True)
    out = fn(c, a, b, beta=0)
    assert not np.isnan(_np(out)).any() and type(out.grad_fn).__name__ == op[0].upper() + op[1:] + "Backward0"
    out.sum().backward()
    assert c.grad is not None and c.grad.shape == c.shape and not _np(c.grad).any()
    assert a.grad is not None and np.isfinite(_np(a.grad)).all()
    c2, a2, b2 = mk()
    assert fn(c2.requires_grad_(True), a2, b2, beta=0, alpha=2).requires_grad


def test_norm_dtype_must_not_narrow_the_input(device):
    """PyTorch's vector_norm/matrix_norm/linalg.norm/torch.norm with ``dtype=`` raise "the dtype of the input
    (Float) should be convertible without narrowing to the specified dtype (Half)" when the input's dtype does not
    promote to ``dtype`` (float32 -> float16/bfloat16, float64 -> float32, float16 <-> bfloat16); a widening dtype
    computes in it.  Before: coretorch cast the input down and computed a half-precision norm silently."""
    x = torch.tensor([[3.0, 4.0], [0.0, 1.0]], device=device)
    calls = [lambda d: torch.linalg.vector_norm(x, dtype=d), lambda d: torch.linalg.vector_norm(x, ord=-1, dtype=d),
             lambda d: torch.linalg.matrix_norm(x, ord=1, dtype=d), lambda d: torch.linalg.norm(x, dtype=d),
             lambda d: torch.norm(x, dtype=d), lambda d: torch.norm(x, p=1, dtype=d)]
    for call in calls:
        for d in (torch.float16, torch.bfloat16):
            with pytest.raises(RuntimeError, match="without narrowing to the specified dtype"):
                call(d)
        assert call(torch.float64).dtype == torch.float64
    with pytest.raises(RuntimeError, match=r"input \(Double\) should be convertible without narrowing"):
        torch.linalg.vector_norm(x.double(), dtype=torch.float32)
    with pytest.raises(RuntimeError, match=r"input \(Half\) should be convertible without narrowing"):
        torch.linalg.vector_norm(x.half(), dtype=torch.bfloat16)
    r = torch.linalg.vector_norm(x.half(), dtype=torch.float32)
    assert r.dtype == torch.float32 and r.item() == pytest.approx(math.sqrt(26.0), rel=1e-6)


def test_linalg_vander_checks_as_pytorch(device):
    """PyTorch's linalg.vander: N (default: x's last size) must be greater than 1 ("N must be greater than 1."),
    bool inputs raise "linalg.vander supports floating point, complex, and integer tensors, but got Bool", a 0-d x
    is one point (shape (1, N)).  Before: N=1 gave a column of ones, bool inputs a bool matrix, and a 0-d x raised
    "x must have at least one dimension"."""
    for x, N in [(torch.tensor([2.0], device=device), None), (torch.tensor([2.0, 3.0], device=device), 1),
                 (torch.zeros(2, 0, device=device), None)]:
        with pytest.raises(RuntimeError, match="N must be greater than 1"):
            torch.linalg.vander(x, N=N)
    with pytest.raises(RuntimeError, match="but got Bool"):
        torch.linalg.vander(torch.tensor([True, False], device=device))
    r = torch.linalg.vander(torch.tensor(2.0, device=device), N=3)
    assert r.shape == (1, 3)
    np.testing.assert_array_equal(_np(r), [[1.0, 2.0, 4.0]])
    np.testing.assert_array_equal(_np(torch.linalg.vander(torch.tensor([2, 3], device=device))), [[1, 2], [1, 3]])


def test_searchsorted_and_bucketize_of_a_python_float_against_integer_boundaries(device):
    """PyTorch wraps a Python number ``input`` as a wrapped scalar and searches in the promoted dtype:
    ``searchsorted(tensor([1, 2, 3]), 2.5)`` is 2 (2.5 is compared as a float).  Before: the number was cast to
    the boundaries' int64 first (2.5 -> 2), giving 1 (and 2 with right=True for 1.5 -> 1...), silently."""
    s = torch.tensor([1, 2, 3], device=device)
    for v, left, right in [(2.5, 2, 2), (2, 1, 2), (1.5, 1, 1), (3.5, 3, 3), (-1.5, 0, 0), (2.999, 2, 2)]:
        assert torch.searchsorted(s, v).item() == left, v
        assert torch.searchsorted(s, v, right=True).item() == right, v
        assert torch.bucketize(v, s).item() == left, v
    assert torch.searchsorted(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, device=device), 2).item() == 1


@pytest.mark.parametrize("op", ["unique", "unique_consecutive"])
def test_unique_along_an_empty_dim(device, op):
    """PyTorch's unique/unique_consecutive with ``dim``: an input whose ``dim`` is its only empty dimension gives
    itself (empty) and empty inverse/counts; an empty input whose chosen dim is not empty raises "There are 0 sized
    dimensions, and they aren't selected, so unique cannot be applied", two empty dims "Number of zero sized
    dimensions is more than one".  Before: unique(zeros(0, 3), dim=0) raised "shape '[0, -1]' is invalid" and
    dim=1 returned a (0, 1) tensor with counts [3]."""
    fn = getattr(torch, op)
    for shape, d in [((0, 3), 0), ((2, 0), 1), ((2, 3, 0), 2), ((2, 0, 3), -2)]:
        u, inv, cnt = fn(torch.zeros(shape, device=device), dim=d, return_inverse=True, return_counts=True)
        assert tuple(u.shape) == shape and tuple(inv.shape) == (0,) and tuple(cnt.shape) == (0,)
        assert inv.dtype == torch.int64 and cnt.dtype == torch.int64
    assert tuple(fn(torch.zeros(0, 3, device=device), dim=0).shape) == (0, 3)
    for shape, d in [((0, 3), 1), ((2, 0), 0), ((2, 0, 3), 0)]:
        with pytest.raises(RuntimeError, match="they aren't selected"):
            fn(torch.zeros(shape, device=device), dim=d)
    with pytest.raises(RuntimeError, match="more than one"):
        fn(torch.zeros(0, 0, device=device), dim=0)


def test_histogramdd_of_a_1d_input_raises(device):
    """PyTorch's histogramdd takes points along the last dim of an input of at least 2 dimensions: a 1-D input
    raises "torch.histogramdd: input tensor should have at least 2 dimensions" (a 0-d input IndexError).  Before: a
    1-D input of 10 values was taken as one 10-dimensional point (a 2**10-bin histogram with bins=2)."""
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        torch.histogramdd(torch.arange(10.0, device=device), bins=2)
    with pytest.raises(IndexError):
        torch.histogramdd(torch.tensor(1.0, device=device), bins=2)
    h, edges = torch.histogramdd(torch.tensor([[0.0, 0.0], [1.0, 1.0], [1.0, 0.0]], device=device), bins=2)
    np.testing.assert_array_equal(_np(h), [[1.0, 0.0], [1.0, 1.0]])
    assert len(edges) == 2


def test_histogram_argument_checks(device):
    """PyTorch: histogramdd's weight must have the input's shape without its last dim ("if weight tensor is provided
    it should have the same shape as the input tensor excluding its innermost dimension"), and a bins tensor of one
    edge is no bin ("torch.histogram(): bins must be > 0, but got 0 for dimension 0"), in histogram and
    histogramdd.  Before: a (10, 1) weight for (10, 2) points was flattened and used, and one edge gave an empty
    histogram."""
    x = torch.rand(10, 2, device=device)
    for w in (torch.ones(10, 1, device=device), torch.ones(5, 2, device=device)):
        with pytest.raises(RuntimeError, match="same shape as the input tensor excluding its innermost dimension"):
            torch.histogramdd(x, bins=2, weight=w)
    with pytest.raises(RuntimeError, match="bins must be > 0, but got 0 for dimension 0"):
        torch.histogram(x[:, 0], bins=torch.tensor([0.5], device=device))
    with pytest.raises(RuntimeError, match="bins must be > 0, but got 0 for dimension 1"):
        torch.histogramdd(x, bins=[torch.tensor([0.0, 1.0], device=device), torch.tensor([0.5], device=device)])
    h = torch.histogramdd(x, bins=2, weight=torch.ones(10, device=device)).hist
    assert h.sum().item() == 10.0
    assert torch.histogram(x[:, 0], bins=2, weight=torch.ones(10, 1, device=device)).hist.sum().item() == 10.0


def test_bool_addr_takes_beta_and_alpha_as_truth_values(device):
    """PyTorch's addr of bool tensors is ``beta && input || alpha && outer(vec1, vec2)`` with the scalars taken as
    truth values (beta=0 ignores the input, alpha=0 the product) and refuses float scalars ("For integral input
    tensors, argument beta must not be a floating point number.").  Before: only ``beta is False`` ignored the
    input, so ``beta=0`` ORed the input in (a silently wrong mask), and float beta/alpha were accepted."""
    inp = torch.ones(2, 2, dtype=torch.bool, device=device)
    v1 = torch.tensor([True, False], device=device)
    v2 = torch.tensor([True, True], device=device)
    np.testing.assert_array_equal(_np(torch.addr(inp, v1, v2, beta=0, alpha=3)), [[True, True], [False, False]])
    np.testing.assert_array_equal(_np(torch.addr(inp, v1, v2, beta=2, alpha=0)), [[True, True], [True, True]])
    np.testing.assert_array_equal(_np(torch.addr(~inp, v1, v2, beta=1, alpha=0)), [[False, False], [False, False]])
    np.testing.assert_array_equal(_np(inp.clone().addr_(v1, v2, beta=0)), [[True, True], [False, False]])
    for kw in (dict(beta=0.5), dict(alpha=0.0)):
        with pytest.raises(RuntimeError, match="must not be a floating point number"):
            torch.addr(inp, v1, v2, **kw)


def test_addr_of_mixed_dtypes_multiplies_in_the_result_dtype(device):
    """PyTorch's addr is elementwise in the common dtype: float32 vectors with a float64 input are multiplied in
    float64 (1 + 0.1f * 3 = 1.3000000044703484, the float32 0.1 times 3 exactly).  Before: the outer product was
    made in float32 and then widened (1.3000000119209290: float32 rounding in a float64 result)."""
    inp = torch.ones(1, 1, dtype=torch.float64, device=device)
    v1 = torch.tensor([0.1], dtype=torch.float32, device=device)
    v2 = torch.tensor([3.0], dtype=torch.float32, device=device)
    r = torch.addr(inp, v1, v2)
    assert r.dtype == torch.float64
    assert r.item() == 1.0 + float(np.float32(0.1)) * 3.0


def test_fused_products_refuse_an_input_of_another_dtype(device):
    """PyTorch's addmm/addbmm ("self and mat2 must have the same dtype, but got Double and Float"), addmv ("addmv
    input tensors must have the same dtype") and baddbmm ("Input dtypes must be the same, got: input double, batch1:
    float, batch2: float") refuse an input (even a 0-d one, even with beta=0) whose dtype is not the matrices'.
    Before: coretorch promoted and returned a float64 (or, for an int input, a float32) result."""
    f = dict(device=device)
    d = dict(dtype=torch.float64, device=device)
    calls = [(lambda: torch.addmm(torch.ones(2, 2, **d), torch.ones(2, 3, **f), torch.ones(3, 2, **f)),
              "self and mat2"),
             (lambda: torch.addmm(torch.tensor(1, device=device), torch.ones(2, 3, **f), torch.ones(3, 2, **f)),
              "but got Long and Float"),
             (lambda: torch.ones(2, 2, **d).addmm_(torch.ones(2, 3, **f), torch.ones(3, 2, **f)), "self and mat2"),
             (lambda: torch.addmm(torch.ones(2, 2, **d), torch.ones(2, 3, **f), torch.ones(3, 2, **f), beta=0),
              "self and mat2"),
             (lambda: torch.addbmm(torch.ones(2, 2, **d), torch.ones(2, 2, 3, **f), torch.ones(2, 3, 2, **f)),
              "self and mat2"),
             (lambda: torch.addmv(torch.ones(2, **d), torch.ones(2, 3, **f), torch.ones(3, **f)),
              "addmv input tensors must have the same dtype, but got Double, Float, and Float"),
             (lambda: torch.baddbmm(torch.tensor(1.0, **d), torch.ones(2, 2, 3, **f), torch.ones(2, 3, 2, **f)),
              "input double, batch1: float, batch2: float")]
    for call, msg in calls:
        with pytest.raises(RuntimeError, match=msg):
            call()
    r = torch.addmm(torch.ones(2, dtype=torch.float64, device=device), torch.ones(2, 3, **d), torch.ones(3, 2, **d))
    np.testing.assert_array_equal(_np(r), np.full((2, 2), 4.0))


def test_cholesky_of_a_matrix_with_nan_fails(device):
    """PyTorch's cholesky (LAPACK's potrf) fails on a NaN pivot: ``cholesky`` raises LinAlgError ("the leading minor
    of order k is not positive-definite") and ``cholesky_ex`` gives info = the order of the first NaN pivot (1 for
    an all-NaN matrix, 2 for [[1, 0], [0, nan]]), also within a batch whose other members fail otherwise.  Before:
    numpy's factorisation let NaN through, so cholesky returned a NaN factor silently and info was 0."""
    nan = math.nan
    f64 = dict(dtype=torch.float64, device=device)
    for m, k in [([[nan] * 3] * 3, 1), ([[1.0, nan], [nan, 1.0]], 2), ([[1.0, 0.0], [0.0, nan]], 2),
                 ([[4.0, 2.0], [nan, 3.0]], 2), ([[4.0, nan], [2.0, 3.0]], 0)]:  # (the upper triangle is not read)
        assert torch.linalg.cholesky_ex(torch.tensor(m, **f64)).info.item() == k, m
    with pytest.raises(torch.linalg.LinAlgError, match="leading minor of order 2 is not positive-definite"):
        torch.linalg.cholesky(torch.tensor([[1.0, 0.0], [0.0, nan]], **f64))
    batch = torch.tensor([[[nan, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, -1.0]]], **f64)
    assert torch.linalg.cholesky_ex(batch).info.tolist() == [1, 0, 2]
    assert torch.linalg.cholesky_ex(batch, upper=True).info.tolist() == [1, 0, 2]


def test_float64_to_half_and_bfloat16_round_through_float32(device):
    """(Found by this review's bincount probe, outside its scope.)  PyTorch converts a double to Half/BFloat16
    through float (c10's conversions start from a float), so a double just past a half-way point first rounds onto
    it in float32, then to even: ``tensor(1 + 2**-11 + 2**-30, dtype=float64).half()`` is 1.0 and 65519.99999999 is
    inf, in ``.to``/``.half()`` and in ``torch.tensor(..., dtype=float16)``.  Before: the cpu cast and the tensor
    constructor (every device) rounded the double directly (1.0009765625, 65504.0)."""
    v = [1 + 2**-11 + 2**-30, -2.0400390712646512, 65519.99999999, 1.5]
    want16 = [1.0, -2.0390625, math.inf, 1.5]
    x = torch.tensor(v, dtype=torch.float64, device=device)
    assert x.half().double().tolist() == want16
    assert x.to(torch.float16).tolist() == want16
    assert torch.tensor(v, dtype=torch.float16, device=device).tolist() == want16
    assert torch.tensor(np.array(v), dtype=torch.float16, device=device).tolist() == want16
    w = [1 + 2**-8 + 2**-30, 1 + 2**-8 + 2**-7]
    want_bf = [1.0, 1.015625]
    assert torch.tensor(w, dtype=torch.float64, device=device).to(torch.bfloat16).double().tolist() == want_bf
    assert torch.tensor(w, dtype=torch.bfloat16, device=device).double().tolist() == want_bf


def test_norm_dims_of_the_wrong_length_raise(device):
    """PyTorch: linalg.norm takes a dim of length 1 or 2 ("If dim is specified, it must be of length 1 or 2. Got [0,
    1, 2]") and linalg.matrix_norm exactly 2 ("dim must be a 2-tuple. Got 0"), both RuntimeError; vector_norm takes
    any number of dims.  Before: linalg.norm computed a 2-norm over three dims and matrix_norm(dim=(0,)) raised
    IndexError ("tuple index out of range")."""
    x = torch.ones(2, 3, 4, device=device)
    with pytest.raises(RuntimeError, match=r"must be of length 1 or 2. Got \[0, 1, 2\]"):
        torch.linalg.norm(x, dim=(0, 1, 2))
    for dim in [(0,), (0, 1, 2)]:
        with pytest.raises(RuntimeError, match="dim must be a 2-tuple"):
            torch.linalg.matrix_norm(x, dim=dim)
    assert torch.linalg.vector_norm(x, dim=(0, 1, 2)).item() == pytest.approx(math.sqrt(24.0))
    assert torch.linalg.norm(x, dim=(0, 2)).tolist() == pytest.approx([math.sqrt(8.0)] * 3)


def test_pinv_and_matrix_rank_of_empty_hermitian_input(device):
    """PyTorch's pinv returns early for an empty input (an empty (..., n, m) result, also with hermitian=True and a
    non-square shape) and matrix_rank of an empty input is 0.  Before: pinv(hermitian=True) of a 0 x 0 matrix (or
    a batch of them) raised amax's IndexError, and both raised eigh's "must be batches of square matrices" for a
    0 x 3 input."""
    for shape in [(0, 0), (2, 0, 0), (0, 3), (3, 0)]:
        x = torch.zeros(shape, dtype=torch.float64, device=device)
        p = torch.linalg.pinv(x, hermitian=True)
        assert tuple(p.shape) == shape[:-2] + (shape[-1], shape[-2]) and p.dtype == torch.float64
        r = torch.linalg.matrix_rank(x, hermitian=True)
        assert tuple(r.shape) == shape[:-2] and r.dtype == torch.int64 and not _np(r).any()
    a = torch.tensor([[2.0, 0.0], [0.0, 0.0]], dtype=torch.float64, device=device)
    np.testing.assert_allclose(_np(torch.linalg.pinv(a, hermitian=True)), [[0.5, 0.0], [0.0, 0.0]])


def test_searchsorted_without_boundaries_or_values(device):
    """PyTorch's searchsorted with an empty last dim of boundaries (a batch of empty rows) gives index 0 for every
    value, and empty values give an empty result of their shape.  Before: boundaries of shape (3, 0) raised numpy's
    "cannot reshape array of size 0 into shape (0)" on cpu."""
    r = torch.searchsorted(torch.zeros(3, 0, device=device), torch.ones(3, 2, device=device))
    assert r.dtype == torch.int64 and r.tolist() == [[0, 0]] * 3
    r = torch.searchsorted(torch.zeros(3, 0, device=device), torch.ones(3, 0, device=device), out_int32=True)
    assert tuple(r.shape) == (3, 0) and r.dtype == torch.int32
    assert torch.searchsorted(torch.zeros(0, device=device), torch.ones(2, 2, device=device)).tolist() == [[0, 0]] * 2
    assert torch.bucketize(torch.ones(2, device=device), torch.zeros(0, device=device)).tolist() == [0, 0]


def test_lu_family_and_isin_take_out(device):
    """PyTorch's linalg.lu, lu_factor, lu_factor_ex, lu_solve and torch.isin take ``out=`` (written in place and
    returned; a wrong dtype raises).  Before: each raised TypeError "got an unexpected keyword argument 'out'"."""
    f64 = dict(dtype=torch.float64, device=device)
    A = torch.tensor([[1.0, 2.0, 0.0], [3.0, 1.0, 1.0], [0.0, 1.0, 4.0]], **f64)
    LU, piv = torch.zeros(3, 3, **f64), torch.zeros(3, dtype=torch.int32, device=device)
    r = torch.linalg.lu_factor(A, out=(LU, piv))
    assert r[0] is LU and r[1] is piv
    ref = torch.linalg.lu_factor(A)
    np.testing.assert_array_equal(_np(LU), _np(ref.LU))
    np.testing.assert_array_equal(_np(piv), _np(ref.pivots))
    outs = tuple(torch.zeros(s, dtype=d, device=device) for s, d in [((3, 3), torch.float64), ((3,), torch.int32),
                                                                      ((), torch.int32)])
    torch.linalg.lu_factor_ex(A, out=outs)
    np.testing.assert_array_equal(_np(outs[0]), _np(ref.LU))
    P, L, U = (torch.zeros(3, 3, **f64) for _ in range(3))
    torch.linalg.lu(A, out=(P, L, U))
    np.testing.assert_allclose(_np(P @ L @ U), _np(A), atol=1e-12)
    X = torch.zeros(3, 3, **f64)
    torch.linalg.lu_solve(ref.LU, ref.pivots, A, out=X)
    np.testing.assert_allclose(_np(X), np.eye(3), atol=1e-12)
    with pytest.raises(RuntimeError, match="dtype"):
        torch.linalg.lu_factor(A, out=(torch.zeros(3, 3, device=device), piv))
    b = torch.zeros(3, dtype=torch.bool, device=device)
    assert torch.isin(torch.arange(3, device=device), torch.tensor([0, 1], device=device), out=b) is b
    assert b.tolist() == [True, True, False]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_matrix_norm_of_half_precision_for_the_orders_without_svd(device, dtype):
    """PyTorch's linalg.matrix_norm takes float16/bfloat16 for 'fro', 1, -1, inf and -inf (a result of the input's
    dtype) and refuses them only for 'nuc', 2 and -2 ("Low precision dtypes not supported"), which need an SVD.
    Before: every order refused half precision."""
    a = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]])
    x = torch.tensor(a, device=device).to(dtype)
    for o, want in [("fro", np.sqrt((a * a).sum())), (1, 6.0), (-1, 1.5), (math.inf, 6.0), (-math.inf, 5.5)]:
        r = torch.linalg.matrix_norm(x, ord=o)
        assert r.dtype == dtype and r.item() == pytest.approx(want, rel=1e-2), o
    for o in ("nuc", 2, -2):
        with pytest.raises(RuntimeError, match="Low precision dtypes not supported"):
            torch.linalg.matrix_norm(x, ord=o)


def test_tensor_arguments_by_pytorchs_keyword_names(device):
    """PyTorch's argument parser names a linalg function's matrix ``input`` (numpy's ``x`` too; ``A`` only where the
    schema says A: inv, det, solve, ...), lstsq's right side ``b``, cholesky_solve's factor ``input2``, and the
    binary ops take ``input=`` by keyword.  Before: ``torch.linalg.matrix_norm(input=A)``, ``pinv``/``eigh``/
    ``cholesky``/``matrix_exp``/``cond``/``matrix_rank``/``matrix_power(input=...)``, ``torch.det(input=A)``,
    ``lstsq(input=A, b=B)``, ``cholesky_solve(input=B, input2=L)`` raised TypeError, and so did the binary ops
    called by keyword (``torch.maximum(input=a, other=b)``: "unexpected keyword argument 'input'";
    ``torch.outer(input=a, vec2=b)``: "got multiple values for argument 'input'")."""
    L = torch.linalg
    A = torch.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=torch.float64, device=device)
    a = torch.tensor([1.0, 2.0], device=device)
    checks = [(L.matrix_norm(input=A), L.matrix_norm(A)), (L.norm(x=A), L.norm(A)), (L.pinv(input=A), L.pinv(A)),
              (L.eigvalsh(input=A), L.eigvalsh(A)), (L.cholesky(input=A), L.cholesky(A)),
              (L.matrix_exp(input=A), L.matrix_exp(A)), (L.cond(input=A), L.cond(A)),
              (L.matrix_rank(input=A), L.matrix_rank(A)), (L.matrix_power(input=A, n=2), A @ A),
              (torch.det(input=A), torch.det(A)), (torch.matrix_exp(input=A), L.matrix_exp(A)),
              (L.lstsq(input=A, b=A).solution, L.lstsq(A, A).solution), (L.vector_norm(input=A), L.vector_norm(A)),
              (torch.cholesky_solve(input=A, input2=L.cholesky(A)), torch.cholesky_solve(A, L.cholesky(A))),
              (torch.maximum(input=a, other=a), a), (torch.outer(input=a, vec2=a), torch.outer(a, a)),
              (torch.kron(input=a, other=a), torch.kron(a, a)), (torch.dot(input=a, tensor=a), torch.dot(a, a))]
    for got, want in checks:
        np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12)
    with pytest.raises(TypeError, match=r"argument 'input' \(position 1\) must be Tensor, not int"):
        torch.maximum(input=2, other=a)


def _fma_linspace(a: float, b: float, n: int) -> list:
    """PyTorch's CPU linspace, exactly (rational arithmetic): step = (b - a) / (n - 1) in float64, the first half
    a + step * i and the second b - step * (n - 1 - i), each rounded once (the kernel's contracted multiply-add)."""
    from fractions import Fraction as F
    step = (b - a) / (n - 1)
    half = n // 2
    return [float(F(a) + F(step) * i) if i < half else float(F(b) - F(step) * (n - 1 - i)) for i in range(n)]


def test_linspace_values_and_histogram_edges_are_pytorchs(device):
    """(linspace is outside this review's scope; found through histogram and quantile.)  PyTorch's linspace is the
    symmetric fused multiply-add formula above: ``linspace(0, 1, 11)[6]`` is 0.6 (1 - 4 * 0.1 rounded once:
    0.59999999999999998), ``linspace(-3.3, 7.1, 7)[3]`` 1.9000000000000001 (0x1.e666666666667p+0), and
    ``histogram(x, bins=10, range=(0, 1))`` takes its edges from it, so 0.7 (on the edge 0.69999999999999996) is in
    bin 7.  Before: numpy's ``start + i * step`` (0.6000000000000001, 0x1.e666666666664p+0), 0.7 fell in bin 6 of
    the histogram (edge 0.7000000000000001), and quantiles at ``linspace`` q's differed in the last bit."""
    for a, b, n in [(0.0, 1.0, 11), (-3.3, 7.1, 7), (0.3, 17.7, 1001), (5.0, -2.2, 38), (0.0, 1.0, 7)]:
        got = torch.linspace(a, b, n, dtype=torch.float64, device=device).tolist()
        assert got == _fma_linspace(a, b, n), (a, b, n)
    assert torch.linspace(-3.3, 7.1, 7, dtype=torch.float64, device=device)[3].item().hex() == "0x1.e666666666667p+0"
    assert torch.linspace(2.0, 5.0, 1, dtype=torch.float64, device=device).tolist() == [2.0]
    x = torch.tensor([0.1, 0.2, 0.3, 0.7, 0.9, 1.0], dtype=torch.float64, device=device)
    assert torch.histogram(x, bins=10, range=(0.0, 1.0)).hist.tolist() == [0, 1, 2, 0, 0, 0, 0, 1, 0, 2]
    q = torch.quantile(torch.arange(10.0, dtype=torch.float64, device=device),
                       torch.linspace(0, 1, 7, dtype=torch.float64, device=device))
    assert q.tolist()[4] == 6.000000000000001  # (q = 0.66666666666666674, from the end)


def test_linalg_cross_and_vecdot_check_their_dtypes(device):
    """PyTorch's linalg.cross takes two tensors of one dtype ("expected scalar type Long but found Float", no
    promotion, as torch.cross) and linalg.vecdot floating tensors of one dtype ("Expected a floating point or
    complex tensor as input. Got Long", "Expected x and y to have the same dtype").  Before: both promoted (an
    int64 x float32 cross gave float32, an integer vecdot an int64 sum)."""
    i = torch.arange(6, device=device).reshape(2, 3)
    f = torch.ones(2, 3, device=device)
    with pytest.raises(RuntimeError, match="expected scalar type Long but found Float"):
        torch.linalg.cross(i, f)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        torch.linalg.cross(f, f.double())
    assert torch.linalg.cross(i, i).dtype == torch.int64
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. Got Long"):
        torch.linalg.vecdot(i, i)
    with pytest.raises(RuntimeError, match="Expected x and y to have the same dtype"):
        torch.linalg.vecdot(f, f.double())
    assert torch.linalg.vecdot(f, f).tolist() == [3.0, 3.0]


def test_triangular_solves_take_b_as_a_matrix(device):
    """PyTorch's solve_triangular (and cholesky_solve, triangular_solve built on it) has no vector case: B is
    always a (batch of) matrices, so B of shape (3, 3) against A of shape (3, 3, 3) broadcasts to a (3, 3, 3)
    result, and B (2, 3) against A (2, 3, 3) is refused ("Incompatible shapes of A and B for the equation AX = B");
    linalg.solve(left=False) checks B as given ("XA = B").  Before: solve_ex's vector rule (B with A's shape
    without its last dim is a batch of vectors) was applied, so those calls returned a (3, 3) result silently,
    solving another system, and solve(A (2, 3, 3), B (3, 2), left=False) returned a (3, 2) result."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal((3, 3))
    A = torch.tensor(a, device=device)
    B = torch.tensor(b, device=device)
    want = np.stack([np.linalg.solve(np.triu(m), b) for m in a])
    x = torch.linalg.solve_triangular(A, B, upper=True)
    assert tuple(x.shape) == (3, 3, 3)
    np.testing.assert_allclose(_np(x), want, rtol=1e-10, atol=1e-12)
    with warnings.catch_warnings():  # (its deprecation warning comes once a process, as PyTorch's)
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(_np(torch.triangular_solve(B, A).solution), want, rtol=1e-10, atol=1e-12)
    spd = a @ a.transpose(0, 2, 1)
    c = torch.cholesky_solve(B, torch.linalg.cholesky(torch.tensor(spd, device=device)))
    np.testing.assert_allclose(_np(c), np.stack([np.linalg.solve(m, b) for m in spd]), rtol=1e-8, atol=1e-10)
    xr = torch.linalg.solve_triangular(A, B, upper=False, left=False)
    np.testing.assert_allclose(_np(xr), np.stack([b @ np.linalg.inv(np.tril(m)) for m in a]), rtol=1e-10,
                               atol=1e-12)
    with pytest.raises(RuntimeError, match="Incompatible shapes of A and B for the equation AX = B"):
        torch.linalg.solve_triangular(A[:2], B[:2], upper=True)
    with pytest.raises(RuntimeError, match="Incompatible shapes of A and B"):
        torch.linalg.solve(A[:2], B[:, :2], left=False)
    assert tuple(torch.linalg.solve(A, B).shape) == (3, 3)  # (linalg.solve's own vector case stays)


def test_lstsq_vector_case_is_pytorchs(device):
    """PyTorch's lstsq takes B as a batch of vectors only under linalg.solve's rule (B 1-D, or B's shape is A's
    without its last dim), and refuses a B with more dims than A.  Before: any B with one dim less than A was taken
    as vectors, so B (4, 3) against A (1, 3, 3) gave four solutions instead of PyTorch's "input.size(-2) should match
    other.size(-2)", and B (2, 3, 2) against A (3, 3) was broadcast."""
    A = torch.eye(3, dtype=torch.float64, device=device)
    with pytest.raises(RuntimeError, match=r"input.size\(-2\) should match other.size\(-2\)"):
        torch.linalg.lstsq(A[None], torch.ones(4, 3, dtype=torch.float64, device=device))
    with pytest.raises(RuntimeError, match=r"input.dim\(\) must be greater or equal to other.dim\(\)"):
        torch.linalg.lstsq(A, torch.ones(2, 3, 2, dtype=torch.float64, device=device))
    x = torch.linalg.lstsq(A.expand(2, 3, 3), torch.ones(2, 3, dtype=torch.float64, device=device)).solution
    assert tuple(x.shape) == (2, 3) and x.tolist() == [[1.0] * 3] * 2


def test_multivariate_normal_from_a_precision_batch_as_long_as_its_event(device):
    """A consequence of the solve_triangular fix above: MultivariateNormal(precision_matrix=P) inverts P's
    Cholesky factor with ``solve_triangular(L_inv, eye(n))``; for a batch of n precision matrices of n x n the
    identity has the factor's shape without its last dim, and was solved as n vectors: the covariance was wrong by
    0.15 for a batch of three 3 x 3 matrices (any other batch size was right).  PyTorch: covariance = inverse(P)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 3, 3))
    P = a @ a.transpose(0, 2, 1) + 3 * np.eye(3)
    d = torch.distributions.MultivariateNormal(torch.zeros(3, 3, dtype=torch.float64, device=device),
                                               precision_matrix=torch.tensor(P, device=device))
    np.testing.assert_allclose(_np(d.covariance_matrix), np.linalg.inv(P), rtol=1e-10, atol=1e-12)
