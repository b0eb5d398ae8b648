"""Plugin loading: entry points of group "coretorch", in-process registration, a report of both.

Rules (README "Environment switches and the plugin report"):

* A device type belongs to the distribution whose name declares it (``coretorch-cpu`` owns ``cpu``,
  ``coretorch-opencl`` owns ``opencl``) when that distribution is installed, or to the one
  ``CORETORCH_BACKEND_<TYPE>=<distribution>`` chooses; otherwise to the first that registers it.  Any other
  registration of it is refused, whichever loads first (a plugin cannot take ``cpu`` over by sorting before
  ``coretorch-cpu``), and the report blames the newcomer.
* Whatever a plugin raises while it is imported or registers (``SystemExit`` and other ``BaseException``
  included) is reported and the plugin skipped; ``KeyboardInterrupt`` is reported, then re-raised (a Ctrl-C
  stops the program).  ``CORETORCH_STRICT_PLUGINS=1`` raises ``PluginError`` instead.
* An observation hook (``coretorch_module_forward``, ``coretorch_optimizer_step``) that raises is reported
  once, naming the plugin, and that hook of that plugin is disabled; strict mode raises.
"""
from __future__ import annotations

import difflib
import os
import re
import time
import warnings
from dataclasses import dataclass

import pluggy

from . import hookspecs
from .hookspecs import PLUGIN_API_VERSION

GROUP = "coretorch"
OBSERVATION_HOOKS = ("coretorch_module_forward", "coretorch_optimizer_step")
SLOW_IMPORT_S = 1.0  # `coretorch info` names plugins slower than this to load (seconds)


class PluginError(RuntimeError):
    """A plugin failed to load (raised only in strict mode or for in-process registration)."""


class PluginWarning(UserWarning):
    """A plugin failed to load and was skipped, or one of its observation hooks raised and was disabled."""


def strict() -> bool:
    return os.environ.get("CORETORCH_STRICT_PLUGINS", "") not in ("", "0")


def _norm(dist: str) -> str:
    """Distribution names compare as pip does: case-insensitive, runs of -_. alike (PEP 503)."""
    return re.sub(r"[-_.]+", "-", str(dist)).lower()


def backend_env_var(device_type: str) -> str:
    return "CORETORCH_BACKEND_" + re.sub(r"[^A-Z0-9]", "_", device_type.upper())


def chosen_distribution(device_type: str) -> str | None:
    """The distribution ``CORETORCH_BACKEND_<TYPE>`` chooses for a device type, if set."""
    return os.environ.get(backend_env_var(device_type)) or None


def owns(dist: str, device_type: str) -> bool:
    """Whether ``dist`` owns ``device_type``: chosen by the env var, else declared by its name."""
    chosen = chosen_distribution(device_type)
    if chosen is not None:
        return _norm(dist) == _norm(chosen)
    return _norm(dist) == _norm(f"coretorch-{device_type}")


@dataclass
class PluginReport:
    """What the loader knows of one plugin (``coretorch.plugins.report()`` gives these as dicts)."""

    name: str
    distribution: str
    version: str
    status: str          # "loaded" | "failed" | "skipped"
    error: str = ""
    provides: tuple = ()
    load_s: float = 0.0  # seconds spent importing the plugin and running its registration hooks

    def as_dict(self) -> dict:
        """This report as a plain dict (what ``coretorch.plugins.report()`` returns)."""
        return {"name": self.name, "distribution": self.distribution, "version": self.version,
                "status": self.status, "error": self.error, "provides": list(self.provides),
                "load_s": round(self.load_s, 4)}


