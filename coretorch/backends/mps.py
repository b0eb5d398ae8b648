"""torch.backends.mps: Apple's Metal backend, which coretorch does not have."""
from __future__ import annotations


def is_available() -> bool:
    """Whether Apple's MPS device can be used: always False."""
    return False


def is_built() -> bool:
    """Whether coretorch was built with MPS: always False."""
    return False


def is_macos13_or_newer(minor: int = 0) -> bool:
    """Whether the MPS backend runs on macOS 13 or newer: always False (no MPS backend)."""
    return False
