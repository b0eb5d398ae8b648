"""Review 15b of coretorch.compile: state a compiled *training* step reads that changed between calls (optimizer
state and hyper-parameters, frozen parameters, schedulers, training-loop patterns), on every installed device.
Each test runs the same calls eagerly and compiled and compares the losses and parameters (cpu: bitwise; other
devices: within float32 rounding)."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn as nn
import coretorch.nn.functional as F
from _compile_helpers import ce_step


def _data(device, n=4):
    g = np.random.default_rng(0)
    return [(torch.tensor(g.standard_normal((8, 12)).astype(np.float32), device=device),
             torch.tensor(g.integers(0, 3, 8), device=device)) for _ in range(n)]


def _mlp(device):
    return nn.Sequential(nn.Linear(12, 8), nn.Tanh(), nn.Linear(8, 3)).to(device)


def _train(device, make, calls: int = 8):
    """``make(device)`` -> (step, params(), args(i), change(i)), built afresh for the eager and the compiled run;
    the losses of every call and the final parameters of each run."""
    out = []
    for compiled in (False, True):
        torch.manual_seed(0)
        step, params, args, change = make(device)
        f = torch.compile(step) if compiled else step
        losses = []
        for i in range(calls):
            change(i)
            r = f(*args(i))
            losses.append(None if r is None else r.detach().cpu().numpy().copy())
        out.append((losses, [p.detach().float().cpu().numpy() for p in params()]))
    return out


def _assert_same(device, pair):
    (l0, p0), (l1, p1) = pair
    same = np.array_equal if device == "cpu" else (lambda a, b: np.allclose(a, b, rtol=1e-5, atol=1e-6))
    for i, (a, b) in enumerate(zip(l0, l1)):
        assert (a is None and b is None) or same(a, b), f"loss of call {i}: eager {a} compiled {b}"
    for i, (a, b) in enumerate(zip(p0, p1)):
        assert same(a, b), f"parameter {i}: max difference {np.abs(a - b).max()}"


def test_optimizer_state_moved_to_another_device_by_load_state_dict(device):
    """NAdam keeps ``mu_product`` a cpu tensor; ``opt.load_state_dict(saved)`` moves it to the parameters' device
    (as PyTorch's, every state entry but ``step``).  The optimizer replay kept running the cpu kernels recorded
    for it on the new device's array (opencl: numpy's ``TypeError: return arrays must be of ArrayType``): the
    state tensors' shape, dtype and device were no check of the replay."""
    def make(dev):
        m = _mlp(dev)
        opt = torch.optim.NAdam(m.parameters(), lr=0.01)
        data, saved = _data(dev), {}

        step = ce_step(m, opt)

        def change(i):
            if i == 2:
                saved["s"] = copy.deepcopy(opt.state_dict())
            if i == 5:
                opt.load_state_dict(saved["s"])
        return step, m.parameters, lambda i: data[i % 4], change
    _assert_same(device, _train(device, make))


@pytest.mark.parametrize("sched", ["StepLR", "OneCycleLR", "CosineAnnealingWarmRestarts", "LambdaLR"])
def test_a_scheduler_stepped_inside_the_step(device, sched):
    """``scheduler.step()`` inside the compiled step (an eager segment of the replay).  The replay called the
    capture's patched ``step`` (the recorder's wrapper, bound at the capture), which recorded the segment again into
    the finished capture at every replay: its constants and lines grew each call (a leak, and a snapshot of the
    persistent state per call), and on opencl the lowered replay, built for the capture's constants, then failed
    (``TypeError: _build() takes 47 positional arguments but 49 were given``)."""
    LS = torch.optim.lr_scheduler
    makers = {"StepLR": lambda o: LS.StepLR(o, 2, 0.5), "OneCycleLR": lambda o: LS.OneCycleLR(o, 0.1, total_steps=20),
              "CosineAnnealingWarmRestarts": lambda o: LS.CosineAnnealingWarmRestarts(o, 3, 2),
              "LambdaLR": lambda o: LS.LambdaLR(o, lambda e: 1.0 / (e + 1))}
    fns = []

    def make(dev):
        m = _mlp(dev)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        s = makers[sched](opt)
        data = _data(dev)

        step = ce_step(m, opt, lambda: s.step())  # (looked up at the call: the capture wraps the class's step)
        fns.append((step, opt))
        return step, m.parameters, lambda i: data[i % 4], lambda i: None
    _assert_same(device, _train(device, make, 10))
    # the replays record nothing: only the captures record the segments (the optimizer's and the scheduler's)
    from coretorch._compile import capture
    seen = []
    orig = capture.Recorder._segment
    f = torch.compile(fns[1][0])
    x, y = _data(device, 1)[0]
    capture.Recorder._segment = lambda self, *a: (seen.append(a), orig(self, *a))[1]
    try:
        for _ in range(6):
            f(x, y)
    finally:
        capture.Recorder._segment = orig
    assert f.replays >= 4 and len(seen) == 2 * (6 - f.replays), (len(seen), f.replays)  # optimizer and scheduler


