"""Packaging: one version for the core and its plugins, the metadata of every distribution, and the real thing:
every distribution builds an sdist and, from it, a wheel; the wheels install into fresh virtual environments with
nothing of this checkout on the path, and a smoke program runs per combination (core alone, core+cpu,
core+opencl with PoCL, everything).

The fresh environments get their third-party packages without the network: for each combination, the closure of
the declared requirements of our wheels (read from their METADATA, extras and markers evaluated) is linked from
this interpreter's site-packages into a folder that the environment's ``.pth`` adds; nothing else is there, so
an undeclared import fails, and ``pip check`` verifies that the declared requirements are all satisfied."""
from __future__ import annotations

import email
import os
import re
import shutil
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

try:
    import tomllib
except ImportError:  # Python 3.10: pip's vendored copy of the same parser
    from pip._vendor import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
# distribution name -> (source folder, its import package)
DISTS = {"coretorch": (ROOT, "coretorch"),
         "coretorch-cpu": (ROOT / "plugins" / "cpu_backend", "coretorch_cpu"),
         "coretorch-opencl": (ROOT / "plugins" / "opencl_backend", "coretorch_opencl"),
         "coretorch-extra-ops": (ROOT / "plugins" / "extra_ops", "coretorch_extra_ops"),
         "coretorch-distributed-mpi": (ROOT / "plugins" / "distributed_mpi", "coretorch_distributed_mpi")}
PLUGINS = [d for d in DISTS if d != "coretorch"]


def _pyproject(dist: str) -> dict:
    return tomllib.loads((DISTS[dist][0] / "pyproject.toml").read_text())


def _core_version() -> str:
    m = re.search(r'^__version__ = "([^"]+)"', (ROOT / "coretorch" / "__init__.py").read_text(), re.M)
    assert m, "coretorch/__init__.py must set __version__ to a literal (pyproject reads it)"
    return m.group(1)


def _next_minor(v: str) -> str:
    major, minor = (int(x) for x in v.split(".")[:2])
    return f"{major}.{minor + 1}"


