"""Review 21i (eager): optimizers and LR schedulers, a second pass against PyTorch 2.13 (tensor learning rates,
hooks, state_dict round trips across dtypes and devices, named parameters, scheduler resumption and messages,
swa_utils)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import coretorch as torch


def test_asgd_with_a_tensor_lr_warns_nothing(device):
    """PyTorch's ASGD computes the new eta as ``torch.as_tensor(lr / (1 + lambd * lr * step) ** alpha)``: with a
    tensor ``lr`` that is a tensor already and nothing is copy-constructed, so no warning. coretorch before: it
    called ``tensor()`` on it and warned "To copy construct from a tensor, it is recommended to use ...".
    The eta is the float64 value rounded once to the float32 state."""
    w = torch.tensor([1.0, -2.0], dtype=torch.float64, device=device, requires_grad=True)
    lr = torch.tensor(0.1, dtype=torch.float64)
    opt = torch.optim.ASGD([w], lr=lr, lambd=0.3, alpha=0.5)
    for _ in range(2):
        w.grad = torch.tensor([0.5, 0.25], dtype=torch.float64, device=device)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            opt.step()
    step = opt.state[w]["step"].item()
    assert opt.state[w]["eta"].item() == torch.tensor(0.1 / (1 + 0.3 * 0.1 * step) ** 0.5,
                                                      dtype=torch.float32).item()


def test_resuming_a_scheduler_without_initial_lr_explains_why():
    """PyTorch raises KeyError("param 'initial_lr' is not specified in param_groups[0] when resuming scheduler with
    last_epoch >= 0.\\nThis typically happens when: ...") naming the two usual causes. coretorch before: "... when
    resuming an optimizer", which pointed at the wrong object."""
    opt = torch.optim.SGD([torch.zeros(2, requires_grad=True)], lr=0.1)
    with pytest.raises(KeyError) as info:
        torch.optim.lr_scheduler.StepLR(opt, 3, last_epoch=5)
    msg = info.value.args[0]
    assert msg.startswith("param 'initial_lr' is not specified in param_groups[0] when resuming scheduler with "
                          "last_epoch >= 0.")
    assert "haven't properly loaded the optimizer state" in msg and "last_epoch >= 0 for a fresh training" in msg


def test_addcdiv_scales_the_numerator_before_dividing(device):
    """PyTorch's addcdiv kernel computes ``self + value * tensor1 / tensor2`` left to right: ``(value * t1) / t2``,
    then the sum (documented formula ``input + value * tensor1 / tensor2``). coretorch before: ``value * (t1 / t2)``,
    one rounding apart in about 18% of float64 elements (Adagrad, RMSprop and Adam-style updates drift)."""
    rng = np.random.default_rng(0)
    a, b, c = rng.standard_normal(4096), rng.standard_normal(4096), np.abs(rng.standard_normal(4096)) + 0.1
    for dt in (np.float64, np.float32):
        x, y, z = (torch.tensor(v.astype(dt), device=device) for v in (a, b, c))
        got = torch.addcdiv(x, y, z, value=-0.37).cpu().numpy()
        want = a.astype(dt) + (dt(-0.37) * b.astype(dt)) / c.astype(dt)
        np.testing.assert_array_equal(got, want)
        x.addcdiv_(y, z, value=-0.37)
        np.testing.assert_array_equal(x.cpu().numpy(), want)


def test_adagrad_first_step_is_pytorch_s_rounding(device):
    """PyTorch's Adagrad step: ``state_sum.addcmul_(g, g, value=1)``; ``std = state_sum.sqrt().add_(eps)``;
    ``param.addcdiv_(g, std, value=-clr)``: the first step from a zero sum is ``p + (-clr * g) / (|g| + eps)``
    bit for bit. coretorch before: ``p - clr * (g / std)``, one rounding apart in 14% of the float64 elements."""
    rng = np.random.default_rng(1)
    p0, g = rng.standard_normal(1000), rng.standard_normal(1000)
    p = torch.tensor(p0, device=device, requires_grad=True)
    opt = torch.optim.Adagrad([p], lr=0.1)
    p.grad = torch.tensor(g, device=device)
    opt.step()
    want = p0 + (-0.1 * g) / (np.sqrt(g * g) + 1e-10)
    np.testing.assert_array_equal(p.detach().cpu().numpy(), want)


def _fma(a: float, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """a * x + y rounded once (exact rationals)."""
    from fractions import Fraction
    return np.array([float(Fraction(a) * Fraction(float(u)) + Fraction(float(v))) for u, v in zip(x, y)])


def test_lerp_with_a_number_weight_rounds_once():
    """PyTorch's vectorised cpu lerp with a scalar weight is ``fmadd(w, end - self, self)`` (|w| < 0.5) or
    ``fmadd(w - 1, end - self, end)``: one rounding after the difference (every optimizer's ``exp_avg.lerp_(grad,
    1 - beta1)``). coretorch before: ``self + w * (end - self)`` with two roundings, off by one in ~2% of float64
    elements (Adam/Adamax/NAdam trajectories drifted)."""
    from coretorch_cpu import blas1
    if not blas1.fused():
        pytest.skip("this CPU's BLAS axpy does not fuse (no FMA): PyTorch's fmadd rounds twice there too")
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal(512), rng.standard_normal(512)
    for w in (0.1, 0.01, 0.7):
        got = torch.lerp(torch.tensor(a), torch.tensor(b), w).numpy()
        want = _fma(w, b - a, a) if w < 0.5 else _fma(w - 1, b - a, b)
        np.testing.assert_array_equal(got, want)


def test_adamax_first_step_is_pytorch_s_rounding(device):
    """PyTorch's Adamax: ``exp_avg.lerp_(g, 1 - beta1)``; ``exp_inf = max(exp_inf * beta2, |g| + eps)``;
    ``param.addcdiv_(exp_avg, exp_inf, value=-(lr / (1 - beta1 ** step)))``. coretorch before: ``p.add_(exp_avg /
    exp_inf, alpha=-lr / bias_correction)``, one rounding apart in ~14% of the float64 elements."""
    rng = np.random.default_rng(3)
    p0, g = rng.standard_normal(1000), rng.standard_normal(1000)
    p = torch.tensor(p0, device=device, requires_grad=True)
    opt = torch.optim.Adamax([p], lr=0.1)
    p.grad = torch.tensor(g, device=device)
    opt.step()
    exp_avg = (1 - 0.9) * g  # lerp from zeros: w * g, one rounding
    want = p0 + (-(0.1 / (1 - 0.9)) * exp_avg) / (np.abs(g) + 1e-8)
    np.testing.assert_array_equal(p.detach().cpu().numpy(), want)


@pytest.mark.parametrize("foreach", [None, False])
def test_adam_first_step_is_pytorch_s_rounding(device, foreach):
    """PyTorch's Adam step: ``exp_avg.lerp_(g, 1 - beta1)``; ``exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 -
    beta2)``; ``denom = (exp_avg_sq.sqrt() / bc2_sqrt).add_(eps)``; ``param.addcdiv_(exp_avg, denom,
    value=-step_size)``: from zero state, ``p + (-step_size * (w1 * g)) / (sqrt((w2 * g) * g) / bc2_sqrt + eps)``.
    coretorch before (its composite and the cpu/opencl ``adam_step_`` kernels): ``p - step_size * (m / denom)``
    rounded once and ``w2 * (g * g)``, off in ~16% of the float64 elements."""
    rng = np.random.default_rng(4)
    p0, g = rng.standard_normal(1000), rng.standard_normal(1000)
    p = torch.tensor(p0, device=device, requires_grad=True)
    opt = torch.optim.Adam([p], lr=0.1, foreach=foreach)
    p.grad = torch.tensor(g, device=device)
    opt.step()
    w1, w2 = 1 - 0.9, 1 - 0.999
    denom = np.sqrt((w2 * g) * g) / np.sqrt(w2) + 1e-8
    want = p0 + (-(0.1 / w1) * (w1 * g)) / denom
    np.testing.assert_array_equal(p.detach().cpu().numpy(), want)
