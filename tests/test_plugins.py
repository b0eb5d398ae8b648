"""Plugin system: in-process registration, entry-point loading and its failure modes, fallback."""
from __future__ import annotations

import inspect
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import coretorch
from coretorch import plugins
from coretorch.plugins import hookimpl
from coretorch_cpu import CPUBackend


class FakeDevBackend(CPUBackend):
    """The CPU kernels under another device type: enough to test dispatch between devices."""
    name = "fakedev"
    distribution = None

    def __init__(self, drop=()):
        super().__init__()
        self._table = {k: v for k, v in self._table.items() if k not in drop}


class BackendPlugin:
    CORETORCH_PLUGIN_API = 1

    def __init__(self, backend):
        self.backend = backend

    @hookimpl
    def coretorch_register_backends(self, register):
        register(self.backend)


def _square_kernel_cpu(x):
    return x * x


class OpsPlugin:
    """What a third-party ops package looks like: a Function, a kernel per device, an optimizer, a module."""
    CORETORCH_PLUGIN_API = 1

    @hookimpl
    def coretorch_register_functions(self, register):
        class Square(coretorch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                k = coretorch.ops.get_kernel("my_square", x)
                return coretorch.from_numpy(k(x.detach().numpy()))

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * x * g

        register("my_square", Square.apply, tensor_method=True, kernels={"cpu": _square_kernel_cpu})

    @hookimpl
    def coretorch_register_optimizers(self, register):
        class Plain(coretorch.optim.Optimizer):
            def __init__(self, params, lr=0.1):
                super().__init__(params, dict(lr=lr))
                self.lr = lr
        register("PlainDescent", Plain)

    @hookimpl
    def coretorch_register_modules(self, register):
        class Twice(coretorch.nn.Module):
            def forward(self, x):
                return x * 2
        register("Twice", Twice)


@pytest.fixture
def fakedev():
    p = BackendPlugin(FakeDevBackend())
    plugins.register(p, name="fakedev-plugin")
    yield p
    plugins.unregister("fakedev-plugin")


def test_in_process_registration_makes_everything_available_at_once():
    p = OpsPlugin()
    plugins.register(p, name="ops-plugin")
    try:
        x = coretorch.tensor([1.0, -2.0, 3.0], dtype=coretorch.float64, requires_grad=True)
        y = coretorch.ops.my_square(x)
        np.testing.assert_allclose(y.detach().numpy(), [1.0, 4.0, 9.0])
        np.testing.assert_allclose(x.my_square().detach().numpy(), [1.0, 4.0, 9.0])  # tensor_method=True
        y.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), [2.0, -4.0, 6.0])
        assert coretorch.autograd.gradcheck(coretorch.ops.my_square, (x.detach().requires_grad_(),))
        assert coretorch.optim.PlainDescent([x], lr=0.5).lr == 0.5
        assert np.allclose(coretorch.nn.Twice()(x.detach()).numpy(), [2.0, -4.0, 6.0])
        rows = [r for r in plugins.report() if r["name"] == "ops-plugin"]
        assert rows and rows[0]["status"] == "loaded"
        assert "function:my_square" in rows[0]["provides"] and "optimizer:PlainDescent" in rows[0]["provides"]
        assert "my_square" in coretorch.ops.registered()
    finally:
        plugins.unregister("ops-plugin")
    assert not hasattr(coretorch.ops, "my_square")
    assert not hasattr(coretorch.Tensor, "my_square")
    assert not hasattr(coretorch.optim, "PlainDescent")