# ---- static checks (no build) ----------------------------------------------------------------------------------
def test_every_distribution_has_the_core_version_and_plugins_bound_the_core():
    version = _core_version()
    core = _pyproject("coretorch")["project"]
    assert "version" in core["dynamic"]
    assert _pyproject("coretorch")["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "coretorch.__version__"}
    bound = f">={version},<{_next_minor(version)}"
    for dist in PLUGINS:
        project = _pyproject(dist)["project"]
        assert project["version"] == version, f"{dist} is {project['version']}, coretorch is {version}"
        reqs = {canonicalize_name(r.name): r for r in map(Requirement, project["dependencies"])}
        assert str(reqs["coretorch"].specifier) == str(Requirement("x" + bound).specifier), dist
        assert reqs["coretorch"].specifier.contains(version)
        init = (DISTS[dist][0] / DISTS[dist][1] / "__init__.py").read_text()
        m = re.search(r'^__version__ = "([^"]+)"', init, re.M)
        assert m is None or m.group(1) == version, f"{dist}'s __version__"
    # the core's extras pull the plugins of the same release
    for extra, reqs in core["optional-dependencies"].items():
        for r in map(Requirement, reqs):
            if r.name.startswith("coretorch-"):
                assert r.specifier.contains(version) and str(r.specifier) == str(Requirement("x" + bound).specifier)


@pytest.mark.parametrize("dist", list(DISTS))
def test_metadata_of_every_distribution(dist):
    folder, package = DISTS[dist]
    project = _pyproject(dist)["project"]
    assert project["license"] == "BSD-3-Clause" and project["license-files"] == ["LICENSE"]
    assert (folder / "LICENSE").read_text() == (ROOT / "LICENSE").read_text()
    assert "Copyright (c) 2026, the coretorch developers" in (ROOT / "LICENSE").read_text()
    assert (folder / project["readme"]).read_text().startswith("# ")
    assert len(project["keywords"]) >= 3 and "Typing :: Typed" in project["classifiers"]
    assert {"Homepage", "Source", "Issues", "Changelog"} <= set(project["urls"])
    assert project["urls"] == _pyproject("coretorch")["project"]["urls"]
    assert (folder / package / "py.typed").exists()
    assert "py.typed" in _pyproject(dist)["tool"]["setuptools"]["package-data"][package]
    assert "graft tests" in (folder / "MANIFEST.in").read_text()


def test_core_requires_only_what_the_core_imports():
    deps = {canonicalize_name(Requirement(r).name) for r in _pyproject("coretorch")["project"]["dependencies"]}
    assert deps == {"numpy", "pluggy", "safetensors"}  # ml_dtypes: coretorch-cpu's (bfloat16 arrays)
    extras = _pyproject("coretorch")["project"]["optional-dependencies"]
    demo = {canonicalize_name(Requirement(r).name) for r in extras["demo"]}
    assert {"tqdm", "matplotlib", "threadpoolctl"} <= demo
    ocl = {canonicalize_name(Requirement(r).name): Requirement(r)
           for r in _pyproject("coretorch-opencl")["project"]["dependencies"]}
    assert {"pyopencl", "coretorch-cpu"} <= set(ocl) and "pocl-binary-distribution" not in ocl
    assert [Requirement(r).name for r in
            _pyproject("coretorch-opencl")["project"]["optional-dependencies"]["pocl"]] == ["pocl-binary-distribution"]


# ---- build, install, run -----------------------------------------------------------------------------------------
def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "CORETORCH_", "PIP_"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _check(cmd, cwd, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=kw.pop("env", _env()), timeout=300, **kw)
    assert r.returncode == 0, f"{cmd} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


_HOOK = "import sys, setuptools.build_meta as b; print(getattr(b, sys.argv[1])(sys.argv[2]))"


def _ignore(folder: Path):
    """What a copy of a source folder leaves out: build output, caches, environments, and (for the core's folder)
    the plugins, which are distributions of their own."""
    def ignore(path: str, names: list[str]) -> set:
        skip = {n for n in names if n in {".venv", ".git", "build", "dist", "__pycache__", ".pytest_cache",
                                          ".ruff_cache", "demo_out"} or n.endswith(".egg-info")}
        return skip | ({"plugins"} if Path(path) == ROOT else set())
    return ignore


def _build_all(out: Path) -> dict:
    """sdist of every distribution (PEP 517 hooks of its own backend, run in its folder), then the wheel built from
    the unpacked sdist, as `python -m build` does; the builds run two at a time."""
    sdists, wheels = out / "sdist", out / "wheels"
    sdists.mkdir()
    wheels.mkdir()
    procs = []

    def wait(p):
        stdout, stderr = p.communicate(timeout=300)
        assert p.returncode == 0, f"{p.args} failed:\n{stdout[-3000:]}\n{stderr[-3000:]}"
        return stdout.strip().splitlines()[-1]

    names = {}
    for dist, (folder, _) in DISTS.items():
        if len(procs) == 2:
            d, p = procs.pop(0)
            names[d] = wait(p)
        copy = out / "src" / dist  # the build writes its egg-info next to the sources: not into this checkout
        shutil.copytree(folder, copy, ignore=_ignore(folder))
        procs.append((dist, subprocess.Popen([sys.executable, "-c", _HOOK, "build_sdist", str(sdists)], cwd=copy,
                                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())))
    for d, p in procs:
        names[d] = wait(p)
    unpacked, procs, built = out / "unpacked", [], {}
    for dist, name in names.items():
        with tarfile.open(sdists / name) as tar:
            tar.extractall(unpacked, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(unpacked)
        src = unpacked / name[:-len(".tar.gz")]
        if len(procs) == 2:
            d, p, s = procs.pop(0)
            built[d] = (sdists / names[d], wheels / wait(p), s)
        procs.append((dist, subprocess.Popen([sys.executable, "-c", _HOOK, "build_wheel", str(wheels)], cwd=src,
                                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env()),
                      src))
    for d, p, s in procs:
        built[d] = (sdists / names[d], wheels / wait(p), s)
    return built


def _requires(wheel: Path) -> tuple[str, list[Requirement]]:
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        msg = email.message_from_bytes(z.read(meta))
    return canonicalize_name(msg["Name"]), [Requirement(r) for r in msg.get_all("Requires-Dist") or []]


def _closure(wheels: dict, wanted: list[str]) -> tuple[set, set]:
    """(our distributions, third-party distributions) that installing ``wanted`` (names with [extras]) brings:
    our wheels' Requires-Dist and the installed third-party distributions' requirements, markers evaluated for
    the extras asked of each."""
    ours = dict(_requires(w) for w in wheels.values())
    todo = [Requirement(w) for w in wanted]
    seen_ours, third, done = set(), {}, set()
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if (name, frozenset(req.extras)) in done:
            continue
        done.add((name, frozenset(req.extras)))
        if name in ours:
            seen_ours.add(name)
            reqs = ours[name]
        else:
            dist = metadata.distribution(name)  # raises when this interpreter lacks a declared dependency
            assert req.specifier.contains(dist.version, prereleases=True), f"{req} but {dist.version} is installed"
            third[name] = dist
            reqs = [Requirement(r) for r in dist.requires or []]
        for r in reqs:
            if r.marker is None or any(r.marker.evaluate({"extra": e}) for e in ("", *req.extras)):
                todo.append(r)
    return seen_ours, set(third.values())


def _link_deps(dists: set, into: Path) -> None:
    """Link each distribution's top-level files (packages, modules, .libs, dist-info) into ``into``."""
    into.mkdir()
    for dist in dists:
        base = Path(dist.locate_file(""))
        for top in {Path(f).parts[0] for f in dist.files or [] if not str(f).startswith("..")}:
            target = into / top
            if (base / top).exists() and not target.exists():
                target.symlink_to(base / top)


def _site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages")) if os.name != "nt" else venv / "Lib" / "site-packages"


# the combinations: what is pip-installed into each fresh environment
COMBOS = {"core": ["coretorch"], "cpu": ["coretorch[cpu]"], "opencl": ["coretorch", "coretorch-opencl[pocl]"],
          "all": ["coretorch[all,test]", "coretorch-opencl[pocl]"]}


def _venv(tmp: Path, name: str, built: dict, wanted: list[str]) -> Path:
    """A fresh environment with the wheels of ours that ``wanted`` needs and its third-party closure; -> its
    python.  The closure is computed from the wheels' declared requirements (each checked against the installed
    version), so the environment has exactly what is declared."""
    wheels = {d: w for d, (_, w, _) in built.items()}
    ours, third = _closure(wheels, wanted)
    venv = tmp / name
    _check([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp)
    py = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    _link_deps(third, tmp / f"{name}-deps")
    (_site_packages(venv) / "_test_deps.pth").write_text(str(tmp / f"{name}-deps") + "\n")
    _check([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", "--no-index",
            "--no-compile", *(str(wheels[d]) for d in sorted(ours))], tmp)
    return py


# session scope: under xdist a module fixture is torn down whenever the worker runs another module's test between
# two of these, and the builds would be made again
@pytest.fixture(scope="session")
def built(tmp_path_factory):
    return _build_all(tmp_path_factory.mktemp("dists"))


@pytest.fixture(scope="session")
def envs(built, tmp_path_factory):
    """The four environments, made two at a time."""
    tmp = tmp_path_factory.mktemp("envs")
    with ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(_venv, tmp, name, built, wanted) for name, wanted in COMBOS.items()}
        return {name: f.result() for name, f in futures.items()}


def _smoke(py: Path, tmp: Path, code: str, **env) -> str:
    """Run ``code`` isolated (-I: no PYTHONPATH, no user site, not the script's folder) in an empty folder."""
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    return _check([str(py), "-I", "-c", textwrap.dedent(code)], work, env={**_env(), **env}).stdout


_COMMON = """
    import importlib.metadata as md, pathlib, sys
    import coretorch
    assert pathlib.Path(coretorch.__file__).is_relative_to(pathlib.Path(sys.prefix)), coretorch.__file__
    assert coretorch.__version__ == md.version("coretorch")
"""


@pytest.mark.xdist_group("packaging")
def test_wheels_and_sdists_contain_what_they_should(built):
    for dist, (sdist, wheel, src) in built.items():
        package = DISTS[dist][1]
        with zipfile.ZipFile(wheel) as z:
            names = z.namelist()
        tops = {n.split("/")[0] for n in names}
        # (the core also ships the console command's launcher, a top-level module: see coretorch_launcher.py)
        extra = {"coretorch_launcher.py"} if dist == "coretorch" else set()
        assert tops == {package, next(t for t in tops if t.endswith(".dist-info"))} | extra, (dist, tops)
        assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc") or "/tests/" in n], dist
        assert f"{package}/py.typed" in names and any(n.endswith("licenses/LICENSE") for n in names), dist
        with zipfile.ZipFile(wheel) as z:
            meta = email.message_from_bytes(z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))))
        assert meta["License-Expression"] == "BSD-3-Clause" and meta["Keywords"] and meta.get_all("Project-URL")
        assert meta.get_all("Classifier") and meta.get_payload().startswith("# " + dist), dist
        assert (src / "LICENSE").exists() and (src / "README.md").exists() and (src / "tests").is_dir(), dist
        assert list((src / "tests").glob("test_*.py")) or dist == "coretorch-distributed-mpi", dist
        if dist != "coretorch":
            assert sorted(p.name for p in (src / "tests").rglob("*.py")) == \
                sorted(p.name for p in (DISTS[dist][0] / "tests").rglob("*.py"))
    assert (built["coretorch"][2] / "conftest.py").exists()


