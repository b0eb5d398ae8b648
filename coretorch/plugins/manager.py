"""Plugin loading: entry points of group "coretorch", in-process registration, a report of both."""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass

import pluggy

from . import hookspecs
from .hookspecs import PLUGIN_API_VERSION

GROUP = "coretorch"


class PluginError(RuntimeError):
    """A plugin failed to load (raised only in strict mode or for in-process registration)."""


class PluginWarning(UserWarning):
    pass


@dataclass
class PluginReport:
    name: str
    distribution: str
    version: str
    status: str          # "loaded" | "failed" | "skipped"
    error: str = ""
    provides: tuple = ()

    def as_dict(self) -> dict:
        return {"name": self.name, "distribution": self.distribution, "version": self.version,
                "status": self.status, "error": self.error, "provides": list(self.provides)}


class _Registrar:
    """Collects what one plugin registers, then applies it atomically (all or nothing)."""

    def __init__(self, plugin_name: str, distribution: str):
        self.plugin = plugin_name
        self.dist = distribution
        self.items: list = []

    def backend(self, backend) -> None:
        if not getattr(backend, "name", None):
            raise TypeError("register(backend): the backend needs a 'name' (its device type)")
        self.items.append(("backend", backend.name, backend))

    def function(self, name: str, fn, *, tensor_method: bool = False, functional: bool = False,
                 kernels=None) -> None:
        if not (isinstance(name, str) and name.isidentifier()):
            raise ValueError(f"register(name, fn): name must be an identifier, got {name!r}")
        if not callable(fn):
            raise TypeError(f"register({name!r}, fn): fn must be callable")
        self.items.append(("function", name, (fn, tensor_method, functional, dict(kernels or {}))))

    def optimizer(self, name: str, cls) -> None:
        self.items.append(("optimizer", name, cls))

    def module(self, name: str, cls) -> None:
        self.items.append(("module", name, cls))

    def distributed(self, impl) -> None:
        self.items.append(("distributed", "distributed", impl))


class Manager:
    def __init__(self):
        self.pm = pluggy.PluginManager("coretorch")
        self.pm.add_hookspecs(hookspecs)
        self.reports: list[PluginReport] = []
        self.owners: dict = {}     # (kind, name) -> (plugin name, distribution)
        self.provided: dict = {}   # plugin name -> list of (kind, name)
        self.observing = {"module_forward": False, "optimizer_step": False}

    # -- loading ---------------------------------------------------------------------------------
    def load_entry_points(self) -> None:
        if os.environ.get("CORETORCH_DISABLE_PLUGIN_AUTOLOAD", "") not in ("", "0"):
            return
        allow = os.environ.get("CORETORCH_PLUGINS")
        allowed = {a.strip() for a in allow.split(",") if a.strip()} if allow is not None else None
        try:
            from importlib_metadata import entry_points
        except ImportError:  # pragma: no cover - importlib-metadata is a declared dependency
            from importlib.metadata import entry_points
        for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
            dist = getattr(ep, "dist", None)
            dname = dist.name if dist is not None else "?"
            version = dist.version if dist is not None else "?"
            if allowed is not None and ep.name not in allowed and dname not in allowed:
                self.reports.append(PluginReport(ep.name, dname, version, "skipped",
                                                 "not listed in CORETORCH_PLUGINS"))
                continue
            if self.pm.has_plugin(ep.name):
                continue
            try:
                obj = ep.load()
                self._check_api(obj, ep.name, required=True)
                self._register(obj, ep.name, dname)
            except Exception as e:  # a broken plugin must not break `import coretorch`
                self._failed(ep.name, dname, version, e)
                continue
            self.reports.append(PluginReport(ep.name, dname, version, "loaded",
                                             provides=tuple(f"{k}:{n}" for k, n in self.provided[ep.name])))

    def _failed(self, name, dname, version, e) -> None:
        msg = f"{type(e).__name__}: {e}"
        self.reports.append(PluginReport(name, dname, version, "failed", msg))
        if os.environ.get("CORETORCH_STRICT_PLUGINS", "") not in ("", "0"):
            raise PluginError(f"coretorch plugin '{name}' (distribution {dname}) failed to load: {msg}") from e
        warnings.warn(f"coretorch plugin '{name}' (distribution {dname}) failed to load and was skipped: {msg}. "
                      "Run `coretorch info` for the plugin report; set CORETORCH_STRICT_PLUGINS=1 to make this "
                      "an error.", PluginWarning, stacklevel=2)

    @staticmethod
    def _check_api(obj, name: str, required: bool) -> None:
        api = getattr(obj, "CORETORCH_PLUGIN_API", None)
        if api is None:
            if required:
                raise PluginError(f"plugin '{name}' does not declare CORETORCH_PLUGIN_API (this coretorch "
                                  f"speaks plugin API {PLUGIN_API_VERSION})")
            return
        if api != PLUGIN_API_VERSION:
            raise PluginError(f"plugin '{name}' was written for coretorch plugin API {api}, but this coretorch "
                              f"speaks API {PLUGIN_API_VERSION}; upgrade the plugin or coretorch")

    # -- registration ----------------------------------------------------------------------------
    def register(self, obj, name: str | None = None, distribution: str | None = None):
        """Register a plugin object in-process; what it provides is available at once."""
        name = name or getattr(obj, "__name__", None) or type(obj).__name__
        self._check_api(obj, name, required=False)
        dist = distribution or f"<in-process {name}>"
        self._register(obj, name, dist)
        self.reports.append(PluginReport(name, dist, "", "loaded",
                                         provides=tuple(f"{k}:{n}" for k, n in self.provided[name])))
        return obj

    def _register(self, obj, name: str, dist: str) -> None:
        if self.pm.has_plugin(name):
            raise PluginError(f"a plugin named '{name}' is already registered")
        self.pm.register(obj, name=name)
        reg = _Registrar(name, dist)
        try:
            for hook, cb in (("coretorch_register_backends", reg.backend),
                             ("coretorch_register_functions", reg.function),
                             ("coretorch_register_optimizers", reg.optimizer),
                             ("coretorch_register_modules", reg.module),
                             ("coretorch_register_distributed", reg.distributed)):
                for impl in getattr(self.pm.hook, hook).get_hookimpls():
                    if impl.plugin is obj:
                        impl.function(register=cb)
            self._apply(reg)
        except Exception:
            self.pm.unregister(obj)
            raise
        self._update_observers()

    def _apply(self, reg: _Registrar) -> None:
        from .. import _backend
        # check everything first so that a failure leaves nothing half-registered
        seen = set()
        for kind, name, obj in reg.items:
            key = ("op" if kind == "function" else kind, name)
            if key in self.owners or key in seen:
                other = self.owners.get(key, (reg.plugin, reg.dist))[1]
                raise PluginError(f"{kind} '{name}' is registered twice: by distribution '{other}' and by "
                                  f"'{reg.dist}'; uninstall or disable one of them")
            seen.add(key)
            if kind == "backend" and name in _backend.backends():
                raise PluginError(f"backend '{name}' is registered twice: by distribution "
                                  f"'{getattr(_backend.backends()[name], 'distribution', '?')}' and by "
                                  f"'{reg.dist}'")
            if kind == "function":
                _check_function_name(name, reg.dist, tensor_method=obj[1], functional=obj[2])
        applied = []
        for kind, name, obj in reg.items:
            if kind == "backend":
                _backend.register_backend(obj, reg.dist)
            elif kind == "function":
                _install_function(name, *obj)
            elif kind == "optimizer":
                from .. import optim
                optim._register(name, obj)
            elif kind == "module":
                from .. import nn
                nn._register(name, obj)
            elif kind == "distributed":
                from .. import distributed
                distributed._register(obj)
            key = ("op" if kind == "function" else kind, name)
            self.owners[key] = (reg.plugin, reg.dist)
            applied.append((kind, name))
        self.provided[reg.plugin] = applied

    def unregister(self, name_or_obj) -> None:
        """Remove an in-process plugin and everything it registered (mainly for tests)."""
        from .. import _backend
        name = name_or_obj if isinstance(name_or_obj, str) else self.pm.get_name(name_or_obj)
        if name is None:
            return
        for kind, item in self.provided.pop(name, []):
            self.owners.pop(("op" if kind == "function" else kind, item), None)
            if kind == "backend":
                _backend.unregister_backend(item)
            elif kind == "function":
                _uninstall_function(item)
            elif kind == "optimizer":
                from .. import optim
                optim._unregister(item)
            elif kind == "module":
                from .. import nn
                nn._unregister(item)
            elif kind == "distributed":
                from .. import distributed
                distributed._unregister()
        self.pm.unregister(name=name)
        self.reports = [r for r in self.reports if r.name != name]
        self._update_observers()

    def _update_observers(self) -> None:
        self.observing["module_forward"] = bool(self.pm.hook.coretorch_module_forward.get_hookimpls())
        self.observing["optimizer_step"] = bool(self.pm.hook.coretorch_optimizer_step.get_hookimpls())


