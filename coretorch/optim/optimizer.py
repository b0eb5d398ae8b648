"""Optimizer: the base class of every optimizer, with PyTorch's semantics.

A new optimizer is a subclass that writes only ``__init__`` (hyper-parameter checks, then
``super().__init__(params, defaults)``) and ``step(closure=None)``; the base class provides param groups,
per-parameter ``state``, ``zero_grad``, ``state_dict``/``load_state_dict`` in PyTorch's layout, step hooks
and the plugin observation hook.  ``step`` of every subclass is wrapped once, at class creation, so that
the hooks run around it.
"""
from __future__ import annotations

import functools
import math
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Iterable
from copy import deepcopy
from itertools import chain, count as itertools_count
from typing import Any
from weakref import WeakKeyDictionary

from ..autograd.grad_mode import state as _grad_state
from .._typename import typename as _typename
from ..autograd.graph import RemovableHandle
from ..plugins.manager import manager as _manager
from ..tensor import Tensor
from ._optimizer_helpers import (  # noqa: F401  (torch.optim.optimizer's helpers that outside optimizers import)
    ParamsT, _default_to_fused_or_foreach, _get_scalar_dtype, _get_value, _stack_if_compiling, _to_scalar)

__all__ = ["Optimizer", "ParamsT", "required", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]


class _RequiredParameter:
    """Singleton marking a hyper-parameter that every param group must specify (e.g. ``lr``)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

# the creation order of optimizers and LR schedulers (coretorch.compile: one made during a capture is no segment of
# its replay, which would step the capture's object at every call); kept here, not in their ``__dict__`` (which a
# scheduler's state_dict() returns)
serial = itertools_count()
born: "WeakKeyDictionary[Any, int]" = WeakKeyDictionary()


def note_born(obj: Any) -> None:
    try:
        born[obj] = next(serial)
    except TypeError:  # (an unhashable user subclass: taken for one made before any capture)
        pass


_global_optimizer_pre_hooks: OrderedDict = OrderedDict()
_global_optimizer_post_hooks: OrderedDict = OrderedDict()


def register_optimizer_step_pre_hook(hook) -> RemovableHandle:
    """``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)`` before every optimizer's step."""
    return RemovableHandle.add(_global_optimizer_pre_hooks, hook)


def register_optimizer_step_post_hook(hook) -> RemovableHandle:
    """``hook(optimizer, args, kwargs) -> None`` after every optimizer's step."""
    return RemovableHandle.add(_global_optimizer_post_hooks, hook)


def _dispatch_sqrt(x):
    """``math.sqrt`` of a number; ``x.sqrt()`` of a tensor or of a number recorded symbolically by
    ``coretorch.compile`` (PyTorch's ``torch.optim.optimizer._dispatch_sqrt``)."""
    if isinstance(x, Tensor) or isinstance(x, float) and type(x) is not float and hasattr(x, "sqrt"):
        return x.sqrt()
    return math.sqrt(x)


