"""coretorch.optim: optimizers registered by plugins appear here as ``coretorch.optim.<Name>``."""
from __future__ import annotations

_registered: dict = {}


def _register(name: str, cls) -> None:
    if name in globals() and name not in _registered:
        raise ValueError(f"coretorch.optim already defines '{name}'")
    globals()[name] = cls
    _registered[name] = cls


def _unregister(name: str) -> None:
    if _registered.pop(name, None) is not None:
        globals().pop(name, None)


def registered() -> list[str]:
    return sorted(_registered)