_CORE_NAMES: set = set()


def _check_function_name(name: str, dist: str = "?", tensor_method: bool = False, functional: bool = False) -> None:
    if name in _CORE_NAMES:
        raise PluginError(f"op '{name}' of distribution '{dist}' is already defined by coretorch itself "
                          "(distribution 'coretorch'); choose another name")
    from ..tensor import Tensor
    if tensor_method and name in Tensor.__dict__:
        raise PluginError(f"Tensor.{name} is already defined by coretorch itself (distribution 'coretorch'); "
                          f"distribution '{dist}' must register op '{name}' without tensor_method")
    from ..nn import functional as F
    if functional and hasattr(F, name):
        raise PluginError(f"nn.functional.{name} is already defined by coretorch itself (distribution 'coretorch'); "
                          f"distribution '{dist}' must register op '{name}' without functional")


def _install_function(name, fn, tensor_method, functional, kernels) -> None:
    from .. import _backend, ops
    from ..tensor import Tensor
    if tensor_method and name in Tensor.__dict__:
        raise PluginError(f"Tensor already has an attribute '{name}'; register the op without tensor_method")
    setattr(ops, name, fn)
    ops._registered[name] = (fn, tensor_method, functional)
    if tensor_method:
        def method(self, *args, **kwargs):
            return fn(self, *args, **kwargs)
        method.__name__ = name
        method._plugin_fn = fn
        setattr(Tensor, name, method)
    if functional:
        from ..nn import functional as F
        setattr(F, name, fn)
    if kernels:
        _backend.register_kernels(name, kernels)


def _uninstall_function(name) -> None:
    from .. import _backend, ops
    from ..tensor import Tensor
    fn, tensor_method, functional = ops._registered.pop(name)
    if getattr(ops, name, None) is fn:
        delattr(ops, name)
    if tensor_method and getattr(Tensor.__dict__.get(name), "_plugin_fn", None) is fn:
        delattr(Tensor, name)
    if functional:
        from ..nn import functional as F
        if getattr(F, name, None) is fn:
            delattr(F, name)
    if name in _backend._extra_kernels:
        del _backend._extra_kernels[name]
        _backend._tables.clear()


manager = Manager()
