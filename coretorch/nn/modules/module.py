"""nn.Module: parameter/buffer/submodule registration, the member walker, hooks, state_dict, repr.

PyTorch's ``torch/nn/modules/module.py`` is the spec: same attribute dicts, error messages, hook
semantics (pre-hooks may replace the input, forward hooks the output; full backward hooks run through an
identity ``autograd.Function`` around the module's inputs and outputs), ``state_dict`` key order and
``repr`` layout.
"""
from __future__ import annotations

from typing import Any, TypeVar

import functools
import inspect
from collections import OrderedDict

from ..._typename import typename as _typename
from ...autograd.grad_mode import no_grad
from ...plugins.manager import manager as _plugin_manager
from ...tensor import Tensor
from ...utils.hooks import RemovableHandle
from ..parameter import Buffer, Parameter
from . import _hooks, _state_dict
# the hook registries and the state_dict machinery live in their own modules; their names stay importable here
from ._hooks import (_WrappedHook, _global_backward_hooks, _global_backward_pre_hooks,  # noqa: F401
                     _global_buffer_registration_hooks, _global_forward_hooks, _global_forward_hooks_always_called,
                     _global_forward_hooks_with_kwargs, _global_forward_pre_hooks, _global_module_registration_hooks,
                     _global_parameter_registration_hooks, register_module_backward_hook,
                     register_module_buffer_registration_hook, register_module_forward_hook,
                     register_module_forward_pre_hook, register_module_full_backward_hook,
                     register_module_full_backward_pre_hook, register_module_module_registration_hook,
                     register_module_parameter_registration_hook)
from ._state_dict import _EXTRA_STATE_KEY_SUFFIX, _IncompatibleKeys  # noqa: F401

__all__ = ["Module", "register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_backward_hook", "register_module_full_backward_pre_hook",
           "register_module_full_backward_hook", "register_module_buffer_registration_hook",
           "register_module_module_registration_hook", "register_module_parameter_registration_hook"]

_observing = _plugin_manager.observing


def __getattr__(name: str) -> Any:
    if name == "_global_is_full_backward_hook":  # rebound by the register functions: read it where it lives
        return _hooks._global_is_full_backward_hook
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _addindent(s_: str, num_spaces: int) -> str:
    s = s_.split("\n")
    if len(s) == 1:
        return s_
    first = s.pop(0)
    return first + "\n" + "\n".join((num_spaces * " ") + line for line in s)


def _forward_unimplemented(self, *input):
    """Override: the computation of the module. Call the module (``module(x)``), not ``forward``, so that hooks
    run.
    """
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


def _register_buffer_legacy(module: "Module", name: str, value, persistent: bool) -> None:
    """``module.<name> = value`` for a subclass that overrides ``register_buffer``: PyTorch passes ``persistent``
    only where the override takes it (libraries written before the argument existed), and refuses a
    non-persistent buffer where it does not."""
    if "persistent" in inspect.signature(module.register_buffer).parameters:
        module.register_buffer(name, value, persistent)
    elif not persistent:
        raise RuntimeError("Registering a non-persistent buffer on a Module subclass that implements "
                           "register_buffer() without the persistent argument is not allowed.")
    else:
        module.register_buffer(name, value)


