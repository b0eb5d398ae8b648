"""torch.backends.cudnn: settable flags (kept, with no effect: coretorch has no cuDNN) and is_available() False."""
from __future__ import annotations

import contextlib

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


class _Precision:
    def __init__(self) -> None:
        self.fp32_precision = "ieee"  # PyTorch 2.9: torch.backends.cudnn.conv.fp32_precision = "tf32"


conv = _Precision()
rnn = _Precision()
fp32_precision = "ieee"


def is_available() -> bool:
    """Whether cuDNN can be used: always False."""
    return False


def version() -> None:
    """The cuDNN version: None (no cuDNN)."""
    return None


def is_acceptable(tensor) -> bool:
    """Whether cuDNN could run on ``tensor``: always False."""
    return False


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    """Set the flags for a block and restore them after (as PyTorch's ``cudnn.flags``)."""
    g = globals()
    names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")
    old = {n: g[n] for n in names}
    g.update(enabled=enabled, benchmark=benchmark, benchmark_limit=benchmark_limit, deterministic=deterministic,
             allow_tf32=allow_tf32)
    try:
        yield
    finally:
        g.update(old)