class _Registrar:
    """Collects what one plugin registers, then applies it atomically (all or nothing)."""

    def __init__(self, plugin_name: str, distribution: str):
        self.plugin = plugin_name
        self.dist = distribution
        self.items: list = []

    def backend(self, backend) -> None:
        from .backend import validate_backend
        validate_backend(backend)
        self.items.append(("backend", backend.name, backend))

    def function(self, name: str, fn, *, tensor_method: bool = False, functional: bool = False,
                 kernels=None) -> None:
        _check_identifier("register(name, fn)", name)
        if not callable(fn):
            raise TypeError(f"register({name!r}, fn): fn must be callable, got {type(fn).__name__}")
        kernels = dict(kernels or {})
        for dev, k in kernels.items():
            if not (isinstance(dev, str) and dev.isidentifier()):
                raise TypeError(f"register({name!r}, fn, kernels=...): the keys are device types such as 'cpu', "
                                f"got {dev!r}")
            if not callable(k):
                raise TypeError(f"register({name!r}, fn, kernels=...): the kernel for '{dev}' must be callable, got "
                                f"{type(k).__name__}")
        self.items.append(("function", name, (fn, tensor_method, functional, kernels)))

    def optimizer(self, name: str, cls) -> None:
        from ..optim.optimizer import Optimizer
        _check_identifier("register(name, cls)", name)
        if not (isinstance(cls, type) and issubclass(cls, Optimizer)):
            raise TypeError(f"register({name!r}, cls): an optimizer must be a subclass of coretorch.optim.Optimizer, "
                            f"got {_what(cls)}")
        self.items.append(("optimizer", name, cls))

    def module(self, name: str, cls) -> None:
        from ..nn.modules.module import Module
        _check_identifier("register(name, cls)", name)
        if not (isinstance(cls, type) and issubclass(cls, Module)):
            raise TypeError(f"register({name!r}, cls): a module must be a subclass of coretorch.nn.Module, got "
                            f"{_what(cls)}")
        self.items.append(("module", name, cls))

    def distributed(self, impl) -> None:
        self.items.append(("distributed", "distributed", impl))


def _api_mismatch(name: str, api: int, dist: str | None, version: str | None) -> str:
    """A plugin API mismatch: both versions (the plugin's and this coretorch's) and the fix that applies."""
    from .. import __version__
    who = f"plugin '{name}'" + (f" (distribution {dist} {version})" if dist and dist != "?" else "")
    pkg = dist if dist and dist != "?" else "the plugin"
    if api < PLUGIN_API_VERSION:
        fix = (f"upgrade the plugin to a release for coretorch {__version__} (`pip install -U {pkg}`), or install a "
               f"coretorch that speaks plugin API {api}")
    else:
        fix = (f"upgrade coretorch to a release that speaks plugin API {api} (`pip install -U coretorch`), or "
               f"install a release of {pkg} made for coretorch {__version__}")
    return (f"{who} was written for coretorch plugin API {api}, but coretorch {__version__} speaks plugin API "
            f"{PLUGIN_API_VERSION}: {fix}")


def _check_identifier(call: str, name) -> None:
    if not (isinstance(name, str) and name.isidentifier()):
        raise ValueError(f"{call}: name must be an identifier, got {name!r}")


def _what(obj) -> str:
    return f"the class {obj.__module__}.{obj.__qualname__}" if isinstance(obj, type) else \
        f"a {type(obj).__name__} object"


def _check_hooks(pm: pluggy.PluginManager, obj, name: str) -> None:
    """A hook implementation whose name coretorch does not define (a typo: ``coretorch_register_optimisers``) is
    an error (pluggy's ``check_pending``), and so is a function named as a hook but not marked ``@hookimpl``."""
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as e:
        unknown = [h for h in vars(pm.hook) if h[:1] != "_" and not getattr(pm.hook, h).has_spec()
                   and any(i.plugin is obj for i in getattr(pm.hook, h).get_hookimpls())]
        known = sorted(h for h in vars(pm.hook) if h[:1] != "_" and getattr(pm.hook, h).has_spec())
        parts = []
        for h in unknown:
            close = difflib.get_close_matches(h, known, n=1)
            parts.append(f"'{h}'" + (f" (did you mean '{close[0]}'?)" if close else ""))
        raise PluginError(f"plugin '{name}' implements unknown hook(s) {', '.join(parts) or e}; the coretorch hooks "
                          f"are: {', '.join(known)}") from None
    for h in dir(hookspecs):
        if h.startswith("coretorch_") and callable(getattr(obj, h, None)) \
                and not any(i.plugin is obj for i in getattr(pm.hook, h).get_hookimpls()):
            raise PluginError(f"plugin '{name}' defines {h} without marking it @coretorch.plugins.hookimpl, so "
                              "coretorch would never call it")


