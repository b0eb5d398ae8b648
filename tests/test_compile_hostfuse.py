"""Host fusion (coretorch/_compile/hostfuse.py): with ``compile(..., mode="max-autotune")`` a cpu replay runs GELU,
layer norm and softmax launches as kernels a plugin offers for host memory (the opencl plugin on PoCL's CPU device,
on numpy's own memory); results within float32 rounding of eager, nothing changes by default or without a
provider, and the provider declines what its kernels do not take (float64, non-contiguous, broadcast operands)."""
from __future__ import annotations


import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F
from coretorch import _backend, nn
from _compile_helpers import fresh_host_fusion, host_providers as _providers
from coretorch._compile import config, hostfuse


_fresh = pytest.fixture(autouse=True)(fresh_host_fusion)


def _pocl_host_device() -> bool:
    """Whether the opencl backend lists a CPU device sharing host memory (PoCL): then it must offer kernels."""
    be = _backend.backends().get("opencl")
    if be is None or not be.is_available():
        return False
    from coretorch_opencl.device import cl, discover   # the plugin's own view of its devices (test only)
    return any(d.type & cl.device_type.CPU and d.host_unified_memory for _, _, d in discover()[0])


def test_a_provider_exists_where_pocl_is_installed():
    assert bool(_providers()) == _pocl_host_device()


class Block(nn.Module):
    """A pre-LN transformer block with GELU and causal attention (every kernel host fusion offers)."""

    def __init__(self, d=16, h=2):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.fc, self.out, self.head = nn.Linear(d, 3 * d), nn.Linear(d, 4 * d), nn.Linear(4 * d, d), \
            nn.Linear(d, 19)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1) * (d // self.h) ** -0.5).softmax(-1)
        x = x + (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.out(F.gelu(self.fc(self.ln2(x))))
        return self.head(x)


def _train(mode, steps=6, dtype=torch.float32, options=None):
    torch.manual_seed(0)
    model = Block().to(dtype=dtype)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x = torch.randn(2, 20, 16, dtype=dtype)   # softmax rows of 20 and 19: at least a 16-wide vector (AVX-512's)
    y = torch.randint(0, 19, (2 * 20,))

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x).view(-1, 19), y)
        loss.backward()
        opt.step()
        return loss
    f = torch.compile(step, mode=mode, options=options) if mode != "eager" else step
    losses = [float(f(x, y)) for _ in range(steps)]
    return [p.detach().numpy().copy() for p in model.parameters()], losses, f


def test_max_autotune_step_within_float32_rounding_of_eager():
    ref, ref_losses, _ = _train("eager")
    got, losses, f = _train("max-autotune")
    assert f.replays == 4   # (the second call captures again: the .grad are no longer None)
    # 2 layer norms, gelu, softmax, log_softmax (cross_entropy): 5 forward launches and their 5 backward kernels
    assert f.hosted == (10 if _providers() else 0)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_default_and_float64_stay_bitwise_eager():
    ref, _, _ = _train("eager")
    got, _, f = _train(None)
    assert f.hosted == 0
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(a, b)
    ref64, _, _ = _train("eager", dtype=torch.float64)
    got64, _, f64 = _train("max-autotune", dtype=torch.float64)   # offered kernels are float32 only: declined
    assert f64.hosted == 0
    for a, b in zip(got64, ref64):
        np.testing.assert_array_equal(a, b)


def test_options_and_config_enable_it_and_no_provider_changes_nothing(monkeypatch):
    _, _, f = _train(None, steps=2, options={"host_fusion": True})
    assert f.hosted == (10 if _providers() else 0)
    _, _, f = _train(None, steps=2, options={"host_fusion": False})
    assert f.hosted == 0
    config.host_fusion = True
    _, _, f = _train(None, steps=2)
    assert f.hosted == (10 if _providers() else 0)
    monkeypatch.setattr(hostfuse, "providers", lambda device_type: [])   # as without PoCL: nothing offered
    torch.compiler.reset()
    ref, _, _ = _train("eager")
    got, _, f = _train("max-autotune")
    assert f.hosted == 0
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(a, b)


