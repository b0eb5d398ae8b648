"""coretorch.compile, second slice: the optimizer step replayed from its recorded kernels with lr & co. as inputs
(bitwise eager, schedulers without recapture, eager fallbacks), guards on the Python numbers a step reads from
globals, and double backward through a compiled module (raises as PyTorch's aot_autograd)."""
from __future__ import annotations

import math
import types

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F
from coretorch import nn
from coretorch._compile import optim as optim_replay


def _train(make_opt, device, compiled, steps=7, sched=None, between=None):
    """Parameters after ``steps`` steps of a small MLP (the scheduler stepped after each), and the optimizer."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 3)).to(device)
    opt = make_opt(model.parameters())
    scheduler = sched(opt) if sched is not None else None
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((5, 6)).astype(np.float32), device=device)
    y = torch.tensor(rng.integers(0, 3, 5), device=device)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    f = torch.compile(step) if compiled else step
    for i in range(steps):
        f(x, y)
        if scheduler is not None:
            scheduler.step()
        if between is not None:
            between(i, opt)
    return [p.detach().cpu().numpy().copy() for p in model.parameters()], opt


def _same(make_opt, device, **kw):
    a, _ = _train(make_opt, device, False, **kw)
    b, opt = _train(make_opt, device, True, **kw)
    for pa, pb in zip(a, b):
        np.testing.assert_array_equal(pa, pb)
    return opt


_OPTS = {
    "sgd": lambda ps: torch.optim.SGD(ps, lr=0.1),
    "sgd_momentum_wd": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=1e-3, nesterov=True),
    "adam": lambda ps: torch.optim.Adam(ps, lr=1e-2),
    "adamw_amsgrad": lambda ps: torch.optim.AdamW(ps, lr=1e-2, amsgrad=True),
}


@pytest.mark.parametrize("name", list(_OPTS))
def test_optimizer_step_replays_bitwise_with_step_lr(device, name):
    opt = _same(_OPTS[name], device, sched=lambda o: torch.optim.lr_scheduler.StepLR(o, 2, 0.5))
    r = optim_replay.replay_of(opt)
    assert r.why == "" and r.replays >= 4  # the update ran from the recorded kernels, lr read at every replay


@pytest.mark.parametrize("name", ["RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "Lion"])
def test_extra_optimizers_replay_bitwise(name):
    cls = getattr(torch.optim, name)
    opt = _same(lambda ps: cls(ps, lr=1e-2, weight_decay=0.01), "cpu", steps=6,
                sched=lambda o: torch.optim.lr_scheduler.StepLR(o, 2, 0.5))
    r = optim_replay.replay_of(opt)
    assert r.why == "" and r.replays >= 3
    # RAdam branches on its step count (rho_t > 5) after writing state: it stays an eager segment
    assert not optim_replay.supports(torch.optim.RAdam([torch.zeros(1)]))


@pytest.mark.parametrize("name", ["sgd_momentum_wd", "adam"])
def test_one_cycle_changes_lr_and_momentum_without_recapture(name):
    sched = lambda o: torch.optim.lr_scheduler.OneCycleLR(o, max_lr=0.5, total_steps=10)  # noqa: E731
    opt = _same(_OPTS[name], "cpu", steps=9, sched=sched)
    r = optim_replay.replay_of(opt)
    assert r.why == "" and r.replays >= 6
    assert "MISMATCH" in r.source and "param_groups[0]" in r.source  # hyper-parameters read and checked per call


def test_hyperparameter_branch_change_runs_that_step_eagerly():
    """weight_decay 0 (an int: a guard) -> 0.01, and betas changed in place: still eager's parameters."""
    def between(i, opt):
        if i == 3:
            opt.param_groups[0]["weight_decay"] = 0.01
            opt.param_groups[0]["betas"] = (0.8, 0.99)
    opt = _same(lambda ps: torch.optim.Adam(ps, lr=1e-2), "cpu", steps=8, between=between)
    assert optim_replay.replay_of(opt).replays >= 2


def test_state_reset_and_load_state_dict_follow_eager():
    saved = {}

    def between(i, opt):
        if i == 2:
            saved["sd"] = opt.state_dict()
        if i == 4:
            opt.load_state_dict(saved["sd"])  # new state tensors: the replay loads them through opt.state
        if i == 6:
            opt.state.clear()  # no state: that step runs eagerly (and creates it again)
    opt = _same(lambda ps: torch.optim.Adam(ps, lr=1e-2), "cpu", steps=10, between=between)
    assert optim_replay.replay_of(opt).replays >= 3


class _UserSGD(torch.optim.Optimizer):
    """A user optimizer: not opted in, its step stays an eager segment of the replay."""

    def __init__(self, params, lr):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self, closure=None):
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-g["lr"])


