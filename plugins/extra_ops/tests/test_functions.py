"""Every op of coretorch-extra-ops: forward against numpy (float32 and float64) and backward with float64
gradcheck (gradgradcheck where the backward is differentiable), on every available device."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import coretorch
from coretorch.testing import Arg, OpCase, available_devices, check_backward, check_forward

ops = coretorch.ops
DEVICES = available_devices()
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _like(fn):
    """Apply a float64 numpy formula, return it in the input's dtype."""
    return lambda a, *rest: np.asarray(fn(a.astype(np.float64), *rest)).astype(a.dtype)


def _softplus(x):
    return np.log1p(np.exp(x))


def _focal_ref(x, t, alpha=0.25, gamma=2.0):
    t = t.astype(np.float64)
    p = 1 / (1 + np.exp(-x))
    ce = -(t * np.log(p) + (1 - t) * np.log(1 - p))
    p_t = p * t + (1 - p) * (1 - t)
    loss = ce * (1 - p_t) ** gamma
    return loss if alpha < 0 else (alpha * t + (1 - alpha) * (1 - t)) * loss


def _ce_ref(x, t, reduction="mean", ignore_index=-100):
    x = x.astype(np.float64)
    logp = x - np.log(np.exp(x).sum(1, keepdims=True))
    valid = t != ignore_index
    nll = np.where(valid, -logp[np.arange(len(t)), np.where(valid, t, 0)], 0.0)
    return nll if reduction == "none" else nll.sum() if reduction == "sum" else nll.sum() / valid.sum()


def _rms_ref(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


X = Arg((4, 6))
CASES = [
    OpCase("ext_erf", ops.ext_erf, _like(_erf), (Arg((4, 6)),), gradgrad=True),
    OpCase("ext_erf.wide", lambda x: ops.ext_erf(x * 3), _like(lambda a: _erf(a * 3)), (X,)),
    OpCase("ext_gelu", ops.ext_gelu, _like(lambda a: 0.5 * a * (1 + _erf(a / math.sqrt(2)))), (X,), gradgrad=True),
    OpCase("ext_gelu.tanh", lambda x: ops.ext_gelu(x, approximate="tanh"),
           _like(lambda a: 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3)))), (X,),
           gradgrad=True),
    OpCase("ext_mish", ops.ext_mish, _like(lambda a: a * np.tanh(_softplus(a))), (X,), gradgrad=True),
    OpCase("swiglu", ops.swiglu, _like(lambda a: a[:, :3] / (1 + np.exp(-a[:, :3])) * a[:, 3:]), (X,),
           gradgrad=True),
    OpCase("swiglu.dim0", lambda x: ops.swiglu(x, dim=0),
           _like(lambda a: a[:2] / (1 + np.exp(-a[:2])) * a[2:]), (X,)),
    OpCase("ext_rms_norm", lambda x, w: ops.ext_rms_norm(x, (6,), w, eps=1e-5),
           lambda a, w: _rms_ref(a.astype(np.float64), w, 1e-5).astype(a.dtype), (Arg((4, 6)), Arg((6,))),
           gradgrad=True),
    OpCase("ext_rms_norm.2d_noweight", lambda x: ops.ext_rms_norm(x, [3, 4]),
           lambda a: (a.astype(np.float64) / np.sqrt((a.astype(np.float64) ** 2).mean((1, 2), keepdims=True)
                                                      + np.finfo(a.dtype).eps)).astype(a.dtype), (Arg((2, 3, 4)),)),
    OpCase("focal_loss", lambda x, t: ops.focal_loss(x, t), lambda a, t: _focal_ref(a, t).astype(a.dtype),
           (X, Arg((4, 6), "mask")), gradgrad=True),
    OpCase("focal_loss.mean_gamma1_noalpha", lambda x, t: ops.focal_loss(x, t, -1, 1.0, "mean"),
           lambda a, t: _focal_ref(a, t, -1, 1.0).mean().astype(a.dtype), (X, Arg((4, 6), "mask"))),
    OpCase("fused_softmax_cross_entropy", ops.fused_softmax_cross_entropy,
           lambda a, t: np.asarray(_ce_ref(a, t)).astype(a.dtype), (Arg((5, 4)), Arg((5,), "index:4")),
           gradgrad=True),
    OpCase("fused_softmax_cross_entropy.none", lambda x, t: ops.fused_softmax_cross_entropy(x, t, "none"),
           lambda a, t: _ce_ref(a, t, "none").astype(a.dtype), (Arg((5, 4)), Arg((5,), "index:4"))),
    OpCase("fused_softmax_cross_entropy.sum_ignore", lambda x, t: ops.fused_softmax_cross_entropy(x, t, "sum", 2),
           lambda a, t: np.asarray(_ce_ref(a, t, "sum", 2)).astype(a.dtype), (Arg((5, 4)), Arg((5,), "index:4"))),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_op(case, device):
    if device != "cpu":  # double backward is the same tensor-op code on every device: checked once, on cpu
        case = dataclasses.replace(case, gradgrad=False)
    for dt in case.dtypes:
        check_forward(case, device, dt)
    check_backward(case, device)