class _Spy:
    """A provider offering softmax through the extension point: counts its calls, computes with the cpu kernel."""

    def __init__(self):
        self.calls = 0

    def kernel(self, name, orig, args, kwargs, result):
        if name != "softmax":
            return None

        def softmax(x, dim):
            self.calls += 1
            return orig(x, dim)
        return softmax


class _SpyBackend:
    name = "spyhost"

    def __init__(self):
        self.spy = _Spy()

    def host_fusion(self, device_type):
        return self.spy if device_type == "cpu" else None


def test_extension_point_serves_module_capture(monkeypatch):
    fake = _SpyBackend()
    monkeypatch.setattr(hostfuse, "providers", lambda device_type: [fake.host_fusion(device_type)])
    torch.manual_seed(0)
    model, other = Block(), Block()
    other.load_state_dict(model.state_dict())
    other.compile(options={"host_fusion": True})   # Module.compile() takes it too
    cm = torch.compile(model, mode="max-autotune")
    x = torch.randn(2, 12, 16)
    for _ in range(3):
        out = cm(x)
        out.sum().backward()
        other(x).sum().backward()
    assert fake.spy.calls == 4   # two replays of each (the captures ran the cpu kernel)
    np.testing.assert_array_equal(out.detach().numpy(), model(x).detach().numpy())


def test_offered_kernels_match_the_cpu_kernels_and_decline_other_layouts(monkeypatch):
    if not _providers():   # (test_a_provider_exists_where_pocl_is_installed checks that this means no PoCL)
        assert not _pocl_host_device()
        return
    p = _providers()[0]
    from coretorch_opencl.device import cl   # (the plugin's pyopencl: its error type)
    cpu = _backend.get_table("cpu")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 37)).astype(np.float32) * 4
    x[0, :6] = [np.inf, -np.inf, -30.0, 30.0, 0.0, -0.0]
    g = rng.standard_normal(x.shape).astype(np.float32)
    w, b = rng.standard_normal(37).astype(np.float32), rng.standard_normal(37).astype(np.float32)

    def check(name, *args):
        ref = getattr(cpu, name)(*args)
        fn = p.kernel(name, getattr(cpu, name), args, {}, ref)
        assert fn is not None, name
        got = fn(*args)
        for r, o in zip(ref if isinstance(ref, tuple) else (ref,), got if isinstance(got, tuple) else (got,)):
            assert (r is None) == (o is None) and (r is None or (r.shape == o.shape and r.dtype == o.dtype)), name
            if r is not None:
                np.testing.assert_allclose(o, r, rtol=2e-6, atol=2e-6, err_msg=name)
        return ref
    _, cdf = check("gelu_cdf", x)
    check("gelu_backward", g, x, cdf)
    _, mean, rstd = check("layer_norm", x, w, b, 1e-5, 1)
    check("layer_norm", x, None, None, 1e-5, 1)
    check("layer_norm_backward", g, x, mean, rstd, w, 1, True, True, True)
    check("layer_norm_backward", g, x, mean, rstd, w, 1, False, True, False)
    y = check("softmax", x[1:], 1)
    check("softmax_backward", g[1:], y, -1)
    ly = check("log_softmax", x[1:], -1)
    check("log_softmax_backward", g[1:], ly, 1)
    xt = np.ascontiguousarray(x[1:].T)
    declined = [("gelu_cdf", (x.T,)), ("gelu_cdf", (x.astype(np.float64),)), ("softmax", (x[1:], 0)),
                ("softmax", (xt.T, 1)), ("layer_norm", (x, np.broadcast_to(w[:1], (37,)), b, 1e-5, 1)),
                ("gelu_backward", (g, x, None)), ("softmax", (x[:, :4], 1))]
    for name, args in declined:
        assert p.kernel(name, getattr(cpu, name), args, {}, None) is None, name
    # offered for one layout, called with another: the cpu kernel runs; so it does where the driver refuses
    fn = p.kernel("softmax", cpu.softmax, (x[1:], 1), {}, None)
    np.testing.assert_array_equal(fn(xt.T, 1), cpu.softmax(xt.T, 1))

    monkeypatch.setattr(p, "min_size", 1 << 15)   # the threaded driver's floor: small arrays stay on the cpu kernel
    assert p.kernel("softmax", cpu.softmax, (x[1:], 1), {}, None) is None

    def refuse(launches):
        raise cl.Error("CL_OUT_OF_RESOURCES")
    monkeypatch.setattr(p, "_run", refuse)
    np.testing.assert_array_equal(fn(x[1:], 1), cpu.softmax(x[1:], 1))


