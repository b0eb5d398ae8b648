"""What ``coretorch.compile(module)`` returns (``OptimizedModule``) and ``Module.compile()`` (the module's own calls
captured in place): both over a :class:`~.module.ModuleCapture`."""
from __future__ import annotations

import warnings
from typing import Any, Callable

from ..nn.modules import _hooks
from ..nn.modules.module import Module
from . import backends as _backends
from .module import ModuleCapture, _fresh_capture


class OptimizedModule(Module):
    """What ``coretorch.compile(module)`` returns (PyTorch's ``OptimizedModule``): the module as ``_orig_mod`` (so
    ``state_dict`` keys start with ``_orig_mod.``, as PyTorch's), its attributes forwarded, calls captured and
    replayed (forward and backward)."""

    # set on the wrapper (PyTorch's list; and the flag of the wrapper's own full backward hooks, which PyTorch's
    # __setattr__ sends to _orig_mod so that they never run)
    _OWN = frozenset({"_orig_mod", "_capture", "forward", "__dict__", "_is_full_backward_hook"})

    def __init__(self, mod: Module, fullgraph: bool = False, recompile_limit: int | None = None,
                 name: str | None = None, host_fusion: bool | None = None, fused: bool = True):
        super().__init__()
        self._orig_mod = mod
        self.__dict__["_capture"] = ModuleCapture(mod, mod, fullgraph, recompile_limit,  # (name: a label only)
                                                  host_fusion, fused)

    def forward(self, *args, **kwargs):
        if _hooks._global_forward_hooks or _hooks._global_forward_pre_hooks or _hooks._global_backward_hooks or \
                _hooks._global_backward_pre_hooks:
            warnings.warn("Using `torch.compile(module)` when there are global hooks on modules (e.g., from "
                          "`register_module_forward_hook`); this will cause the hooks to fire an extra time for the "
                          "`OptimizedModule` created by `torch.compile(module)`. If this causes undesired behavior, "
                          "please try using `module.compile()`, or use the per-module hooks instead", stacklevel=4)
        return self.__dict__["_capture"](*args, **kwargs)

    @property  # type: ignore[override]
    def training(self) -> bool:
        """The wrapped module's flag (PyTorch's: ``model.eval()`` before compiling, ``compiled.training`` False)."""
        return self.__dict__["_modules"]["_orig_mod"].training

    @training.setter
    def training(self, value: bool) -> None:
        mods = self.__dict__.get("_modules")
        if mods and "_orig_mod" in mods:  # (Module.__init__'s default is not the wrapped module's)
            mods["_orig_mod"].training = value

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.__dict__["_modules"]["_orig_mod"], name)

    def __setattr__(self, name: str, value) -> None:
        """As PyTorch's: a class attribute or the wrapper's own names on the wrapper, anything else (a flag, a
        submodule, a parameter, a buffer) on the wrapped module, whose forward reads it."""
        if name in OptimizedModule._OWN or hasattr(type(self), name) or "_orig_mod" not in self._modules:
            return super().__setattr__(name, value)
        setattr(self._modules["_orig_mod"], name, value)

    def __delattr__(self, name: str) -> None:
        if name in OptimizedModule._OWN or hasattr(type(self), name):
            return super().__delattr__(name)
        delattr(self._modules["_orig_mod"], name)

    def __dir__(self):
        mine = self._modules["_orig_mod"].__dir__()
        return mine + [k for k in super().__dir__() if k not in mine]

    def __len__(self) -> int:
        mod = self._modules["_orig_mod"]
        if not hasattr(type(mod), "__len__"):
            raise TypeError(f"{type(mod).__name__} does not support len()")
        return len(mod)


def compile_in_place(module: Module, fullgraph: bool = False, recompile_limit: int | None = None, mode=None,
                     options=None, backend: Any = None) -> None:
    """``Module.compile()``: the module's own calls are captured and replayed from now on (state_dict unchanged);
    ``mode="max-autotune"``/``options={"host_fusion": True}``: see :mod:`.hostfuse`; ``backend``: see
    :mod:`.backends`."""
    choice = _backends.resolve(backend, mode, options)
    own = _uncompiled_forward(module)  # an instance forward (a patched or wrapped forward) is what calls run
    module.__dict__["forward"] = _fresh_capture(module, False, fullgraph, recompile_limit, choice.host_fusion,
                                                choice.fused, own)


def _uncompiled_forward(module: Module) -> Callable | None:
    """The module's instance ``forward`` without an earlier ``Module.compile()``'s capture (None: the class's).
    PyTorch's ``Module.compile`` makes a new compiled call each time: a second call's options hold from then on
    (their captures made afresh), and ``compile(disable=True)`` calls the module as it was."""
    own = module.__dict__.get("forward")
    if isinstance(own, ModuleCapture):
        own = own.fn if own.own else None
        if own is None:
            del module.__dict__["forward"]
        else:
            module.__dict__["forward"] = own
    return own
