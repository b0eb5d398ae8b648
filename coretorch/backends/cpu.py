"""torch.backends.cpu: the cpu backend is numpy's (its SIMD level is numpy's own choice)."""
from __future__ import annotations


def get_cpu_capability() -> str:
    """The SIMD level the cpu backend's kernels use: ``"DEFAULT"`` (numpy picks its own at run
    time).
    """
    return "DEFAULT"
