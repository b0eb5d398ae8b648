"""coretorch.compile: whole-step capture and replay gives bitwise the parameters eager gives; guards, recompile
limit, graph breaks, explain and fullgraph."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F
from coretorch import nn
from coretorch._compile import CompiledFunction, Unsupported, config

from _compile_helpers import ce_step


def _data(n, shape, classes, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(shape).astype(np.float32), rng.integers(0, classes, shape[0])) for _ in range(n)]


def _run(build, data, device, compiled, set_to_none=True, sched=False):
    """Train ``build()``'s (model, optimizer, loss) for the batches; the parameters, buffers and losses."""
    torch.manual_seed(0)
    model, opt, lossf = build()
    model.to(device)
    scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5) if sched else None

    def step(x, y):
        opt.zero_grad(set_to_none=set_to_none)
        loss = lossf(model(x), y)
        loss.backward()
        opt.step()
        return loss

    f = torch.compile(step) if compiled else step
    losses = []
    for xb, yb in data:
        loss = f(torch.tensor(xb, device=device), torch.tensor(yb, device=device))
        losses.append(loss.detach().cpu().numpy().copy())
        if scheduler is not None:
            scheduler.step()
    if compiled:
        assert isinstance(f, CompiledFunction)
        entries = list(f._cache.values())
        assert entries and all(e.replay is not None for e in entries), [e.breaks for e in entries]
        assert f.launches > 0 and f.replays >= len(data) - 2
    state = {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}
    grads = [None if p.grad is None else p.grad.cpu().numpy().copy() for p in model.parameters()]
    return state, losses, grads


def _same(build, data, device, **kw):
    a = _run(build, data, device, False, **kw)
    b = _run(build, data, device, True, **kw)
    for k in a[0]:
        np.testing.assert_array_equal(a[0][k], b[0][k], err_msg=k)
    for la, lb in zip(a[1], b[1]):
        np.testing.assert_array_equal(la, lb)
    for ga, gb in zip(a[2], b[2]):
        assert (ga is None) == (gb is None)
        if ga is not None:
            np.testing.assert_array_equal(ga, gb)


def _mlp_sgd():
    m = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    return m, torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9), F.cross_entropy


def test_mlp_sgd_momentum_bitwise(device):
    _same(_mlp_sgd, _data(4, (6, 8), 4), device)


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad_modes_and_scheduler(set_to_none):
    _same(_mlp_sgd, _data(5, (6, 8), 4), "cpu", set_to_none=set_to_none, sched=True)


def test_mlp_adam_bitwise(device):
    def build():
        m = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))
        return m, torch.optim.Adam(m.parameters(), lr=1e-2), F.cross_entropy
    _same(build, _data(4, (6, 8), 4), device)


def test_conv_batchnorm_running_stats_bitwise():
    def build():
        m = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(), nn.Flatten(),
                          nn.Linear(3 * 5 * 5, 3))
        return m, torch.optim.SGD(m.parameters(), lr=0.05), F.cross_entropy
    _same(build, _data(4, (4, 2, 5, 5), 3), "cpu")


def test_dropout_matches_eager_rng(device):
    def build():
        m = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 4))
        return m, torch.optim.SGD(m.parameters(), lr=0.1), F.cross_entropy
    _same(build, _data(4, (6, 8), 4), device)


class _Block(nn.Module):
    def __init__(self, d=16, h=2):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.head = nn.Linear(d, 5)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, d))
        x = x + self.out(F.gelu(self.fc(self.ln2(x))))
        return self.head(x).view(b * t, 5)


def test_gpt_block_adamw_bitwise():
    def build():
        m = _Block()
        return m, torch.optim.AdamW(m.parameters(), lr=1e-2), F.cross_entropy
    data = [(x, y) for x, y in _data(3, (2, 4, 16), 5)]
    data = [(x, np.resize(y, 8)) for x, y in data]
    _same(build, data, "cpu")


def test_scheduler_stepped_inside_the_step_is_replayed():
    results = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m, opt, _ = _mlp_sgd()
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.5, total_steps=10)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            sched.step()
            return loss
        f = torch.compile(step) if compiled else step
        for xb, yb in _data(5, (6, 8), 4):
            f(torch.tensor(xb), torch.tensor(yb))
        assert not compiled or f.replays == 3  # captures: .grad None, then set
        results.append(([p.detach().numpy().copy() for p in m.parameters()], opt.param_groups[0]["lr"]))
    assert results[0][1] == results[1][1]
    for a, b in zip(results[0][0], results[1][0]):
        np.testing.assert_array_equal(a, b)


