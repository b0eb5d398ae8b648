"""torch.mps: Apple's Metal backend, which coretorch does not have."""
from __future__ import annotations


def is_available() -> bool:
    """Whether the MPS device can be used: always False (coretorch has no MPS backend).

    Example:
        >>> torch.mps.is_available()
        False
    """
    return False


def device_count() -> int:
    """The number of MPS devices: always 0."""
    return 0


def manual_seed(seed: int) -> None:
    """Seed the MPS generator: does nothing (there is none); ``seed`` must still be a number.

    Args:
        seed (int): the seed.
    """
    int(seed)


def empty_cache() -> None:
    """Release cached MPS memory: does nothing."""
    pass
