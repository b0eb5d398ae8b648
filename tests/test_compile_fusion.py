"""coretorch.compile's fusion of elementwise chains (coretorch/_compile/fusion.py, the opencl compile_fused hook):
fused replays equal eager (bitwise where the arithmetic is the same), launches go down, what must stay unfused
stays so, and the fused program is built once."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import coretorch as torch
from _compile_helpers import fusing, twice
import coretorch.nn.functional as F
from coretorch import nn
from coretorch._compile import config
from coretorch.testing import available_devices

try:
    from coretorch_opencl.device import STATS
    from pyopencl.characterize import has_src_build_cache
except ImportError:  # without the opencl plugin no device fuses: the tests below have no parameters
    STATS, has_src_build_cache = {}, None


FUSING = [d for d in available_devices() if fusing(d)]


@pytest.fixture(autouse=True)
def _fresh():
    torch.compiler.reset()
    yield
    torch.compiler.reset()


def _np(t):
    return t.detach().cpu().numpy()


def _t(a, dev):
    return torch.tensor(np.asarray(a), device=dev)


@pytest.mark.parametrize("device", FUSING)
def test_chain_fused_bitwise_with_broadcast_scalar_and_cast_operands(device):
    rng = np.random.default_rng(0)
    x = _t(rng.standard_normal((6, 5)).astype(np.float32), device)
    b = _t(rng.standard_normal(5).astype(np.float32), device)       # a row broadcast
    col = _t(rng.standard_normal((6, 1)).astype(np.float32), device)  # a column broadcast
    x[0, 0], x[1, 1] = float("nan"), float("inf")

    def f(x, b, col):
        y = (x + b) * 0.5 - col
        m = (y > 0).float()                            # bool -> float32 cast
        z = torch.where(y > 1, y.exp(), m * y).clamp(-2.0, 3.0)
        return (z.sigmoid() + 2).relu()

    eager, out, c = twice(f, x, b, col)
    np.testing.assert_array_equal(_np(eager), _np(out))
    assert c.launches_before_fusion - c.launches >= 8, (c.launches_before_fusion, c.launches)


@pytest.mark.parametrize("device", FUSING)
def test_integer_and_bool_chains(device):
    x = _t(np.arange(-6, 6, dtype=np.int64).reshape(3, 4), device)

    def f(x):
        q = (x * 3 + 1) // 2 % 5                       # Python floor division and modulo on int64
        return q, (q > 1) & (x != 0)

    eager, out, c = twice(f, x)
    for e, o in zip(eager, out):
        np.testing.assert_array_equal(_np(e), _np(o))
    assert c.launches < c.launches_before_fusion


@pytest.mark.parametrize("device", FUSING)
def test_intermediates_read_elsewhere_stay_materialised(device):
    rng = np.random.default_rng(1)
    x = _t(rng.standard_normal((4, 3)).astype(np.float32), device)
    y = _t(rng.standard_normal((4, 3)).astype(np.float32), device)

    def returned(x):
        a = x * 2
        return a, (a + 1).exp()                        # a is a result: an output of the fused kernel

    eager, out, c = twice(returned, x)
    for e, o in zip(eager, out):
        np.testing.assert_array_equal(_np(e), _np(o))
    assert c.launches == c.launches_before_fusion - 2

    def reduced(x):
        a = x * 2
        s = a.sum(1, keepdim=True)                     # a read by a reduction between its producer and consumer
        return (a + 1) * s

    eager, out, c = twice(reduced, x)
    np.testing.assert_array_equal(_np(eager), _np(out))

    def mutated(x, y):
        a = x * 2 + y                                  # reads y before an indexed write into it:
        y[0] = 5.0                                     # a + 1 cannot join a's group across the write
        return (a + 1).exp() + y

    y2 = y.clone()
    eager = mutated(x, y)
    c = torch.compile(mutated)
    c(x, y2)
    y3 = y2.clone()
    out = c(x, y2)
    expect = mutated(x, y3)
    np.testing.assert_array_equal(_np(expect), _np(out))
    np.testing.assert_array_equal(_np(y3), _np(y2))
    # two groups, one on each side of the write: (x * 2 + y) and ((a + 1).exp() + y)
    assert c.launches == c.launches_before_fusion - 3, (c.launches, c.launches_before_fusion)
    assert np.isfinite(_np(eager)).all()


@pytest.mark.parametrize("device", FUSING)
def test_fused_kernel_follows_a_changed_layout(device):
    w = torch.randn(4, 6, device=device)

    def f(x):
        return (x * 2 + w).relu()

    x = torch.randn(4, 6, device=device)
    c = torch.compile(f)
    c(x)
    np.testing.assert_array_equal(_np(c(x)), _np(f(x)))
    # the state's array is now a transposed view: eager's results may follow its layout (``w + x`` would be
    # transposed), a fused kernel's are row-major, so the replay's layout check captures again (review 18c)
    w.data = torch.randn(6, 4, device=device).t()
    np.testing.assert_array_equal(_np(c(x)), _np(f(x)))
    assert c.replays == 1
    np.testing.assert_array_equal(_np(c(x)), _np(f(x)))
    assert c.replays == 2 and c.launches == 1 and c(x).stride() == f(x).stride()


@pytest.mark.parametrize("device", FUSING)
def test_mlp_steps_fused_match_eager(device):
    rng = np.random.default_rng(2)
    data = [(rng.standard_normal((8, 12)).astype(np.float32), rng.integers(0, 3, 8)) for _ in range(4)]

    def run(compiled):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 3)).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        f = torch.compile(step) if compiled else step
        for xb, yb in data:
            f(_t(xb, device), _t(yb, device))
        return [_np(p) for p in model.parameters()], f

    ref, _ = run(False)
    got, f = run(True)
    assert f.launches < f.launches_before_fusion
    for a, b in zip(ref, got):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("device", FUSING)
def test_in_place_updates_fused_into_the_arrays(device):
    def make():
        torch.manual_seed(0)
        w = torch.randn(5, 4, device=device)
        buf, v = torch.zeros(5, 4, device=device), torch.ones(5, 4, device=device)

        def step(x):  # a hand-written Adam-like update of persistent state inside the compiled function
            g = (x * 2 + w).tanh()
            with torch.no_grad():
                buf.mul_(0.9).add_(g)
                v.mul_(0.99).addcmul_(g, g, value=0.01)
                w.add_(buf / (v.sqrt() + 1e-8), alpha=-0.1)
            return g.sum()
        return step, (w, buf, v)

    x = torch.randn(5, 4, device=device)
    eager, ref = make()
    step, got = make()
    c = torch.compile(step)
    for _ in range(4):
        eager(x)
        c(x)
    assert c.replays == 3 and c.launches <= 3 < 12 <= c.launches_before_fusion, (c.launches, c.launches_before_fusion)
    for a, b in zip(ref, got):
        np.testing.assert_array_equal(_np(a), _np(b))


@pytest.mark.parametrize("device", FUSING)
def test_fused_program_built_once_and_cached_on_disk(device, caplog):
    x = _t(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), device)

    def f(x):
        return ((x * 1.5 + 0.25).tanh() - x).abs()

    c = torch.compile(f)
    c(x)
    builds = STATS["builds"]
    torch.compiler.reset()
    c(x)                                               # a second capture: the same program, no build
    assert STATS["builds"] == builds and c.launches < c.launches_before_fusion
    dev = torch._backend.get_table(torch.device(device)).backend.device(0)
    built = [k for k in dev._programs if k[0] == "fused"]
    for key in built:   # forget the built program: only disk is left
        del dev._programs[key]
    for key in [k for k in dev._kernels if k[0][0] == "fused"]:
        del dev._kernels[key]
    torch.compiler.reset()
    if has_src_build_cache(dev.cldev):
        # PoCL caches built programs itself, keyed by the source: the same source (its hash is the program's key) is
        # PoCL's cache hit.  (A scan of PoCL's cache for new program directories raced with other test processes
        # building fused programs of their own, also named fused0.)
        out = c(x)
        rebuilt = [k for k in dev._programs if k[0] == "fused"]   # (only this capture ran since the deletion)
        assert len(rebuilt) == 1 and rebuilt[0] in built
    else:  # pyopencl's binary cache
        with caplog.at_level(logging.DEBUG, logger="pyopencl.cache"):
            out = c(x)
        assert any("binary cache hit" in r.getMessage() for r in caplog.records)
    assert STATS["builds"] == builds + 1
    np.testing.assert_array_equal(_np(out), _np(f(x)))


@pytest.mark.parametrize("device", FUSING)
def test_module_capture_fused_forward_and_backward(device):
    def grads(compiled):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3)).to(device)
        m = torch.compile(model) if compiled else model
        x = torch.randn(10, 6, device=device)
        for _ in range(3):
            model.zero_grad()
            (m(x).sigmoid() * 2 - 1).square().sum().backward()
        state = [_np(v) for v in model.state_dict().values()]  # running statistics updated in place
        return state + [_np(p.grad) for p in model.parameters()]

    for a, b in zip(grads(False), grads(True)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("device", FUSING)
def test_module_backward_reads_an_array_updated_in_place_in_the_forward(device):
    """Linear's bias is added in place into the matmul result, which GELU's backward reads through the saved
    context: that update is not made functional (its array must reach the backward)."""
    def grads(compiled):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 2)).to(device)
        m = torch.compile(model) if compiled else model
        x = torch.randn(5, 4, device=device)
        for _ in range(3):
            model.zero_grad()
            m(x).square().sum().backward()
        return [_np(p.grad) for p in model.parameters()]

    for a, b in zip(grads(False), grads(True)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_fusion_leaves_devices_without_the_hook_alone():
    x = torch.randn(3, 4)

    def f(x):
        return (x * 2 + 1).relu()

    eager, out, c = twice(f, x)
    np.testing.assert_array_equal(_np(eager), _np(out))
    assert c.launches == c.launches_before_fusion
    assert config.fusion
