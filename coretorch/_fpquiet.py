"""numpy's floating-point error state switched off for a stretch of coretorch's own kernels: PyTorch computes
IEEE results (inf * 0 is nan, exp(1000) is inf) without warnings, numpy warns.  ``np.errstate`` costs ~1 us per
entry (it builds its state object each time); this sets a prebuilt "ignore everything" state in numpy's context
variable, ~0.2 us, and only for the caller's thread and context (a user's own numpy calls keep their setting)."""
from __future__ import annotations

import numpy as np

try:  # numpy >= 2: the error state lives in a ContextVar (private: numpy's stubs do not declare it)
    from numpy._core._ufunc_config import _extobj_contextvar as _CV  # type: ignore[attr-defined]
    with np.errstate(all="ignore"):
        _QUIET = _CV.get()
except (ImportError, AttributeError):  # pragma: no cover  (older numpy: the public, slower context manager)
    _CV = None

__all__ = ["quiet", "quiet_call"]


def quiet_call(fn, *args):
    """``fn(*args)`` with numpy's floating-point warnings off."""
    if _CV is None:  # pragma: no cover
        with np.errstate(all="ignore"):
            return fn(*args)
    token = _CV.set(_QUIET)
    try:
        return fn(*args)
    finally:
        _CV.reset(token)


class quiet:
    """``with quiet():`` numpy's floating-point warnings off for the block (the backward pass)."""
    __slots__ = ("token",)

    def __enter__(self):
        if _CV is not None:
            self.token = _CV.set(_QUIET)
        else:  # pragma: no cover
            self.token = np.errstate(all="ignore")
            self.token.__enter__()
        return self

    def __exit__(self, *exc):
        if _CV is not None:
            _CV.reset(self.token)
        else:  # pragma: no cover
            self.token.__exit__(*exc)
        return False
