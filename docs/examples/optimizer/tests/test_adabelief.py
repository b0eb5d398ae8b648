"""AdaBelief through its entry point: the update against numpy, training on every device, state_dict."""
import numpy as np
import pytest

import coretorch
from coretorch.testing import available_devices


def _numpy_adabelief(p, grads, lr, beta1, beta2, eps):
    m, s = np.zeros_like(p), np.zeros_like(p)
    for t, g in enumerate(grads, 1):
        m = beta1 * m + (1 - beta1) * g
        s = beta2 * s + (1 - beta2) * (g - m) ** 2 + eps
        p = p - lr * (m / (1 - beta1 ** t)) / (np.sqrt(s / (1 - beta2 ** t)) + eps)
    return p


def test_registered_as_coretorch_optim_adabelief():
    from coretorch_adabelief import AdaBelief
    assert coretorch.optim.AdaBelief is AdaBelief and issubclass(AdaBelief, coretorch.optim.Optimizer)


@pytest.mark.parametrize("device", available_devices())
def test_three_steps_match_the_formula(device):
    p0 = np.array([1.0, -2.0, 0.5])
    w = coretorch.tensor(p0, dtype=coretorch.float64, device=device, requires_grad=True)
    opt = coretorch.optim.AdaBelief([w], lr=0.1, betas=(0.9, 0.99), eps=1e-8)
    grads = []
    for _ in range(3):
        opt.zero_grad()
        (w ** 3).sum().backward()
        grads.append(w.grad.cpu().numpy().copy())
        opt.step()
    want = _numpy_adabelief(p0, grads, 0.1, 0.9, 0.99, 1e-8)
    np.testing.assert_allclose(w.detach().cpu().numpy(), want, rtol=1e-12)
    assert sorted(opt.state_dict()["state"][0]) == ["exp_avg", "exp_avg_var", "step"]


@pytest.mark.parametrize("device", available_devices())
def test_fits_a_line(device):
    coretorch.manual_seed(0)
    x = coretorch.linspace(-1, 1, 32, device=device).unsqueeze(1)
    y = 3 * x - 1
    model = coretorch.nn.Linear(1, 1).to(device)
    opt = coretorch.optim.AdaBelief(model.parameters(), lr=0.1)
    for _ in range(100):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
    assert loss.item() < 1e-3


def test_bad_hyper_parameters():
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1"):
        coretorch.optim.AdaBelief([coretorch.zeros(1, requires_grad=True)], betas=(0.9, 1.0))