class _EscapingSGD(torch.optim.SGD):
    """Opts in but computes its step size with C code (math.exp): the number would replay stale, so refused."""

    _replay_capturable = True

    @torch.no_grad()
    def step(self, closure=None):
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-math.exp(math.log(g["lr"])))


def test_user_and_escaping_optimizers_stay_eager_segments():
    sched = lambda o: torch.optim.lr_scheduler.StepLR(o, 1, 0.5)  # noqa: E731
    opt = _same(lambda ps: _UserSGD(ps, lr=0.1), "cpu", sched=sched)
    subclass = type("MySGD", (torch.optim.SGD,), {})([torch.zeros(1)], lr=0.1)  # opts in only where declared
    assert not optim_replay.supports(opt) and not optim_replay.supports(subclass)
    opt = _same(lambda ps: _EscapingSGD(ps, lr=0.1), "cpu", sched=sched)
    r = optim_replay.replay_of(opt)
    assert r.fn is None and "computed outside the recorded arithmetic" in r.why


def test_step_hooks_run_with_an_eager_step():
    calls = []
    opt = _same(lambda ps: _hooked(torch.optim.SGD(ps, lr=0.1), calls), "cpu")
    assert optim_replay.replay_of(opt).replays == 0 and len(calls) == 14  # 7 steps, eager and compiled


def _hooked(opt, calls):
    opt.register_step_post_hook(lambda o, a, k: calls.append(1))
    return opt


# ---- guards on Python numbers read from globals ----------------------------------------------------------------
SCALE = 2.0
CFG = types.ModuleType("cfg")
CFG.shift = 1.0


def _helper(x):
    return x * SCALE


@pytest.mark.parametrize("how", ["global", "module_attribute", "helper", "closure"])
def test_changed_python_number_recaptures(how):
    global SCALE
    old = SCALE, CFG.shift
    offset = 0.5
    fns = {"global": lambda x: x * SCALE, "module_attribute": lambda x: x + CFG.shift,
           "helper": lambda x: _helper(x) + 1, "closure": lambda x: x - offset}
    f = fns[how]
    cf = torch.compile(f)
    x = torch.arange(3.0)
    try:
        for text in ("2.0", "3.0", "2.0", "2.5"):
            value = float(text)  # a fresh object each time (an id alone could be reused)
            SCALE, CFG.shift, offset = value, value, value
            for _ in range(2):  # capture (or replay), then replay
                np.testing.assert_array_equal(cf(x).numpy(), f(x).numpy())
        assert cf.replays >= 4 and len(cf._cache) == 3
    finally:
        SCALE, CFG.shift = old


# ---- double backward through a compiled module ------------------------------------------------------------------
def test_double_backward_through_compiled_module_raises_as_pytorch(device):
    torch.manual_seed(0)
    m = nn.Linear(3, 2).to(device)
    cm = torch.compile(m)
    x = torch.randn(4, 3, device=device, requires_grad=True)
    ref, = torch.autograd.grad(m(x).tanh().sum(), x)
    for _ in range(3):  # the capture call and replays behave alike
        g, = torch.autograd.grad(cm(x).tanh().sum(), x, create_graph=True)
        np.testing.assert_array_equal(g.detach().cpu().numpy(), ref.cpu().numpy())
        assert g.requires_grad and type(g.grad_fn).__name__ == "CompiledFunctionBackwardBackward"
        with pytest.raises(RuntimeError, match="torch.compile with aot_autograd does not currently support double "
                                               "backward"):
            g.sum().backward()


def test_optimizer_replay_does_not_keep_its_optimizer_alive():
    import gc
    import weakref
    _, opt = _train(_OPTS["adam"], "cpu", True, steps=4)
    assert optim_replay.replay_of(opt).replays >= 1
    ref = weakref.ref(opt)
    del opt
    gc.collect()
    assert ref() is None


class _Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)
        self.temperature = 0.5

    def forward(self, x):
        return self.lin(x) / self.temperature


CONF = types.SimpleNamespace(scale=2.0)


@pytest.mark.parametrize("form", ["function", "module"])
def test_changed_module_and_config_attributes_recapture(form):
    torch.manual_seed(0)
    m = _Scaled()
    x = torch.randn(4, 3)
    def fn(x):
        with torch.no_grad():  # (a result with a graph would be a graph break: eager, nothing to test)
            return m(x) * CONF.scale
    f = fn if form == "function" else m
    cf = torch.compile(f)
    try:
        for t, s in ((0.5, 2.0), (0.25, 2.0), (0.25, 3.0), (0.5, 2.0)):
            m.temperature, CONF.scale = t, s
            for _ in range(2):
                expect = f(x) if form == "function" else m(x)
                np.testing.assert_array_equal(cf(x).detach().numpy(), expect.detach().numpy())
        assert (cf.replays if form == "function" else cf._capture.replays) >= 3
    finally:
        CONF.scale = 2.0
