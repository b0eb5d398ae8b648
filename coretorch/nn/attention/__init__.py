"""coretorch.nn.attention: PyTorch's SDPA backend selection (``SDPBackend``, ``sdpa_kernel``).

coretorch has one ``scaled_dot_product_attention`` implementation on every device, so selecting backends changes
which ``torch.backends.cuda.*_sdp_enabled()`` switches read True (as in PyTorch) and nothing else: programs written
for PyTorch's fused kernels run unchanged.
"""
from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterator

from ...backends import cuda as _cuda

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

WARN_FOR_UNFUSED_KERNELS = False  # PyTorch warns when a fused kernel cannot run; here none is ever preferred


class SDPBackend(enum.IntEnum):
    """The scaled-dot-product-attention implementations PyTorch can pick from."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __str__(self) -> str:  # PyTorch's (pybind11) enum prints its qualified name, not its value
        return f"SDPBackend.{self.name}"


# backends.cuda's switch for each backend (OVERRIDEABLE and ERROR have none)
_SWITCHES = {SDPBackend.CUDNN_ATTENTION: "cudnn", SDPBackend.FLASH_ATTENTION: "flash",
             SDPBackend.EFFICIENT_ATTENTION: "mem_efficient", SDPBackend.MATH: "math"}


def _current() -> list:
    return [b for b, key in _SWITCHES.items() if _cuda._sdp[key]]


def _select(backends: list) -> None:
    for b, key in _SWITCHES.items():
        _cuda._sdp[key] = b in backends


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False) -> Iterator[dict]:
    """Within the block (or the decorated function) only ``backends`` (an ``SDPBackend`` or a list of them) read
    as enabled; the previous selection is restored on exit.  ``set_priority`` is accepted (one implementation)."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError(f"Backend must be an instance of SDPBackend or a list of SDPBackend instances, got "
                             f"{type(backends).__name__}")
    chosen = [backends] if isinstance(backends, SDPBackend) else list(dict.fromkeys(backends))
    previous = _current()
    try:
        _select(chosen)
        yield {}
    finally:
        _select(previous)