@pytest.mark.parametrize("avg", ["swa", "ema"])
def test_averaged_model_updated_inside_the_step(device, avg):
    """``swa_model.update_parameters(model)`` inside the compiled step (after ``opt.step()``): it reads
    ``n_averaged`` on the host, a counter that changes every call.  The capture made it a checked read, so the first
    replay raised ``RuntimeError: ... differs in this call after persistent state was already written`` where eager
    runs (a host read of a value that changes every step is a graph break, as GradScaler's scale)."""
    from coretorch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

    def make(dev):
        m = _mlp(dev)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        am = AveragedModel(m, multi_avg_fn=get_ema_multi_avg_fn(0.9) if avg == "ema" else None)
        data = _data(dev)

        step = ce_step(m, opt, lambda: am.update_parameters(m))
        return step, lambda: [*m.parameters(), *am.parameters(), am.n_averaged], lambda i: data[i % 4], lambda i: None
    _assert_same(device, _train(device, make))


@pytest.mark.filterwarnings("ignore:coretorch.compile.*recompile_limit")
@pytest.mark.parametrize("how", ["len in the step", "appended outside, last read"])
def test_a_list_the_step_reads_that_grows(device, how):
    """Gradient accumulation on the length of a list the step appends to (``hist.append(1); if len(hist) % 3 ==
    0: opt.step()``), or a step reading the last entry of a list the loop appends numbers to (``lrs.append(lr)``
    outside, ``scale = lrs[-1]`` inside).  Numbers appended to a list after the guards first saw it were no guard (a
    counter only appended to keeps its replay), so the replay kept the capture's length or last entry: it stepped
    the optimizer at the wrong calls, or scaled by the first number."""
    def make(dev):
        m = _mlp(dev)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        data, hist, lrs = _data(dev), [], [1.0]

        def step_len(x, y):
            loss = F.cross_entropy(m(x), y) / 3
            loss.backward()
            hist.append(1)
            if len(hist) % 3 == 0:
                opt.step()
                opt.zero_grad()
            return loss

        def step_last(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(m(x), y) * lrs[-1]
            loss.backward()
            opt.step()
            return loss

        def change(i):
            if i:
                lrs.append(1.0 / (i + 1))
        return (step_len if how == "len in the step" else step_last), m.parameters, lambda i: data[i % 4], change
    _assert_same(device, _train(device, make, 10))


@pytest.mark.parametrize("change", ["load_state_dict", "state.clear()", "entry replaced"])
@pytest.mark.parametrize("opt_name", ["sgd-momentum", "adam"])
def test_the_step_reads_optimizer_state_that_was_replaced(device, opt_name, change):
    """The step's own code reads an optimizer state tensor (``opt.state[w]["exp_avg"]``, ``["step"]``: a logged
    statistic, a warm-up on the step count), and the state's tensors are new ones after the capture
    (``opt.load_state_dict(saved)``, ``opt.state.clear()``, an entry replaced).  The replay kept reading the
    capture's tensor object (found by its referrers, not by its place in ``opt.state``): a stale value."""
    cls, kw, key = {"sgd-momentum": (torch.optim.SGD, dict(lr=0.1, momentum=0.9), "momentum_buffer"),
                    "adam": (torch.optim.Adam, dict(lr=0.01), "exp_avg")}[opt_name]

    def make(dev):
        m = _mlp(dev)
        opt = cls(m.parameters(), **kw)
        data, saved = _data(dev), {}
        w = m[0].weight

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            return loss.detach() + opt.state[w][key].abs().sum()

        def ch(i):
            if i == 2:
                saved["s"] = copy.deepcopy(opt.state_dict())
            if i == 5:
                if change == "load_state_dict":
                    opt.load_state_dict(saved["s"])
                elif change == "state.clear()":
                    opt.state.clear()
                else:
                    opt.state[w][key] = opt.state[w][key].clone() * 2
        return step, m.parameters, lambda i: data[i % 4], ch
    _assert_same(device, _train(device, make))


def test_a_cpu_step_count_combined_with_device_tensors(device):
    """On a device other than cpu, the step adds Adam's step count (a 0-d cpu tensor, as PyTorch's) to a device
    tensor after ``opt.step()``: eager allows a 0-d cpu operand (``align_devices`` copies it through the host).  The
    capture recorded that host read as a checked read of a constant, so the count differed at the first replay,
    after state was written: ``RuntimeError: ... differs in this call after persistent state was already written``
    where eager runs.  The replay now repeats the transfer.  (On cpu the same step is a plain check.)"""

    def make(dev):
        m = _mlp(dev)
        opt = torch.optim.Adam(m.parameters(), lr=0.01)
        data = _data(dev)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            return loss.detach() + opt.state[m[0].weight]["step"]
        return step, m.parameters, lambda i: data[i % 4], lambda i: None
    _assert_same(device, _train(device, make))


class _CountingSGD(torch.optim.Optimizer):
    """A user optimizer that counts its steps in a Python int in ``state`` (as PyTorch's optimizers once did)."""

    def __init__(self, params, lr=0.1):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self, closure=None):
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    st = self.state[p]
                    st["step"] = st.get("step", 0) + 1
                    p.add_(p.grad, alpha=-g["lr"] / st["step"])


