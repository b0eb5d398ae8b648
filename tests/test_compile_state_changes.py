"""State a training loop changes between compiled steps, each against the eager loop bit for bit (all were silent
wrong results before): a parameter whose data became another layout (``p.data = view``: the opencl replay skipped
that parameter's update, as ``fused_sgd_``/``fused_adam_``/``adam_step_`` declined it; the replay now checks their
answer and runs them on contiguous copies), a frozen parameter (``requires_grad_(False)``: the replay kept updating
it), and a parameter replaced in the module and in the optimizer's list in place (the step and the optimizer
replay kept updating the old tensor)."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F

from _compile_helpers import ce_step

OPTS = {"sgd-momentum": (torch.optim.SGD, dict(lr=0.1, momentum=0.9)),
        "adam-foreach-false": (torch.optim.Adam, dict(lr=0.01, foreach=False)),
        "adamw": (torch.optim.AdamW, dict(lr=0.01, weight_decay=0.1))}


def _relayout(model, opt):
    w = model[0].weight
    w.data = w.detach().t().contiguous().t()   # the same values, column-major: another layout than at capture


def _freeze(model, opt):
    model[0].bias.requires_grad_(False)


def _replace(model, opt):
    model[2].bias = torch.nn.Parameter(torch.full((3,), 0.25, device=model[2].weight.device))
    opt.param_groups[0]["params"][3] = model[2].bias   # in place, as a user swapping a tensor would


def _train(device, compiled: bool, opt_name: str, change=_relayout):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(12, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).to(device)
    cls, kw = OPTS[opt_name]
    opt = cls(model.parameters(), **kw)

    step = ce_step(model, opt)
    fn = torch.compile(step) if compiled else step
    g = np.random.default_rng(0)
    data = [(torch.tensor(g.standard_normal((6, 12)).astype(np.float32), device=device),
             torch.tensor(g.integers(0, 3, 6), device=device)) for _ in range(2)]
    losses = [float(fn(*data[i % 2])) for i in range(6)]
    change(model, opt)
    losses += [float(fn(*data[i % 2])) for i in range(6)]
    return losses, [p.detach().cpu().numpy() for p in model.parameters()]


@pytest.mark.parametrize("opt_name", list(OPTS))
def test_a_parameter_of_another_layout_is_still_updated(device, opt_name):
    l_eager, p_eager = _train(device, False, opt_name)
    l_comp, p_comp = _train(device, True, opt_name)
    assert l_comp == l_eager
    for a, b in zip(p_comp, p_eager):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("change", [_freeze, _replace], ids=["freeze", "replace"])
@pytest.mark.parametrize("opt_name", ["sgd-momentum", "adamw"])
def test_a_frozen_or_replaced_parameter(device, opt_name, change):
    l_eager, p_eager = _train(device, False, opt_name, change)
    l_comp, p_comp = _train(device, True, opt_name, change)
    assert l_comp == l_eager
    for a, b in zip(p_comp, p_eager):
        assert np.array_equal(a, b)


def test_a_layer_of_another_dtype_raises_as_eagerly(device):
    """``model[0].double()`` between compiled steps: eager's product of float32 inputs and float64 weights raises;
    the replay used to compute it anyway (cpu: on float64 data, opencl: NaN)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(12, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    step = ce_step(model, opt)
    fn = torch.compile(step)
    x, y = torch.randn(6, 12).to(device), torch.randint(0, 3, (6,)).to(device)
    for _ in range(6):
        fn(x, y)
    model[0].double()
    with pytest.raises(RuntimeError, match="same dtype"):
        fn(x, y)


def _step_losses(device, compiled: bool, make):
    torch.manual_seed(0)
    step, params = make(device)
    fn = torch.compile(step) if compiled else step
    g = np.random.default_rng(1)
    data = [(torch.tensor(g.standard_normal((8, 12)).astype(np.float32), device=device),
             torch.tensor(g.integers(0, 3, 8), device=device)) for _ in range(3)]
    return [float(fn(*data[i % 3])) for i in range(7)], [p.detach().float().cpu().numpy() for p in params], fn


def _scaler_step(device):
    m = torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3)).to(device)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler(device, init_scale=256.0, growth_interval=2)

    def step(x, y):
        opt.zero_grad()
        with torch.autocast(device, dtype=torch.float16):
            loss = F.cross_entropy(m(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss
    return step, list(m.parameters())


def _bn_cumulative_step(device):
    m = torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.BatchNorm1d(16, momentum=None), torch.nn.ReLU(),
                            torch.nn.Linear(16, 3)).to(device)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)

    step = ce_step(m, opt)
    return step, list(m.parameters()) + list(m.buffers())


@pytest.mark.parametrize("make", [_scaler_step, _bn_cumulative_step], ids=["grad-scaler", "bn-momentum-none"])
def test_host_reads_of_values_that_change_every_step_run_eagerly(device, make):
    """GradScaler's scale/found_inf/growth tracker and BatchNorm(momentum=None)'s num_batches_tracked are read on the
    host after the step has written state and change from step to step: a graph break (the step runs eagerly, with
    eager's results), not a checked read that raised at the next call."""
    l_eager, p_eager, _ = _step_losses(device, False, make)
    l_comp, p_comp, fn = _step_losses(device, True, make)
    assert l_comp == l_eager and fn.replays == 0
    for a, b in zip(p_comp, p_eager):
        assert np.array_equal(a, b)
    step, _ = make(device)
    with pytest.raises(torch._compile.capture.Unsupported, match="changes? every step|change between steps"):
        torch.compile(step, fullgraph=True)(torch.randn(8, 12).to(device), torch.randint(0, 3, (8,)).to(device))
