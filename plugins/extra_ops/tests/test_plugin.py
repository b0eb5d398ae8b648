"""coretorch-extra-ops as a plugin: found through its entry point, reported by `coretorch info`, removable with
the allow-list, clashes rejected with both distributions named; and the third-party template
(examples/third_party_optimizer) installed into a throw-away virtual environment."""
from __future__ import annotations

import os
import pathlib
import site
import subprocess
import sys
import sysconfig
import textwrap
import venv

import pytest

import coretorch
from coretorch import plugins
from coretorch.plugins import hookimpl

ROOT = pathlib.Path(__file__).resolve().parents[3]
FUNCTIONS = ["ext_erf", "ext_gelu", "ext_mish", "swiglu", "ext_rms_norm", "focal_loss",
             "fused_softmax_cross_entropy"]
OPTIMIZERS = ["Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "LBFGS", "Lion", "Rprop",
              "ASGD", "Adafactor", "SparseAdam"]


def _run(code: str, env=None, python=sys.executable, cwd=ROOT):
    r = subprocess.run([python, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=cwd,
                       env={**os.environ, **(env or {})}, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_loaded_from_its_entry_point():
    report = {p["name"]: p for p in plugins.report()}["extra_ops"]
    assert report["distribution"] == "coretorch-extra-ops" and report["status"] == "loaded"
    assert set(report["provides"]) >= {f"function:{n}" for n in FUNCTIONS} | {f"optimizer:{n}" for n in OPTIMIZERS}
    assert set(FUNCTIONS) <= set(coretorch.ops.registered()) and set(OPTIMIZERS) <= set(coretorch.optim.registered())
    from coretorch_extra_ops import optimizers
    assert coretorch.optim.Adam is optimizers.Adam and issubclass(coretorch.optim.Lion, coretorch.optim.Optimizer)
    assert hasattr(coretorch.ops, "swiglu") and not hasattr(coretorch.Tensor, "swiglu")
    assert "coretorch_extra_ops" not in open(coretorch.__file__).read()  # the core never imports it


def test_coretorch_info_lists_it():
    out = _run("import sys; from coretorch.cli import main; sys.exit(main(['info']))")
    line = next(ln for ln in out.splitlines() if ln.startswith("extra_ops"))
    assert "coretorch-extra-ops" in line and "loaded" in line
    assert f"{len(FUNCTIONS)} functions" in line and f"{len(OPTIMIZERS)} optimizers" in line
    ops_line = next(ln for ln in out.splitlines() if ln.startswith("Plugin ops:"))
    opt_line = next(ln for ln in out.splitlines() if ln.startswith("Plugin optimizers:"))
    assert all(n in ops_line for n in FUNCTIONS) and all(n in opt_line for n in OPTIMIZERS)


def test_disabled_by_the_allow_list_the_rest_keeps_working():
    _run("""
        import coretorch
        from coretorch.cli import info
        report = {p["name"]: p for p in coretorch.plugins.report()}
        assert report["extra_ops"]["status"] == "skipped", report
        assert not hasattr(coretorch.ops, "swiglu") and not hasattr(coretorch.ops, "ext_erf")
        assert not hasattr(coretorch.optim, "Adam") and coretorch.optim.registered() == []
        assert "RMSNorm" not in coretorch.nn._registered and "swiglu" not in info()
        w = coretorch.tensor([1.0, 2.0], requires_grad=True)          # the core and SGD still work
        opt = coretorch.optim.SGD([w], lr=0.25)
        (w * w).sum().backward()
        opt.step()
        assert w.tolist() == [0.5, 1.0]
    """, env={"CORETORCH_PLUGINS": "cpu"})


class _Clash:
    CORETORCH_PLUGIN_API = 1

    def __init__(self, kind, name, **options):
        self.kind, self.name, self.options = kind, name, options

    @hookimpl
    def coretorch_register_functions(self, register):
        if self.kind == "function":
            register(self.name, lambda x: x, **self.options)

    @hookimpl
    def coretorch_register_optimizers(self, register):
        if self.kind == "optimizer":
            register(self.name, type(self.name, (coretorch.optim.Optimizer,), {}))


@pytest.mark.parametrize("kind,name", [("function", "ext_erf"), ("function", "swiglu"), ("optimizer", "Adam"),
                                       ("optimizer", "Lion")])
def test_clash_with_this_plugin_names_both_distributions(kind, name):
    with pytest.raises(plugins.PluginError, match=f"{kind} '{name}'.*'coretorch-extra-ops'.*'other-dist'"):
        plugins.register(_Clash(kind, name), name="clash", distribution="other-dist")
    assert not plugins.manager.pm.has_plugin("clash") and coretorch.optim.registered().count(name) <= 1


@pytest.mark.parametrize("name,options,where", [("logsumexp", {}, "op 'logsumexp'"),
                                                 ("gelu", {"functional": True}, "nn.functional.gelu"),
                                                 ("numpy", {"tensor_method": True}, "Tensor.numpy")])
def test_clash_with_a_core_name_names_both_distributions(name, options, where):
    """This is why the plugin registers ext_gelu, ext_mish, ext_rms_norm and ext_erf: core has those names."""
    with pytest.raises(plugins.PluginError, match="already defined by coretorch") as e:
        plugins.register(_Clash("function", name, **options), name="clash", distribution="other-dist")
    assert where in str(e.value) and "'other-dist'" in str(e.value) and "distribution 'coretorch'" in str(e.value)
    assert not plugins.manager.pm.has_plugin("clash") and name not in coretorch.ops.registered()
    assert getattr(coretorch.nn.functional, "gelu").__module__.startswith("coretorch.")


def test_third_party_template_in_a_throwaway_venv(tmp_path):
    """examples/third_party_optimizer is installed (editable, no network, no build isolation) into a new virtual
    environment that sees this project's packages; there coretorch.optim.SignSGD exists and the template's own
    test passes.  Here, where it is not installed, coretorch knows nothing about it."""
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(env_dir)
    python = str(env_dir / "bin" / "python")
    purelib = sysconfig.get_paths(vars={"base": str(env_dir), "platbase": str(env_dir)})["purelib"]
    # the project venv's site-packages (coretorch, its plugins, numpy, pip, setuptools) become a site dir there too
    project_site = site.getsitepackages()[0]
    pathlib.Path(purelib, "project_venv.pth").write_text(f"import site; site.addsitedir({project_site!r})\n")
    example = ROOT / "examples" / "third_party_optimizer"
    r = subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                        "--disable-pip-version-check", "-e", str(example)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    # the template's own test (run as a script) uses coretorch.optim.SignSGD; also check both plugins load
    check = "import coretorch; assert coretorch.optim.Adam.__module__ == 'coretorch_extra_ops.optimizers'"
    test = example / "tests" / "test_signsgd.py"
    r = subprocess.run([python, "-c", f"{check}; import runpy; runpy.run_path({str(test)!r})"
                        "['test_signsgd_through_the_entry_point'](); print('template test passed')"],
                       capture_output=True, text=True, timeout=120, env={**os.environ, "CORETORCH_PLUGINS":
                                                                          "cpu,extra_ops,signsgd"})
    assert r.returncode == 0 and "template test passed" in r.stdout, r.stdout + r.stderr
    assert not hasattr(coretorch.optim, "SignSGD")
