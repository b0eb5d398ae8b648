"""Plugins that misbehave (issue 15): taking over a device type, BaseException at import, raising observation
hooks, a malformed CORETORCH_PLUGIN_API, slow imports named by `coretorch info`."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import coretorch
from coretorch import plugins
from coretorch.plugins import hookimpl
from coretorch.testing import available_devices
from coretorch_cpu import CPUBackend
from test_plugins import _fake_dist  # (a sibling test module: pytest puts tests/ on the path)


# ---- fake installed distributions, loaded by `import coretorch` in a fresh interpreter ---------------------
def _run(code: str, root, *args: str, **env) -> subprocess.CompletedProcess:
    e = dict(os.environ)
    for k in list(e):
        if k.startswith("CORETORCH_"):
            del e[k]
    e["PYTHONPATH"] = os.pathsep.join([str(root)] + [p for p in sys.path if p])
    e.update(env)
    cmd = [sys.executable, "-c", textwrap.dedent(code)] if code else [sys.executable, *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=180)


REPORT = """
import warnings
warnings.simplefilter("always")
import coretorch
for r in coretorch.plugins.report():
    print("ROW", r["name"], "|", r["distribution"], "|", r["status"], "|", r["error"])
for d in coretorch.devices():
    print("DEV", d["type"], d["distribution"])
print("SUM", coretorch.ones(2).sum().item())
"""


def _rows(stdout: str) -> dict:
    return {line.split()[1]: line for line in stdout.splitlines() if line.startswith("ROW")}


EVIL_CPU = """
    from coretorch.plugins import hookimpl
    from coretorch_cpu import CPUBackend
    CORETORCH_PLUGIN_API = 1
    class Evil(CPUBackend):
        distribution = None
        def kernels(self, index=0):
            k = dict(super().kernels(index))
            k["sum"] = lambda *a, **kw: (_ for _ in ()).throw(RuntimeError("evil kernel ran"))
            return k
    @hookimpl
    def coretorch_register_backends(register):
        register(Evil())
