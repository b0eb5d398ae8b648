"""A lean core (issue 16): ml_dtypes is a dependency of the device plugins that store bfloat16 arrays
(coretorch-cpu, coretorch-opencl), not of the core.  Without it, everything but bfloat16 arrays works, bfloat16's
limits are known, and the first bfloat16 array raises an error naming what to install."""
from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import pytest

from coretorch.testing import available_devices

try:
    import tomllib
except ImportError:  # Python 3.10: pip's vendored copy of the same parser
    from pip._vendor import tomli as tomllib

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _deps(folder: Path) -> set[str]:
    project = tomllib.loads((folder / "pyproject.toml").read_text())["project"]
    return {d.split(">")[0].split("=")[0].split("<")[0].strip().replace("-", "_") for d in project["dependencies"]}


def test_ml_dtypes_is_a_dependency_of_the_plugins_that_store_bfloat16_not_of_the_core():
    assert "ml_dtypes" not in _deps(ROOT)
    assert "ml_dtypes" in _deps(ROOT / "plugins" / "cpu_backend")
    assert "ml_dtypes" in _deps(ROOT / "plugins" / "opencl_backend")


@pytest.mark.parametrize("dt", ["bfloat16", "float16", "float32", "float64"])
def test_finfo_needs_no_ml_dtypes_and_agrees_with_it(dt):
    import numpy as np

    import coretorch as torch
    ref = ml_dtypes.finfo(ml_dtypes.bfloat16) if dt == "bfloat16" else np.finfo(dt)
    info = torch.finfo(getattr(torch, dt))
    assert (info.eps, info.max, info.min, info.smallest_normal, info.tiny, info.bits) == \
        (float(ref.eps), float(ref.max), float(ref.min), float(ref.smallest_normal), float(ref.smallest_normal),
         ref.bits)


def test_without_ml_dtypes_only_bfloat16_arrays_fail_and_say_what_to_install():
    # ml_dtypes made unimportable in a fresh process (sys.modules[name] = None makes `import name` raise)
    devices = available_devices()
    code = f"""
import sys
sys.modules["ml_dtypes"] = None
import coretorch as torch
assert str(torch.finfo(torch.bfloat16).eps) == "0.0078125"
assert torch.promote_types(torch.bfloat16, torch.float16) is torch.float32
for device in {devices!r}:
    x = torch.ones(3, device=device, requires_grad=True)
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0], device
    for make in (lambda: torch.ones(2, dtype=torch.bfloat16, device=device), lambda: x.detach().bfloat16()):
        try:
            make()
        except ModuleNotFoundError as e:
            assert e.name == "ml_dtypes" and "pip install ml_dtypes" in str(e) and "coretorch-cpu" in str(e), e
        else:
            raise AssertionError("a bfloat16 tensor without ml_dtypes")
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
