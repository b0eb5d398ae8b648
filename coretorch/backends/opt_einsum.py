"""torch.backends.opt_einsum: whether einsum orders its contractions with the opt_einsum package, and how.

``enabled`` (default: True when opt_einsum is installed, e.g. by ``pip install "coretorch[opt-einsum]"``) and
``strategy`` ('auto', 'greedy' or 'optimal'; default 'auto') are settable, as in PyTorch; setting an unknown
strategy raises ValueError.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import types

_STRATEGIES = ("auto", "greedy", "optimal")
# the extra coretorch[opt-einsum] (as PyTorch's); imported on first use (40 ms)
_AVAILABLE = importlib.util.find_spec("opt_einsum") is not None


def is_available() -> bool:
    """Whether the opt_einsum package is installed (``pip install "coretorch[opt-einsum]"``)."""
    return _AVAILABLE


def get_opt_einsum():
    """The opt_einsum module, or None (einsum then contracts in the written order)."""
    return importlib.import_module("opt_einsum") if _AVAILABLE else None


class _Module(types.ModuleType):
    _enabled = _AVAILABLE  # PyTorch's default: enabled when opt_einsum is installed
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
