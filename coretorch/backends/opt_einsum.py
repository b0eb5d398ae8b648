"""torch.backends.opt_einsum: whether einsum orders its contractions with the opt_einsum package, and how.

``enabled`` (default True) and ``strategy`` ('auto', 'greedy' or 'optimal'; default 'auto') are settable, as
in PyTorch; setting an unknown strategy raises ValueError.
"""
from __future__ import annotations

import sys
import types

try:
    import opt_einsum as _opt_einsum
except ImportError:  # a dependency of coretorch, but einsum still works (in written order) without it
    _opt_einsum = None

_STRATEGIES = ("auto", "greedy", "optimal")


def is_available() -> bool:
    return _opt_einsum is not None


def get_opt_einsum():
    """The opt_einsum module, or None."""
    return _opt_einsum


class _Module(types.ModuleType):
    _enabled = True
    _strategy = "auto"

    @property
    def enabled(self) -> bool:
        return self._enabled

    @enabled.setter
    def enabled(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise ValueError(f"opt_einsum.enabled must be a bool, got {type(value).__name__}")
        type(self)._enabled = value

    @property
    def strategy(self):
        return self._strategy if self._enabled and is_available() else None

    @strategy.setter
    def strategy(self, value: str) -> None:
        if not self._enabled:
            raise ValueError("opt_einsum is not enabled, so a strategy cannot be set: set "
                             "torch.backends.opt_einsum.enabled = True first")
        if value not in _STRATEGIES:
            raise ValueError(f"opt_einsum strategy must be one of {', '.join(_STRATEGIES)}, got {value!r}")
        type(self)._strategy = value


sys.modules[__name__].__class__ = _Module
