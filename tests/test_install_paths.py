"""What a pip user meets: `coretorch --version`, `coretorch demo --help` in plain text, the demo without its
extra (text progress, no plot, a note), what the core says when no backend is installed, the plugin-API mismatch
message, and torch.set_num_threads without threadpoolctl (the core alone)."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import coretorch
from coretorch import _backend, _compat, cli, demo
from coretorch.plugins import PLUGIN_API_VERSION, PluginError
from coretorch.plugins.manager import Manager
from coretorch.testing import available_devices


def test_version_lists_the_core_and_each_plugin(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"coretorch {coretorch.__version__} (plugin API {PLUGIN_API_VERSION})"
    dists = {r["distribution"]: r["version"] for r in coretorch.plugins.report() if not
             r["distribution"].startswith("<")}
    assert f"  coretorch-cpu {dists['coretorch-cpu']} (loaded)" in out


def test_demo_help_is_plain_text(capsys):
    with pytest.raises(SystemExit):
        cli.main(["demo", "--help"])
    out = capsys.readouterr().out
    assert "`" not in out and "coretorch demo: train a small CNN" in out
    assert 'pip install "coretorch[demo]"' in out and "coretorch demo --resume" in out and "--train-subset" in out


def test_plain_strips_rst_and_markdown_literals():
    assert cli.plain("``a`` and `b` stay, c `d e`") == "a and b stay, c d e"


def test_demo_without_its_extra_prints_text_progress_and_skips_the_plot(tmp_path, monkeypatch, capsys):
    real = demo._optional
    monkeypatch.setattr(demo, "_optional", lambda m: None if m in ("tqdm", "matplotlib", "threadpoolctl")
                        else real(m))
    monkeypatch.setattr(demo._TextProgress, "INTERVAL", 0.0)  # a line per batch, so that the test sees one
    parser = cli.argparse.ArgumentParser()
    demo.add_arguments(parser)
    args = parser.parse_args(["--epochs", "1", "--train-subset", "64", "--batch-size", "32", "--out",
                              str(tmp_path)])
    assert demo.main(args) == 0
    out, err = capsys.readouterr()
    assert "tqdm is not installed" in err and 'pip install "coretorch[demo]"' in err
    assert "epoch 1/1: 32/64 loss" in err and "epoch 1/1: 64/64 loss" in err
    assert "matplotlib is not installed, so the curves were not plotted" in out
    assert (tmp_path / "model.pt").exists() and not (tmp_path / "curves.png").exists()


def test_no_backend_names_the_pip_commands(monkeypatch):
    monkeypatch.delitem(_backend._backends, "cpu")
    monkeypatch.setattr(_backend, "_tables", {})
    with pytest.raises(RuntimeError) as e:
        _backend.get_table(coretorch.device("cpu"))
    msg = str(e.value)
    assert "no backend for device type 'cpu' is installed; install coretorch-cpu" in msg
    assert "`pip install coretorch-cpu`" in msg and '`pip install "coretorch[cpu]"`' in msg
    assert "pip install -e" not in msg


@pytest.mark.parametrize("api", [PLUGIN_API_VERSION - 1, PLUGIN_API_VERSION + 1])
def test_plugin_api_mismatch_names_both_versions_and_the_fix(api):
    class Old:
        CORETORCH_PLUGIN_API = api

    with pytest.raises(PluginError) as e:
        Manager._check_api(Old, "old", required=True, dist="coretorch-old", version="0.0.7")
    msg = str(e.value)
    assert f"plugin 'old' (distribution coretorch-old 0.0.7) was written for coretorch plugin API {api}" in msg
    assert f"coretorch {coretorch.__version__} speaks plugin API {PLUGIN_API_VERSION}" in msg
    fix = "`pip install -U coretorch-old`" if api < PLUGIN_API_VERSION else "`pip install -U coretorch`"
    assert fix in msg


def test_set_num_threads_without_threadpoolctl(monkeypatch):
    monkeypatch.setitem(sys.modules, "threadpoolctl", None)  # import fails, as with the core alone
    monkeypatch.setitem(_compat._threads, "intra", None)
    monkeypatch.setitem(_compat._threads, "limiter", None)
    assert coretorch.get_num_threads() >= 1
    coretorch.set_num_threads(3)
    assert coretorch.get_num_threads() == 3 and _compat._threads["limiter"] is None


@pytest.mark.parametrize("device", available_devices())
def test_einsum_without_opt_einsum_contracts_in_the_written_order(monkeypatch, device):
    """The core without its opt-einsum extra: 3+ operands contract left to right (PyTorch without opt_einsum),
    with the same values."""
    from coretorch.ops import _einsum
    monkeypatch.setattr(_einsum, "opt_einsum", None)
    monkeypatch.setattr(_einsum, "_plan_cache", {})
    monkeypatch.setattr(_einsum, "_path_cache", {})
    rng = np.random.default_rng(0)
    a, b, c = rng.standard_normal((2, 3)), rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    got = coretorch.einsum("ij,jk,kl->il", *(coretorch.tensor(t, device=device) for t in (a, b, c)))
    np.testing.assert_allclose(got.cpu().numpy(), a @ b @ c, rtol=1e-12)
    assert _einsum._path_cache == {}  # no contraction path was asked of opt_einsum
