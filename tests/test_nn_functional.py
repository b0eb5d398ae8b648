"""nn.functional against NumPy (forward) and finite differences (backward), on every available device, plus
a 'nofused' device (the CPU kernels without the optional fused nn kernels) that runs the composite fallbacks."""
from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest

import coretorch
import coretorch.nn.functional as F
from coretorch.testing import available_devices, check_backward, check_backward_like, check_forward, cpu_kernels_as
from coretorch.testing_nn import NN_CASES, NN_REQUIRED_OPS

FUSED = ("conv2d", "conv2d_backward_input", "conv2d_backward_weight", "max_pool2d", "max_pool2d_backward",
         "softmax", "log_softmax", "erf", "gelu")


@pytest.fixture(scope="module")
def nofused():
    """The CPU kernels without the optional fused nn kernels: exercises the composite fallbacks."""
    with cpu_kernels_as("nofused", drop=FUSED) as dev:
        yield dev


DEVICES = available_devices()
# the fallback device runs the cases of the ops that have fused kernels
_FALLBACK_OPS = {"conv2d", "conv1d", "conv_transpose2d", "max_pool2d", "max_pool1d", "avg_pool2d", "softmax",
                 "log_softmax", "erf", "gelu", "cross_entropy"}
FORWARD = [pytest.param(c, d, id=f"{c.name}-{d}") for c in NN_CASES if c.forward for d in DEVICES] + \
    [pytest.param(c, "nofused", id=f"{c.name}-nofused") for c in NN_CASES if c.op in _FALLBACK_OPS]
# backward: every case on the CPU; on other devices (and the fallback device) the representative case of each
# op (the one marked gradgrad), against the CPU's gradchecked backward (check_backward_like): finite differences on
# a device are slow and test the same formulas
_REPR = [dataclasses.replace(c, gradgrad=False) for c in NN_CASES if c.gradgrad]
BACKWARD = [pytest.param(c, "cpu", id=f"{c.name}-cpu") for c in NN_CASES if c.grad and c.raises is None] + \
    [pytest.param(c, d, id=f"{c.name}-{d}") for c in _REPR for d in DEVICES if d != "cpu"] + \
    [pytest.param(c, "nofused", id=f"{c.name}-nofused") for c in _REPR if c.op in _FALLBACK_OPS]


@pytest.mark.parametrize("case,device", FORWARD)
def test_forward(case, device, request):
    if device == "nofused":
        request.getfixturevalue("nofused")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # kl_div's 'mean' notice
        for dtype in case.dtypes:
            check_forward(case, device, dtype)


@pytest.mark.parametrize("case,device", BACKWARD)
def test_backward(case, device, request):
    if device == "nofused":
        request.getfixturevalue("nofused")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        if device == "cpu":
            check_backward(case, device)
        else:
            check_backward_like(case, device, "cpu")


def test_every_required_op_has_cases():
    ops = {c.op for c in NN_CASES}
    assert not set(NN_REQUIRED_OPS) - ops, sorted(set(NN_REQUIRED_OPS) - ops)
    for op in NN_REQUIRED_OPS:
        assert any(c.op == op and c.forward and c.raises is None for c in NN_CASES), op
        assert any(c.op == op and c.grad and c.raises is None for c in NN_CASES) or op == "one_hot", op


def test_nofused_device_lacks_the_fused_kernels(nofused):
    x = coretorch.ones(1, 1, 3, 3, device=nofused)
    assert not x._be.has("conv2d") and coretorch.ones(1).cpu()._be.has("conv2d")
    out = F.conv2d(x, coretorch.ones(1, 1, 2, 2, device=nofused))
    assert out.device.type == "nofused" and out.tolist() == [[[[4.0, 4.0], [4.0, 4.0]]]]


def test_erf_accuracy():
    xs = np.concatenate([np.linspace(-7, 7, 4001), [0.0, -0.0, 1e-300, 2.5, -2.5, np.inf, -np.inf]])
    got = F.erf(coretorch.tensor(xs)).numpy()
    want = np.array([math.erf(v) for v in xs])
    assert np.max(np.abs(got - want)) < 2e-15
    assert np.isnan(F.erf(coretorch.tensor([float("nan")])).item())
    got32 = F.erf(coretorch.tensor(xs, dtype=coretorch.float32)).numpy()
    assert got32.dtype == np.float32 and np.max(np.abs(got32 - want)) < 1e-6


def test_softmax_implicit_dim_warns():
    x = coretorch.randn(2, 3)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        y = F.softmax(x)
    np.testing.assert_allclose(y.sum(1).numpy(), 1, rtol=1e-6)
    with pytest.warns(UserWarning, match="Implicit dimension choice for log_softmax"):
        F.log_softmax(coretorch.randn(3))


