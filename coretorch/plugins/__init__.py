"""coretorch.plugins: the public API for writing plugins, and the registry of what was loaded.

A plugin author needs nothing else (docs/plugins.md has worked examples)::

    from coretorch.plugins import hookimpl                       # mark hook implementations
    from coretorch.plugins import Backend, KERNELS                 # the backend contract
    from coretorch.plugins import get_kernel, from_array, to_array # a Function with per-device kernels

    coretorch.plugins.register(my_plugin)      # a module or object with @hookimpl functions, in-process
    coretorch.plugins.report()                 # one dict per plugin: name, distribution, status, error

This is one namespace rather than a separate ``coretorch.backend`` module because everything a plugin touches
(hook markers, registration, the backend contract, the array bridge, errors) belongs together, and
``coretorch.backends`` is already PyTorch's namespace of backend *flags*; :mod:`coretorch.plugins.backend`
holds the contract and is re-exported here.  Registration validates what it gets: an optimizer must subclass
``coretorch.optim.Optimizer``, a module ``coretorch.nn.Module``, a function must be callable, a backend must
have :class:`Backend`'s methods, and a hook name that coretorch does not define (a typo) is an error, reported
like any plugin failure (``CORETORCH_STRICT_PLUGINS=1`` raises it).
"""
from __future__ import annotations

from typing import Any

from .backend import (BINARY_KERNELS, FAMILY_KERNELS, HOST_LINALG_KERNELS, HOST_SPECIAL_KERNELS, KERNELS,
                      OPTIONAL_KERNELS, REQUIRED_KERNELS, UNARY_KERNELS, Backend, Kernel, from_array, get_backend,
                      get_kernel, increment_version, result_order, to_array, validate_backend)
from .hookspecs import PLUGIN_API_VERSION, hookimpl, hookspec
from .manager import PluginError, PluginReport, PluginWarning, manager

__all__ = ["register", "unregister", "report", "load_entry_points", "hookimpl", "hookspec", "PLUGIN_API_VERSION",
           "PluginError", "PluginWarning", "PluginReport",
           # the backend contract and the array bridge (coretorch.plugins.backend)
           "Backend", "Kernel", "KERNELS", "REQUIRED_KERNELS", "FAMILY_KERNELS", "OPTIONAL_KERNELS", "UNARY_KERNELS",
           "BINARY_KERNELS", "HOST_LINALG_KERNELS", "HOST_SPECIAL_KERNELS", "get_kernel", "get_backend", "from_array",
           "to_array",
           "increment_version", "validate_backend", "result_order"]


def register(plugin: Any, name: str | None = None, distribution: str | None = None) -> Any:
    """Register a plugin object (a module, class instance... with ``@hookimpl`` functions) in-process; everything
    it registers is available at once.  Raises :class:`PluginError` (or the TypeError/ValueError of a rejected
    registration) and registers nothing when any part of it is refused.  Returns ``plugin``."""
    return manager.register(plugin, name=name, distribution=distribution)


def unregister(plugin: Any) -> None:
    """Remove a plugin registered in-process (by object or name) and everything it registered."""
    manager.unregister(plugin)


def report() -> list[dict]:
    """One dict per plugin seen: ``name``, ``distribution``, ``version``, ``status`` ("loaded", "failed",
    "skipped"), ``error``, ``provides`` and ``load_s`` (what ``coretorch info`` shows)."""
    return [r.as_dict() for r in manager.reports]


def load_entry_points() -> None:
    """Load the plugins of entry-point group ``coretorch`` not loaded yet (``import coretorch`` does it)."""
    manager.load_entry_points()