"""


@pytest.fixture
def takeover_env(tmp_path):
    # entry point "aaa" sorts before "cpu": loading by name alone would let it take the device type
    _fake_dist(tmp_path, "aaa-evil", "aaa", "aaa_evil_mod", EVIL_CPU)
    return tmp_path


def test_a_plugin_sorting_first_cannot_take_over_cpu(takeover_env):
    r = _run(REPORT, takeover_env, CORETORCH_PLUGINS="aaa,cpu")
    assert r.returncode == 0, r.stderr
    rows = _rows(r.stdout)
    assert "| loaded |" in rows["cpu"]
    # the newcomer is blamed, and told how to choose it
    assert "| failed |" in rows["aaa"]
    assert re.search(r"device type 'cpu' belongs to distribution 'coretorch-cpu' \(its name declares it\); "
                     r"distribution 'aaa-evil' \(plugin 'aaa'\) registers it too and was refused", rows["aaa"])
    assert "CORETORCH_BACKEND_CPU=aaa-evil" in rows["aaa"]
    assert "DEV cpu coretorch-cpu" in r.stdout and "SUM 2.0" in r.stdout


def test_the_env_var_chooses_the_provider_of_a_device_type(takeover_env):
    r = _run(REPORT, takeover_env, CORETORCH_PLUGINS="aaa,cpu", CORETORCH_BACKEND_CPU="aaa-evil")
    rows = _rows(r.stdout)
    assert "| loaded |" in rows["aaa"] and "| failed |" in rows["cpu"]
    assert "CORETORCH_BACKEND_CPU=aaa-evil chooses distribution 'aaa-evil'" in rows["cpu"]
    assert "DEV cpu aaa-evil" in r.stdout
    assert "evil kernel ran" in r.stderr  # the chosen backend is the one that runs


def test_the_owner_wins_whichever_loads_first(tmp_path):
    """The same plugin under an entry-point name that sorts after 'cpu': the same outcome, the same blame."""
    _fake_dist(tmp_path, "zzz-evil", "zzz", "zzz_evil_mod", EVIL_CPU)
    r = _run(REPORT, tmp_path, CORETORCH_PLUGINS="zzz,cpu")
    rows = _rows(r.stdout)
    assert "| loaded |" in rows["cpu"] and "| failed |" in rows["zzz"]
    assert "distribution 'zzz-evil' (plugin 'zzz')" in rows["zzz"] and "was refused" in rows["zzz"]
    assert "DEV cpu coretorch-cpu" in r.stdout and "SUM 2.0" in r.stdout


def test_strict_mode_raises_on_a_device_type_clash(takeover_env):
    r = _run(REPORT, takeover_env, CORETORCH_PLUGINS="aaa,cpu", CORETORCH_STRICT_PLUGINS="1")
    assert r.returncode != 0 and "PluginError" in r.stderr and "aaa-evil" in r.stderr


class _Backend:
    CORETORCH_PLUGIN_API = 1

    def __init__(self, backend):
        self.backend = backend

    @hookimpl
    def coretorch_register_backends(self, register):
        register(self.backend)


def _fake_backend():
    return type("Clash", (CPUBackend,), {"name": "clashdev", "distribution": None})()


def test_without_an_owner_the_first_keeps_the_device_type_and_the_newcomer_is_blamed():
    plugins.register(_Backend(_fake_backend()), name="first-clash", distribution="dist-first")
    try:
        for _ in range(2):  # refused every time, nothing half-registered
            with pytest.raises(plugins.PluginError, match=r"already provided by distribution 'dist-first'; "
                                                          r"distribution 'dist-second' .* was refused"):
                plugins.register(_Backend(_fake_backend()), name="second-clash", distribution="dist-second")
        assert coretorch._backend.backends()["clashdev"].distribution == "dist-first"
        assert [r["name"] for r in plugins.report() if r["name"].endswith("-clash")] == ["first-clash"]
    finally:
        plugins.unregister("first-clash")


# ---- BaseException while importing or registering -----------------------------------------------------------
@pytest.fixture
def base_exc_env(tmp_path):
    _fake_dist(tmp_path, "exits-at-import", "exitimp", "exitimp_mod", "import sys\nsys.exit(3)\n")
    _fake_dist(tmp_path, "exits-in-hook", "exithook", "exithook_mod", """
        from coretorch.plugins import hookimpl
        CORETORCH_PLUGIN_API = 1
        @hookimpl
        def coretorch_register_functions(register):
            raise SystemExit("bye from the hook")
    """)
    _fake_dist(tmp_path, "raises-base", "rbase", "rbase_mod", """
        class Weird(BaseException):
            pass
        raise Weird("not an Exception")
    """)
    return tmp_path


def test_system_exit_and_base_exceptions_do_not_escape_import(base_exc_env):
    r = _run(REPORT + "print('ALIVE')\n", base_exc_env, CORETORCH_PLUGINS="cpu,exitimp,exithook,rbase")
    assert r.returncode == 0, r.stderr
    rows = _rows(r.stdout)
    assert "| failed | SystemExit: 3" in rows["exitimp"]
    assert "| failed | SystemExit: bye from the hook" in rows["exithook"]
    assert "| failed | Weird: not an Exception" in rows["rbase"]
    assert "| loaded |" in rows["cpu"] and "SUM 2.0" in r.stdout and "ALIVE" in r.stdout
    assert "'exitimp' (distribution exits-at-import) failed to load" in r.stderr


def test_strict_mode_raises_plugin_error_for_system_exit(base_exc_env):
    r = _run(REPORT, base_exc_env, CORETORCH_PLUGINS="cpu,exitimp", CORETORCH_STRICT_PLUGINS="1")
    assert r.returncode == 1 and "PluginError" in r.stderr and "SystemExit: 3" in r.stderr


def test_keyboard_interrupt_is_reported_then_re_raised(tmp_path):
    _fake_dist(tmp_path, "ctrl-c", "ctrlc", "ctrlc_mod", "raise KeyboardInterrupt\n")
    code = """
    import warnings
    warnings.simplefilter("always")
    try:
        import coretorch
    except KeyboardInterrupt:
        print("INTERRUPTED")
    """
    r = _run(code, tmp_path, CORETORCH_PLUGINS="cpu,ctrlc")
    assert r.returncode == 0 and "INTERRUPTED" in r.stdout
    assert "coretorch plugin 'ctrlc' (distribution ctrl-c) was interrupted while loading" in r.stderr


# ---- observation hooks that raise ------------------------------------------------------------------------------
class _Observer:
    CORETORCH_PLUGIN_API = 1

    def __init__(self, fail: bool):
        self.fail = fail
        self.forwards = self.steps = 0

    @hookimpl
    def coretorch_module_forward(self, module, inputs, output):
        self.forwards += 1
        if self.fail:
            raise ValueError("observer exploded")

    @hookimpl
    def coretorch_optimizer_step(self, optimizer):
        self.steps += 1
        if self.fail:
            raise KeyError("step observer exploded")


@pytest.fixture
def observers(monkeypatch):
    monkeypatch.delenv("CORETORCH_STRICT_PLUGINS", raising=False)
    bad, good = _Observer(fail=True), _Observer(fail=False)
    plugins.register(bad, name="bad-observer", distribution="dist-bad-observer")
    plugins.register(good, name="good-observer")
    yield bad, good
    plugins.unregister("bad-observer")
    plugins.unregister("good-observer")
    assert not plugins.manager.observing["module_forward"]


def _train_step(device, n: int = 1):
    model = coretorch.nn.Linear(3, 2).to(device)
    opt = coretorch.optim.SGD(model.parameters(), lr=0.1)
    x = coretorch.ones(4, 3, device=device)
    for _ in range(n):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
    return model


@pytest.mark.parametrize("device", available_devices())
def test_a_raising_observation_hook_is_reported_once_and_disabled(observers, device):
    bad, good = observers
    with pytest.warns(plugins.PluginWarning) as rec:
        _train_step(device)
    msgs = [str(w.message) for w in rec]
    assert any("'bad-observer' (distribution dist-bad-observer) raised in its coretorch_module_forward hook: "
               "ValueError: observer exploded" in m and "disabled" in m for m in msgs)
    assert any("coretorch_optimizer_step hook: KeyError" in m for m in msgs)
    assert (bad.forwards, bad.steps) == (1, 1) and (good.forwards, good.steps) == (1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # reported once: later forwards and steps are silent
        model = _train_step(device, n=3)
    assert (bad.forwards, bad.steps) == (1, 1) and (good.forwards, good.steps) == (4, 4)
    assert np.isfinite(model.weight.detach().cpu().numpy()).all()
    row = next(r for r in plugins.report() if r["name"] == "bad-observer")
    assert "coretorch_module_forward disabled after ValueError" in row["error"]
    assert plugins.manager.observing["module_forward"]  # the good observer still listens


def test_only_bad_observer_disabled_turns_observation_off(monkeypatch):
    monkeypatch.delenv("CORETORCH_STRICT_PLUGINS", raising=False)
    bad = _Observer(fail=True)
    plugins.register(bad, name="lonely-bad")
    try:
        with pytest.warns(plugins.PluginWarning):
            coretorch.nn.Linear(2, 2)(coretorch.ones(1, 2))
        assert not plugins.manager.observing["module_forward"]  # free again: nobody listens
    finally:
        plugins.unregister("lonely-bad")


def test_strict_mode_raises_from_an_observation_hook(monkeypatch):
    monkeypatch.setenv("CORETORCH_STRICT_PLUGINS", "1")
    bad = _Observer(fail=True)
    plugins.register(bad, name="strict-bad")
    try:
        for _ in range(2):  # not disabled in strict mode: raises every time
            with pytest.raises(plugins.PluginError, match="'strict-bad'.*coretorch_module_forward.*observer exploded"):
                coretorch.nn.Linear(2, 2)(coretorch.ones(1, 2))
    finally:
        plugins.unregister("strict-bad")


# ---- CORETORCH_PLUGIN_API ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("api", [True, "1", 1.0, [1]])
def test_plugin_api_must_be_the_int_1(api):
    plugin = type("P", (), {"CORETORCH_PLUGIN_API": api})()
    with pytest.raises(plugins.PluginError, match=re.escape(f"declares CORETORCH_PLUGIN_API = {api!r} (a "
                                                            f"{type(api).__name__}); it must be the int") +
                       ".*CORETORCH_PLUGIN_API = 1 for this coretorch"):
        plugins.register(plugin, name="bad-api")
    assert all(r["name"] != "bad-api" for r in plugins.report())


def test_plugin_api_int_1_is_accepted():
    plugin = type("P", (), {"CORETORCH_PLUGIN_API": 1})()
    plugins.register(plugin, name="good-api")
    try:
        assert any(r["name"] == "good-api" and r["status"] == "loaded" for r in plugins.report())
    finally:
        plugins.unregister("good-api")


def test_entry_point_with_api_true_is_reported(tmp_path):
    _fake_dist(tmp_path, "api-true", "apitrue", "apitrue_mod", "CORETORCH_PLUGIN_API = True\n")
    r = _run(REPORT, tmp_path, CORETORCH_PLUGINS="cpu,apitrue")
    assert r.returncode == 0, r.stderr
    assert "CORETORCH_PLUGIN_API = True (a bool); it must be the int" in _rows(r.stdout)["apitrue"]


# ---- load times ----------------------------------------------------------------------------------------------
def test_info_names_a_slow_plugin_with_its_import_time(tmp_path):
    _fake_dist(tmp_path, "slow-plugin", "slowp", "slowp_mod", """
        import time
        time.sleep(1.5)
        CORETORCH_PLUGIN_API = 1
    """)
    r = _run("", tmp_path, "-m", "coretorch", "info", CORETORCH_PLUGINS="cpu,slowp")
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("slow to import"))
    m = re.search(r"slowp \(slow-plugin\) (\d+\.\d\d) s", line)
    assert m and 1.5 <= float(m.group(1)) < 60
    row = next(x for x in r.stdout.splitlines() if x.startswith("slowp "))
    assert re.search(r"loaded\s+\d+\.\d\d s", row)


def test_report_records_load_times():
    rows = plugins.report()
    assert rows and all(isinstance(r["load_s"], float) and r["load_s"] >= 0 for r in rows)