def test_softmax_all_masked_row_is_nan():
    x = coretorch.tensor([[float("-inf")] * 3, [0.0, 1.0, float("-inf")]])
    y = F.softmax(x, -1)
    assert np.isnan(y[0].numpy()).all() and y[1, 2].item() == 0.0


def test_legacy_reduction_args():
    x, t = coretorch.randn(3, 4), coretorch.randn(3, 4)
    with pytest.warns(UserWarning, match="reduction='sum'"):
        s = F.mse_loss(x, t, size_average=False)
    assert math.isclose(s.item(), F.mse_loss(x, t, reduction="sum").item(), rel_tol=1e-6)
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert F.l1_loss(x, t, reduce=False).shape == (3, 4)


def test_mse_loss_broadcast_warning():
    with pytest.warns(UserWarning, match="different to the input size"):
        F.mse_loss(coretorch.randn(3, 1), coretorch.randn(3, 4))


def test_cross_entropy_all_ignored_is_nan():
    x = coretorch.randn(3, 4, requires_grad=True)
    loss = F.cross_entropy(x, coretorch.tensor([-100, -100, -100]))
    assert math.isnan(loss.item())


def test_cross_entropy_matches_log_softmax_nll():
    x = coretorch.randn(6, 5, dtype=coretorch.float64, requires_grad=True)
    t = coretorch.tensor([0, 4, 2, 2, 1, 3])
    a = F.cross_entropy(x, t)
    b = F.nll_loss(F.log_softmax(x, 1), t)
    (ga,) = coretorch.autograd.grad(a, x)
    (gb,) = coretorch.autograd.grad(b, x)
    assert math.isclose(a.item(), b.item(), rel_tol=1e-12)
    np.testing.assert_allclose(ga.numpy(), gb.numpy(), rtol=1e-12)
    # the gradient of the mean loss is (softmax - onehot) / N
    sm = np.exp(x.detach().numpy()) / np.exp(x.detach().numpy()).sum(1, keepdims=True)
    np.testing.assert_allclose(ga.numpy(), (sm - np.eye(5)[t.numpy()]) / 6, rtol=1e-10)


def test_max_pool2d_nan_propagates():
    x = coretorch.tensor([[[[1.0, float("nan")], [3.0, 2.0]]]])
    v, i = F.max_pool2d(x, 2, return_indices=True)
    assert math.isnan(v.item()) and i.item() == 1


def test_conv2d_grad_of_grad_matches_composite():
    """The conv trio's double backward against the same network written with unfold + matmul."""
    rng = np.random.default_rng(3)
    x = coretorch.tensor(rng.standard_normal((2, 3, 6, 5)), requires_grad=True)
    w = coretorch.tensor(rng.standard_normal((4, 3, 3, 3)), requires_grad=True)
    y = F.conv2d(x, w, stride=2, padding=1)
    (gx,) = coretorch.autograd.grad((y * y).sum(), x, create_graph=True)
    (gw,) = coretorch.autograd.grad(gx.pow(2).sum(), w)
    x2 = coretorch.tensor(x.detach().numpy(), requires_grad=True)
    w2 = coretorch.tensor(w.detach().numpy(), requires_grad=True)
    y2 = F._conv2d_fallback(x2, w2, (2, 2), (1, 1), (1, 1), 1)
    (gx2,) = coretorch.autograd.grad((y2 * y2).sum(), x2, create_graph=True)
    (gw2,) = coretorch.autograd.grad(gx2.pow(2).sum(), w2)
    np.testing.assert_allclose(gx.detach().numpy(), gx2.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(gw.numpy(), gw2.numpy(), rtol=1e-10)


def test_conv2d_errors_name_the_shapes():
    with pytest.raises(RuntimeError, match=r"expected input\[1, 2, 5, 5\] to have 3 channels, but got 2"):
        F.conv2d(coretorch.randn(1, 2, 5, 5), coretorch.randn(4, 3, 3, 3))
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        F.conv2d(coretorch.randn(1, 3, 2, 2), coretorch.randn(4, 3, 3, 3))


def test_grad_fn_names():
    x = coretorch.randn(1, 2, 5, 5, requires_grad=True)
    assert F.conv2d(x, coretorch.randn(3, 2, 3, 3)).grad_fn.name() == "ConvolutionBackward0"
    assert F.max_pool2d(x, 2).grad_fn.name() == "MaxPool2DWithIndicesBackward0"
    assert F.softmax(x, 1).grad_fn.name() == "SoftmaxBackward0"
    assert F.log_softmax(x, 1).grad_fn.name() == "LogSoftmaxBackward0"
    assert F.cross_entropy(x.reshape(5, 10), coretorch.tensor([1, 2, 3, 4, 0])).grad_fn.name() == "NllLossBackward0"
