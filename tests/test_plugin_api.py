"""The public plugin API (coretorch.plugins): the array bridge, get_kernel, and what registration refuses."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import coretorch
from coretorch import plugins
from coretorch.plugins import PluginError, hookimpl
from coretorch.testing import available_devices, cpu_kernels_as

DEVICES = available_devices()


def _plugin(**hooks):
    """A plugin object whose hooks are the given functions (each takes ``register``)."""
    ns = {"CORETORCH_PLUGIN_API": 1}
    for name, fn in hooks.items():
        ns[name] = staticmethod(hookimpl(fn))
    return type("P", (), ns)()


# ---- the contract as data ----------------------------------------------------------------------------
def test_the_kernel_lists_partition_the_contract():
    tiers = (plugins.REQUIRED_KERNELS, plugins.FAMILY_KERNELS, plugins.OPTIONAL_KERNELS)
    assert set().union(*tiers) == set(plugins.KERNELS) and sum(map(len, tiers)) == len(plugins.KERNELS)
    assert {"add", "from_numpy", "to_numpy", "matmul", "sum"} <= plugins.REQUIRED_KERNELS
    assert {"sort", "lgamma", "linalg_svd"} <= plugins.FAMILY_KERNELS
    assert {"linear", "softmax", "iadd"} <= plugins.OPTIONAL_KERNELS
    assert set(plugins.UNARY_KERNELS) | set(plugins.BINARY_KERNELS) <= set(plugins.KERNELS)
    assert set(plugins.HOST_LINALG_KERNELS) == {n for n in plugins.KERNELS if n.startswith("linalg_")}
    assert not [n for n in plugins.__all__ if n.startswith("_")]  # nothing private is exported
    for name in plugins.__all__:  # everything exported is documented
        obj = getattr(plugins, name)
        if name != "Kernel" and callable(obj):  # (Kernel is a typing alias)
            assert obj.__doc__, name


def test_registered_backends_satisfy_the_protocol():
    for dev in DEVICES:
        be = plugins.get_backend(dev)
        assert isinstance(be, plugins.Backend)
        plugins.validate_backend(be)
        kernels = be.kernels(0)
        assert set(kernels) <= set(plugins.KERNELS) | set(getattr(be, "extra_kernels", ()))
    assert plugins.get_backend("nosuchdev") is None


# ---- the array bridge ------------------------------------------------------------------------------------
def test_to_array_and_from_array_round_trip_without_copy(device):
    x = coretorch.arange(6.0, device=device).reshape(2, 3)
    a = plugins.to_array(x)
    assert tuple(a.shape) == (2, 3) and a.ndim == 2 and a.dtype == np.float32
    y = plugins.from_array(a, x)
    assert y.device == x.device and y.dtype is coretorch.float32 and y.shape == (2, 3)
    assert plugins.to_array(y) is a
    double = plugins.get_kernel("mul", x)(a, 2.0)  # a binary kernel with a Python scalar operand
    z = plugins.from_array(double, device, requires_grad=True)
    assert z.requires_grad and z.is_leaf
    np.testing.assert_array_equal(z.detach().cpu().numpy(), np.arange(6.0).reshape(2, 3) * 2)
    b = plugins.from_array(plugins.get_kernel("eq", x)(a, a), device)
    assert b.dtype is coretorch.bool and bool(b.all())


def test_the_array_bridge_rejects_what_is_not_an_array_or_tensor(device):
    with pytest.raises(TypeError, match="from_array"):
        plugins.from_array([1.0, 2.0], device)
    with pytest.raises(TypeError, match="to_array"):
        plugins.to_array(np.zeros(2))
    if device != "cpu":  # a numpy array is not a native array of another device
        with pytest.raises(TypeError, match="not a native array"):
            plugins.from_array(np.zeros(2, np.float32), device)


def test_increment_version_makes_autograd_see_an_outside_write(device):
    x = coretorch.ones(3, device=device, requires_grad=True)
    y = x * 1
    z = y * y  # saves y for backward
    v = y._version
    plugins.increment_version(y)
    assert y._version == v + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    plugins.increment_version([x, x])
    assert x._version == 2
    with pytest.raises(TypeError):
        plugins.increment_version([np.zeros(1)])


# ---- get_kernel ------------------------------------------------------------------------------------------
def _square_op():
    class Square(coretorch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            try:
                k = plugins.get_kernel("t_square", x)
            except NotImplementedError:  # no kernel on this device: tensor ops instead
                return x * x
            return plugins.from_array(k(plugins.to_array(x.contiguous())), x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    return Square.apply


def test_get_kernel_returns_the_kernel_or_raises_not_implemented(monkeypatch):
    calls = []

    def square_cpu(a):
        calls.append(a.shape)
        return a * a

    op = _square_op()
    plug = _plugin(coretorch_register_functions=lambda register: (
        register("t_square", op, kernels={"cpu": square_cpu}), register("t_nokernel", op)))
    plugins.register(plug, name="t-square")
    try:
        x = coretorch.tensor([1.0, -2.0, 3.0], requires_grad=True)
        assert plugins.get_kernel("t_square", x) is square_cpu
        assert coretorch.ops.get_kernel is plugins.get_kernel
        y = coretorch.ops.t_square(x)
        y.sum().backward()
        assert calls == [(3,)] and y.tolist() == [1.0, 4.0, 9.0] and x.grad.tolist() == [2.0, -4.0, 6.0]
        with pytest.raises(NotImplementedError, match="t_nokernel.*device 'cpu'"):
            plugins.get_kernel("t_nokernel", x)
        with pytest.raises(ValueError, match="did you mean 't_square'"):
            plugins.get_kernel("t_sqare", x)
        with cpu_kernels_as("t_otherdev") as dev:
            xo = x.detach().to(dev)
            with pytest.raises(NotImplementedError, match=r"Could not run 't_square' on device 't_otherdev.*cpu"):
                plugins.get_kernel("t_square", xo)
            assert coretorch.ops.t_square(xo).device.type == dev  # the op's own fallback: tensor ops
            assert len(calls) == 1
            monkeypatch.setenv("CORETORCH_FALLBACK", "cpu")
            with pytest.warns(UserWarning, match="CORETORCH_FALLBACK"):
                k = plugins.get_kernel("t_square", xo)
                r = plugins.from_array(k(plugins.to_array(xo)), xo)
            assert r.device.type == dev and r.tolist() == [1.0, 4.0, 9.0] and len(calls) == 2
    finally:
        plugins.unregister("t-square")
    with pytest.raises(ValueError, match="unknown kernel"):
        plugins.get_kernel("t_square", coretorch.ones(1))


# ---- registration validation -------------------------------------------------------------------------------
class _NotAnOptimizer:
    def __init__(self, params):
        self.params = params


@pytest.mark.parametrize("hooks, message", [
    (dict(coretorch_register_optimizers=lambda register: register("Bad", _NotAnOptimizer)),
     "subclass of coretorch.optim.Optimizer"),
    (dict(coretorch_register_optimizers=lambda register: register(
        "Bad", coretorch.optim.SGD([coretorch.ones(1)], lr=1))),
     "subclass of coretorch.optim.Optimizer, got a SGD object"),
    (dict(coretorch_register_modules=lambda register: register("Bad", lambda x: x)),
     "subclass of coretorch.nn.Module"),
    (dict(coretorch_register_functions=lambda register: register("bad_fn", 42)), "fn must be callable"),
    (dict(coretorch_register_functions=lambda register: register("bad_fn", abs, kernels={"cpu": 1})),
     "kernel for 'cpu' must be callable"),
    (dict(coretorch_register_backends=lambda register: register(type("B", (), {"name": "t_halfdev"})())),
     "lacks the method.*is_available.*kernels"),
    (dict(coretorch_register_backends=lambda register: register(type("B", (), {"name": "Bad Dev"})())),
     "lowercase identifier"),
])
def test_registration_refuses_what_is_not_a_plugin_thing(hooks, message):
    with pytest.raises(TypeError, match=message):
        plugins.register(_plugin(**hooks), name="t-bad")
    assert not hasattr(coretorch.optim, "Bad") and not hasattr(coretorch.nn, "Bad")
    assert not hasattr(coretorch.ops, "bad_fn") and plugins.get_backend("t_halfdev") is None
    assert "t-bad" not in [r["name"] for r in plugins.report()]
    plugins.register(_plugin(), name="t-bad")  # nothing of the refused plugin is left behind
    plugins.unregister("t-bad")


def test_a_misspelled_hook_name_is_an_error_that_names_the_right_one():
    class Typo:
        CORETORCH_PLUGIN_API = 1

        @hookimpl
        def coretorch_register_optimisers(self, register):
            raise AssertionError("never called")

    with pytest.raises(PluginError, match="unknown hook.*coretorch_register_optimisers.*did you mean "
                                          "'coretorch_register_optimizers'"):
        plugins.register(Typo(), name="t-typo")
    assert "t-typo" not in [r["name"] for r in plugins.report()]

    class Unmarked:
        CORETORCH_PLUGIN_API = 1

        def coretorch_register_functions(self, register):
            raise AssertionError("never called")

    with pytest.raises(PluginError, match="without marking it @coretorch.plugins.hookimpl"):
        plugins.register(Unmarked(), name="t-unmarked")


def _typo_dist(root):
    info = root / "typo_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: typo-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[coretorch]\ntypo = typo_mod\n")
    (root / "typo_mod.py").write_text(textwrap.dedent("""
        from coretorch.plugins import hookimpl
        CORETORCH_PLUGIN_API = 1
        @hookimpl
        def coretorch_register_modules(register):
            pass
        @hookimpl
        def coretorch_register_fucntions(register):
            pass
    """))


@pytest.mark.parametrize("strict", [False, True])
def test_an_installed_plugin_with_a_misspelled_hook_is_reported_or_raised_in_strict_mode(tmp_path, strict):
    _typo_dist(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORETORCH_")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path)] + [p for p in sys.path if p])
    if strict:
        env["CORETORCH_STRICT_PLUGINS"] = "1"
    code = ("import warnings; warnings.simplefilter('always')\nimport coretorch\n"
            "print([(r['status'], r['error']) for r in coretorch.plugins.report() if r['name'] == 'typo'])\n"
            "print(coretorch.ones(2).sum().item())")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    if strict:
        assert r.returncode != 0
        assert "PluginError" in r.stderr and "coretorch_register_fucntions" in r.stderr
        assert "did you mean 'coretorch_register_functions'" in r.stderr
    else:
        assert r.returncode == 0, r.stderr
        assert "('failed'" in r.stdout and "coretorch_register_fucntions" in r.stdout and "2.0" in r.stdout
        assert "typo-plugin" in r.stderr and "failed to load" in r.stderr


# ---- the conformance suite -----------------------------------------------------------------------------------
def test_the_conformance_suite_names_what_a_backend_gets_wrong():
    from coretorch_cpu import CPUBackend

    from coretorch.testing import run_conformance

    class Sloppy(CPUBackend):
        name, distribution = "t_sloppy", None

        def __init__(self):
            super().__init__()
            self._table = dict(self._table, expp=np.exp, neg=np.negative)  # a typo; a scalar for a 0-d input
            del self._table["add"]

    plugins.register(_plugin(coretorch_register_backends=lambda register: register(Sloppy())), name="t-sloppy")
    try:
        report = run_conformance("t_sloppy", ops=["__add__", "neg"], variants=False, raise_on_failure=False)
        text = "\n".join(report.failures)
        assert "missing required kernel(s): add" in text and "'expp' is not a kernel of the contract (did you mean " \
                                                              "'exp'?)" in text
        assert "neg(): returned a float32, not a ndarray" in text
        assert "__add__ [float32] forward: NotImplementedError: Could not run 'add' on device 't_sloppy:0'" in text
        assert report.cases == 2 and not report.ok
        with pytest.raises(AssertionError, match="device 't_sloppy' fails"):
            run_conformance("t_sloppy", ops=["neg"], variants=False)
    finally:
        plugins.unregister("t-sloppy")
    with pytest.raises(AssertionError, match="no backend for device type 't_sloppy' is registered"):
        run_conformance("t_sloppy")


def test_the_conformance_suite_runs_under_pytest_pyargs():
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORETORCH_")}
    env.update(CORETORCH_CONFORMANCE_DEVICE="cpu", CORETORCH_CONFORMANCE_QUICK="1")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                        "--pyargs", "coretorch.testing_conformance", "-k", "contract or kernel_results or matmul"],
                       capture_output=True, text=True, env=env, timeout=300, cwd=os.path.dirname(__file__))
    assert r.returncode == 0, r.stdout + r.stderr
    passed = re.search(r"(\d+) passed", r.stdout)  # contract, kernel results, matmul's forward and backward
    assert passed and int(passed[1]) >= 4 and "failed" not in r.stdout, r.stdout
