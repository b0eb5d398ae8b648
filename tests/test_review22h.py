"""Review 22h (compile): real training programs compiled end to end after session 22's merges (a GAN with an R1
penalty, a ViT with AdamW + warmup-cosine + clipping + label smoothing, mixup/cutmix, a seq2seq GRU with teacher
forcing, distillation with a temperature, gradient accumulation, an EMA teacher, AMP, a checkpoint resumed mid-run),
each run eagerly and compiled (``torch.compile(step)`` and ``torch.compile(model)``) on every device and compared step
by step with eager coretorch (bitwise on cpu, within float32 rounding where opencl fuses); and what those probes
found on the way."""
from __future__ import annotations

import math

import numpy as np
import pytest

import coretorch as torch


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_full_of_negative_zero_keeps_its_sign(device, dtype):
    """``torch.full(size, -0.0)`` (and ``new_full``/``full_like``) holds -0.0, as PyTorch's: its reciprocal is
    -inf.  Before, the cpu kernel took any fill value equal to 0 as ``np.zeros``, so the tensor held +0.0 and the
    reciprocal was +inf (opencl was right)."""
    dt = getattr(torch, dtype)
    for t in (torch.full((3,), -0.0, dtype=dt, device=device),
              torch.ones(2, dtype=dt, device=device).new_full((3,), -0.0),
              torch.full_like(torch.ones(3, dtype=dt, device=device), -0.0)):
        a = t.cpu().numpy()
        assert np.all(np.signbit(a)) and np.all(a == 0)
        assert t.reciprocal().cpu().numpy().tolist() == [-math.inf] * 3
    assert not np.any(np.signbit(torch.full((3,), 0.0, dtype=dt, device=device).cpu().numpy()))
