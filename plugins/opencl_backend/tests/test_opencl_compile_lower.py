"""Lowered replays (coretorch/_compile/lower.py with this plugin's ``compile_lower`` hook, lowering.py): after two
observed replays a compiled step's kernel-table calls run as the launches they made.  Checked here: bitwise eager
over many steps (SGD with momentum, Adam, a scheduler, dropout), the fallbacks (an input of another layout, a
changed module setting, a device-side check, random kernels), results that stay distinct across steps, threads,
the launch count, and the switch."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F
from coretorch._compile.config import config
from coretorch_opencl import STATS

_BE = torch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")


def _mlp(opt_cls=torch.optim.SGD, dropout=0.0, **opt_kw):
    torch.manual_seed(0)
    layers = [torch.nn.Linear(40, 32), torch.nn.ReLU()] + ([torch.nn.Dropout(dropout)] if dropout else []) + \
        [torch.nn.Linear(32, 5)]
    model = torch.nn.Sequential(*layers).to("opencl")
    opt = opt_cls(model.parameters(), **opt_kw)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return model, opt, step


def _data(n=3, seed=1):
    g = np.random.default_rng(seed)
    return [(torch.tensor(g.standard_normal((16, 40)).astype(np.float32), device="opencl"),
             torch.tensor(g.integers(0, 5, 16), device="opencl")) for _ in range(n)]


def _lowered_step(data, **kw):
    """The MLP step compiled and called six times (capture twice, observe twice, two lowered replays)."""
    model, opt, step = _mlp(**kw)
    fn = torch.compile(step)
    for i in range(6):
        fn(*data[i % 2])
    assert fn.lowered > 0
    return model, fn


def _params(model):
    return [p.detach().cpu().numpy().copy() for p in model.parameters()]


def _run(compiled: bool, steps: int, data, sched=False, **kw):
    model, opt, step = _mlp(**kw)
    s = torch.optim.lr_scheduler.StepLR(opt, 2, gamma=0.5) if sched else None
    fn = torch.compile(step) if compiled else step
    losses = []
    for i in range(steps):
        if kw.get("dropout"):
            torch.manual_seed(100 + i)
        losses.append(fn(*data[i % len(data)]))
        if s is not None:
            s.step()
    return model, [float(v) for v in losses], fn


@pytest.mark.parametrize("kw", [dict(lr=0.1, momentum=0.9), dict(opt_cls=torch.optim.Adam, lr=0.01),
                                dict(lr=0.1, sched=True), dict(lr=0.1, dropout=0.3)],
                         ids=["sgd-momentum", "adam", "steplr", "dropout"])
def test_lowered_steps_are_bitwise_eager(kw):
    data = _data()
    m_eager, l_eager, _ = _run(False, 10, data, **kw)
    m_comp, l_comp, fn = _run(True, 10, data, **kw)
    assert fn.lowered > 0 and fn.replays >= 7
    assert l_comp == l_eager
    for a, b in zip(_params(m_comp), _params(m_eager)):
        assert np.array_equal(a, b)


def test_step_results_stay_distinct_and_launches_are_counted():
    """Each replay's loss is its own tensor (a lowered line allocates its results as the table call did), and the
    plugin's launch counter moves as much per replay before and after lowering."""
    data = _data(4)
    _, _, step = _mlp(lr=0.1)
    fn = torch.compile(step)
    out, per = [], []
    for i in range(8):
        before = STATS["launches"]
        out.append(fn(*data[i % 4]))
        per.append(STATS["launches"] - before)
    assert fn.lowered > 0
    assert per[-1] == per[-4] == per[-5]  # lowered (from the 5th call: capture twice, observe twice) and not
    _, want, _ = _run(False, 8, data * 2, lr=0.1)
    assert [float(v) for v in out] == want


def test_an_input_of_another_layout_takes_the_table_call():
    """A parameter whose data is replaced by a transposed view between replays (same shape, other strides):
    the lowered products see a layout they were not observed with and run their table call."""
    data = _data(2)
    ms, fns = [], []
    for compiled in (False, True):
        model, opt, step = _mlp(lr=0.1)
        fn = torch.compile(step) if compiled else step
        for i in range(6):
            fn(*data[i % 2])
        w = model[0].weight
        w.data = w.detach().t().contiguous().t()     # the same values, column-major
        for i in range(4):
            fn(*data[i % 2])
        ms.append(model)
        fns.append(fn)
    assert fns[1].lowered > 0
    assert not ms[1][0].weight.is_contiguous()
    for a, b in zip(_params(ms[0]), _params(ms[1])):
        assert np.array_equal(a, b)


def test_a_changed_plan_setting_runs_the_plain_replay(monkeypatch):
    """The module settings matmul plans depend on are part of the lowered replay's state: a change sends the call
    to the plain replay, whose table calls plan the products again with the new setting."""
    from coretorch_opencl import matmul as mm
    data = _data(2)
    _, fn = _lowered_step(data, lr=0.1)
    planned = []
    plan = mm._plan
    monkeypatch.setattr(mm, "_plan", lambda *a: planned.append(1) or plan(*a))
    fn(*data[0])   # no change: the lowered replay (no table call, no plan)
    assert not planned
    monkeypatch.setattr(mm, "_KC_MIN_K", mm._KC_MIN_K + 1)
    fn(*data[0])
    assert planned


def test_a_device_side_check_stays_a_table_call():
    """cross_entropy's target check (nll_loss's device-side check) is not lowered: a bad target still raises
    IndexError at the next host read, as eagerly."""
    data = _data(2)
    _, fn = _lowered_step(data, lr=0.1)
    bad = data[0][1].clone()
    bad[3] = 7
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        float(fn(data[0][0], bad))
        torch.accelerator.synchronize("opencl")