def _train_adam(mode, steps=6, dtype=torch.float32, amsgrad=False, weight_decay=0.01):
    """AdamW steps of a compiled function on fixed gradients (the optimizer replay alone: a model's parameters
    whose gradient is rounding noise, attention's key bias, get Adam updates of the noise's sign, which another
    rounding of the forward flips)."""
    torch.manual_seed(0)
    params = [torch.randn(*shape, dtype=dtype, requires_grad=True) for shape in ((16, 48), (48,), (19,), (7, 3))]
    for p in params:
        p.grad = torch.randn(p.shape, dtype=dtype)
    opt = torch.optim.AdamW(params, lr=1e-2, weight_decay=weight_decay, amsgrad=amsgrad)

    def step(x):
        with torch.no_grad():
            for p in params:
                p.grad.mul_(x)
        opt.step()
        return x * 2
    f = torch.compile(step, mode=mode) if mode != "eager" else step
    for _ in range(steps):
        f(torch.tensor(0.9, dtype=dtype))
    from coretorch._compile import optim as optim_replay
    return [p.detach().numpy().copy() for p in params], optim_replay.replay_of(opt, True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("amsgrad", [False, True])
def test_max_autotune_adam_runs_as_one_multi_tensor_kernel(dtype, amsgrad):
    """The cpu optimizer replay's Adam/AdamW update (one ``adam_step_`` launch of ~12 numpy passes per parameter)
    runs as the provider's multi-tensor kernel on numpy's memory (PoCL's ``fused_adam_``): one launch for the
    group, results within rounding of eager."""
    ref, _ = _train_adam("eager", dtype=dtype, amsgrad=amsgrad)
    got, r = _train_adam("max-autotune", dtype=dtype, amsgrad=amsgrad)
    assert r.replays >= 3
    assert r.hosted == (1 if _providers() else 0)
    # each parameter's step count (+1), then one update for all or one per parameter
    assert r.launches == len(ref) + (1 if _providers() else len(ref))
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


class _AdamSpy:
    """A provider offering ``fused_adam_`` through the extension point that declines every other call."""

    def __init__(self):
        self.calls = 0

    def kernel(self, name, orig, args, kwargs, result):
        return None

    def multi_tensor(self, name):
        if name != "fused_adam_":
            return None

        def fused_adam_(P, G, M, V, X, steps, *hp):
            self.calls += 1
            return False if self.calls % 2 else _numpy_adam(P, G, M, V, X, steps, *hp)
        return fused_adam_


def _numpy_adam(P, G, M, V, X, steps, *hp):
    from coretorch_cpu.optim_kernels import adam_step_   # the cpu kernel itself: the spy's results are eager's
    return all([adam_step_(p, g, m, v, None if X is None else X[i], s, *hp)
                for i, (p, g, m, v, s) in enumerate(zip(P, G, M, V, steps))])


def test_multi_tensor_extension_point_and_a_declining_provider(monkeypatch):
    """A provider's ``multi_tensor`` is asked for ``fused_adam_``; where it declines a call (False, nothing written)
    each tensor's cpu kernel runs: bitwise eager either way (the spy computes with the cpu kernel)."""
    spy = _AdamSpy()
    monkeypatch.setattr(hostfuse, "providers", lambda device_type: [spy] if device_type == "cpu" else [])
    ref, _ = _train_adam("eager")
    got, r = _train_adam("max-autotune")
    assert r.hosted == 1 and spy.calls == r.replays >= 3
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(a, b)
    calls = spy.calls
    torch.compiler.reset()
    got, r = _train_adam(None)   # without host fusion the provider is not asked
    assert r.hosted == 0 and spy.calls == calls
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(a, b)
