"""torch.mps: Apple's Metal backend, which coretorch does not have."""
from __future__ import annotations


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def manual_seed(seed: int) -> None:
    int(seed)


def empty_cache() -> None:
    pass