def test_duplicate_names_are_rejected_naming_both_distributions():
    with pytest.raises(plugins.PluginError, match=r"coretorch-cpu.*other-dist|other-dist.*coretorch-cpu"):
        plugins.register(BackendPlugin(type("Dup", (CPUBackend,), {"distribution": None})()), name="dup",
                         distribution="other-dist")
    # nothing half-registered: the cpu backend is still the original one
    assert coretorch._backend.backends()["cpu"].distribution == "coretorch-cpu"
    p1, p2 = OpsPlugin(), OpsPlugin()
    plugins.register(p1, name="ops-a", distribution="dist-a")
    try:
        with pytest.raises(plugins.PluginError, match="dist-a.*dist-b"):
            plugins.register(p2, name="ops-b", distribution="dist-b")
    finally:
        plugins.unregister("ops-a")
    assert not hasattr(coretorch.ops, "my_square")


def test_function_name_clash_with_core_op_is_rejected():
    class Clash:
        @hookimpl
        def coretorch_register_functions(self, register):
            register("add", lambda a, b: a)
    with pytest.raises(plugins.PluginError, match="already defined by coretorch"):
        plugins.register(Clash(), name="clash")
    assert inspect.unwrap(coretorch.ops.add) is inspect.unwrap(coretorch.add)  # (public functions may be wrapped)


def test_plugin_api_version_is_checked():
    class Old:
        CORETORCH_PLUGIN_API = 999
    with pytest.raises(plugins.PluginError, match="plugin API 999"):
        plugins.register(Old(), name="old")


def test_ops_across_devices_raise_naming_both(fakedev):
    a = coretorch.ones(3, device="fakedev")
    b = coretorch.ones(3)
    assert a.device.type == "fakedev"
    with pytest.raises(RuntimeError, match="fakedev.*cpu|cpu.*fakedev"):
        a + b
    with pytest.raises(RuntimeError, match="same device"):
        coretorch.matmul(a, b)
    # a 0-d CPU tensor acts as a scalar, as in PyTorch
    np.testing.assert_allclose((a + coretorch.tensor(2.0)).cpu().numpy(), [3.0, 3.0, 3.0])
    np.testing.assert_allclose(a.to("cpu").numpy(), [1.0, 1.0, 1.0])


def test_missing_kernel_raises_and_fallback_runs_on_cpu(monkeypatch):
    p = BackendPlugin(type("Partial", (FakeDevBackend,), {"name": "partial"})(drop=("exp",)))
    plugins.register(p, name="partial-plugin")
    try:
        x = coretorch.tensor([0.0, 1.0], device="partial")
        monkeypatch.delenv("CORETORCH_FALLBACK", raising=False)
        with pytest.raises(NotImplementedError, match="'exp' on device 'partial:0'"):
            x.exp()
        monkeypatch.setenv("CORETORCH_FALLBACK", "cpu")
        coretorch._backend._warned_fallback.discard("exp")
        with pytest.warns(UserWarning, match="'exp' has no kernel on device 'partial:0'"):
            y = x.exp()
        assert y.device.type == "partial"
        np.testing.assert_allclose(y.cpu().numpy(), np.exp([0.0, 1.0]), rtol=1e-6)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # one warning per op, not per call
            x.exp()
    finally:
        plugins.unregister("partial-plugin")


# ---- entry points: run `import coretorch` in a fresh interpreter with fake installed distributions ----

def _fake_dist(root, dist: str, ep_name: str, module: str, source: str) -> None:
    info = root / f"{dist.replace('-', '_')}-0.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.3\n")
    (info / "entry_points.txt").write_text(f"[coretorch]\n{ep_name} = {module}\n")
    (root / f"{module}.py").write_text(textwrap.dedent(source))


def _run(code: str, root, **env) -> subprocess.CompletedProcess:
    e = dict(os.environ)
    for k in ("CORETORCH_STRICT_PLUGINS", "CORETORCH_DISABLE_PLUGIN_AUTOLOAD", "CORETORCH_PLUGINS"):
        e.pop(k, None)
    e["PYTHONPATH"] = os.pathsep.join([str(root)] + [p for p in sys.path if p])
    e.update(env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=e,
                          timeout=120)


REPORT = """
import warnings
warnings.simplefilter("always")
import coretorch
for r in coretorch.plugins.report():
    print("ROW", r["name"], r["distribution"], r["status"], r["error"])
print("SUM", coretorch.ones(2).sum().item())
"""


