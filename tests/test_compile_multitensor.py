"""The optimizers' multi-tensor step (one kernel launch for a whole param group where the device has one: opencl's
``fused_adam_`` / ``fused_sgd_``) inside compiled steps and behind PyTorch's ``fused=True``: the same parameters as
eager bit for bit, on every device, over parameters of mixed sizes (0-d, one element, vectors, matrices), a
parameter without a gradient, and a learning rate changed between replays."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
from coretorch._compile import optim as optim_replay

SHAPES = [(), (1,), (3,), (5, 7), (2, 33)]
CONFIGS = {
    "sgd": (torch.optim.SGD, {"lr": 0.1}),
    "sgd_maximize": (torch.optim.SGD, {"lr": 0.1, "maximize": True}),
    "sgd_nesterov_wd": (torch.optim.SGD, {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    "sgd_dampening": (torch.optim.SGD, {"lr": 0.05, "momentum": 0.5, "dampening": 0.3, "maximize": True}),
    "adamw": (torch.optim.AdamW, {"lr": 0.01}),
    "adamw_per_tensor": (torch.optim.AdamW, {"lr": 0.01, "foreach": False}),  # (replay: merged into one launch)
    "adam_amsgrad_l2_max": (torch.optim.Adam, {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1, "maximize": True}),
}


def _train(device, name, compiled, steps=5, **extra):
    """Parameters of a small problem after ``steps`` steps (lr changed after each), and the optimizer."""
    rng = np.random.default_rng(0)
    ps = [torch.tensor(rng.standard_normal(s).astype(np.float32), device=device, requires_grad=True) for s in SHAPES]
    frozen = torch.tensor(rng.standard_normal(4).astype(np.float32), device=device, requires_grad=True)
    xs = [torch.tensor(rng.standard_normal(s).astype(np.float32), device=device) for s in SHAPES]
    cls, hp = CONFIGS[name]
    opt = cls(ps + [frozen], **hp, **extra)  # `frozen` gets no gradient: skipped, as eager

    def step(xs):
        opt.zero_grad()
        loss = sum(((p * x).tanh() * x).sum() for p, x in zip(ps, xs))
        loss.backward()
        opt.step()
        return loss

    f = torch.compile(step) if compiled else step
    for _ in range(steps):
        f(xs)
        for g in opt.param_groups:
            g["lr"] *= 0.7  # a scheduler's change: an input of the replay, no recapture
    return [p.detach().cpu().numpy() for p in ps + [frozen]], opt


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_compiled_step_equals_eager_bitwise(device, name):
    eager, _ = _train(device, name, False)
    compiled, opt = _train(device, name, True)
    for a, b in zip(eager, compiled):
        np.testing.assert_array_equal(a, b)
    assert optim_replay.replay_of(opt).replays >= 2  # the step replayed (not run eagerly)
    assert not np.array_equal(eager[0], _train(device, name, False, steps=0)[0][0])  # the parameters moved


@pytest.mark.parametrize("name", ["sgd_nesterov_wd", "adam_amsgrad_l2_max"])
def test_fused_true_equals_the_foreach_and_per_tensor_steps(device, name):
    fused, _ = _train(device, name, False, fused=True)
    for other in ({"foreach": False}, {}):
        ref, _ = _train(device, name, False, **other)
        for a, b in zip(fused, ref):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("cls", [torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW])
def test_fused_true_checks_as_pytorch(device, cls):
    p = torch.zeros(2, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together"):
        cls([p], lr=0.1, fused=True, foreach=True)
    opt = cls([p], lr=0.1, fused=True)
    assert opt.defaults["fused"] is True
    with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
        cls([p], lr=0.1, fused=True, differentiable=True)
    q = torch.zeros(2, dtype=torch.int64, device=device)
    opt = cls([q], lr=0.1, fused=True)
    q.grad = torch.ones(2, dtype=torch.int64, device=device)
    with pytest.raises(RuntimeError, match="requires all the params to be floating point"):
        opt.step()


def test_per_tensor_adam_replay_keeps_a_refused_tensor_on_its_composite(device):
    """foreach=False: the replay merges the per-parameter kernels into one launch, but not a float16 parameter's
    call (refused by the kernel: its composite follows), whose neighbours still update as eager."""
    def run(compiled):
        rng = np.random.default_rng(3)
        ps = [torch.tensor(rng.standard_normal(n), dtype=dt, device=device, requires_grad=True)
              for n, dt in [(3, torch.float32), (4, torch.float32), (5, torch.float16), (6, torch.float32),
                            (7, torch.float32)]]
        opt = torch.optim.AdamW(ps, lr=0.01, foreach=False)

        def step():
            opt.zero_grad()
            sum((p.float() * (i + 1)).tanh().sum() for i, p in enumerate(ps)).backward()
            opt.step()
        f = torch.compile(step) if compiled else step
        for _ in range(5):
            f()
        return [p.detach().float().cpu().numpy() for p in ps], opt

    eager, _ = run(False)
    compiled, opt = run(True)
    for a, b in zip(eager, compiled):
        np.testing.assert_array_equal(a, b)
    assert optim_replay.replay_of(opt).replays >= 2
