"""torch.version: coretorch's version; ``cuda`` and ``hip`` are None (no CUDA/ROCm build), as in a CPU PyTorch."""
from __future__ import annotations

from . import __version__

cuda = None
hip = None
git_version = "unknown"
debug = False

__all__ = ["__version__", "cuda", "hip", "git_version", "debug"]
