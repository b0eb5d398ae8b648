"""docs/plugins.md: its three worked examples (docs/examples/<kind>/) are shown verbatim in the page, install with
pip and pass their own tests (the backend's runs coretorch's conformance suite) with their entry points found."""
from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "plugins.md"
EXAMPLES = ROOT / "docs" / "examples"
KINDS = ("optimizer", "function", "backend")
_BUILD_LEFTOVERS = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "*.pyc")


def pip_install(sources: list[pathlib.Path], target: pathlib.Path) -> None:
    """Install the distributions at ``sources`` into folder ``target`` the fast way: no dependencies (coretorch
    and numpy are already here), no build isolation, no index; their entry points are found once ``target`` is on
    sys.path (pip writes each one's .dist-info there)."""
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                        "--disable-pip-version-check", "--target", str(target), *map(str, sources)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def run_tests(test_dirs: list[pathlib.Path], target: pathlib.Path, **env: str) -> str:
    """pytest on ``test_dirs`` in a subprocess that sees the packages installed into ``target``."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("CORETORCH_")}
    e["PYTHONPATH"] = os.pathsep.join([str(target)] + [p for p in sys.path if p])
    e.update(env)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                        *map(str, test_dirs)], capture_output=True, text=True, env=e, timeout=600,
                       cwd=test_dirs[0].parent.parent)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    return r.stdout


def _shown_files() -> dict[str, str]:
    """path -> text of each code block of docs/plugins.md captioned with a file path (`docs/examples/...`:)."""
    text = DOC.read_text()
    return {m.group(1): m.group(2) for m in
            re.finditer(r"^`(docs/examples/[^`]+)`:\n\n```[a-z]*\n(.*?)^```$", text, re.S | re.M)}


def _example_files() -> list[pathlib.Path]:
    """The files of the examples that the page shows (all but READMEs and empty markers such as py.typed)."""
    return sorted(p for kind in KINDS for p in (EXAMPLES / kind).rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and ".egg-info" not in str(p) and p.suffix != ".pyc"
                  and p.name != "README.md" and p.stat().st_size)


def test_every_example_file_is_shown_in_the_docs_verbatim():
    shown = _shown_files()
    files = {p.relative_to(ROOT).as_posix(): p.read_text() for p in _example_files()}
    assert {f.split("/")[2] for f in files} == set(KINDS)
    for path, text in files.items():
        assert path in shown, f"docs/plugins.md does not show {path}"
        assert shown[path] == text, f"docs/plugins.md shows an outdated {path}"
    assert set(shown) == set(files), f"docs/plugins.md shows files that do not exist: {set(shown) - set(files)}"


def test_each_example_declares_the_entry_point_and_the_core_versions_it_works_with():
    import coretorch
    major, minor = (int(x) for x in coretorch.__version__.split(".")[:2])
    for kind in KINDS:
        toml = (EXAMPLES / kind / "pyproject.toml").read_text()
        assert "[project.entry-points.coretorch]" in toml
        bounds = re.search(r'"coretorch>=(\d+)\.(\d+)\.\d+,<(\d+)\.(\d+)"', toml)
        assert bounds, f"{kind}: no coretorch>=X,<Y dependency"
        low, high = (int(bounds[1]), int(bounds[2])), (int(bounds[3]), int(bounds[4]))
        assert low <= (major, minor) < high, f"{kind}: coretorch {coretorch.__version__} is outside its bounds"


def test_the_examples_install_with_pip_and_pass_their_tests(tmp_path):
    srcs = []
    for kind in KINDS:  # a copy: building writes *.egg-info and build/ next to the sources
        srcs.append(tmp_path / kind)
        shutil.copytree(EXAMPLES / kind, srcs[-1], ignore=_BUILD_LEFTOVERS)
    pip_install(srcs, tmp_path / "site")
    assert {p.name for p in (tmp_path / "site").glob("*.dist-info")} == {
        "coretorch_adabelief-0.1.0.dist-info", "coretorch_squareplus-0.1.0.dist-info",
        "coretorch_numpydev-0.1.0.dist-info"}
    # the quick conformance run (one case per op) keeps this test short; the full run passes too (docs/plugins.md)
    out = run_tests([s / "tests" for s in srcs], tmp_path / "site", CORETORCH_CONFORMANCE_QUICK="1")
    assert re.search(r"\b\d+ passed\b", out) and "failed" not in out and "skipped" not in out, out
