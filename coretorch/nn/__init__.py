"""coretorch.nn: modules registered by plugins appear here (the Module system itself is issue #3)."""
from __future__ import annotations

from . import functional  # noqa: F401

_registered: dict = {}


def _register(name: str, cls) -> None:
    if name in globals() and name not in _registered:
        raise ValueError(f"coretorch.nn already defines '{name}'")
    globals()[name] = cls
    _registered[name] = cls


def _unregister(name: str) -> None:
    if _registered.pop(name, None) is not None:
        globals().pop(name, None)
