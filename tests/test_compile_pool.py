"""coretorch.compile's planned temporaries (coretorch/_compile/plan.py, the backends' compile_out hooks): replays
write temporaries into buffers allocated once per capture and reused across non-overlapping lifetimes; training
steps stay bitwise eager on cpu (within float32 rounding on opencl); what escapes (results, views, the arrays a
module's backward keeps, host checks) is never a pool buffer."""
from __future__ import annotations

import re
import tracemalloc

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F
from coretorch import nn
from coretorch._compile import config
from coretorch._compile.plan import Pool

_POOLED = re.compile(r"^\s*(a\d+) = c\d+\(p\d+\b", re.M)


@pytest.fixture(autouse=True)
def _fresh():
    torch.compiler.reset()
    yield
    torch.compiler.reset()
    config.pool = True


def _np(t):
    return t.detach().cpu().numpy()


def _same(device, a, b):
    if device == "cpu":
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _hooked(device) -> bool:
    return "compile_out" in torch._backend.get_table(torch.device(device)).names


def _train(device, make, steps, x, y):
    """Eager and compiled copies of one model and AdamW: the compiled step's planned counts, both parameter sets."""
    out = []
    for compiled in (False, True):
        torch.manual_seed(0)
        model = make().to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=0.01)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x).reshape(-1, 10), y.reshape(-1))
            loss.backward()
            opt.step()
            return loss
        fn = torch.compile(step) if compiled else step
        losses = [fn(x, y).item() for _ in range(steps)]
        out.append((losses, [_np(p) for p in model.parameters()], fn))
    (le, pe, _), (lc, pc, fn) = out
    assert fn.replays == steps - 2  # the first two calls capture (.grad None, then set)
    return le, pe, lc, pc, fn


def test_mlp_adamw_steps_equal_eager(device):
    torch.manual_seed(1)
    x, y = torch.randn(16, 24).to(device), torch.randint(0, 10, (16,)).to(device)
    le, pe, lc, pc, fn = _train(device, lambda: nn.Sequential(nn.Linear(24, 32), nn.ReLU(), nn.Linear(32, 32),
                                                              nn.Tanh(), nn.Linear(32, 10)), 7, x, y)
    _same(device, np.array(le), np.array(lc))
    for a, b in zip(pe, pc):
        _same(device, a, b)
    if _hooked(device):
        temps, bufs = fn.planned
        assert 0 < bufs <= temps


class _Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 16)
        self.layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True,
                                                norm_first=True, activation="gelu")
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        return self.head(self.layer(self.emb(x)))


def test_transformer_block_adamw_steps_equal_eager(device):
    torch.manual_seed(2)
    x, y = torch.randint(0, 10, (2, 5)).to(device), torch.randint(0, 10, (2, 5)).to(device)
    le, pe, lc, pc, fn = _train(device, _Block, 7, x, y)  # (opencl: lowered from the 5th call)
    _same(device, np.array(le), np.array(lc))
    for a, b in zip(pe, pc):
        _same(device, a, b)
    if _hooked(device):
        assert fn.planned[0] > 0


def _chain(x):
    y = (x * 2).exp()
    z = y + 1
    w = z.tanh()
    v = w * 3 - z
    return v.sum()


def _replay_allocations(device, fn, x) -> int:
    """Bytes numpy allocated at most during one replay (cpu), or arrays the device allocated (opencl)."""
    if device == "cpu":
        tracemalloc.start()
        try:
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            fn(x)
            return tracemalloc.get_traced_memory()[1] - base
        finally:
            tracemalloc.stop()
    dev = torch._backend.get_table(torch.device(device)).backend.device(0)
    calls = [0]
    orig = dev.array

    def counting(*a, **k):
        calls[0] += 1
        return orig(*a, **k)
    dev.array = counting
    try:
        fn(x)
    finally:
        del dev.array
    return calls[0]


def test_plan_reuses_buffers_and_replays_allocate_less(device, monkeypatch):
    if not _hooked(device):
        pytest.skip(f"no compile_out hook on {device}")  # (every installed backend has one)
    monkeypatch.setattr(config, "fusion", False)  # the plain launches (fusion would leave one kernel on opencl)
    x = torch.randn(256, 256).to(device) * 0.1
    counts = {}
    for pool in (False, True):
        config.pool = pool
        c = torch.compile(_chain)
        c(x)
        np.testing.assert_allclose(_np(c(x)), _np(_chain(x)), rtol=1e-5)
        counts[pool] = (_replay_allocations(device, c, x), c.planned)
        torch.compiler.reset()
    temps, bufs = counts[True][1]
    assert counts[False][1] == (0, 0)
    assert temps >= 5 and bufs < temps, counts  # x*2, exp, +1, tanh, *3, - : a chain needs two buffers
    if device == "cpu":
        assert counts[True][0] < 256 * 256 * 4 <= counts[False][0], counts  # not one temporary allocated
    else:
        assert counts[True][0] < counts[False][0], counts


def test_pool_buffers_are_the_same_every_replay(device, monkeypatch):
    monkeypatch.setattr(config, "fusion", False)  # (opencl would fuse the chain into one kernel: no temporaries)
    x = torch.randn(6, 5).to(device)

    def f(x):
        return ((x * 2).exp() + 1).sum()

    c = torch.compile(f)
    c(x)
    c(x)
    entry = next(iter(c._cache.values()))
    replay = getattr(entry.replay, "plain", entry.replay)  # a lowered replay (opencl) keeps the plain one's pool
    pools = [v for v in replay.__closure__ if isinstance(v.cell_contents, Pool)]
    if not _hooked(device):
        assert not pools
        return
    pool = pools[0].cell_contents
    before = [id(b) for b in pool._free[0]]
    out = c(x * 0.5)
    assert [id(b) for b in pool._free[0]] == before  # the same buffers, given back
    _same(device, _np(out), _np(f(x * 0.5)))


