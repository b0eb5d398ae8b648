"""Workers for tests/test_compat_namespaces.py's torch.multiprocessing checks (importable by spawned processes)."""
from __future__ import annotations

import numpy as np


def write_square(i, out_dir):
    import coretorch as torch
    t = torch.arange(3.0) * i
    np.save(f"{out_dir}/{i}.npy", (t * t).numpy())


def fail_on_one(i):
    if i == 1:
        raise ValueError("worker one failed")