def _hooked_step(func):
    """Wrap a subclass's ``step``: pre hooks, the step, the observation hook, post hooks."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        self = args[0]
        if self.__dict__.get("_in_step"):  # a subclass step calling super().step(): hooks run once
            return func(*args, **kwargs)
        pre = self._optimizer_step_pre_hooks
        for pre_hook in chain(_global_optimizer_pre_hooks.values(), pre.values()) if (
                _global_optimizer_pre_hooks or pre) else ():
            result = pre_hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(f"{func} must return None or a tuple of (new_args, new_kwargs), but got "
                                       f"{result}.")
        self._in_step = True
        try:
            out = func(*args, **kwargs)
        finally:
            self._in_step = False
        self._opt_called = True
        if _manager.observing["optimizer_step"]:  # plugin observation hook: free when nobody listens
            _manager.pm.hook.coretorch_optimizer_step(optimizer=self)
        post = self._optimizer_step_post_hooks
        if post or _global_optimizer_post_hooks:
            for post_hook in chain(post.values(), _global_optimizer_post_hooks.values()):
                post_hook(self, args, kwargs)
        return out

    wrapper.hooked = True
    return wrapper


def _use_grad_for_differentiable(func):
    """Run ``step`` with grad mode = ``defaults['differentiable']`` (off for ordinary optimizers)."""

    @functools.wraps(func)
    def wrapper(self, *args, **kwargs):
        prev = _grad_state.enabled
        _grad_state.enabled = bool(self.defaults.get("differentiable", False))
        try:
            return func(self, *args, **kwargs)
        finally:
            _grad_state.enabled = prev
    return wrapper


class Optimizer:
    """Base class for all optimizers.

    ``params`` is an iterable of tensors or of dicts (parameter groups, each with a ``"params"`` entry and
    optional per-group hyper-parameters); ``defaults`` holds the hyper-parameters a group does not set.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and callable(step) and not getattr(step, "hooked", False):
            cls.step = _hooked_step(step)

    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls)
        note_born(self)
        return self

    def __init__(self, params, defaults: dict):
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict = OrderedDict()

        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {_typename(params)}")
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict] = []

        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    # -- pickling-style state (used by load_state_dict; coretorch never pickles) ---------------------
    def __getstate__(self) -> dict:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
                     "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self.defaults.setdefault("differentiable", False)

    def __repr__(self) -> str:
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"

    # -- parameter groups ---------------------------------------------------------------------------
    def add_param_group(self, param_group: dict) -> None:
        """Add a group (a dict with ``"params"``); missing hyper-parameters are taken from ``defaults``."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, (set, frozenset)):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)

        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names

        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)

        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)

        seen: set = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                txt = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {txt} to the optimizer")
        if not seen.isdisjoint(id(p) for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # -- gradients and stepping ---------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors (to None by default, as in PyTorch 2)."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if set_to_none:
                    p._grad = None
                else:
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    def step(self, closure=None):
        """Perform one optimization step; ``closure`` re-evaluates the model and returns the loss."""
        raise NotImplementedError

    # -- hooks ----------------------------------------------------------------------------------------
    def register_step_pre_hook(self, hook) -> RemovableHandle:
        """``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)`` before this optimizer's step."""
        return RemovableHandle.add(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook) -> RemovableHandle:
        """``hook(optimizer, args, kwargs) -> None`` after this optimizer's step."""
        return RemovableHandle.add(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer)`` before ``state_dict()`` builds its result."""
        return RemovableHandle.add(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict) -> None or new state_dict`` after ``state_dict()``."""
        return RemovableHandle.add(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict) -> None or new state_dict`` before ``load_state_dict``."""
        return RemovableHandle.add(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer)`` after ``load_state_dict``."""
        return RemovableHandle.add(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # -- state dict -----------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """``{"state": {param_index: {...}}, "param_groups": [{..., "params": [param_index, ...]}]}``.

        Parameters are numbered by their order across the groups; state tensors are references (copy them,
        or ``coretorch.save`` the dict, to keep a snapshot)."""
        from ._lr_base import _python_state_read  # (a module above this one)
        _python_state_read(f"{type(self).__name__}.state_dict()")  # (the groups' numbers: lr a scheduler sets)
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        param_mappings: dict = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start_index)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    @staticmethod
    def _process_value_according_to_param_policy(param: Tensor, value: Tensor, key=None) -> Tensor:
        if key == "step":
            return value
        if param.is_floating_point():
            return value.to(device=param.device, dtype=param.dtype)
        return value.to(device=param.device)

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a dict made by ``state_dict()`` (possibly by another process, via coretorch.save/load)."""
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def _cast(param, value, key=None):
            if isinstance(value, Tensor):
                return Optimizer._process_value_according_to_param_policy(param, value, key)
            if isinstance(value, dict):
                return {k: _cast(param, v, key=k) for k, v in value.items()}
            if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
                return type(value)(_cast(param, v) for v in value)
            return value

        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = _cast(param, v)
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)