def test_clip_grad_norm_inside_the_step():
    torch.manual_seed(0)
    results = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m, opt, _ = _mlp_sgd()

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(m(x), y)
            loss.backward()
            nn.utils.clip_grad_norm_(m.parameters(), 0.1)
            opt.step()
            return loss
        f = torch.compile(step) if compiled else step
        for xb, yb in _data(4, (6, 8), 4):
            f(torch.tensor(xb), torch.tensor(yb))
        results.append([p.detach().numpy().copy() for p in m.parameters()])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


# ---- guards, recompiles, graph breaks -----------------------------------------------------------------------------
def _counter_fn():
    w = torch.ones(3)
    calls = []

    def fn(x, s):
        calls.append(1)  # a Python side effect: runs at capture only
        return (x * w * s).sum()
    return fn, calls, w


def test_guards_recapture_on_shape_dtype_scalar_and_requires_grad():
    fn, calls, _ = _counter_fn()
    f = torch.compile(fn)
    x = torch.arange(3.0)
    assert f(x, 2.0).item() == 6.0 and f(x, 2.0).item() == 6.0
    assert len(calls) == 1  # the second call replayed
    assert f(x + 1, 2.0).item() == 12.0 and len(calls) == 1  # new values, same guards: replay reads them
    # a Python float: guarded at the first capture; once it changes, captured again as an input (dynfloat.py)
    assert f(x, 3.0).item() == 9.0 and len(calls) == 2
    assert f(x, 4.0).item() == 12.0 and len(calls) == 2
    assert f(x.double(), 3.0).item() == 9.0 and len(calls) == 3
    assert f(torch.arange(6.0).view(2, 3), 1.0).item() == 15.0 and len(calls) == 4
    y = f(x.requires_grad_(), 1.0)
    assert y.item() == 3.0 and len(calls) == 5 and len(f._cache) == 4
    y.backward()  # a result whose graph is still needed: that guard set runs eagerly, autograd intact
    assert f(x, 1.0).grad_fn is not None and len(calls) == 6 and x.grad.tolist() == [1.0, 1.0, 1.0]


def test_training_flag_and_parameter_identity_are_guards():
    m = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5))
    f = torch.compile(lambda x: m(x).sum())
    x = torch.ones(2, 3)
    m.eval()
    a = f(x)
    assert f(x).item() == a.item() and len(f._cache) == 1
    m.train()
    f(x)
    assert len(f._cache) == 2
    m.eval()
    m[0].weight = nn.Parameter(torch.zeros(3, 3))
    assert f(x).item() == pytest.approx(float(m[0].bias.sum().item()) * 2, rel=1e-6)
    assert len(f._cache) == 3
    m[0].weight.data, m[0].bias.data = torch.ones(2, 3), torch.zeros(2)  # new shapes, same parameters
    assert f(x).item() == 12.0 and f(x).item() == 12.0 and len(f._cache) == 4


def test_recompile_limit_then_eager_with_one_warning(monkeypatch):
    monkeypatch.setattr(config, "recompile_limit", 2)
    fn, calls, _ = _counter_fn()
    f = torch.compile(fn)
    x = torch.ones(3)
    with pytest.warns(UserWarning, match="recompile_limit"):
        for s in range(4):  # (ints: a float argument would become an input of the replay, see dynfloat.py)
            assert f(x, s).item() == 3.0 * s
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert f(x, 7).item() == 21.0
    assert len(f._cache) == 2 and len(calls) == 5


def _breaking(x):
    y = x * 2
    if y.sum() > 0:  # Python control flow on a tensor value
        return y + 1
    return y - 1


@pytest.mark.parametrize("op", ["item", "tolist", "numpy", "bool", "nonzero", "masked_select"])
def test_graph_breaks_run_eagerly_and_are_explained(op):
    def fn(x):
        y = x * 2
        if op == "item":
            return y + y.sum().item()
        if op == "tolist":
            return y + len(y.tolist())
        if op == "numpy":
            return y + float(y.detach().numpy()[0])
        if op == "bool":
            return _breaking(x)
        if op == "masked_select":
            return torch.masked_select(y, y > 0).view(-1, 1)
        return y[torch.nonzero(y > 0).view(-1)]
    f = torch.compile(fn)
    for x in (torch.tensor([1.0, -2.0]), torch.tensor([3.0, 4.0]), torch.tensor([-3.0, -4.0])):
        np.testing.assert_array_equal(f(x).numpy(), fn(x).numpy())
    info = torch.compiler.explain(fn, torch.tensor([1.0, 2.0]))
    assert info.graph_break_count >= 1
    assert "test_compile.py" in info.break_reasons[0]
    assert "test_compile.py" in str(info)
    with pytest.raises(Unsupported, match="graph break.*test_compile.py"):
        torch.compile(fn, fullgraph=True)(torch.tensor([1.0, 2.0]))


