"""Regressions found by the differential fuzzer (coretorch/testing_fuzz.py, benchmarks/torch_oracle.py): each pins
PyTorch 2.13's behaviour (checked by hand against it) on every installed device."""
from __future__ import annotations

import math

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F
from coretorch.testing import available_devices

DEVICES = available_devices()
INT_DTYPES = (torch.uint8, torch.int8, torch.int32, torch.int64)


# ---- activations with a transcendental formula have no integer kernels (they promoted to float32) ----
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fn", [F.gelu, F.silu, F.elu, F.selu, F.celu, F.leaky_relu, F.softplus, F.logsigmoid,
                                F.mish, F.hardsigmoid, F.hardswish])
@pytest.mark.parametrize("dtype", INT_DTYPES + (torch.bool,))
def test_float_activations_reject_integer_inputs(device, fn, dtype):
    x = torch.tensor([1, 0, 1], dtype=dtype, device=device)
    with pytest.raises(RuntimeError, match="not implemented for"):  # NotImplementedError, as PyTorch
        fn(x)
    with pytest.raises(NotImplementedError):
        fn(x)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_hardtanh_and_relu6_keep_integer_dtypes(device, dtype):
    vals = [5, 0, 1, 9] if dtype is torch.uint8 else [-4, 0, 1, 9]
    x = torch.tensor(vals, dtype=dtype, device=device)
    z = F.relu6(x)
    assert z.dtype is dtype and z.tolist() == np.clip(vals, 0, 6).tolist()
    if dtype is torch.uint8:
        with pytest.raises(RuntimeError, match="unsigned type with negative limits"):
            F.hardtanh(x)
        assert F.hardtanh(x, 1.5, 6.9).tolist() == np.clip(vals, 1, 6).tolist()
    else:
        y = F.hardtanh(x)
        assert y.dtype is dtype and y.tolist() == np.clip(vals, -1, 1).tolist()
        assert F.hardtanh(x, -2.7, 3.9).tolist() == np.clip(vals, -2, 3).tolist()  # bounds truncated to the dtype
    with pytest.raises(RuntimeError, match="Bool inputs not supported for hardtanh"):
        F.hardtanh(torch.tensor([True], device=device))


# ---- a bool sum / prod is any / all: a bool tensor never holds 2 ----
@pytest.mark.parametrize("device", DEVICES)
def test_sum_and_prod_with_bool_dtype(device):
    a = np.array([[0.75, 0.0, -0.5], [0.0, 0.0, 0.0]], dtype=np.float32)
    x = torch.tensor(a, device=device)
    s = x.sum(dtype=torch.bool)
    assert s.dtype is torch.bool and s.item() is True
    assert x.sum(1, dtype=torch.bool).tolist() == (a != 0).any(1).tolist()
    assert x.sum((0, 1), keepdim=True, dtype=torch.bool).tolist() == [[True]]
    assert torch.sum(x, 0, dtype=torch.bool).tolist() == (a != 0).any(0).tolist()
    assert x.prod(dtype=torch.bool).item() is False
    assert x.prod(1, dtype=torch.bool).tolist() == (a != 0).all(1).tolist()
    i = torch.tensor([2, 3], device=device)
    assert i.sum(dtype=torch.bool).item() is True and i.prod(dtype=torch.bool).item() is True
    assert int(i.sum(dtype=torch.bool).to(torch.int64).item()) == 1


# ---- topk / kthvalue have no bool kernels in PyTorch (sort, max and msort do) ----
@pytest.mark.parametrize("device", DEVICES)
def test_topk_and_kthvalue_reject_bool(device):
    b = torch.tensor([True, False, True], device=device)
    with pytest.raises(RuntimeError, match="topk does not support bool"):
        torch.topk(b, 1)
    with pytest.raises(NotImplementedError, match="kthvalue"):
        torch.kthvalue(b, 1)
    assert torch.sort(b).values.tolist() == [False, True, True]  # still fine
    assert b.max().item() is True