def _sources(c):
    return [e.source for e in c._cache.values() if e.replay is not None]


def test_viewed_temporary_is_not_reused(device):
    def f(x):
        y = x * 2
        yv = y.view(-1)            # a view of y: y's buffer must outlive yv
        a = x + 1                  # temporaries of y's shape after y's last direct read
        b = a * 3
        return yv + b.sum()

    c = torch.compile(f)
    for k in range(3):
        x = torch.randn(4, 3).to(device) + k
        _same(device, _np(c(x)), _np(f(x)))
    assert c.replays == 2
    for src in _sources(c):
        ys = re.findall(r"^\s*a\d+ = c\d+\((p\d+, )?a\d+, 2\)$", src, re.M)  # y = x * 2's launch: no buffer
        assert ys == [""] * len(ys) and (ys or device != "cpu")
        if device == "cpu":
            assert len(_POOLED.findall(src)) == 2  # a and b are planned


def test_returned_and_kept_results_are_not_reused(device):
    def f(x):
        y = x * 2
        z = (y + 1).exp()
        return y, z * 3

    c = torch.compile(f)
    x1, x2 = torch.randn(4, 3).to(device), torch.randn(4, 3).to(device)
    c(x1)
    r1 = c(x1)
    r2 = c(x2)                       # a replay after r1: r1's arrays stay r1's
    for got, want in zip(r1 + r2, f(x1) + f(x2)):
        _same(device, _np(got), _np(want))


def test_module_arrays_saved_for_backward_survive_another_forward(device):
    torch.manual_seed(3)
    ref = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 8), nn.Sigmoid(), nn.Linear(8, 3)).to(device)
    model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 8), nn.Sigmoid(), nn.Linear(8, 3)).to(device)
    model.load_state_dict(ref.state_dict())
    cm = torch.compile(model)
    x1, x2 = torch.randn(4, 5).to(device), torch.randn(4, 5).to(device)
    cm(x1).sum().backward()           # the capture
    model.zero_grad()
    o1 = cm(x1)
    o2 = cm(x2)                      # a second forward before o1's backward
    (o1.sum() + 2 * o2.sum()).backward()
    (ref(x1).sum() + 2 * ref(x2).sum()).backward()
    for p, q in zip(model.parameters(), ref.parameters()):
        _same(device, _np(p.grad), _np(q.grad))


def test_arrays_read_by_host_checks_are_not_planned(device):
    torch.manual_seed(4)
    logits = torch.randn(6, 4).to(device)

    def f(logits, x):
        t = (x.sum(1) > 0).long() + 1  # a computed target: cross_entropy checks its range on the host (cpu)
        return F.cross_entropy(logits * 2, t)

    x = torch.randn(6, 3).to(device)
    c = torch.compile(f)
    c(logits, x)
    _same(device, _np(c(logits, x)), _np(f(logits, x)))
    for src in _sources(c):
        checked = set(re.findall(r"if (?:HAB\(c\d+, |CHK\(c\d+\()(a\d+)", src))
        assert not checked & set(_POOLED.findall(src))
        if device == "cpu":
            assert checked


def test_guard_miss_recaptures_with_its_own_pool(device, monkeypatch):
    monkeypatch.setattr(config, "fusion", False)  # (opencl would fuse the chain into one kernel: no temporaries)
    c = torch.compile(_chain)
    shapes = [(4, 3), (5, 3), (4, 3), (5, 3)]
    for s in shapes:
        x = torch.randn(*s).to(device)
        _same(device, _np(c(x)), _np(_chain(x)))
    assert len(c._cache) == 2 and c.replays == 2
    if _hooked(device):
        assert all(e.planned[0] > 0 for e in c._cache.values())


def test_pool_gives_a_concurrent_replay_its_own_set():
    pool = Pool([np.empty_like, np.empty_like], [np.zeros((2, 3), np.float32), np.zeros(4, np.int64)])
    a = pool.take()
    b = pool.take()                  # the set is taken: another one
    assert [x.shape for x in b] == [(2, 3), (4,)] and all(x is not y for x, y in zip(a, b))
    pool.give(a)
    assert pool.take() is a
    assert len(pool) == 2 and pool.sizes == [24, 32]


def test_pool_off_leaves_the_replay_as_it_was(device):
    config.pool = False
    c = torch.compile(_chain)
    x = torch.randn(3, 3).to(device)
    c(x)
    _same(device, _np(c(x)), _np(_chain(x)))
    assert c.planned == (0, 0) and ".take()" not in _sources(c)[0]


def test_a_launch_never_writes_into_its_operands_buffer(device, monkeypatch):
    monkeypatch.setattr(config, "fusion", False)
    w = torch.randn(16, 16).to(device) * 0.3

    def f(x):
        y = x @ w                    # y's last read is the launch making z: z gets another buffer
        z = y @ w
        return (z @ w).sum()

    c = torch.compile(f)
    for k in range(3):
        x = torch.randn(16, 16).to(device) + k
        _same(device, _np(c(x)), _np(f(x)))
    if _hooked(device):
        assert c.planned == (3, 2)  # y, z and z @ w; y and z @ w share one