def test_explain_without_breaks_and_switches():
    def fn(x):
        return (x * 3).exp()
    info = torch.compiler.explain(fn)(torch.ones(2))
    assert info.graph_break_count == 0 and info.op_count >= 2
    assert torch.compile(fn, disable=True) is fn
    seen = []

    def probe(x):
        seen.append(torch.compiler.is_compiling())
        return x + 1
    f = torch.compile(probe)
    f(torch.ones(1))
    f(torch.ones(1))
    assert seen == [True] and not torch.compiler.is_compiling()
    torch.compiler.reset()
    f(torch.ones(1))
    assert seen == [True, True]


def test_replay_results_are_fresh_and_inputs_read_each_call():
    w = torch.tensor([1.0, 2.0])

    def fn(x):
        return x @ w, x * 0 + w

    f = torch.compile(fn)
    a = f(torch.tensor([1.0, 1.0]))
    b = f(torch.tensor([2.0, 0.0]))
    assert a[0].item() == 3.0 and b[0].item() == 2.0
    w.mul_(2)  # persistent state changed in place between calls: the replay reads it
    c = f(torch.tensor([1.0, 0.0]))
    assert c[0].item() == 2.0 and c[1].tolist() == [2.0, 4.0]


def test_view_made_outside_the_kernels_is_a_break_not_a_stale_constant(device):
    w = torch.arange(12.0, device=device).view(4, 3)

    def fn(i):  # index_select reshapes a 0-d index on the host array
        return torch.index_select(w, 0, i) * 2
    f = torch.compile(fn)
    for k in range(3):
        assert f(torch.tensor(k, device=device)).tolist() == fn(torch.tensor(k, device=device)).tolist()


# ---- module capture -----------------------------------------------------------------------------------------------
def _train_module(device, how):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 4)).to(device)
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    run = m
    if how == "compile":
        run = torch.compile(m)
    elif how == "method":
        m.compile()
    for xb, yb in _data(4, (6, 8), 4):
        out = run(torch.tensor(xb, device=device))
        loss = F.cross_entropy(out, torch.tensor(yb, device=device))
        opt.zero_grad()
        loss.backward()
        opt.step()
    if how != "eager":
        assert out.grad_fn is not None and out.grad_fn.name() == "CompiledFunctionBackward"
    return m, run


@pytest.mark.parametrize("how", ["compile", "method"])
def test_module_capture_trains_bitwise_like_eager(device, how):
    ref, _ = _train_module(device, "eager")
    m, run = _train_module(device, how)
    if how == "compile":
        m.tag = "mine"
        assert run._orig_mod is m and run.tag == "mine"  # attributes forwarded to the module
        assert list(run.state_dict()) == [f"_orig_mod.{k}" for k in m.state_dict()]
    else:
        assert list(m.state_dict()) == list(ref.state_dict())
    for (k, a), b in zip(ref.state_dict().items(), m.state_dict().values()):
        np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy(), err_msg=k)
    x = torch.ones(3, 8, device=device)
    m.eval()
    with torch.no_grad():
        a, b = run(x), run(x)  # eval under no_grad: a forward-only capture, then a replay
    np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())
    assert b.grad_fn is None


def test_module_capture_backward_twice_raises():
    m = torch.compile(nn.Linear(3, 2))
    x = torch.ones(4, 3)
    m(x).sum().backward()  # the capture call: eager graph
    y = m(x).sum()
    assert y.grad_fn.next_functions[0][0].name() == "CompiledFunctionBackward"
    y.backward(retain_graph=True)
    y.backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()
    np.testing.assert_array_equal(m.weight.grad.numpy(), np.full((2, 3), 12.0, np.float32))


def test_aliased_arguments_are_a_guard():
    f = torch.compile(lambda a, b: a.add_(1) * b)
    x, y = torch.ones(2), torch.ones(2)
    assert f(x, x).tolist() == [4.0, 4.0]  # b is a: it sees the in-place add
    assert f(x, y).tolist() == [3.0, 3.0]  # distinct now: captured again, not replayed with b read as a
    assert f(y, x).tolist() == [6.0, 6.0] and len(f._cache) == 2


