"""PyTorch's TORCH_WARN_ONCE: a UserWarning given the first time its key comes in this process."""
from __future__ import annotations

import warnings

GIVEN: set = set()  # the keys already warned about (a test removes its key to see the warning again)


def warn_once(key: str, message: str, stacklevel: int = 1) -> None:
    """``message`` as a UserWarning the first time ``key`` comes; ``stacklevel`` counts from the caller of this
    function (1: the caller's own line, as ``warnings.warn`` would count there)."""
    if key not in GIVEN:
        GIVEN.add(key)
        warnings.warn(message, UserWarning, stacklevel=stacklevel + 1)
