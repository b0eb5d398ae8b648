"""torch.backends.cpu: the cpu backend is numpy's (its SIMD level is numpy's own choice)."""
from __future__ import annotations


def get_cpu_capability() -> str:
    return "DEFAULT"
