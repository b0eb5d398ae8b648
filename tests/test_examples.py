"""The examples run as shipped."""
from __future__ import annotations

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_train_tiny_learns_the_spirals():
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "train_tiny.py")], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    acc = float(r.stdout.strip().splitlines()[-1].split("held-out accuracy ")[1].split(";")[0])
    assert acc >= 0.9
