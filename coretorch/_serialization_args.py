"""PyTorch's ``weights_only`` machinery for ``coretorch.load``: the allow-list of globals (accepted and kept,
though coretorch's format is never unpickled) and the checks PyTorch's unpickler makes of ``load``'s arguments."""
from __future__ import annotations

import operator
import os
import pickle
import warnings

__all__ = ["add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals", "check_load_args",
           "check_save_args", "resolve_weights_only"]

# the keyword arguments of pickle.Unpickler that torch.load passes on (weights_only=True: ``encoding`` only)
_UNPICKLER_ARGS = ("encoding", "fix_imports", "errors", "buffers")


def check_save_args(pickle_protocol) -> None:
    """Raise pickle's errors for a ``pickle_protocol`` PyTorch's pickler refuses (coretorch writes no pickle)."""
    if pickle_protocol is not None and operator.index(pickle_protocol) > pickle.HIGHEST_PROTOCOL:
        raise ValueError(f"pickle protocol must be <= {pickle.HIGHEST_PROTOCOL}")


def _flag(name: str) -> bool:
    return os.environ.get(name, "0").lower() in ("1", "y", "yes", "true")


def resolve_weights_only(weights_only: bool | None, pickle_module) -> bool:
    """``load``'s ``weights_only`` as PyTorch 2.13 resolves it: True unless a ``pickle_module`` is given or
    ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` is set; ``TORCH_FORCE_WEIGHTS_ONLY_LOAD`` forces it on."""
    if _flag("TORCH_FORCE_WEIGHTS_ONLY_LOAD"):
        return True
    if weights_only is None:
        return pickle_module is None and not _flag("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")
    return bool(weights_only)


def check_load_args(weights_only: bool, pickle_module, pickle_load_args: dict) -> None:
    """Raise PyTorch's errors for ``load`` arguments its unpickler refuses (``weights_only`` resolved by
    :func:`resolve_weights_only`): a misspelt keyword (``map_locaton``) is an error, not silently ignored."""
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    if weights_only:
        bad = next((k for k in pickle_load_args if k != "encoding"), None)
        if bad is not None:
            raise TypeError(f"Unpickler.__init__() got an unexpected keyword argument '{bad}'")
        if pickle_load_args:
            warnings.warn("pickle_load_args only works if `weights_only=False`.", stacklevel=3)
        return
    bad = next((k for k in pickle_load_args if k not in _UNPICKLER_ARGS), None)
    if bad is not None:
        raise TypeError(f"'{bad}' is an invalid keyword argument for Unpickler()")


_safe_globals: list = []


def add_safe_globals(safe_globals: list) -> None:
    """Accepted as in PyTorch (the classes ``torch.load(weights_only=True)`` may rebuild); coretorch's format
    holds only tensors and plain containers and is never unpickled, so nothing else needs allowing."""
    if not isinstance(safe_globals, (list, tuple)):
        raise TypeError(f"add_safe_globals expects a list, got {type(safe_globals).__name__}")
    for g in safe_globals:
        if not (callable(g) or (isinstance(g, tuple) and len(g) == 2 and isinstance(g[1], str))):
            raise TypeError(f"safe globals must be classes/functions or (object, 'name') pairs, got {g!r}")
        if g not in _safe_globals:
            _safe_globals.append(g)


def get_safe_globals() -> list:
    """The globals ``add_safe_globals`` allowed, as a list."""
    return list(_safe_globals)


def clear_safe_globals() -> None:
    """Forget every global ``add_safe_globals`` allowed."""
    _safe_globals.clear()


class safe_globals:
    """``with torch.serialization.safe_globals([...]):`` adds the globals for the block only."""

    def __init__(self, safe_globals: list) -> None:
        self.safe_globals = safe_globals

    def __enter__(self):
        self._saved = list(_safe_globals)
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc):
        _safe_globals[:] = self._saved
        return False
