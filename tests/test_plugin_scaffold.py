"""`coretorch new-plugin`: each kind of package installs with pip and passes its own tests (which run coretorch's
conformance checks); docs/examples/backend is exactly what it writes for a backend; names it must refuse."""
from __future__ import annotations

import pathlib

import pytest

from coretorch.cli import main
from coretorch.plugins import scaffold
from test_plugin_docs import EXAMPLES, pip_install, run_tests


def test_the_docs_backend_example_is_what_new_plugin_writes():
    want = scaffold.files("backend", "numpydev")
    have = {p.relative_to(EXAMPLES / "backend").as_posix(): p.read_text()
            for p in (EXAMPLES / "backend").rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert have == want, "regenerate: rm -r docs/examples/backend && coretorch new-plugin --kind backend numpydev " \
                         "docs/examples/backend"


def test_each_kind_installs_and_passes_its_tests(tmp_path, capsys):
    roots = []
    for kind, name in (("optimizer", "HeavyBall"), ("function", "scaled_softsign"), ("backend", "scaffolddev")):
        assert main(["new-plugin", "--kind", kind, name, str(tmp_path / kind)]) == 0
        roots.append(tmp_path / kind)
    out = capsys.readouterr().out
    assert "coretorch_heavyball/optimizer.py" in out and "next: pip install -e" in out
    opt, fn, be = roots
    toml = (opt / "pyproject.toml").read_text()
    assert 'name = "coretorch-heavyball"' in toml and f'"{scaffold.requirement()}"' in toml
    assert '[project.entry-points.coretorch]\nheavyball = "coretorch_heavyball.plugin"' in toml
    assert (opt / "README.md").read_text().startswith("# coretorch-heavyball")
    assert (opt / "coretorch_heavyball" / "py.typed").exists()
    assert "class HeavyBall(Optimizer)" in (opt / "coretorch_heavyball" / "optimizer.py").read_text()
    plugin = (fn / "coretorch_scaled_softsign" / "plugin.py").read_text()
    assert 'kernels={"cpu": kernels.scaled_softsign_cpu}' in plugin
    assert "class ScaffolddevBackend:" in (be / "coretorch_scaffolddev" / "backend.py").read_text()
    pip_install(roots, tmp_path / "site")
    # (the backend's conformance run is the quick one here; docs/examples/backend, the same template, runs it too)
    out = run_tests([r / "tests" for r in roots], tmp_path / "site", CORETORCH_STRICT_PLUGINS="1",
                    CORETORCH_CONFORMANCE_QUICK="1")
    assert "10 passed" in out and "failed" not in out, out


def test_version_bounds_and_names():
    assert scaffold.requirement("0.1.0") == "coretorch>=0.1.0,<0.2"
    assert scaffold.requirement("1.4.2") == "coretorch>=1.4.2,<1.5"
    n = scaffold.names("backend", "myDev")
    assert (n["name"], n["Class"], n["package"]) == ("my_dev", "MyDev", "coretorch_my_dev")
    assert n["dist"] == "coretorch-my-dev"
    n = scaffold.names("optimizer", "lookahead-sgd")
    assert (n["name"], n["Class"], n["dist"]) == ("lookahead_sgd", "LookaheadSgd", "coretorch-lookahead-sgd")


@pytest.mark.parametrize("argv, message", [
    (["--kind", "optimizer", "SGD"], "coretorch.optim.SGD already exists"),
    (["--kind", "function", "logsumexp"], "coretorch.ops.logsumexp already exists"),
    (["--kind", "function", "numpy"], "Tensor.numpy already exists"),
    (["--kind", "backend", "cpu"], "device type 'cpu' is already provided"),
    (["--kind", "backend", "9lives"], "NAME must start with a letter"),
])
def test_refused_names(argv, message, tmp_path, capsys):
    assert main(["new-plugin", *argv, str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_refuses_a_non_empty_directory_and_an_unknown_kind(tmp_path, capsys):
    (tmp_path / "keep.txt").write_text("mine")
    assert main(["new-plugin", "--kind", "optimizer", "Fresh", str(tmp_path)]) == 2
    assert "is not an empty directory" in capsys.readouterr().err
    assert sorted(p.name for p in pathlib.Path(tmp_path).iterdir()) == ["keep.txt"]
    with pytest.raises(SystemExit) as e:
        main(["new-plugin", "--kind", "module", "Fresh"])
    assert e.value.code == 2 and "invalid choice: 'module'" in capsys.readouterr().err
