"""The realistic programs of examples/programs run unchanged on every available device (`import coretorch as
torch` is their only change from PyTorch); each asserts its own results (losses fall, values match numpy)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from coretorch.testing import available_devices

PROGRAMS = sorted((Path(__file__).resolve().parent.parent / "examples" / "programs").glob("*.py"))


@pytest.mark.parametrize("device", available_devices())
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_program_runs(program, device):
    r = subprocess.run([sys.executable, str(program), device], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert r.returncode == 0, f"{program.name} on {device} failed:\n{r.stdout}\n{r.stderr}"
    assert r.stdout.strip(), "each program prints what it checked"


def test_programs_are_there():
    assert {p.stem for p in PROGRAMS} >= {"char_gpt", "linalg_fit", "einsum_attention", "data_pipeline",
                                           "autocast_bf16", "transformer_classifier", "lstm_tagger", "super_resolution"}
