"""PyTorch's TORCH_WARN_ONCE: a UserWarning given the first time its key comes in this process."""
from __future__ import annotations

import os
import sys
import warnings

_PKG = os.path.dirname(os.path.abspath(__file__)) + os.sep
GIVEN: set = set()  # the keys already warned about (a test removes its key to see the warning again)


def warn_once(key: str, message: str, stacklevel: int = 1) -> None:
    """``message`` as a UserWarning the first time ``key`` comes; ``stacklevel`` counts from the caller of this
    function (1: the caller's own line, as ``warnings.warn`` would count there); past that, frames of coretorch's own
    files are skipped (an op reached through a ``__torch_function__`` wrapper warns at the user's line, not there)."""
    if key not in GIVEN:
        GIVEN.add(key)
        # (counted from here: one more than from the caller)
        warnings.warn(message, UserWarning, stacklevel=user_stacklevel(stacklevel + 1) if stacklevel > 1
                      else stacklevel + 1)


def user_stacklevel(stacklevel: int) -> int:
    """The ``stacklevel`` for ``warnings.warn`` in this function's caller that names the frame ``stacklevel`` would,
    or past it the first frame outside coretorch's own files (a grad_fn-naming or ``__torch_function__`` wrapper
    between the op and the user's line)."""
    f = sys._getframe(stacklevel)
    while f is not None and f.f_back is not None and f.f_code.co_filename.startswith(_PKG):
        f, stacklevel = f.f_back, stacklevel + 1
    return stacklevel