def test_embedding_step_replays_with_new_token_batches():
    results = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = nn.Sequential(nn.Embedding(10, 4), nn.Flatten(), nn.Linear(12, 10))
        opt = torch.optim.SGD(m.parameters(), lr=0.1)

        step = ce_step(m, opt)
        f = torch.compile(step) if compiled else step
        rng = np.random.default_rng(0)
        for _ in range(5):  # new token ids every step: the index check is replayed, not baked
            f(torch.tensor(rng.integers(0, 10, (4, 3))), torch.tensor(rng.integers(0, 10, 4)))
        assert not compiled or f.replays == 3
        with pytest.raises(IndexError, match="out of range"):
            f(torch.tensor(np.full((4, 3), 10)), torch.zeros(4, dtype=torch.int64))
        results.append([p.detach().numpy().copy() for p in m.parameters()])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)



@pytest.mark.parametrize("set_to_none", [True, False])
def test_host_check_that_changes_falls_back_or_raises_never_silent(set_to_none):
    torch.manual_seed(0)
    m, opt, _ = _mlp_sgd()

    def step(x, y):
        opt.zero_grad(set_to_none=set_to_none)
        loss = F.cross_entropy(m(x), y)  # on cpu: "every target a class" decides the path on the host
        loss.backward()
        opt.step()
        return loss
    f = torch.compile(step)
    x = torch.ones(4, 8)
    for _ in range(3):
        f(x, torch.tensor([0, 1, 2, 3]))
    ignored = torch.tensor([0, -100, 2, 3])
    # nothing written before the check, or (set_to_none=False: the grads zeroed in place first) a check of the
    # arguments only, run at the start of the replay (see early.py): this call runs eagerly
    ref = F.cross_entropy(m(x), ignored).item()
    assert f(x, ignored).item() == ref
    w = torch.zeros(2)
    g = torch.compile(lambda v: v[w.add_(1).long()])  # the index read after the write that made it: an error
    for _ in range(2):
        g(torch.arange(3.))
    with pytest.raises(RuntimeError, match="differs"):
        g(torch.arange(3.))


def test_a_submodule_added_after_capture_is_seen():
    m = nn.Sequential(nn.Linear(2, 2))
    f, g = torch.compile(lambda x: m(x).sum()), torch.compile(m)
    x = torch.ones(1, 2)
    for _ in range(2):
        f(x), g(x)
    m.append(nn.ReLU())
    m[0].bias.data.fill_(-10.0)  # every output negative: the ReLU must show
    assert f(x).item() == 0.0 and g(x).sum().item() == 0.0
    assert f(x).item() == 0.0 and g(x).sum().item() == 0.0


def test_autocast_and_grad_mode_are_guards():
    w = torch.ones(2, 2)
    f = torch.compile(lambda x: x @ w)
    x = torch.ones(1, 2)
    assert f(x).dtype == torch.float32
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert f(x).dtype == torch.bfloat16 and f(x).dtype == torch.bfloat16
    with torch.no_grad():
        f(x)
    assert f(x).dtype == torch.float32 and len(f._cache) == 3


def test_another_threads_ops_during_a_capture_are_not_recorded():
    import threading
    go, done = threading.Event(), threading.Event()
    noise = []

    def other():  # tensor ops of another thread, run while the capture is in the middle of fn
        go.wait()
        noise.append((torch.ones(3) * 5).sum())
        done.set()

    w = torch.ones(3)

    def fn(x):
        y = x * w
        go.set()
        done.wait()
        return y.sum()
    t = threading.Thread(target=other)
    t.start()
    f = torch.compile(fn)
    f(torch.ones(3))
    t.join()
    assert noise and f.launches == 2  # x * w and the sum, not the other thread's three
    assert f(torch.full((3,), 2.0)).item() == 6.0 and f.replays == 1


def test_compiled_modules_copy_and_pickle():
    import copy
    import pickle
    m = nn.Linear(2, 2)
    m.compile()
    opt_m = torch.compile(nn.Linear(2, 2))
    x = torch.ones(1, 2)
    for mod in (m, opt_m):
        mod(x), mod(x)
        for clone in (copy.deepcopy(mod), pickle.loads(pickle.dumps(mod))):
            np.testing.assert_array_equal(clone(x).detach().numpy(), mod(x).detach().numpy())
            clone(x).sum().backward()
            assert clone.weight.grad is not None and clone.weight is not mod.weight


def test_reseeding_between_calls_replays_the_same_masks(device):
    d = nn.Dropout(0.5)
    fn = lambda x: d(x) * 1  # noqa: E731
    f = torch.compile(fn)
    x = torch.ones(16, device=device)
    for i in range(4):
        torch.manual_seed(i % 2)
        a = f(x).tolist()
        torch.manual_seed(i % 2)
        assert a == fn(x).tolist()
    assert f.replays == 3