# ---- softmax / log_softmax: a row holding +inf is a nan row (inf - inf), an all -inf row too ----
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_softmax_rows_with_infinities(device, name, dtype):
    # looked up by name at run time: defining a __torch_function__ subclass elsewhere re-wraps torch's functions
    fn = getattr(torch, name)
    inf = math.inf
    a = np.array([[1.8, inf, -0.5], [-inf, -inf, -inf], [-inf, 1.0, 2.0], [1.0, 2.0, 3.0]])
    got = fn(torch.tensor(a, dtype=dtype, device=device), 1).cpu().numpy()
    assert np.isnan(got[0]).all() and np.isnan(got[1]).all()
    finite = a[2:] - a[2:].max(1, keepdims=True)
    ls = finite - np.log(np.exp(finite).sum(1, keepdims=True))
    want = ls if name == "log_softmax" else np.exp(ls)
    np.testing.assert_allclose(got[2:], want, rtol=1e-6)
    # along a middle dim (the strided kernel) and a long row (the work-group kernel on opencl)
    b = np.zeros((2, 3, 2))
    b[0, 1, 1] = inf
    got = fn(torch.tensor(b, dtype=dtype, device=device), 1).cpu().numpy()
    assert np.isnan(got[0, :, 1]).all() and not np.isnan(got[0, :, 0]).any() and not np.isnan(got[1]).any()
    row = np.zeros((1, 300))
    row[0, 7] = inf
    assert np.isnan(fn(torch.tensor(row, dtype=dtype, device=device), 1).cpu().numpy()).all()


# ---- an in-place change of an output that the backward needs raises (it gave silently wrong gradients) ----
_SAVES_OUTPUT = {"cumprod": lambda a: a.cumprod(0), "amax": lambda a: a.amax(0), "amin": lambda a: a.amin(0),
                 "max": lambda a: a.max(), "prod": lambda a: a.prod(), "prod_dim": lambda a: a.prod(0),
                 "softmax": lambda a: torch.softmax(a, 0), "log_softmax": lambda a: F.log_softmax(a, 0),
                 "logsumexp": lambda a: a.logsumexp(0), "norm": lambda a: a.norm(), "norm3": lambda a: a.norm(p=3),
                 "std": lambda a: a.std(), "logcumsumexp": lambda a: a.logcumsumexp(0)}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", sorted(_SAVES_OUTPUT))
def test_inplace_change_of_a_saved_output_fails_the_backward(device, op):
    a = torch.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    y = _SAVES_OUTPUT[op](a)
    y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    # unchanged outputs still differentiate (the saved output does not break the plain case)
    b = torch.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    _SAVES_OUTPUT[op](b).sum().backward()
    assert b.grad is not None and b.grad.shape == b.shape and np.isfinite(b.grad.cpu().numpy()).all()


@pytest.mark.parametrize("device", DEVICES)
def test_cumprod_gradient_unchanged_by_the_saved_output(device):
    a = torch.tensor([2.0, 3.0, 0.5], dtype=torch.float64, device=device, requires_grad=True)
    a.cumprod(0).sum().backward()
    # d/da_i of sum_j prod_{k<=j} a_k: hand-computed for [2, 3, 0.5]
    np.testing.assert_allclose(a.grad.cpu().numpy(), [1 + 3 + 1.5, 2 + 1, 6], rtol=1e-12)


# ---- small API / edge gaps ----
@pytest.mark.parametrize("device", DEVICES)
def test_sgn_is_sign_for_real_tensors(device):
    a = np.array([-2.5, 0.0, 3.0], dtype=np.float32)
    x = torch.tensor(a, device=device)
    assert torch.sgn(x).tolist() == np.sign(a).tolist() and x.sgn().dtype is torch.float32
    assert torch.tensor([-3, 0, 4], device=device).sgn().tolist() == [-1, 0, 1]
    assert torch.tensor([True, False], device=device).sgn().tolist() == [True, False]
    y = x.clone()
    assert y.sgn_() is y and y.tolist() == np.sign(a).tolist()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fn", [torch.softmax, torch.log_softmax])