class Module:
    """Base class for all neural network modules (``coretorch.nn.Module``)."""

    dump_patches: bool = False
    # (PyTorch's type variable of state_dict's destination: a class attribute, so no buffer may take its name)
    T_destination = TypeVar("T_destination", bound=dict[str, Any])
    _version: int = 1
    training: bool
    call_super_init: bool = False
    forward = _forward_unimplemented
    # set per instance in __init__ (through __dict__, bypassing __setattr__)
    _parameters: dict[str, Any]
    _buffers: dict[str, Any]
    _modules: dict[str, Any]
    _is_full_backward_hook: bool | None

    def __init__(self, *args, **kwargs) -> None:
        if not self.call_super_init and kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if not self.call_super_init and args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but {len(args) + 1} "
                            "were given")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent_buffers_set"] = set()
        d["_backward_pre_hooks"] = OrderedDict()
        d["_backward_hooks"] = OrderedDict()
        d["_is_full_backward_hook"] = None
        d["_forward_hooks"] = OrderedDict()
        d["_forward_hooks_with_kwargs"] = OrderedDict()
        d["_forward_hooks_always_called"] = OrderedDict()
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_pre_hooks_with_kwargs"] = OrderedDict()
        d["_state_dict_hooks"] = OrderedDict()
        d["_state_dict_pre_hooks"] = OrderedDict()
        d["_load_state_dict_pre_hooks"] = OrderedDict()
        d["_load_state_dict_post_hooks"] = OrderedDict()
        d["_modules"] = {}
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    # ---- registration ---------------------------------------------------------------------------
    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """Add a tensor that is part of the module's state but not a parameter (e.g. BatchNorm's running mean).

        Args:
            name (str): the attribute name.
            tensor (Tensor or None): the buffer; moved and cast with the module.
            persistent (bool): include it in ``state_dict`` (default True).
        """
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError("buffer name can't contain \".\"")
        if name == "":
            raise KeyError("buffer name can't be empty string \"\"")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        # (an nn.Buffer's own ``persistent`` counts only when it is assigned as an attribute: register_buffer
        # takes its ``persistent`` argument, as PyTorch's does)
        for hook in _global_buffer_registration_hooks.values():
            output = hook(self, name, tensor)
            if output is not None:
                tensor = output
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param) -> None:
        """Add a Parameter (or None) as ``self.<name>``; ``setattr`` does the same for Parameter values."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError("parameter name can't contain \".\"")
        if name == "":
            raise KeyError("parameter name can't be empty string \"\"")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        if param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             f"created explicitly. To express '{name}' as a function of another Tensor, compute "
                             "the value in the forward() method.")
        for hook in _global_parameter_registration_hooks.values():
            output = hook(self, name, param)
            if output is not None:
                param = output
        self._parameters[name] = param

    def add_module(self, name: str, module) -> None:
        """Register a child module as ``self.<name>`` (``setattr`` does the same for Module values)."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f"module name can't contain \".\", got: {name}")
        if name == "":
            raise KeyError("module name can't be empty string \"\"")
        for hook in _global_module_registration_hooks.values():
            output = hook(self, name, module)
            if output is not None:
                module = output
        self._modules[name] = module

    def register_module(self, name: str, module) -> None:
        """Alias of :meth:`add_module`."""
        self.add_module(name, module)

    def get_submodule(self, target: str) -> "Module":
        """The submodule at the dotted path ``target`` (``"encoder.layers.0"``); AttributeError if missing."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def set_submodule(self, target: str, module: "Module", strict: bool = False) -> None:
        """Replace the submodule at the dotted path ``target`` with ``module``; ``strict=True`` refuses to add a
        new name, and an existing attribute that is no Module (a parameter, a number) is never replaced."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent = self.get_submodule(".".join(atoms[:-1]))
        name = atoms[-1]
        if strict and not hasattr(parent, name):
            raise AttributeError(parent._get_name() + " has no attribute `" + name + "`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError("`" + name + "` is not an nn.Module")
        setattr(parent, name, module)

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at the dotted path ``target`` (``"block.fc.weight"``); AttributeError if missing."""
        module_path, _, param_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, param_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + param_name + "`")
        param = getattr(mod, param_name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + param_name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at the dotted path ``target`` (``"block.bn.running_mean"``); AttributeError if missing."""
        module_path, _, buffer_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, buffer_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + buffer_name + "`")
        buffer = getattr(mod, buffer_name)
        if buffer_name not in mod._buffers:
            raise AttributeError("`" + buffer_name + "` is not a buffer")
        return buffer

    def get_extra_state(self):
        """Override to save extra (non-tensor) state in ``state_dict`` under ``_extra_state``."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called. Please "
                           "file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
                           "to report this bug.")

    def set_extra_state(self, state) -> None:
        """Override to restore the state returned by :meth:`get_extra_state` in ``load_state_dict``."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called. Please "
                           "file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
                           "to report this bug.")

    # ---- attribute protocol ---------------------------------------------------------------------
    def __getattr__(self, name: str):
        d = self.__dict__
        if "_parameters" in d:
            p = d["_parameters"]
            if name in p:
                return p[name]
        if "_buffers" in d:
            b = d["_buffers"]
            if name in b:
                return b[name]
        if "_modules" in d:
            m = d["_modules"]
            if name in m:
                return m[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__

        def remove_from(*dicts_or_sets):
            for s in dicts_or_sets:
                if name in s:
                    if isinstance(s, dict):
                        del s[name]
                    else:
                        s.discard(name)

        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(d, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = d.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(d, self._parameters, self._buffers, self._non_persistent_buffers_set)
                for hook in _global_module_registration_hooks.values():
                    output = hook(self, name, value)
                    if output is not None:
                        value = output
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                    "(torch.nn.Module or None expected)")
                for hook in _global_module_registration_hooks.values():
                    output = hook(self, name, value)
                    if output is not None:
                        value = output
                modules[name] = value
            else:
                buffers = d.get("_buffers")
                if isinstance(value, Buffer) or buffers is not None and name in buffers:
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                        "(torch.nn.Buffer, torch.Tensor or None expected)")
                    if buffers is None:
                        raise AttributeError("cannot assign buffer before Module.__init__() call")
                    if isinstance(value, Buffer):
                        persistent = value.persistent
                    else:
                        persistent = name not in self._non_persistent_buffers_set
                    # (no name is removed: a plain attribute of that name makes register_buffer raise, as PyTorch)
                    if type(self).register_buffer is Module.register_buffer:
                        self.register_buffer(name, value, persistent)
                    else:
                        _register_buffer_legacy(self, name, value, persistent)
                else:
                    object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = (dir(self.__class__) + list(self.__dict__) + list(self._parameters) + list(self._modules)
                + list(self._buffers))
        return sorted(k for k in keys if not k[0].isdigit())

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        for name in ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks",
                     "_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_state_dict_hooks",
                     "_state_dict_pre_hooks", "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks",
                     "_backward_pre_hooks"):
            if name not in self.__dict__:
                self.__dict__[name] = OrderedDict()
        self.__dict__.setdefault("_non_persistent_buffers_set", set())
        self.__dict__.setdefault("_is_full_backward_hook", None)
        for k, v in self.__dict__.items():  # a compiled forward of another module (copy.copy): one of this module
            if (k == "forward" or k.startswith("_ct_compiled_")) and getattr(type(v), "rebound", None) is not None \
                    and v.module is not self:
                self.__dict__[k] = v.rebound(self)

    # ---- the member walker ----------------------------------------------------------------------
    def _named_members(self, get_members_fn, prefix: str = "", recurse: bool = True,
                       remove_duplicate: bool = True):
        """(name, member) for every member of every (sub)module; each object once unless
        ``remove_duplicate=False``.  Behind named_parameters/buffers/children."""
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or id(v) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def parameters(self, recurse: bool = True):
        """An iterator over the module's parameters (with ``recurse``, those of every submodule too); what an
        optimizer takes.

        Example:
            >>> model = nn.Linear(2, 3)
            >>> tuple(p.shape for p in model.parameters())
            (coretorch.Size([3, 2]), coretorch.Size([3]))
            >>> opt = torch.optim.SGD(model.parameters(), lr=0.1)
        """
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """An iterator over ``(dotted name, parameter)`` pairs, the names of ``state_dict``.

        Args:
            prefix (str): prepended to every name.
            recurse (bool): include the parameters of submodules (default True).
            remove_duplicate (bool): yield a shared (tied) parameter once (default True).

        Example:
            >>> tuple(n for n, _ in nn.Linear(2, 3).named_parameters())
            ('weight', 'bias')
        """
        yield from self._named_members(lambda m: m._parameters.items(), prefix=prefix, recurse=recurse,
                                       remove_duplicate=remove_duplicate)

    def buffers(self, recurse: bool = True):
        """An iterator over the module's buffers (with ``recurse``, those of every submodule too)."""
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """An iterator over ``(dotted name, buffer)`` pairs.

        Args:
            prefix (str): prepended to every name.
            recurse (bool): include the buffers of submodules (default True).
            remove_duplicate (bool): yield a shared buffer once (default True).
        """
        yield from self._named_members(lambda m: m._buffers.items(), prefix=prefix, recurse=recurse,
                                       remove_duplicate=remove_duplicate)

    def children(self):
        """An iterator over the immediate child modules."""
        for _, module in self.named_children():
            yield module

    def named_children(self):
        """An iterator over ``(name, module)`` pairs of the immediate children."""
        yield from self._named_members(lambda m: m._modules.items(), recurse=False)

    def modules(self, remove_duplicate: bool = True):
        """An iterator over every module of the tree, ``self`` first (each shared module once unless
        ``remove_duplicate=False``)."""
        for _, module in self.named_modules(remove_duplicate=remove_duplicate):
            yield module

    def named_modules(self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True):
        """An iterator over ``(dotted name, module)`` pairs of the whole tree, ``("", self)`` first."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    # ---- modes, conversions ---------------------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        """Set training mode (``mode=False`` is :meth:`eval`) in every submodule; returns ``self``."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> "Module":
        """Set evaluation mode (``self.training = False`` in every submodule: dropout off, batch-norm uses
        running stats); returns ``self``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        """Set ``requires_grad`` of every parameter (e.g. False to freeze the module); returns ``self``."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every parameter: to None (default, ``set_to_none=True``) or to zeros."""
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    def apply(self, fn) -> "Module":
        """Call ``fn`` on every submodule (children first) and on ``self``; returns ``self``.

        Example:
            >>> model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
            >>> def init(m):
            ...     if isinstance(m, nn.Linear):
            ...         nn.init.zeros_(m.bias)
            >>> model.apply(init) is model
            True
            >>> model[0].bias
            Parameter containing:
            tensor([0., 0., 0.], requires_grad=True)
        """
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def _apply(self, fn, recurse: bool = True) -> "Module":
        """Apply ``fn`` to every parameter, gradient and buffer.  Parameters stay the same objects (their
        ``.data`` is replaced), as PyTorch does for conversions between compatible tensor types."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        from ... import __future__ as future
        overwrite = (future._overwrite_module_params_on_conversion
                     and not future._swap_module_params_on_conversion)
        for key, param in self._parameters.items():
            if param is None:
                continue
            with no_grad():
                param_applied = fn(param)
            param_grad = param.grad
            if overwrite:  # torch.__future__: a new Parameter (and gradient) instead of the old one's .data
                out = Parameter(param_applied, param.requires_grad)
                if param_grad is not None:
                    with no_grad():
                        out.grad = fn(param_grad).requires_grad_(param_grad.requires_grad)
                self._parameters[key] = out
                continue
            if param_applied is not param:
                if param_grad is not None:
                    param.grad = None  # detached while both change dtype/device, then re-attached
                param.data = param_applied
            if param_grad is not None:
                with no_grad():
                    grad_applied = fn(param_grad)
                if grad_applied is not param_grad:
                    param_grad.data = grad_applied
                param.grad = param_grad
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs) -> "Module":
        """Move and/or cast the parameters and buffers, in place; returns ``self``.

        Accepts ``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(tensor)`` (its device and dtype) and
        the keywords ``device``, ``dtype``, ``non_blocking``. Only floating-point tensors are cast.

        Example:
            >>> model = nn.Linear(2, 3)
            >>> model.to(torch.float64).weight.dtype
            coretorch.float64
            >>> # (skipped by the doctest run: it needs the opencl plugin)
            >>> model = model.to("opencl")  # doctest: +SKIP
        """
        from ...ops.creation import parse_to_args
        device, dtype, _ = parse_to_args(args, dict(kwargs))
        if "copy" in kwargs or sum(isinstance(a, bool) for a in args) > 1:  # (Tensor.to's 4th argument)
            raise RuntimeError(".to() does not accept copy argument")
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={dtype}")

        fmt = kwargs.get("memory_format")

        def convert(t):
            if fmt is not None and t.dim() in (4, 5):  # (PyTorch: the 4-D and 5-D tensors, in memory_format)
                return t.to(device=device, dtype=dtype if t.is_floating_point() else None, memory_format=fmt)
            return t.to(device=device, dtype=dtype if t.is_floating_point() else None)
        return self._apply(convert)

    def cpu(self) -> "Module":
        """Move every parameter and buffer to the cpu device, in place; returns ``self``."""
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None) -> "Module":
        """Move the module to a CUDA device (raises: coretorch has no CUDA; use ``to(device)``)."""
        return self._apply(lambda t: t.to("cuda" if device is None else f"cuda:{int(device)}"
                                          if isinstance(device, int) else device))

    def xpu(self, device=None) -> "Module":
        """Move the module to an XPU device (raises: coretorch has none; use ``to(device)``)."""
        return self._apply(lambda t: t.xpu(device))

    def ipu(self, device=None) -> "Module":
        """Move the module to an IPU device (raises: coretorch has none; use ``to(device)``)."""
        return self._apply(lambda t: t.to("ipu" if device is None else f"ipu:{int(device)}"
                                          if isinstance(device, int) else device))

    def mtia(self, device=None) -> "Module":
        """Move the module to an MTIA device (raises: coretorch has none; use ``to(device)``)."""
        return self._apply(lambda t: t.to("mtia" if device is None else f"mtia:{int(device)}"
                                          if isinstance(device, int) else device))

    def type(self, dst_type) -> "Module":
        """Cast every parameter and buffer to ``dst_type`` (a dtype); returns ``self``."""
        return self._apply(lambda t: t.type(dst_type))

    def float(self) -> "Module":
        """Cast floating-point parameters and buffers to float32, in place; returns ``self``."""
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self) -> "Module":
        """Cast floating-point parameters and buffers to float64, in place; returns ``self``."""
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self) -> "Module":
        """Cast floating-point parameters and buffers to float16, in place; returns ``self``."""
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self) -> "Module":
        """Cast floating-point parameters and buffers to bfloat16, in place; returns ``self``."""
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def to_empty(self, *, device, recurse: bool = True) -> "Module":
        """Parameters and buffers moved to ``device`` as uninitialised storage (then re-initialise them)."""
        from ...ops.creation import empty_like
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def share_memory(self) -> "Module":
        """Parameters, buffers and gradients moved into shared memory (cpu), for Hogwild-style training."""
        for t in (*self.parameters(), *self.buffers()):
            t.share_memory_()
        return self

    # ---- hooks ----------------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False):
        """``hook(module, args) -> None | new args`` (or ``hook(module, args, kwargs) -> None | (args,
        kwargs)`` with ``with_kwargs=True``), called before ``forward``."""
        handle = RemovableHandle(self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False):
        """``hook(module, args, output) -> None | new output`` (``hook(module, args, kwargs, output)`` with
        ``with_kwargs=True``), called after ``forward``; ``always_call`` runs it even if forward raised."""
        handle = RemovableHandle(self._forward_hooks,
                                 extra_dict=[self._forward_hooks_with_kwargs, self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend: bool = False):
        """``hook(module, grad_output) -> None | new grad_output``, when the output gradients are known."""
        return RemovableHandle.add(self._backward_pre_hooks, hook, prepend)

    def register_full_backward_hook(self, hook, prepend: bool = False):
        """``hook(module, grad_input, grad_output) -> None | new grad_input``, when the gradients with
        respect to the module's inputs are computed."""
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        self._is_full_backward_hook = True
        return RemovableHandle.add(self._backward_hooks, hook, prepend)

    def register_backward_hook(self, hook):
        """Deprecated: the hook is attached to the ``grad_fn`` of the module's (first) output."""
        if self._is_full_backward_hook is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        self._is_full_backward_hook = False
        return RemovableHandle.add(self._backward_hooks, hook)

    _get_backward_hooks = _hooks._get_backward_hooks
    _get_backward_pre_hooks = _hooks._get_backward_pre_hooks

    def register_state_dict_pre_hook(self, hook):
        """``hook(module, prefix, keep_vars)`` before ``state_dict`` saves this module's tensors."""
        return RemovableHandle.add(self._state_dict_pre_hooks, hook)

    def register_state_dict_post_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata) -> None``: may edit ``state_dict`` in place (a
        returned value raises)."""
        hook._from_public_api = True  # (PyTorch marks the function: state_dict then refuses a returned value)
        return RemovableHandle.add(self._state_dict_hooks, hook)

    def _register_state_dict_hook(self, hook):
        """The private post-hook: ``hook(module, state_dict, prefix, local_metadata) -> None | new state_dict``
        (a returned dict replaces the root's result)."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook that was "
                               "previously registered via register_state_dict_post_hook")
        return RemovableHandle.add(self._state_dict_hooks, hook)

    def register_load_state_dict_pre_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs)`` before this module loads its tensors."""
        return RemovableHandle.add(self._load_state_dict_pre_hooks, functools.partial(hook, self))

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False):
        return RemovableHandle.add(self._load_state_dict_pre_hooks,
                                   functools.partial(hook, self) if with_module else hook)

    def register_load_state_dict_post_hook(self, hook):
        """``hook(module, incompatible_keys)``: may edit the missing/unexpected key lists in place."""
        return RemovableHandle.add(self._load_state_dict_post_hooks, hook)

    # ---- calling --------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        d = self.__dict__
        try:
            hooked = (d["_forward_hooks"] or d["_forward_pre_hooks"] or d["_backward_hooks"]
                      or d["_backward_pre_hooks"])
        except KeyError:  # a subclass that did not call Module.__init__()
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '_forward_hooks' (did its "
                                 "__init__ call super().__init__()?)") from None
        if (hooked or _global_forward_hooks or _global_forward_pre_hooks or _global_backward_hooks
                or _global_backward_pre_hooks):
            result = self._call_with_hooks(args, kwargs)
        else:
            result = self.forward(*args, **kwargs)
        if _observing["module_forward"]:
            _plugin_manager.pm.hook.coretorch_module_forward(module=self, inputs=args, output=result)
        return result

    _call_impl = _wrapped_call_impl = __call__  # (PyTorch's names of the call; code calls them directly)

    def _slow_forward(self, *input, **kwargs):
        """PyTorch's forward under its JIT tracer: here the plain ``forward``."""
        return self.forward(*input, **kwargs)

    _call_with_hooks = _hooks._call_with_hooks  # the hooked call (the plain one is __call__'s first branch)

    # ---- state dict -----------------------------------------------------------------------------
    _save_to_state_dict = _state_dict._save_to_state_dict

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """An ``OrderedDict`` of parameters and persistent buffers: this module's own first (parameters,
        then buffers, in registration order), then each submodule's under ``name.``."""
        return _state_dict.state_dict(self, *args, destination=destination, prefix=prefix, keep_vars=keep_vars)

    _load_from_state_dict = _state_dict._load_from_state_dict

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy parameters and buffers from ``state_dict``; returns ``(missing_keys, unexpected_keys)``.
        With ``strict=True`` missing or unexpected keys raise; a shape mismatch always raises."""
        return _state_dict.load_state_dict(self, state_dict, strict, assign)

    # ---- printing -------------------------------------------------------------------------------
    def _get_name(self) -> str:
        return self.__class__.__name__

    def extra_repr(self) -> str:
        """The module-specific part of ``repr`` (one line for most layers)."""
        return ""

    def __repr__(self) -> str:
        extra_lines = []
        extra_repr = self.extra_repr()
        if extra_repr:
            extra_lines = extra_repr.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        return main_str + ")"



# the moved functions keep the names they had here (pickles, reprs and tracebacks name coretorch.nn.modules.module)
for _f in (Module._get_backward_hooks, Module._get_backward_pre_hooks, Module._call_with_hooks,
           Module._save_to_state_dict, Module._load_from_state_dict):
    _f.__module__, _f.__qualname__ = __name__, f"Module.{_f.__name__}"
for _o in (_WrappedHook, _IncompatibleKeys, register_module_backward_hook, register_module_buffer_registration_hook,
           register_module_forward_hook, register_module_forward_pre_hook, register_module_full_backward_hook,
           register_module_full_backward_pre_hook, register_module_module_registration_hook,
           register_module_parameter_registration_hook):
    _o.__module__ = __name__
del _f, _o
