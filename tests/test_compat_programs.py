"""examples/pytorch2_script.py (a PyTorch 2.x script's preamble, DataLoader, compile, inference_mode, weights-only
checkpoint) runs unchanged on every available device and learns the digits."""
from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from coretorch.testing import available_devices

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("device", available_devices())
def test_pytorch2_script_runs_unchanged(device):
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "pytorch2_script.py"), "--device", device],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout.splitlines()
    assert out[0].startswith(f"device {device}, amp False, cudnn False")
    assert "loss.grad_fn NllLossBackward0" in out
    assert "checkpoint round trip True" in out
    assert float(out[-1].split("held-out accuracy ")[1]) >= 0.85
    assert "not implemented" not in r.stderr  # torch.compile(model) compiles now (tests/test_compile.py)