def test_random_kernels_are_not_lowered():
    """A step drawing random numbers without a fixed seed: each replay draws anew (the random kernel keeps its
    table call, whose generator state moves)."""
    x = torch.ones(64, device="opencl")

    def f(x):
        return x * torch.rand(64, device="opencl")
    fn = torch.compile(f)
    outs = [fn(x).cpu().numpy() for _ in range(6)]
    assert len({o.tobytes() for o in outs}) == 6


def test_threads_replay_a_lowered_step():
    """Two threads calling one compiled function (no optimizer: a pure function) get the eager results; the
    observation runs in one thread at a time."""
    g = np.random.default_rng(3)
    w = torch.tensor(g.standard_normal((40, 40)).astype(np.float32), device="opencl")

    def f(x):
        return torch.relu(x @ w + 1).sum(0)
    fn = torch.compile(f)
    xs = [torch.tensor(g.standard_normal((8, 40)).astype(np.float32), device="opencl") for _ in range(4)]
    want = [f(x).cpu().numpy() for x in xs]
    errors = []

    def work():
        try:
            for _ in range(10):
                for x, v in zip(xs, want):
                    assert np.array_equal(fn(x).cpu().numpy(), v)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
    ts = [threading.Thread(target=work) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    assert fn.lowered > 0


def test_the_switch(monkeypatch):
    monkeypatch.setattr(config, "lower", False)
    data = _data(2)
    _, _, step = _mlp(lr=0.1)
    fn = torch.compile(step)
    for i in range(6):
        fn(*data[i % 2])
    assert fn.replays == 4 and fn.lowered == 0


def test_the_switch_holds_for_a_step_lowered_before_it(monkeypatch):
    """``config.lower = False`` after a step was lowered: its next replays run the plain replay (bitwise the same);
    switched back on, the lowered one again."""
    data = _data(2)
    model, fn = _lowered_step(data, lr=0.1)
    lw = fn._last().replay
    calls = []
    plain = lw.plain
    monkeypatch.setattr(lw, "plain", lambda *a: calls.append(1) or plain(*a))
    fn(*data[0])
    assert not calls
    monkeypatch.setattr(config, "lower", False)
    fn(*data[1])
    fn(*data[0])
    assert calls == [1, 1]
    monkeypatch.setattr(config, "lower", True)
    fn(*data[1])
    assert calls == [1, 1]
    ref, _, _ = _run(False, 10, data, lr=0.1)
    for a, b in zip(_params(model), _params(ref)):
        np.testing.assert_array_equal(a, b)


def test_lowered_transformer_block_is_bitwise_the_plain_replay(monkeypatch):
    """A pre-LN transformer block with GELU, attention, layer norm prologues and AdamW: the lowered replay runs
    the same kernels with the same arguments as the plain replay, so 8 steps give the same bits."""
    nn = torch.nn
    results = []
    for lower in (False, True):
        monkeypatch.setattr(config, "lower", lower)
        torch.manual_seed(2)
        emb = nn.Embedding(11, 16)
        layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True,
                                           norm_first=True, activation="gelu")
        model = nn.Sequential(emb, layer, nn.Linear(16, 11)).to("opencl")
        opt = torch.optim.AdamW(model.parameters(), lr=0.01)
        x, y = torch.randint(0, 11, (3, 7)).to("opencl"), torch.randint(0, 11, (3, 7)).to("opencl")

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x).view(-1, 11), y.view(-1))
            loss.backward()
            opt.step()
            return loss
        fn = torch.compile(step)
        losses = [float(fn(x, y)) for _ in range(8)]
        results.append((losses, _params(model), fn.lowered))
    (l0, p0, n0), (l1, p1, n1) = results
    assert n0 == 0 and n1 > 20
    assert l0 == l1
    for a, b in zip(p0, p1):
        assert np.array_equal(a, b)


def test_a_compiled_module_is_lowered_forward_and_backward(monkeypatch):
    """``torch.compile(model)`` in an eager training loop: the recorded forward and backward are lowered too
    (their own observed replays), with the bits of the unlowered ones."""
    results = []
    data = _data(2)
    for lower in (False, True):
        monkeypatch.setattr(config, "lower", lower)
        model, opt, _ = _mlp(lr=0.1, momentum=0.9)
        cm = torch.compile(model)
        losses = []
        for i in range(8):
            opt.zero_grad()
            loss = F.cross_entropy(cm(data[i % 2][0]), data[i % 2][1])
            loss.backward()
            opt.step()
            losses.append(float(loss))
        entries = [e for e in cm.__dict__["_capture"].cache.values() if e.forward is not None]
        results.append((losses, _params(model), entries[-1]))
    (l0, p0, _), (l1, p1, e1) = results
    assert l0 == l1
    for a, b in zip(p0, p1):
        assert np.array_equal(a, b)
    assert e1.forward.lowered > 0 and e1.backward.lowered > 0


def test_an_observed_replay_keeps_no_array_alive():
    """Between the two observed replays only summaries are kept (kernels, sizes, scalars, layouts): no array or
    buffer of the first run outlives it."""
    from coretorch_opencl.device import cl as _cl, cla
    data = _data(2)
    _, _, step = _mlp(lr=0.1)
    fn = torch.compile(step)
    for i in range(3):       # capture twice, then the first observed replay
        fn(*data[i % 2])
    lowering = fn._last().replay
    assert len(lowering._runs) == 1

    def walk(o, depth=0):
        assert not isinstance(o, (cla.Array, _cl.MemoryObjectHolder)), o
        if depth < 12 and isinstance(o, (tuple, list)):
            for x in o:
                walk(x, depth + 1)
        elif depth < 12 and isinstance(o, dict):
            for x in o.values():
                walk(x, depth + 1)
    walk(lowering._runs)
