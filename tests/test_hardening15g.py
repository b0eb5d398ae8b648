"""Issue 15 leftovers, pinned against PyTorch 2.13 (checked by hand) on every device: ``out=`` refuses memory
overlapping an input as PyTorch's kernels do, advanced setitem checks the view its ints and slices leave,
soft_margin_loss refuses a target that requires grad, an in-place op cannot move a CPU tensor to a device, nested
subscript lists warn, numpy's warnings stay silent after a catch_warnings() block around the import, and
searchsorted / mode / var_mean treat NaN and inf as PyTorch's CPU kernels."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F

_OVERLAP = "some elements of the input tensor and the written-to tensor refer to a single memory location"


# ---- out= overlap: TensorIterator ops refuse a partial overlap with any input, an identical one is allowed ----
def test_out_partial_overlap_raises_full_allowed(device):
    x = torch.arange(10.0, device=device)
    with pytest.raises(RuntimeError, match=_OVERLAP):
        torch.add(x[:-1], 1, out=x[1:])
    with pytest.raises(RuntimeError, match=_OVERLAP):
        torch.exp(x[:4].view(2, 2).t(), out=x[:4].view(2, 2))  # same bytes, other strides: partial
    with pytest.raises(RuntimeError, match=_OVERLAP):
        torch.special.expit(x[:4], out=x[1:5])
    with pytest.raises(RuntimeError, match=_OVERLAP):
        torch.addcmul(torch.ones(3, device=device), x[0:3], torch.ones(3, device=device), out=x[1:4])
    assert np.array_equal(x.tolist(), np.arange(10.0))  # nothing was written
    torch.add(x, 1, out=x)
    torch.mul(x[2:5], 2, out=x[2:5])
    assert x.tolist() == [1.0, 2.0, 6.0, 8.0, 10.0, 6.0, 7.0, 8.0, 9.0, 10.0]


def test_out_overlap_rules_per_op(device):
    x = torch.arange(12.0, device=device)
    i64 = torch.empty(2, dtype=torch.int64, device=device)
    with pytest.raises(RuntimeError, match=_OVERLAP):  # cat and the gathers refuse any overlap, identical too
        torch.cat([x[:5]], out=x[:5])
    with pytest.raises(RuntimeError, match=_OVERLAP):
        torch.index_select(x[:2], 0, torch.tensor([0, 1], device=device), out=x[:2])
    with pytest.raises(RuntimeError, match=_OVERLAP):
        torch.max(x[:6].view(2, 3), 1, out=(x[1:3], i64))
    with pytest.raises(RuntimeError, match=_OVERLAP):
        torch.cumsum(x[:5], 0, out=x[1:6])
    with pytest.raises(RuntimeError, match=_OVERLAP):
        torch.addmm(x[:4].view(2, 2), torch.ones(2, 2, device=device), torch.ones(2, 2, device=device),
                    out=x[2:6].view(2, 2))
    # reductions and plain products do not check (PyTorch's kernels write a fresh result)
    r = torch.sum(x[:6].view(2, 3), 1, out=x[1:3])
    assert r.tolist() == [3.0, 12.0]
    m = torch.mm(x[:4].view(2, 2), torch.eye(2, device=device), out=x[8:12].view(2, 2))
    assert m.tolist() == [[0.0, 3.0], [12.0, 3.0]]
    # the matmul operands of addmm are not checked, only its input
    y = torch.arange(8.0, device=device)
    torch.addmm(torch.zeros(2, 2, device=device), y[:4].view(2, 2), torch.eye(2, device=device), out=y[2:6].view(2, 2))
    assert y.tolist() == [0.0, 1.0, 0.0, 1.0, 2.0, 3.0, 6.0, 7.0]


def test_out_overlap_of_new_out_functions(device):
    x = torch.arange(6.0, device=device)
    with pytest.raises(RuntimeError, match=_OVERLAP):
        torch.index_add(torch.ones(4, device=device), 0, torch.tensor([0], device=device), x[0:1], out=x[0:4])
    out = torch.empty(4, device=device)
    r = torch.index_add(torch.ones(4, device=device), 0, torch.tensor([1], device=device), x[2:3], alpha=2, out=out)
    assert r is out and out.tolist() == [1.0, 5.0, 1.0, 1.0]
    with pytest.raises(RuntimeError, match="dtype"):  # the out dtype must match, as PyTorch's kernels check
        torch.float_power(x, 2, out=torch.empty(6, device=device))


# ---- advanced setitem: the view left by the key's ints and slices is checked against the value ----
@pytest.mark.parametrize("key, src, raises", [
    ((slice(0, None), [0]), (0, slice(0, 1)), True),
    ((slice(1, None), [0, 1]), (0, slice(0, 2)), False),
    ((0, [0, 1]), (0, slice(1, 3)), True),
    ((1, [0, 1]), (0, slice(1, 3)), False),
])
def test_advanced_setitem_with_slices_checks_overlap(device, key, src, raises):
    y = torch.arange(12.0, device=device).reshape(3, 4)
    if raises:
        with pytest.raises(RuntimeError, match=_OVERLAP):
            y[key] = y[src]
        assert y.tolist() == np.arange(12.0).reshape(3, 4).tolist()
    else:
        want = np.arange(12.0).reshape(3, 4)
        want[key] = want[src].copy()
        y[key] = y[src]
        assert y.tolist() == want.tolist()


# ---- soft_margin_loss: no gradient for the target (PyTorch raises), output of the input's shape ----
def test_soft_margin_loss_target_requires_grad(device):
    x = torch.tensor([0.5, -1.0], device=device, requires_grad=True)
    y = torch.tensor([1.0, -1.0], device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'target'"):
        F.soft_margin_loss(x, y)
    with torch.no_grad():
        v = F.soft_margin_loss(x, y)
    assert v.item() == pytest.approx(float(np.mean(np.log1p(np.exp([-0.5, -1.0])))), rel=1e-6)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        F.soft_margin_loss(torch.ones(3, device=device), torch.ones(2, 3, device=device))


# ---- an in-place op never moves its CPU tensor to a device (PyTorch's CUDA rule) ----
def test_inplace_cpu_tensor_with_device_0d_operand(device):
    d0 = torch.tensor(2.0, device=device)
    for c in (torch.ones(3), torch.tensor(1.0)):
        for f in (lambda t: t.add_(d0), lambda t: t.mul_(d0), lambda t: t.clamp_(d0), lambda t: t.eq_(d0)):
            if device == "cpu":  # one device: in place as usual
                assert f(c.clone()).device.type == "cpu"
            else:
                with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
                    f(c.clone())
    r = torch.tensor(1.0) + d0  # out of place: a CPU 0-d operand follows the device
    assert r.device.type == device and r.item() == 3.0
    t = torch.ones(3, device=device).add_(torch.tensor(2.0))  # a CPU 0-d operand of a device tensor: allowed
    assert t.tolist() == [3.0, 3.0, 3.0]


# ---- nested subscript lists: a tuple of indices, with PyTorch 2.13's deprecation warning ----
def test_nested_subscript_list_warns(device):
    x = torch.arange(6.0, device=device).reshape(2, 3)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert x[[0, [1, 2]]].tolist() == [1.0, 2.0]
        assert x[[None, 0]].shape == (1, 3)
        x[[[0, 1], [0, 1]]] = 7.0
        assert x[[0, 1]].shape == (2, 3) and x[[True, False]].shape == (1, 3)  # plain lists: no warning
    ours = [m for m in w if issubclass(m.category, UserWarning) and "non-tuple sequence" in str(m.message)]
    assert len(ours) == 3 and all(m.filename == __file__ for m in ours)  # at the subscript, as PyTorch's
    # (and nothing else of ours: a device compiler's notes may come too)
    assert not [m for m in w if "index" in str(m.message) and m not in ours]
    assert x.tolist() == [[7.0, 1.0, 2.0], [3.0, 7.0, 5.0]]


# ---- numpy's warnings stay silent after a catch_warnings() block around the import dropped the filter ----
def test_numpy_warnings_silent_after_the_filter_was_dropped():
    x = torch.tensor([0.0, 3e38, -1.0])
    with warnings.catch_warnings(record=True) as w:
        # as after `with warnings.catch_warnings(): import coretorch` (pytest's collection is one): no filter of ours
        warnings.filters[:] = [f for f in warnings.filters if "encountered" not in getattr(f[1], "pattern", "")]
        warnings.simplefilter("default")
        y = (x * 10, x / 0, torch.log(x), x.sum() * x)
        assert not w, [str(m.message) for m in w]
        assert any("encountered" in getattr(f[1], "pattern", "") for f in warnings.filters)  # put back
        assert y[0].tolist()[1] == float("inf")
        np.log(np.array([-1.0]))  # a user's own numpy code still warns
        assert [m.category for m in w] == [RuntimeWarning] and "invalid value" in str(w[0].message)


# ---- median() saves its result: an in-place change of it makes the backward raise (it read NaN grads) ----
def test_median_result_changed_in_place_raises_in_backward(device):
    for f in (lambda t: t.median(), lambda t: t.nanmedian()):
        x = torch.tensor([[-1.0, -0.795, 0.591], [-1.435, 0.003, -1.41]], device=device, requires_grad=True)
        y = f(x)
        y.relu_()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()
    x = torch.tensor([1.0, 2.0, 3.0, 2.0], dtype=torch.float64, device=device, requires_grad=True)
    x.median().backward()
    assert x.grad.tolist() == [0.0, 0.5, 0.0, 0.5]  # shared by the equal elements, as PyTorch


# ---- NaN and inf as PyTorch's CPU kernels (values checked against PyTorch 2.13 by hand) ----
_NAN, _INF = float("nan"), float("inf")


def test_searchsorted_with_nan_boundaries_follows_pytorchs_probes(device):
    s = torch.tensor([1.0, 2.0, _NAN], device=device)
    v = torch.tensor([_NAN, _INF, -_INF, 2.0, 3.0], device=device)
    assert torch.searchsorted(s, v).tolist() == [3, 3, 0, 1, 3]
    assert torch.searchsorted(s, v, right=True).tolist() == [3, 3, 0, 3, 3]
    s2 = torch.tensor([[1.0, _INF, _NAN, _NAN], [0.0, 1.0, 2.0, 3.0]], device=device)
    v2 = torch.tensor([[_NAN, _INF, 5.0], [_NAN, 1.0, -1.0]], device=device)
    assert torch.searchsorted(s2, v2).tolist() == [[4, 4, 4], [4, 1, 0]]
    unsorted = torch.tensor([_NAN, 1.0, 2.0], device=device)  # unsorted: the probes decide, as PyTorch's
    assert torch.searchsorted(unsorted, torch.tensor([_NAN, 1.5, 0.0], device=device)).tolist() == [3, 2, 1]
    assert torch.bucketize(torch.tensor([2.0, _NAN], device=device), s, right=True).tolist() == [3, 3]


def test_mode_of_rows_with_nan(device):
    x = torch.tensor([[_NAN, _NAN, 1.0, 1.0, 2.0], [_NAN, _NAN, _NAN, 1.0, 1.0], [4.0, 1.0, 4.0, 1.0, 4.0]],
                     device=device)
    v, i = torch.mode(x, 1)
    assert v[2].item() == 4.0 and i[2].item() == 4  # no NaN: the smallest most frequent value, its last index
    if device == "cpu":  # NaN rows: PyTorch's CPU sort leaves NaN in place, each NaN a run of one
        assert v[:2].tolist() == [1.0, 1.0] and i[:2].tolist() == [3, 4]
        v, i = torch.mode(torch.tensor([_NAN, 1.0, _NAN, 2.0]))
        assert np.isnan(v.item()) and i.item() == 0
        v, i = torch.mode(torch.tensor([3.0, _NAN, 3.0, 1.0, _NAN] * 4))  # 20: libstdc++'s introsort path
        assert (v.item(), i.item()) == (1.0, 13)
        v, i = torch.mode(torch.tensor([[2.0, _NAN, 2.0, 5.0, 5.0, _NAN, 5.0, 2.0] * 3]), 1)
        assert (v.item(), i.item()) == (2.0, 10)
    else:  # a device keeps its kernel's answer (as PyTorch's CUDA mode): one of the row's values
        assert all(np.isnan(a) or a in (1.0, 2.0) for a in v[:2].tolist())


def test_var_mean_mean_of_nonfinite_slices(device):
    cases = [([1.0, _INF], _INF), ([_INF, 1.0], _NAN), ([_INF, _INF], _NAN), ([-_INF, _INF], _NAN), ([_INF], _INF),
             ([1.0, 2.0, -_INF], -_INF), ([1.0, _NAN], _NAN), ([2.0, 3.0], 2.5)]
    for vals, want in cases:
        x = torch.tensor(vals, device=device)
        for f in (torch.var_mean, torch.std_mean):
            m = f(x, correction=0)[1].item()
            assert (np.isnan(m) and np.isnan(want)) or m == want, (vals, f, m)
    x = torch.tensor([[1.0, 2.0], [3.0, _INF]], device=device)
    assert torch.var_mean(x, 1)[1].tolist() == [1.5, _INF]
    assert torch.std_mean(x, 0, keepdim=True)[1].tolist() == [[2.0, _INF]]
    assert torch.mean(torch.tensor([_INF, _INF], device=device)).item() == _INF  # mean itself is unchanged
    x = torch.tensor([[1.0, 2.0, 4.0], [3.0, _INF, 5.0]], dtype=torch.float64, device=device, requires_grad=True)
    torch.var_mean(x, 1)[1].sum().backward()
    assert np.allclose(x.grad.tolist(), 1 / 3)  # the gradient stays mean's


# ---- found by the oracle with nan/inf inputs (--special) ----
def test_quantile_of_a_nan_row_sends_the_gradient_to_the_nan(device):
    x = torch.tensor([[1.75, -2.797, _NAN, 0.069], [-0.5, -2.0, -2.75, 2.296]], device=device, requires_grad=True)
    r = torch.quantile(x, 0.5, dim=1)
    assert np.isnan(r[0].item()) and r[1].item() == pytest.approx(-1.25)
    r.backward(torch.tensor([3.0, 2.0], device=device))
    # PyTorch: a NaN row takes the last rank, so its whole gradient reaches the NaN (sorted last)
    assert x.grad.tolist() == [[0.0, 0.0, 3.0, 0.0], [1.0, 1.0, 0.0, 0.0]]


def test_addcmul_gradient_with_inf_factor_under_mixed_gradients(device):
    x1 = torch.tensor([[1.0, _INF], [2.0, -1.0]], device=device, requires_grad=True)
    x3 = torch.addcmul(torch.zeros(2, 2, 2, device=device), x1, x1, value=0.5)
    assert x3.grad_fn.name() == "AddcmulBackward0"
    (x3 * torch.tensor([[[1.0, 1.0], [1.0, 1.0]], [[-2.0, -2.0], [-2.0, -2.0]]], device=device)).sum().backward()
    g = x1.grad.tolist()  # (inf * 1) + (inf * -2) summed at the broadcast shape: NaN, as PyTorch's formula
    assert g[0][0] == -1.0 and np.isnan(g[0][1]) and g[1] == [-2.0, 1.0]
    x = torch.tensor([[1.5, -2.0]], device=device, requires_grad=True)  # a bool input: the composite, renamed
    y = torch.addcmul(torch.tensor([False], device=device), x, x, value=0.5)
    assert y.grad_fn.name() == "AddcmulBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [[1.5, -2.0]]


def test_inf_norm_gradient_of_a_nan_slice_is_zero(device):
    for norm in (lambda t: torch.norm(t, p=_INF, dim=0), lambda t: torch.linalg.vector_norm(t, ord=-_INF, dim=0)):
        x = torch.tensor([[-0.25, 2.0], [_NAN, -3.0], [0.5, 3.0]], dtype=torch.float64, device=device,
                         requires_grad=True)
        r = norm(x)
        assert r.grad_fn.name() == "LinalgVectorNormBackward0" and np.isnan(r[0].item())
        r.backward(torch.full((2,), 2.0, dtype=torch.float64, device=device))
        g = x.grad.tolist()  # PyTorch: the NaN column gets zeros (sign(NaN) is 0), ties share with their sign
        assert [row[0] for row in g] == [0.0, 0.0, 0.0]
        assert [row[1] for row in g] == ([0.0, -1.0, 1.0] if r[1].item() == 3.0 else [2.0, 0.0, 0.0])


def test_cumprod_over_a_dim_of_one_passes_the_gradient(device):
    x = torch.tensor([[_INF, 1.0]], device=device, requires_grad=True)
    x.cumprod(0).sum().backward()  # PyTorch's shortcut: the identity (not inf / inf)
    assert x.grad.tolist() == [[1.0, 1.0]]