@pytest.mark.parametrize("device", DEVICES)
def test_erf_extremes(device):
    x = coretorch.tensor([-30.0, -6.0, -3.0, -1e-300, 0.0, 1e-8, 2.9999, 3.0, 5.5, 30.0, math.inf, -math.inf],
                         dtype=coretorch.float64, device=device)
    want = _erf(x.cpu().numpy())
    np.testing.assert_allclose(ops.ext_erf(x).cpu().numpy(), want, rtol=1e-14, atol=1e-300)
    ints = coretorch.tensor([0, 1], device=device)  # integer inputs give default-dtype floats, as in PyTorch
    assert ops.ext_erf(ints).dtype is coretorch.float32


def test_ops_agree_with_core_nn_functional():
    """The ext_ ops and the core's nn.functional versions (written independently) give the same values."""
    F = coretorch.nn.functional
    x = coretorch.randn(5, 7, dtype=coretorch.float64)
    w = coretorch.rand(7, dtype=coretorch.float64)
    pairs = [(ops.ext_gelu(x), F.gelu(x)), (ops.ext_gelu(x, "tanh"), F.gelu(x, approximate="tanh")),
             (ops.ext_mish(x), F.mish(x)), (ops.ext_rms_norm(x, [7], w), F.rms_norm(x, [7], w)),
             (ops.ext_erf(x), F.erf(x))]
    for mine, core in pairs:
        np.testing.assert_allclose(mine.numpy(), core.numpy(), rtol=1e-12, atol=1e-14)


def test_argument_errors():
    x = coretorch.randn(3, 5)
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        ops.swiglu(x)
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        ops.ext_gelu(x, approximate="fast")
    with pytest.raises(RuntimeError, match="normalized_shape"):
        ops.ext_rms_norm(x, [4])
    with pytest.raises(ValueError, match="expects input"):
        ops.fused_softmax_cross_entropy(x, coretorch.tensor([0, 1]))
    with pytest.raises(ValueError, match="reduction"):
        ops.focal_loss(x, x, reduction="avg")


def test_cpu_kernels_are_used_and_other_devices_fall_back_to_tensor_ops():
    x = coretorch.tensor([0.25, -1.5], dtype=coretorch.float64)
    from coretorch_extra_ops import kernels
    assert ops.get_kernel("ext_erf", x) is kernels.erf_cpu
    if "opencl" in DEVICES:
        assert ops.get_kernel("ext_erf", x.to("opencl")) is kernels.erf_opencl
    # the generic tensor-op path (what a device without a kernel runs) gives the kernel's values
    np.testing.assert_allclose(kernels.erf(x, coretorch).numpy(), kernels.erf_cpu(x.numpy()), rtol=1e-15)


def test_modules():
    nn = coretorch.nn
    from coretorch_extra_ops.modules import Mish, RMSNorm
    for name, cls in (("Mish", Mish), ("RMSNorm", RMSNorm)):  # registered unless coretorch has its own
        assert getattr(nn, name) is cls or name not in nn._registered
    x = coretorch.randn(2, 3, 4, dtype=coretorch.float64)
    np.testing.assert_allclose(Mish()(x).numpy(), x.numpy() * np.tanh(np.log1p(np.exp(x.numpy()))), rtol=1e-14)
    norm = RMSNorm([3, 4], eps=1e-6, dtype=coretorch.float64)
    assert [n for n, _ in norm.named_parameters()] == ["weight"] and norm.weight.shape == (3, 4)
    out = norm(x)
    a = x.numpy()
    want = a / np.sqrt((a * a).mean((1, 2), keepdims=True) + 1e-6)
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-12)
    out.sum().backward()
    assert norm.weight.grad is not None and norm.weight.grad.shape == (3, 4)
    assert RMSNorm(4, elementwise_affine=False).weight is None