class Manager:
    def __init__(self) -> None:
        self.pm = pluggy.PluginManager("coretorch")
        self.pm.add_hookspecs(hookspecs)
        self.reports: list[PluginReport] = []
        self.owners: dict = {}     # (kind, name) -> (plugin name, distribution)
        self.provided: dict = {}   # plugin name -> list of (kind, name)
        self.observing = {"module_forward": False, "optimizer_step": False}
        self.disabled_hooks: set = set()  # (plugin name, hook name) switched off after raising
        self.expected: set = set()  # distributions whose entry points load (or loaded) in this process

    # -- loading ---------------------------------------------------------------------------------
    def load_entry_points(self) -> None:
        if os.environ.get("CORETORCH_DISABLE_PLUGIN_AUTOLOAD", "") not in ("", "0"):
            return
        allow = os.environ.get("CORETORCH_PLUGINS")
        allowed = {a.strip() for a in allow.split(",") if a.strip()} if allow is not None else None
        from importlib.metadata import entry_points  # (group= selection: Python 3.10+, the floor)
        eps = []
        for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
            dist = getattr(ep, "dist", None)
            dname = dist.name if dist is not None else "?"
            version = dist.version if dist is not None else "?"
            if allowed is not None and ep.name not in allowed and dname not in allowed:
                self.reports.append(PluginReport(ep.name, dname, version, "skipped",
                                                 "not listed in CORETORCH_PLUGINS"))
                continue
            eps.append((ep, dname, version))
        # a distribution about to load reserves the device type its name declares (coretorch-cpu: cpu), so
        # that a plugin sorting before it cannot take that device type over
        self.expected.update(dname for _, dname, _ in eps)
        for ep, dname, version in eps:
            if self.pm.has_plugin(ep.name):
                continue
            t0 = time.perf_counter()
            try:
                obj = ep.load()
                self._check_api(obj, ep.name, required=True, dist=dname, version=version)
                self._register(obj, ep.name, dname)
            except BaseException as e:  # noqa: BLE001 - SystemExit & co. must not escape `import coretorch`
                self._failed(ep.name, dname, version, e, time.perf_counter() - t0)
                continue
            self.reports.append(PluginReport(ep.name, dname, version, "loaded",
                                             provides=tuple(f"{k}:{n}" for k, n in self.provided[ep.name]),
                                             load_s=time.perf_counter() - t0))

    def _failed(self, name, dname, version, e: BaseException, load_s: float = 0.0) -> None:
        msg = f"{type(e).__name__}: {e}"
        self.reports.append(PluginReport(name, dname, version, "failed", msg, load_s=load_s))
        if isinstance(e, KeyboardInterrupt):  # a Ctrl-C while the plugin loaded: report it, then stop
            warnings.warn(f"coretorch plugin '{name}' (distribution {dname}) was interrupted while loading "
                          "(KeyboardInterrupt)", PluginWarning, stacklevel=3)
            raise e
        if strict():
            raise PluginError(f"coretorch plugin '{name}' (distribution {dname}) failed to load: {msg}") from e
        warnings.warn(f"coretorch plugin '{name}' (distribution {dname}) failed to load and was skipped: {msg}. "
                      "Run `coretorch info` for the plugin report; set CORETORCH_STRICT_PLUGINS=1 to make this "
                      "an error.", PluginWarning, stacklevel=3)

    @staticmethod
    def _check_api(obj, name: str, required: bool, dist: str | None = None, version: str | None = None) -> None:
        api = getattr(obj, "CORETORCH_PLUGIN_API", None)
        if api is None:
            if required:
                raise PluginError(f"plugin '{name}' does not declare CORETORCH_PLUGIN_API (this coretorch "
                                  f"speaks plugin API {PLUGIN_API_VERSION})")
            return
        if type(api) is not int:  # True == 1 and "1" are not version numbers
            raise PluginError(f"plugin '{name}' declares CORETORCH_PLUGIN_API = {api!r} (a "
                              f"{type(api).__name__}); it must be the int of the plugin API version it was "
                              f"written for: CORETORCH_PLUGIN_API = {PLUGIN_API_VERSION} for this coretorch")
        if api != PLUGIN_API_VERSION:
            raise PluginError(_api_mismatch(name, api, dist, version))

    # -- registration ----------------------------------------------------------------------------
    def register(self, obj, name: str | None = None, distribution: str | None = None):
        """Register a plugin object in-process; what it provides is available at once."""
        t0 = time.perf_counter()
        name = name or getattr(obj, "__name__", None) or type(obj).__name__
        self._check_api(obj, name, required=False)
        dist = distribution or f"<in-process {name}>"
        self._register(obj, name, dist)
        self.reports.append(PluginReport(name, dist, "", "loaded",
                                         provides=tuple(f"{k}:{n}" for k, n in self.provided[name]),
                                         load_s=time.perf_counter() - t0))
        return obj

    def _register(self, obj, name: str, dist: str) -> None:
        reg = self._collect(obj, name, dist)
        try:
            self._apply(reg)
        except BaseException:
            self.pm.unregister(obj)
            raise
        self._update_observers()

    def _collect(self, obj, name: str, dist: str) -> _Registrar:
        """Register ``obj`` with pluggy and run its registration hooks into a ``_Registrar`` (nothing applied)."""
        if self.pm.has_plugin(name):
            raise PluginError(f"a plugin named '{name}' is already registered")
        try:
            self.pm.register(obj, name=name)
        except pluggy.PluginValidationError as e:  # a hook implementation whose arguments the hook does not pass
            raise PluginError(f"plugin '{name}' has an invalid hook implementation: {e}".replace("\n", "; ")) from None
        reg = _Registrar(name, dist)
        try:
            _check_hooks(self.pm, obj, name)
            for hook, cb in (("coretorch_register_backends", reg.backend),
                             ("coretorch_register_functions", reg.function),
                             ("coretorch_register_optimizers", reg.optimizer),
                             ("coretorch_register_modules", reg.module),
                             ("coretorch_register_distributed", reg.distributed)):
                for impl in getattr(self.pm.hook, hook).get_hookimpls():
                    if impl.plugin is obj:
                        impl.function(register=cb)
            for hook in OBSERVATION_HOOKS:
                for impl in getattr(self.pm.hook, hook).get_hookimpls():
                    if impl.plugin is obj and not (getattr(impl, "hookwrapper", False)
                                                   or getattr(impl, "wrapper", False)):
                        impl.function = self._guard(hook, name, dist, impl.function)
        except BaseException:
            self.pm.unregister(obj)
            raise
        return reg

    def _guard(self, hook: str, plugin: str, dist: str, fn):
        """``fn`` that, when it raises, is reported once and disabled (or raises PluginError in strict mode)."""
        key = (plugin, hook)

        def guarded(*args):
            if key in self.disabled_hooks:
                return None
            try:
                return fn(*args)
            except Exception as e:
                msg = f"coretorch plugin '{plugin}' (distribution {dist}) raised in its {hook} hook: " \
                      f"{type(e).__name__}: {e}"
                if strict():
                    raise PluginError(msg) from e
                self.disabled_hooks.add(key)
                self._update_observers()
                for r in self.reports:
                    if r.name == plugin:
                        r.error = (r.error + "; " if r.error else "") + f"{hook} disabled after {type(e).__name__}"
                warnings.warn(msg + "; that hook of the plugin is disabled from now on (set "
                              "CORETORCH_STRICT_PLUGINS=1 to raise instead)", PluginWarning, stacklevel=2)
                return None
        setattr(guarded, "__wrapped__", fn)
        return guarded

    def _apply(self, reg: _Registrar) -> None:
        from .. import _backend
        # check everything first so that a failure leaves nothing half-registered
        seen: set = set()
        for kind, name, obj in reg.items:
            key = ("op" if kind == "function" else kind, name)
            if kind == "backend":
                self._check_backend(reg, name, seen)
            elif key in self.owners or key in seen:
                other = self.owners.get(key, (reg.plugin, reg.dist))[1]
                raise PluginError(f"{kind} '{name}' is registered twice: by distribution '{other}' and by "
                                  f"'{reg.dist}'; uninstall or disable one of them")
            seen.add(key)
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

    def _check_backend(self, reg: _Registrar, name: str, seen: set) -> None:
        """Refuse a device type that belongs to another distribution (see the module docstring)."""
        from .. import _backend
        var = backend_env_var(name)
        chosen = chosen_distribution(name)
        if chosen is not None and _norm(chosen) != _norm(reg.dist):
            raise PluginError(f"device type '{name}' of distribution '{reg.dist}' (plugin '{reg.plugin}') was "
                              f"refused: {var}={chosen} chooses distribution '{chosen}' for it")
        if ("backend", name) in seen:
            raise PluginError(f"plugin '{reg.plugin}' (distribution '{reg.dist}') registers device type '{name}' "
                              "twice")
        owner = next((d for d in sorted(self.expected) if owns(d, name)), None)
        if owner is not None and _norm(owner) != _norm(reg.dist):
            raise PluginError(f"device type '{name}' belongs to distribution '{owner}' (its name declares it); "
                              f"distribution '{reg.dist}' (plugin '{reg.plugin}') registers it too and was refused "
                              f"(set {var}={reg.dist} to choose '{reg.dist}' instead)")
        other = None
        if ("backend", name) in self.owners:
            other = self.owners[("backend", name)][1]
        elif name in _backend.backends():
            other = getattr(_backend.backends()[name], "distribution", "?")
        if other is None:
            return
        if owns(reg.dist, name):
            why = (f"distribution '{reg.dist}' owns it by name, but '{other}' was registered first in this "
                   "process (in-process registration); unregister that one first")
        else:
            why = (f"a device type belongs to the distribution whose name declares it (coretorch-{name}) or to the "
                   f"first that registers it; set {var}={reg.dist} to choose '{reg.dist}' instead")
        raise PluginError(f"device type '{name}' is already provided by distribution '{other}'; distribution "
                          f"'{reg.dist}' (plugin '{reg.plugin}') registers it again and was refused ({why})")

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
        self.disabled_hooks = {k for k in self.disabled_hooks if k[0] != name}
        self._update_observers()

    def _update_observers(self) -> None:
        for key, hook in (("module_forward", self.pm.hook.coretorch_module_forward),
                          ("optimizer_step", self.pm.hook.coretorch_optimizer_step)):
            self.observing[key] = any((impl.plugin_name, hook.name) not in self.disabled_hooks
                                      for impl in hook.get_hookimpls())


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
        setattr(method, "_plugin_fn", fn)
        setattr(Tensor, name, method)
    if functional:
        from ..nn import functional as F
        setattr(F, name, fn)
    _backend.register_kernels(name, kernels)  # also without kernels: get_kernel then knows the op has none here


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
    _backend.unregister_kernels(name)


manager = Manager()
