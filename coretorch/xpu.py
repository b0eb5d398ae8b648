"""torch.xpu: Intel's GPU backend, which coretorch does not have (Intel GPUs run through 'opencl')."""
from __future__ import annotations


def is_available() -> bool:
    """Whether the XPU device can be used: always False (coretorch has no XPU backend).

    Example:
        >>> torch.xpu.is_available()
        False
    """
    return False


def device_count() -> int:
    """The number of XPU devices: always 0."""
    return 0


def manual_seed(seed: int) -> None:
    """Seed the XPU generator: does nothing (there is none); ``seed`` must still be a number.

    Args:
        seed (int): the seed.
    """
    int(seed)


def manual_seed_all(seed: int) -> None:
    """Seed every XPU generator: does nothing; ``seed`` must still be a number.

    Args:
        seed (int): the seed.
    """
    int(seed)


def empty_cache() -> None:
    """Release cached XPU memory: does nothing."""
    pass
