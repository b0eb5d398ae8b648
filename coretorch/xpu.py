"""torch.xpu: Intel's GPU backend, which coretorch does not have (Intel GPUs run through 'opencl')."""
from __future__ import annotations


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def manual_seed(seed: int) -> None:
    int(seed)


def manual_seed_all(seed: int) -> None:
    int(seed)


def empty_cache() -> None:
    pass