@pytest.mark.xdist_group("packaging")
def test_core_alone_names_the_cpu_plugin_to_install(envs, tmp_path):
    py = envs["core"]
    out = _smoke(py, tmp_path, _COMMON + """
    for name in ("tqdm", "matplotlib", "scipy", "threadpoolctl", "pyopencl", "opt_einsum", "ml_dtypes"):  # none
        try:
            __import__(name)
        except ImportError:
            pass
        else:
            raise AssertionError(name + " is importable with the core alone")
    try:
        coretorch.ones(2)
    except RuntimeError as e:
        print(e)
    else:
        raise AssertionError("a tensor was created without a backend")
    """)
    assert "pip install coretorch-cpu" in out and 'pip install "coretorch[cpu]"' in out
    version = _check([str(py.parent / "coretorch"), "--version"], tmp_path).stdout
    assert version.startswith(f"coretorch {_core_version()} (plugin API ")
    info = _check([str(py.parent / "coretorch"), "info"], tmp_path).stdout
    assert 'pip install "coretorch[cpu]"' in info


@pytest.mark.xdist_group("packaging")
def test_core_and_cpu_and_the_demo_without_its_extra(envs, tmp_path):
    py = envs["cpu"]
    out = _smoke(py, tmp_path, _COMMON + """
    x = coretorch.arange(4.0, requires_grad=True)
    (x * x).sum().backward()
    print(x.grad.tolist(), [d["type"] for d in coretorch.devices()])
    # no opt_einsum (the opt-einsum extra): einsum contracts in the written order, as PyTorch does without it
    assert not coretorch.backends.opt_einsum.is_available() and not coretorch.backends.opt_einsum.enabled
    a, b, c = coretorch.ones(2, 3), coretorch.ones(3, 4), coretorch.ones(4, 5)
    assert coretorch.einsum("ij,jk,kl->il", a, b, c).tolist() == [[12.0] * 5] * 2
    assert (coretorch.ones(2, dtype=coretorch.bfloat16) * 3.3).tolist() == [3.296875] * 2  # ml_dtypes: cpu's dep
    """)
    assert "[0.0, 2.0, 4.0, 6.0] ['cpu']" in out
    r = _check([str(py.parent / "coretorch"), "demo", "--epochs", "1", "--train-subset", "64", "--out",
                str(tmp_path / "demo")], tmp_path)
    assert "tqdm is not installed" in r.stderr and 'pip install "coretorch[demo]"' in r.stderr
    assert "matplotlib is not installed, so the curves were not plotted" in r.stdout
    assert (tmp_path / "demo" / "model.pt").exists() and not (tmp_path / "demo" / "curves.png").exists()


