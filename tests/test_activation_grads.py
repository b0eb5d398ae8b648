"""Activation values and gradients at NaN, at the kinks and far out, as PyTorch 2.13 gives them (every device).
The expected derivatives are PyTorch's backward formulas written in numpy here."""
import math

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F
from coretorch.testing import available_devices

X = np.array([math.nan, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 6.0, 20.0, 25.0, -25.0])
NAN = math.nan


def _sig(v):
    with np.errstate(over="ignore", invalid="ignore"):
        return 1 / (1 + np.exp(-v))


def _where(c, a, b):
    return np.where(c, a, b)


CASES = {  # name: (function, expected value(x), expected derivative(x))
    "bce_with_logits": (lambda x: F.binary_cross_entropy_with_logits(x, torch.full_like(x, 0.3), reduction="none"),
                        lambda x: 0.7 * x - np.log(_sig(x)), lambda x: 0.7 - _sig(-x)),
    "threshold": (lambda x: F.threshold(x, 0.5, -2.0), lambda x: _where(x <= 0.5, -2.0, x),
                  lambda x: _where(x <= 0.5, 0.0, 1.0)),
    "elu": (F.elu, lambda x: _where(x > 0, x, np.expm1(np.minimum(x, 0))),
            lambda x: _where(x > 0, 1.0, np.exp(np.where(x > 0, 0, x)))),
    "hardtanh": (F.hardtanh, lambda x: np.clip(x, -1, 1), lambda x: _where((x > -1) & (x < 1), 1.0, 0.0)),
    "relu6": (F.relu6, lambda x: np.clip(x, 0, 6), lambda x: _where((x > 0) & (x < 6), 1.0, 0.0)),
    "softplus": (F.softplus, lambda x: _where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20)))),
                 lambda x: _where(x > 20, 1.0, _sig(x))),
    "logsigmoid": (F.logsigmoid, lambda x: np.log(_sig(x)), lambda x: _sig(-x)),
    "hardswish": (F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6,
                  lambda x: _where(x <= -3, 0.0, _where(x >= 3, 1.0, x / 3 + 0.5))),
    "hardsigmoid": (F.hardsigmoid, lambda x: np.clip(x + 3, 0, 6) / 6,
                    lambda x: _where((x > -3) & (x < 3), float(np.float32(1) / np.float32(6)), 0.0)),
    "hardshrink": (F.hardshrink, lambda x: _where(np.abs(x) > 0.5, x, _where(np.isnan(x), x, 0.0)),
                   lambda x: _where(np.abs(x) > 0.5, 1.0, 0.0)),
    "softshrink": (F.softshrink, lambda x: _where(np.abs(x) > 0.5, x - np.sign(x) * 0.5, _where(np.isnan(x), x, 0.0)),
                   lambda x: _where(np.abs(x) > 0.5, 1.0, 0.0)),
    "rrelu_eval": (lambda x: F.rrelu(x, training=False), lambda x: _where(x > 0, x, x * (1 / 8 + 1 / 3) / 2),
                   lambda x: _where(x > 0, 1.0, (1 / 8 + 1 / 3) / 2)),
}


@pytest.mark.parametrize("device", available_devices())
@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_at_nan_kinks_and_far_out(name, device):
    fn, val, der = CASES[name]
    x = torch.tensor(X, dtype=torch.float64, device=device, requires_grad=True)
    y = fn(x)
    (g,) = torch.autograd.grad(y.sum(), x)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(y.detach().cpu().numpy(), val(X), rtol=1e-12, atol=1e-14, equal_nan=True)
        np.testing.assert_allclose(g.cpu().numpy(), der(X), rtol=1e-12, atol=1e-14, equal_nan=True)


@pytest.mark.parametrize("device", available_devices())
def test_nan_gradients_of_the_exponential_family(device):
    x = torch.tensor([math.nan, -1.0], dtype=torch.float64, device=device, requires_grad=True)
    for f in (F.elu, F.selu, lambda t: F.celu(t, 1.5), F.softplus):
        (g,) = torch.autograd.grad(f(x).sum(), x)
        assert math.isnan(g[0].item()) and math.isfinite(g[1].item())


@pytest.mark.parametrize("device", available_devices())
def test_second_derivatives_still_flow(device):
    x = torch.tensor([-0.7, 0.2, 1.4], dtype=torch.float64, device=device, requires_grad=True)
    for f in (F.logsigmoid, F.hardswish, lambda t: F.binary_cross_entropy_with_logits(t, torch.zeros_like(t))):
        assert torch.autograd.gradcheck(f, (x,))
        assert torch.autograd.gradgradcheck(f, (x,))


def test_grad_fn_names_as_pytorch():
    x = torch.randn(3, requires_grad=True)
    assert type(F.logsigmoid(x).grad_fn).__name__ == "LogSigmoidBackward0"
    assert type(F.hardtanh(x).grad_fn).__name__ == "HardtanhBackward0"
    assert type(F.hardswish(x).grad_fn).__name__ == "HardswishBackward0"
    assert type(F.hardsigmoid(x).grad_fn).__name__ == "HardsigmoidBackward0"


@pytest.mark.parametrize("device", available_devices())
def test_bce_with_logits_result_has_the_targets_float_dtype(device):
    def run(xdt, tdt, **kw):
        x, t = torch.ones(2, dtype=xdt, device=device), torch.ones(2, dtype=tdt, device=device)
        kw = {k: torch.ones(2, dtype=v, device=device) for k, v in kw.items()}
        return F.binary_cross_entropy_with_logits(x, t, **kw).dtype
    assert run(torch.float32, torch.float64) is torch.float64
    assert run(torch.float64, torch.float32) is torch.float32
    assert run(torch.float64, torch.float32, pos_weight=torch.float64) is torch.float32
    assert run(torch.float64, torch.float32, weight=torch.float64) is torch.float32


@pytest.mark.parametrize("device", available_devices())
def test_softmax_family_and_cross_entropy_refuse_integer_inputs_as_pytorch(device):
    x = torch.zeros(2, 3, dtype=torch.int8, device=device)
    for f in (lambda: F.log_softmax(x, 1), lambda: F.softmax(x.long(), 1),
              lambda: F.cross_entropy(x, torch.tensor([0, 1], device=device))):
        with pytest.raises(NotImplementedError, match="lastdim_kernel_impl\" not implemented for"):
            f()
    with pytest.raises(NotImplementedError, match="\"nll_loss_out_frame\" not implemented for 'Char'"):
        F.cross_entropy(torch.zeros(1, 0, dtype=torch.int8, device=device), torch.tensor([0], device=device))
