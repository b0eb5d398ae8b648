"""Review 24e: the tensor-level API surface against PyTorch 2.13, a signature sweep.

A sweep (kept outside the repository) listed the public callables of ``torch``, ``torch.Tensor``,
``torch.nn.functional``, ``torch.linalg`` and ``torch.special``, compared each name coretorch also has with
PyTorch's native schemas (keyword names, keyword-only markers, defaults) and called each with float32 / int64 /
bool, 0-d and 2-d inputs, positional and keyword forms, ``out=`` and ``dtype=``, side by side.  These tests pin the
divergences it found and that were fixed: results PyTorch refuses (outer of 2-d tensors, kl_div of integers),
keyword names PyTorch's binding takes (``copy_(other=)``, ``resize_as_(the_template=)``, ``orgqr(input2=)``,
``hsplit(sections=)``, ``broadcast_to(size=)``, ``special.airy_ai(x=)``, ...), a positional ``dtype`` of
``special.softmax``, the 0-d ``adjoint`` and the ``torch.sym_*`` helpers.  Each test states what PyTorch does and
what coretorch did before the fix.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F


def _t(a, device, **kw):
    return torch.tensor(np.asarray(a), device=device, **kw)


# ---- silent wrong results --------------------------------------------------------------------------------------
def test_outer_and_ger_refuse_non_vectors(device):
    """PyTorch: ``torch.outer``/``torch.ger``/``Tensor.outer`` check both arguments are 1-D ("outer: Expected 1-D
    argument self, but got 2-D").  coretorch before: broadcast them and returned a silent 3-D (2, 1, 2) "outer
    product" for a (2, 2) input, a (2, 1) one for a 0-d vec2."""
    m, v = torch.ones(2, 2, device=device), torch.ones(2, device=device)
    with pytest.raises(RuntimeError, match="outer: Expected 1-D argument self, but got 2-D"):
        torch.outer(m, v)
    with pytest.raises(RuntimeError, match="outer: Expected 1-D argument self, but got 2-D"):
        torch.ger(m, v)
    with pytest.raises(RuntimeError, match="outer: Expected 1-D argument vec2, but got 0-D"):
        torch.outer(v, torch.tensor(1.0, device=device))
    with pytest.raises(RuntimeError, match="outer: Expected 1-D argument vec2, but got 2-D"):
        v.outer(m)
    with pytest.raises(RuntimeError, match="outer: Expected 1-D argument self, but got 0-D"):
        torch.tensor(2.0, device=device).ger(v)
    got = torch.outer(_t([1.0, 2.0], device), _t([3.0, 4.0, 5.0], device))
    np.testing.assert_allclose(got.cpu().numpy(), np.outer([1.0, 2.0], [3.0, 4.0, 5.0]))


def test_kl_div_refuses_integral_inputs(device):
    """PyTorch: ``F.kl_div``/``torch.kl_div`` raise RuntimeError "kl_div: Integral inputs not supported." when
    either input is an integer or bool tensor.  coretorch before: promoted them and returned a float loss."""
    f = torch.ones(3, device=device)
    for a, b in ((f.long(), f.long()), (f, f.long()), (f.long(), f), (f.bool(), f)):
        with pytest.raises(RuntimeError, match="kl_div: Integral inputs not supported."):
            F.kl_div(a, b, reduction="sum")
        with pytest.raises(RuntimeError, match="kl_div: Integral inputs not supported."):
            torch.kl_div(a, b)
    assert F.kl_div(f, f, reduction="sum").item() == pytest.approx(-3.0)


def test_ormqr_checks_tau_and_other_against_input(device):
    """PyTorch's ormqr checks tau's last size (min(other.shape[-2], input.shape[-1])), tau.ndim == input.ndim - 1,
    other.ndim == input.ndim, the batch dimensions and the dtypes, with RuntimeError.  coretorch before: broadcast a
    (3, 3) tau for a (3, 3) input into a silent (3, 3, 3) result, took a shorter tau, and multiplied a 3-D other."""
    e = torch.eye(3, device=device)
    with pytest.raises(RuntimeError, match="Expected tau to have one dimension less than input, but got tau.ndim "
                                           "equal to 2 and input.ndim is equal to 2"):
        torch.ormqr(e, torch.ones(3, 3, device=device), e)
    with pytest.raises(RuntimeError, match=r"tau.shape\[-1\] must be equal to min\(other.shape\[-2\], "):
        torch.ormqr(torch.ones(4, 3, device=device), torch.ones(2, device=device), torch.ones(4, 2, device=device))
    with pytest.raises(RuntimeError, match="Expected other to have the same number of dimensions as input"):
        torch.ormqr(e, torch.ones(3, device=device), torch.ones(2, 3, 3, device=device))
    with pytest.raises(RuntimeError, match=r"Expected batch dimensions of tau to be equal to input.shape\[:-2\], "
                                           r"but got \[1\]"):
        torch.ormqr(torch.ones(2, 3, 3, device=device), torch.ones(1, 3, device=device),
                    torch.ones(2, 3, 3, device=device))
    with pytest.raises(RuntimeError, match="Expected input and tau to have the same dtype, but input has "
                                           "dtypeFloat and tau has dtype Double"):
        torch.ormqr(e, torch.ones(3, dtype=torch.float64, device=device), e)
    # the valid shapes PyTorch takes: a wide input (tau of its row count), the right-hand form
    assert torch.ormqr(torch.ones(3, 4, device=device), torch.ones(3, device=device),
                       torch.ones(3, 5, device=device)).shape == (3, 5)
    assert torch.ormqr(e, torch.ones(3, device=device), torch.ones(2, 3, device=device), left=False).shape == (2, 3)


def test_std_mean_var_mean_take_the_legacy_unbiased_overload(device):
    """PyTorch: ``torch.std_mean(input, unbiased)`` / ``var_mean(input, unbiased)`` (a bool second argument) reduce
    over all elements, as ``torch.std(input, unbiased)``.  coretorch before: took the bool as ``dim`` for the mean:
    TypeError "an integer is required" (IndexError for a 0-d input)."""
    a = np.arange(6.0).reshape(2, 3)
    x = _t(a, device, dtype=torch.float32)
    s, m = torch.std_mean(x, True)
    assert s.shape == () and m.shape == ()
    assert s.item() == pytest.approx(a.std(ddof=1), rel=1e-6) and m.item() == pytest.approx(2.5)
    v, m = torch.var_mean(x, False)
    assert v.item() == pytest.approx(a.var(), rel=1e-6) and m.item() == pytest.approx(2.5)
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        s, m = torch.std_mean(torch.tensor(1.0, device=device), True)
    assert np.isnan(s.item()) and m.item() == 1.0


def test_hinge_embedding_loss_keeps_an_integer_dtype(device):
    """PyTorch: ``F.hinge_embedding_loss`` of an int64 input is int64 (its kernel works in the input's dtype, the
    margin truncated: margin=2.5 acts as 2, -0.5 as 0); the mean of it raises "mean(): could not infer output dtype"
    (values as PyTorch 2.13 gives them).  coretorch before: a float32 loss (and a float mean)."""
    xi = _t([[1, -2, 3], [0, 5, -6]], device)
    yi = _t([[1, -1, 1], [-1, 1, -1]], device)
    got = F.hinge_embedding_loss(xi, yi, margin=2.5, reduction="none")
    assert got.dtype == torch.int64 and got.cpu().tolist() == [[1, 4, 3], [2, 5, 8]]
    got = F.hinge_embedding_loss(xi, yi, margin=-0.5, reduction="none")
    assert got.cpu().tolist() == [[1, 2, 3], [0, 5, 6]]
    got = F.hinge_embedding_loss(xi, yi, reduction="sum")
    assert got.dtype == torch.int64 and got.item() == 20
    with pytest.raises(RuntimeError, match="could not infer output dtype"):
        F.hinge_embedding_loss(xi, yi)
    got = F.hinge_embedding_loss(xi.float(), yi, margin=2.5, reduction="none")
    assert got.dtype == torch.float32 and got.cpu().tolist() == [[1.0, 4.5, 3.0], [2.5, 5.0, 8.5]]


def test_soft_margin_loss_refuses_an_integer_input(device):
    """PyTorch: ``F.soft_margin_loss`` of an integer input raises "result type Float can't be cast to the desired
    output type Long" (a float input with an integer target is fine).  coretorch before: a float loss."""
    xi = _t([[1, -2, 3]], device)
    yi = _t([[1, -1, 1]], device)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        F.soft_margin_loss(xi, yi)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        F.soft_margin_loss(xi, yi.float(), reduction="none")
    got = F.soft_margin_loss(xi.float(), yi, reduction="none")
    np.testing.assert_allclose(got.cpu().numpy(), np.log1p(np.exp([[-1.0, -2.0, -3.0]])), rtol=1e-5)


def test_tensorinv_refuses_ind_beyond_the_dims(device):
    """PyTorch: ``linalg.tensorinv(A, ind)`` with ``ind > A.ndim`` raises RuntimeError "ArrayRef: invalid slice,
    N = 1; size = 0".  coretorch before: a 0-d A got a silent 1x1 "inverse" (``tensorinv(tensor(2.), 1)`` = 0.5)."""
    with pytest.raises(RuntimeError, match="invalid slice, N = 1; size = 0"):
        torch.linalg.tensorinv(torch.tensor(2.0, device=device), 1)
    with pytest.raises(RuntimeError, match="invalid slice, N = 3; size = 2"):
        torch.linalg.tensorinv(torch.eye(2, device=device), 3)
    assert torch.linalg.tensorinv(torch.eye(2, device=device).reshape(2, 1, 2), 2).shape == (2, 2, 1)


# ---- crashes and error types -----------------------------------------------------------------------------------
def test_svd_of_a_vector_raises_runtime_error(device):
    """PyTorch: ``torch.svd`` of a 0-d or 1-d tensor raises RuntimeError "linalg.svd: input should have at least 2
    dimensions, but has 1 dimensions instead".  coretorch before: IndexError (tuple index out of range)."""
    for x in (torch.tensor(1.0, device=device), torch.ones(3, device=device)):
        with pytest.raises(RuntimeError, match=f"at least 2 dimensions, but has {x.ndim} dimensions instead"):
            torch.svd(x)
    U, S, V = torch.svd(_t([[3.0, 0.0], [0.0, 2.0]], device))
    np.testing.assert_allclose(S.cpu().numpy(), [3.0, 2.0], rtol=1e-6)


def test_adjoint_of_a_0d_tensor_is_itself_with_a_warning(device):
    """PyTorch: ``torch.adjoint``/``Tensor.adjoint`` of a 0-d tensor warn "adjoint() is deprecated on 0-D
    tensors" and return a view of it (as ``mH``); a 1-d tensor still raises.  coretorch before: RuntimeError for
    the 0-d tensor."""
    x = torch.tensor(2.5, device=device)
    with pytest.warns(UserWarning, match=r"adjoint\(\) is deprecated on 0-D tensors"):
        y = torch.adjoint(x)
    assert y.shape == () and y.item() == 2.5
    with pytest.warns(UserWarning, match="deprecated on 0-D"):
        z = x.adjoint()
    assert z.data_ptr() == x.data_ptr()  # a view, as PyTorch's
    with pytest.raises(RuntimeError, match="Got 1-D tensor"):
        torch.ones(3, device=device).adjoint()


# ---- keyword names and positional forms PyTorch's binding takes ------------------------------------------------
def test_copy_takes_other_keyword(device):
    """PyTorch's binding is ``copy_(Tensor other, bool non_blocking=False)`` (``copy_(src=t)`` is a TypeError;
    a non-tensor names 'other' in the message).  coretorch before: named it ``src``: ``copy_(other=t)`` raised
    TypeError."""
    x = torch.zeros(2, device=device)
    x.copy_(other=_t([1.0, 2.0], device), non_blocking=False)
    assert x.cpu().tolist() == [1.0, 2.0]
    with pytest.raises(TypeError):
        x.copy_(src=x)
    with pytest.raises(TypeError, match=r"argument 'other' \(position 1\) must be Tensor, not str"):
        x.copy_("a")


def test_resize_as_takes_the_template_keyword(device):
    """PyTorch: ``Tensor.resize_as_(Tensor the_template, *, memory_format=None)``.  coretorch before: named it
    ``other``: ``resize_as_(the_template=t)`` raised TypeError."""
    x = torch.zeros(2, 2, device=device)
    assert x.resize_as_(the_template=torch.ones(3, device=device)).shape == (3,)


def test_householder_keywords_input2_input3(device):
    """PyTorch: ``torch.orgqr(input, input2)``, ``torch.ormqr(input, input2, input3, left, transpose)`` and the
    methods ``orgqr(input2)``, ``ormqr(input2, input3)``.  coretorch before: named them ``tau``/``other``:
    ``orgqr(input2=tau)`` raised TypeError."""
    rng = np.random.default_rng(0)
    a = _t(rng.standard_normal((3, 3)), device, dtype=torch.float64)
    h, tau = torch.geqrf(a)
    q = torch.linalg.qr(a).Q
    q1 = torch.orgqr(input=h, input2=tau)
    np.testing.assert_allclose(np.abs(q1.cpu().numpy()), np.abs(q.cpu().numpy()), atol=1e-10)
    np.testing.assert_allclose(h.orgqr(input2=tau).cpu().numpy(), q1.cpu().numpy())
    c = torch.eye(3, dtype=torch.float64, device=device)
    r = torch.ormqr(input=h, input2=tau, input3=c, left=True, transpose=False)
    np.testing.assert_allclose(r.cpu().numpy(), q1.cpu().numpy(), atol=1e-10)
    np.testing.assert_allclose(h.ormqr(input2=tau, input3=c).cpu().numpy(), r.cpu().numpy())


def test_triangular_and_lu_solve_take_input_keyword(device):
    """PyTorch: ``torch.triangular_solve(input, A, ...)`` and ``torch.lu_solve(input, LU_data, LU_pivots)`` name the
    right-hand side ``input``.  coretorch before: ``self`` and ``b``: ``input=`` raised TypeError."""
    A = _t([[2.0, 1.0], [0.0, 4.0]], device)
    B = _t([[4.0], [8.0]], device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (their deprecation warnings)
        X, _ = torch.triangular_solve(input=B, A=A, upper=True)
        np.testing.assert_allclose(X.cpu().numpy(), [[1.0], [2.0]], rtol=1e-6)
        LU, piv = torch.linalg.lu_factor(A)
        Y = torch.lu_solve(input=B, LU_data=LU, LU_pivots=piv)
    np.testing.assert_allclose(Y.cpu().numpy(), [[1.0], [2.0]], rtol=1e-6)


def test_hsplit_vsplit_dsplit_take_sections_and_indices_keywords(device):
    """PyTorch's overloads: ``hsplit(input, int sections)`` and ``hsplit(input, tuple of ints indices)`` (the same
    for vsplit/dsplit and the methods).  coretorch before: one parameter ``indices_or_sections``; ``sections=`` and
    ``indices=`` raised TypeError."""
    b = torch.arange(24.0, device=device).reshape(2, 3, 4)
    assert [t.shape for t in torch.hsplit(b, sections=3)] == [(2, 1, 4)] * 3
    assert [t.shape for t in b.hsplit(indices=[1])] == [(2, 1, 4), (2, 2, 4)]
    assert [t.shape for t in torch.vsplit(b, indices=[1])] == [(1, 3, 4), (1, 3, 4)]
    assert [t.shape for t in b.dsplit(sections=2)] == [(2, 3, 2)] * 2
    assert [t.shape for t in torch.dsplit(b, [1, 3])] == [(2, 3, 1), (2, 3, 2), (2, 3, 1)]
    with pytest.raises(RuntimeError, match="not divisible"):
        torch.dsplit(b, sections=3)
    with pytest.raises(TypeError):
        torch.hsplit(b)


def test_broadcast_to_view_copy_result_type_keywords(device):
    """PyTorch: ``broadcast_to(input, size)``, ``view_copy(input, size)`` / ``view_copy(input, dtype=...)``,
    ``result_type(tensor, other)``.  coretorch before: ``shape``, ``size`` only, ``tensor1``/``tensor2``: those
    keywords raised TypeError."""
    v = torch.ones(3, device=device)
    assert torch.broadcast_to(v, size=(2, 3)).shape == (2, 3)
    assert v.broadcast_to(size=(4, 3)).shape == (4, 3)
    x = _t([1.0, 2.0], device, dtype=torch.float32)
    got = torch.view_copy(x, dtype=torch.int32)
    assert got.dtype == torch.int32
    assert got.cpu().tolist() == np.array([1.0, 2.0], np.float32).view(np.int32).tolist()
    assert got.data_ptr() != x.data_ptr()
    assert torch.view_copy(x, size=(2, 1)).shape == (2, 1)
    assert torch.result_type(tensor=x, other=2.5) == torch.float32
    assert torch.result_type(tensor=x.long(), other=x.double()) == torch.float64


def test_special_functions_take_x_keyword(device):
    """PyTorch's schemas name the argument ``x`` (not ``input``) for ``special.airy_ai``,
    ``scaled_modified_bessel_k0/k1``, ``spherical_bessel_j0`` and the polynomials (``chebyshev_polynomial_t(x, n)``
    ...).  coretorch before: ``input``: ``x=`` raised TypeError."""
    v = _t([0.5, 1.0], device)
    np.testing.assert_allclose(torch.special.chebyshev_polynomial_t(x=v, n=2).cpu().numpy(), [-0.5, 1.0], rtol=1e-6)
    np.testing.assert_allclose(torch.special.hermite_polynomial_h(x=v, n=2).cpu().numpy(), [-1.0, 2.0], rtol=1e-6)
    np.testing.assert_allclose(torch.special.spherical_bessel_j0(x=v).cpu().numpy(), np.sin([0.5, 1.0]) / [0.5, 1.0],
                               rtol=1e-6)
    assert torch.special.airy_ai(x=v).shape == (2,)
    assert torch.special.scaled_modified_bessel_k0(x=v).shape == (2,)
    # the Bessel functions whose schema argument is ``self`` keep ``input=``
    assert torch.special.bessel_j0(input=v).shape == (2,)
    assert torch.special.modified_bessel_i0(input=v).shape == (2,)


def test_special_softmax_takes_a_positional_dtype(device):
    """PyTorch: ``torch.special.softmax(input, dim, dtype=None)`` is a native binding, ``dtype`` positional too
    (``special.log_softmax`` is a Python function with a keyword-only dtype).  coretorch before: TypeError
    "softmax() takes 2 positional arguments but 3 were given"."""
    x = _t([1.0, 2.0, 3.0], device)
    got = torch.special.softmax(x, 0, torch.float64)
    assert got.dtype == torch.float64
    e = np.exp([1.0, 2.0, 3.0])
    np.testing.assert_allclose(got.cpu().numpy(), e / e.sum(), rtol=1e-12)
    with pytest.raises(TypeError):
        torch.special.log_softmax(x, 0, torch.float64)


def test_spaced_factories_take_layout_and_pin_memory():
    """PyTorch's factories ``linspace``/``logspace``/``arange`` take ``layout=`` and ``pin_memory=`` (as
    ``zeros``).  coretorch before: TypeError for ``linspace(layout=)`` and ``pin_memory=`` on the three."""
    assert torch.linspace(0, 1, 3, layout=torch.strided, pin_memory=False).tolist() == [0.0, 0.5, 1.0]
    np.testing.assert_allclose(torch.logspace(0, 2, 3, pin_memory=False).numpy(), [1.0, 10.0, 100.0], rtol=1e-6)
    assert torch.arange(3, pin_memory=False).tolist() == [0, 1, 2]


# ---- missing names -------------------------------------------------------------------------------------------
def test_sym_helpers_on_plain_numbers():
    """PyTorch 2.13 has ``torch.sym_max/sym_min/sym_int/sym_float/sym_not/sym_ite/sym_sqrt/sym_sum``: on plain
    numbers, max/min (a float when either is a float), truncation, float(), not, ``t if b else f``, math.sqrt,
    sum; sym_max of a tensor fails its assertion.  (Values as PyTorch 2.13 gives them.)  coretorch before: no
    such names (AttributeError)."""
    assert torch.sym_max(2, 3) == 3 and type(torch.sym_max(2, 3)) is int
    assert torch.sym_max(2, 3.0) == 3.0 and type(torch.sym_max(2, 3.0)) is float
    assert torch.sym_min(2.0, 3) == 2.0 and type(torch.sym_min(2.0, 3)) is float
    assert torch.sym_min(np.int64(4), 3) == 3
    assert torch.sym_int(-2.7) == -2 and torch.sym_int(2.7) == 2
    assert torch.sym_float(2) == 2.0 and type(torch.sym_float(2)) is float
    assert torch.sym_not(True) is False
    assert torch.sym_ite(True, 1, 2) == 1 and torch.sym_ite(False, 1, 2) == 2
    assert torch.sym_sqrt(4) == 2.0
    assert torch.sym_sum([1, 2, 3]) == 6 and torch.sym_sum([]) == 0
    with pytest.raises(AssertionError):
        torch.sym_max(torch.tensor(2), 3)


def test_norm_except_dim(device):
    """PyTorch 2.13 has ``torch.norm_except_dim(v, pow=2, dim=0)`` (weight norm's ``||v||``): the norm over every
    dimension but ``dim``, kept as size-1 dimensions (``dim=-1``: the whole norm, 0-d; a 1-D ``v``: ``|v|``);
    an integer ``v`` raises its norm() error.  (Values as PyTorch 2.13 gives them.)  coretorch before: no such
    name (AttributeError)."""
    m = torch.arange(6.0, device=device).reshape(2, 3)
    a = np.arange(6.0).reshape(2, 3)
    got = torch.norm_except_dim(m, 2, 1)
    assert got.shape == (1, 3)
    np.testing.assert_allclose(got.cpu().numpy(), np.sqrt((a ** 2).sum(0, keepdims=True)), rtol=1e-6)
    got = torch.norm_except_dim(m, 3, -2)
    np.testing.assert_allclose(got.cpu().numpy(), ((a ** 3).sum(1, keepdims=True)) ** (1 / 3), rtol=1e-6)
    assert torch.norm_except_dim(m).shape == (2, 1)
    assert torch.norm_except_dim(m, 2, -1).item() == pytest.approx(np.sqrt(55.0), rel=1e-6)
    v = _t([3.0, -4.0, 0.0], device)
    assert torch.norm_except_dim(v, 2, 0).cpu().tolist() == [3.0, 4.0, 0.0]
    assert torch.norm_except_dim(v, 0, 0).cpu().tolist() == [1.0, 1.0, 0.0]
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.norm_except_dim(m, 2, 5)
    with pytest.raises(RuntimeError, match="input dtype should be either floating point or complex"):
        torch.norm_except_dim(m.long(), 2, 0)
    w = m.clone().requires_grad_()
    torch.norm_except_dim(w, 2, 0).sum().backward()
    np.testing.assert_allclose(w.grad.cpu().numpy(), a / np.sqrt((a ** 2).sum(1, keepdims=True)), rtol=1e-6)


def test_is_distributed_function(device):
    """PyTorch: ``torch.is_distributed(t)`` is False for a plain tensor (as ``t.is_distributed()``).  coretorch
    before: only the method; ``torch.is_distributed`` raised AttributeError."""
    t = torch.ones(2, device=device)
    assert torch.is_distributed(t) is False and t.is_distributed() is False


def test_inplace_methods_take_pytorch_keywords(device):
    """PyTorch: ``lerp_(end, weight)``, ``masked_fill_(mask, value)``, ``swapaxes_(axis0, axis1)``,
    ``swapdims_(dim0, dim1)`` and ``torch.unsafe_split(input, split_size, dim)``.  coretorch before: ``other`` for
    the first two, transpose's ``dim0/dim1`` for swapaxes_, ``tensor`` for unsafe_split: those keywords raised
    TypeError."""
    x = torch.arange(6.0, device=device).reshape(2, 3)
    got = x.clone().lerp_(end=x + 2, weight=0.5)
    np.testing.assert_allclose(got.cpu().numpy(), np.arange(6.0).reshape(2, 3) + 1)
    got = x.clone().masked_fill_(mask=x > 1, value=-1.0)
    assert got.cpu().tolist() == [[0.0, 1.0, -1.0], [-1.0, -1.0, -1.0]]
    y = x.clone()
    assert y.swapaxes_(axis0=0, axis1=1) is y and y.shape == (3, 2)
    assert y.swapdims_(dim0=0, dim1=1).shape == (2, 3)
    assert [p.shape for p in torch.unsafe_split(input=x, split_size=1, dim=-1)] == [(2, 1)] * 3
    assert [p.shape for p in torch.unsafe_split_with_sizes(input=x, split_sizes=[1, 2], dim=1)] == [(2, 1), (2, 2)]
    with pytest.raises(TypeError, match="must be torch.dtype"):
        torch.view_copy(x, dtype=1)


def test_out_on_the_ops_pytorch_gives_it(device):
    """PyTorch takes ``out=`` on sgn, conj_physical, hardshrink, ger, index_copy, slice_scatter, nuclear_norm and the
    ``*_copy`` view ops (their .out overloads; the same-dtype unary ones refuse another dtype with "Found dtype Long
    but expected Float", the copies want the exact dtype).  coretorch before: TypeError "unexpected keyword argument
    'out'" on each."""
    x = _t([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]], device, dtype=torch.float32)
    a = x.cpu().numpy()

    def into(fn, *args, **kw):
        o = torch.empty(0, device=device)
        r = fn(*args, out=o, **kw)
        assert r is o
        return o.cpu().numpy()
    np.testing.assert_array_equal(into(torch.sgn, x), np.sign(a))
    np.testing.assert_array_equal(into(torch.conj_physical, x), a)
    np.testing.assert_array_equal(into(torch.hardshrink, x, 2.5), np.where(np.abs(a) > 2.5, a, 0.0))
    np.testing.assert_array_equal(into(torch.ger, x[0], x[1]), np.outer(a[0], a[1]))
    np.testing.assert_array_equal(into(torch.t_copy, x), a.T)
    np.testing.assert_array_equal(into(torch.squeeze_copy, x[:1]), a[0])
    assert into(torch.unsqueeze_copy, x, 0).shape == (1, 2, 3)
    np.testing.assert_array_equal(into(torch.diagonal_copy, x), np.diagonal(a))
    np.testing.assert_array_equal(into(torch.alias_copy, x), a)
    np.testing.assert_array_equal(into(torch.detach_copy, x), a)
    assert into(torch.unfold_copy, x, 1, 2, 1).shape == (2, 2, 2)
    want = a.copy()
    want[0] = 9.0
    np.testing.assert_array_equal(into(torch.index_copy, x, 0, torch.tensor([0], device=device),
                                       torch.full((1, 3), 9.0, device=device)), want)
    np.testing.assert_array_equal(into(torch.slice_scatter, x, torch.zeros(1, 3, device=device), 0, 0, 1),
                                  np.vstack([np.zeros(3), a[1]]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (nuclear_norm's deprecation)
        got = into(torch.nuclear_norm, x)
        assert got.shape == () and got == pytest.approx(np.linalg.norm(a, "nuc"), rel=1e-5)
        with pytest.raises(RuntimeError, match="dims must be different"):
            torch.nuclear_norm(x, 0, True)  # (an int dim is PyTorch's pair (0, 0))
        with pytest.raises(RuntimeError, match="dtype"):
            torch.nuclear_norm(x, out=torch.empty(0, dtype=torch.int64, device=device))
    for fn in (torch.sgn, torch.conj_physical, torch.hardshrink):
        with pytest.raises(RuntimeError, match="Found dtype Long but expected Float"):
            fn(x, out=torch.empty(0, dtype=torch.int64, device=device))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
        torch.t_copy(x, out=torch.empty(0, dtype=torch.int64, device=device))


def test_isposinf_isneginf_signbit_take_a_bool_out_only(device):
    """PyTorch: ``torch.isposinf/isneginf/signbit(x, out=o)`` raise RuntimeError "isposinf does not support
    non-boolean outputs." for a non-bool ``o``.  coretorch before: wrote 0.0/1.0 into a float out."""
    x = _t([float("inf"), -float("inf"), -0.0, 1.0], device, dtype=torch.float32)
    for fn, want in ((torch.isposinf, [True, False, False, False]), (torch.isneginf, [False, True, False, False]),
                     (torch.signbit, [False, True, True, False])):
        name = fn.__name__
        with pytest.raises(RuntimeError, match=f"{name} does not support non-boolean outputs."):
            fn(x, out=torch.empty(0, device=device))
        with pytest.raises(RuntimeError, match="does not support non-boolean outputs"):
            fn(x, out=torch.empty(0, dtype=torch.uint8, device=device))
        o = torch.empty(0, dtype=torch.bool, device=device)
        assert fn(x, out=o) is o and o.cpu().tolist() == want
