"""coretorch.plugins: register plugin objects in-process and inspect what was loaded.

    import coretorch
    coretorch.plugins.register(my_plugin)      # a module or object with @hookimpl functions
    coretorch.plugins.report()                 # one dict per plugin: name, distribution, status, error
"""
from __future__ import annotations

from .hookspecs import PLUGIN_API_VERSION, hookimpl, hookspec
from .manager import PluginError, PluginReport, PluginWarning, manager

__all__ = ["register", "unregister", "report", "hookimpl", "hookspec", "PLUGIN_API_VERSION", "PluginError",
           "PluginWarning", "PluginReport", "manager", "load_entry_points"]


def register(plugin, name: str | None = None, distribution: str | None = None):
    """Register a plugin object in-process; everything it registers is available immediately."""
    return manager.register(plugin, name=name, distribution=distribution)


def unregister(plugin) -> None:
    manager.unregister(plugin)


def report() -> list[dict]:
    return [r.as_dict() for r in manager.reports]


def load_entry_points() -> None:
    manager.load_entry_points()