@pytest.mark.filterwarnings("ignore:coretorch.compile.*recompile_limit")
@pytest.mark.parametrize("how", ["reads a count", "stores a toggle"])
def test_a_python_number_in_optimizer_state_the_step_uses(device, how):
    """The step's code reads a Python number from ``opt.state`` (a user optimizer's int step count, for a warm-up
    of the loss scale), or stores one there (``st["phase"] = 1 - st["phase"]``).  Optimizer state was no guard: the
    replay kept the captured count (and a toggle flipped back to a captured value replayed without storing it)."""
    def make(dev):
        m = _mlp(dev)
        opt = _CountingSGD(m.parameters())
        data, w = _data(dev), m[0].weight

        def step(x, y):
            opt.zero_grad()
            st = opt.state[w]
            if how == "reads a count":
                k = st.get("step", 0)
            else:
                k = st["phase"] = 1 - st.get("phase", 0)
            loss = F.cross_entropy(m(x), y) * (1.0 + k)
            loss.backward()
            opt.step()
            return loss
        return step, m.parameters, lambda i: data[i % 4], lambda i: None
    _assert_same(device, _train(device, make))


def test_a_cpu_counter_the_step_updates_as_a_device_operand(device):
    """A 0-d cpu tensor the step increments (``c.add_(1)``) and adds to a device tensor: the replay transfers its
    value at each call (it raised at the first replay, as above)."""
    c = torch.tensor(0.0)
    x = torch.ones(3, device=device)

    def f(x):
        c.add_(1)
        return x * c
    g = torch.compile(f)
    outs = [g(x).cpu().numpy() for _ in range(5)]
    assert [float(o[0]) for o in outs] == [1.0, 2.0, 3.0, 4.0, 5.0] and g.replays >= 3 and float(c) == 5.0


@pytest.mark.filterwarnings("ignore:coretorch.compile.*recompile_limit")
@pytest.mark.parametrize("how", ["tensors the step appends", "numbers the loop appends"])
def test_a_deque_the_step_reads(device, how):
    """A ``collections.deque(maxlen=3)`` window the step reads: loss tensors it appends and averages
    (``torch.stack(list(window)).mean()``), or numbers the loop appends (``sum(window)``).  A deque was keyed by
    identity only (lists and dicts by their entries): the replay averaged the capture's tensors, or reused the
    capture's sum."""
    import collections

    def make(dev):
        m = _mlp(dev)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        data, window = _data(dev), collections.deque(maxlen=3)

        def step_tensors(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            window.append(loss.detach())
            return torch.stack(list(window)).mean()

        def step_numbers(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(m(x), y) * (1.0 + sum(window))
            loss.backward()
            opt.step()
            return loss

        def change(i):
            if how == "numbers the loop appends":
                window.append(float(i))
        return (step_tensors if how.startswith("tensors") else step_numbers), m.parameters, lambda i: data[i % 4], \
            change
    _assert_same(device, _train(device, make))


@pytest.mark.parametrize("opt_name", ["sgd-momentum", "adam"])
def test_cleared_state_of_a_frozen_parameter_stays_empty(device, opt_name):
    """``layer.requires_grad_(False)`` and ``opt.state.clear()`` between compiled steps: the optimizer replay's
    first load, ``opt.state[p]["momentum_buffer"]``, created an empty state entry for the frozen parameter in the
    ``defaultdict`` before its check failed, so ``opt.state_dict()["state"]`` had an entry eager's has not."""
    cls, kw = {"sgd-momentum": (torch.optim.SGD, dict(lr=0.1, momentum=0.9)),
               "adam": (torch.optim.Adam, dict(lr=0.01))}[opt_name]
    keys = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = _mlp(device)
        opt = cls(m.parameters(), **kw)
        data = _data(device)

        step = ce_step(m, opt)
        f = torch.compile(step) if compiled else step
        for i in range(8):
            if i == 4:
                m[0].requires_grad_(False)
                opt.state.clear()
            f(*data[i % 4])
        keys.append(sorted(opt.state_dict()["state"]))
    assert keys[0] == keys[1]