@pytest.mark.parametrize("dtype", [torch.int8, torch.int64, torch.bool])
def test_softmax_of_an_empty_integer_tensor_is_empty_in_its_dtype(device, fn, dtype):
    y = fn(torch.zeros((2, 0), dtype=dtype, device=device), 1)
    assert y.dtype is dtype and tuple(y.shape) == (2, 0)
    with pytest.raises(RuntimeError, match="not implemented for"):
        fn(torch.zeros(2, dtype=dtype, device=device), 0)


@pytest.mark.parametrize("device", DEVICES)
def test_trace_rejects_bool_and_sums_integers_to_int64(device):
    with pytest.raises(NotImplementedError, match="trace"):
        torch.trace(torch.tensor([[True, False], [True, True]], device=device))
    t = torch.trace(torch.tensor([[2, 9], [4, 5]], dtype=torch.int8, device=device))
    assert t.dtype is torch.int64 and t.item() == 7


# ---- pointwise losses: no integer-only kernels; a bool target joins the input's dtype ----
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("loss", [F.mse_loss, F.smooth_l1_loss, F.huber_loss])
def test_pointwise_losses_dtype_rules(device, loss):
    i = torch.tensor([1, 2], device=device)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        loss(i, i)
    a = np.array([1.5, -2.0], dtype=np.float32)
    got = loss(torch.tensor(a, device=device), torch.tensor([True, False], device=device))
    d = np.abs(a - np.array([1.0, 0.0], dtype=np.float32))
    want = {F.mse_loss: d * d, F.smooth_l1_loss: np.where(d < 1, 0.5 * d * d, d - 0.5),
            F.huber_loss: np.where(d < 1, 0.5 * d * d, d - 0.5)}[loss].mean()
    assert got.dtype is torch.float32 and abs(got.item() - want) < 1e-6


@pytest.mark.parametrize("device", DEVICES)
def test_bce_with_logits_rejects_integer_operands(device):
    i = torch.tensor([1, 0], device=device)
    a = torch.tensor([0.5, -1.0], device=device)
    with pytest.raises(NotImplementedError):
        F.binary_cross_entropy_with_logits(i, a)
    with pytest.raises(RuntimeError, match="can't be cast"):
        F.binary_cross_entropy_with_logits(a, i)
    with pytest.raises(ValueError, match="Target size"):  # the shape check comes first, as PyTorch
        F.binary_cross_entropy_with_logits(i, i[:1])
    got = F.binary_cross_entropy_with_logits(a, i.float()).item()
    want = np.mean([np.log1p(np.exp(-0.5)), np.log1p(np.exp(-1.0))])  # -log sigmoid(0.5), -log(1 - sigmoid(-1))
    assert abs(got - want) < 1e-6


@pytest.mark.parametrize("device", available_devices())
def test_copy_from_a_python_number_and_hypot_of_integers(device):
    # found by the oracle: copy_(number) fills as PyTorch's scalar binding does; hypot has no integer kernel
    x = torch.zeros(3, dtype=torch.int8, device=device)
    assert x.copy_(2.7) is x and x.cpu().tolist() == [2, 2, 2]
    h = torch.zeros(2, dtype=torch.float16, device=device).copy_(70000.0)
    assert h.cpu().tolist() == [float("inf")] * 2
    b = torch.zeros(2, device=device).copy_(True)
    assert b.cpu().tolist() == [1.0, 1.0]
    leaf = torch.zeros(2, requires_grad=True, device=device)
    y = leaf.clone().copy_(2)
    assert type(y.grad_fn).__name__ == "CopyBackwards"
    y.sum().backward()
    assert leaf.grad.cpu().tolist() == [0.0, 0.0]  # the overwritten value gets a zero gradient
    with pytest.raises(TypeError, match=r"argument 'other' \(position 1\) must be Tensor"):
        x.copy_("2")
    with pytest.raises(NotImplementedError, match="\"hypot_cpu\" not implemented for 'Long'"):
        torch.hypot(torch.tensor([3], device=device), torch.tensor([4], device=device))
    got = torch.hypot(torch.tensor([3], device=device), torch.tensor([4.0], device=device))
    assert got.dtype is torch.float32 and got.cpu().tolist() == [5.0]