@pytest.fixture
def broken_env(tmp_path):
    _fake_dist(tmp_path, "broken-import", "brokenimp", "brokenimp_mod", "import no_such_module_xyz\n")
    _fake_dist(tmp_path, "broken-hook", "brokenhook", "brokenhook_mod", """
        from coretorch.plugins import hookimpl
        CORETORCH_PLUGIN_API = 1
        @hookimpl
        def coretorch_register_functions(register):
            raise ValueError("hook exploded")
    """)
    _fake_dist(tmp_path, "dup-cpu", "dupcpu", "dupcpu_mod", """
        from coretorch.plugins import hookimpl
        from coretorch_cpu import CPUBackend
        CORETORCH_PLUGIN_API = 1
        class B(CPUBackend):
            distribution = None
        @hookimpl
        def coretorch_register_backends(register):
            register(B())
    """)
    _fake_dist(tmp_path, "no-api", "noapi", "noapi_mod", "x = 1\n")
    return tmp_path


def test_broken_entry_points_are_reported_not_raised(broken_env):
    r = _run(REPORT, broken_env)
    assert r.returncode == 0, r.stderr
    rows = {line.split()[1]: line for line in r.stdout.splitlines() if line.startswith("ROW")}
    assert "failed" in rows["brokenimp"] and "no_such_module_xyz" in rows["brokenimp"]
    assert "failed" in rows["brokenhook"] and "hook exploded" in rows["brokenhook"]
    assert "failed" in rows["dupcpu"] and "coretorch-cpu" in rows["dupcpu"] and "dup-cpu" in rows["dupcpu"]
    assert "failed" in rows["noapi"] and "CORETORCH_PLUGIN_API" in rows["noapi"]
    assert "loaded" in rows["cpu"]
    assert "SUM 2.0" in r.stdout  # the healthy plugin still works
    assert "failed to load" in r.stderr  # reported as a warning


def test_strict_mode_raises(broken_env):
    r = _run(REPORT, broken_env, CORETORCH_STRICT_PLUGINS="1")
    assert r.returncode != 0
    assert "PluginError" in r.stderr and "failed to load" in r.stderr


def test_allow_list_loads_only_named_plugins(broken_env):
    r = _run(REPORT, broken_env, CORETORCH_PLUGINS="cpu")
    assert r.returncode == 0, r.stderr
    rows = {line.split()[1]: line for line in r.stdout.splitlines() if line.startswith("ROW")}
    assert "loaded" in rows["cpu"]
    assert all("skipped" in rows[n] for n in ("brokenimp", "brokenhook", "dupcpu", "noapi"))
    assert "failed to load" not in r.stderr


def test_autoload_disabled_then_in_process_registration(tmp_path):
    code = """
    import coretorch
    assert coretorch.plugins.report() == []
    try:
        coretorch.ones(2)
    except RuntimeError as e:
        print("ERR", e)
    import coretorch_cpu.plugin as p
    coretorch.plugins.register(p)
    print("SUM", coretorch.ones(3).sum().item())
    """
    r = _run(code, tmp_path, CORETORCH_DISABLE_PLUGIN_AUTOLOAD="1")
    assert r.returncode == 0, r.stderr
    assert "ERR no backend for device type 'cpu' is installed; install coretorch-cpu" in r.stdout
    assert "SUM 3.0" in r.stdout


def test_info_cli_lists_plugins_devices_and_ops(broken_env):
    r = subprocess.run([sys.executable, "-m", "coretorch", "info"], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join([str(broken_env)] + sys.path)}, timeout=120)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "coretorch-cpu" in out and "loaded" in out
    assert "brokenimp" in out and "failed" in out and "no_such_module_xyz" in out
    assert "Devices" in out and "numpy" in out
    assert "matmul" in out and "Kernels by backend" in out