@pytest.mark.xdist_group("packaging")
def test_core_and_opencl_with_pocl(envs, tmp_path):
    py = envs["opencl"]
    out = _smoke(py, tmp_path, _COMMON + """
    assert md.version("coretorch-cpu") == coretorch.__version__  # brought by coretorch-opencl, for .cpu()
    x = coretorch.arange(3.0, device="opencl")
    print((x * 2).cpu().tolist(), sorted(d["type"] for d in coretorch.devices() if d["available"]))
    """)
    assert "[0.0, 2.0, 4.0] ['cpu', 'opencl']" in out


@pytest.mark.xdist_group("packaging")
def test_everything_and_a_plugin_sdist_runs_its_own_tests(envs, built, tmp_path):
    py = envs["all"]
    _check([sys.executable, "-m", "pip", "--python", str(py), "check"], tmp_path)  # pip agrees: nothing missing
    out = _smoke(py, tmp_path, _COMMON + """
    report = {r["distribution"]: r["status"] for r in coretorch.plugins.report()}
    print(sorted(report.items()))
    w = coretorch.zeros(2, requires_grad=True)
    coretorch.optim.Adam([w], lr=0.1)  # from coretorch-extra-ops
    import tqdm, matplotlib  # the demo extra
    """)
    for dist in PLUGINS:
        assert f"('{dist}', 'loaded')" in out
    version = _check([str(py.parent / "coretorch"), "--version"], tmp_path).stdout
    for dist in PLUGINS:
        assert f"{dist} {_core_version()} (loaded)" in version
    # the cpu plugin's sdist runs its own tests against the installed wheels (not this checkout)
    src = built["coretorch-cpu"][2]
    shutil.rmtree(src / "coretorch_cpu")  # the tests must use the installed package
    r = _check([str(py), "-I", "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "tests"], src)
    assert " passed" in r.stdout and "failed" not in r.stdout
