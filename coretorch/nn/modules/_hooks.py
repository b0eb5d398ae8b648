"""Module hooks: the global hook registries (``register_module_forward_hook`` & co, for every module) and the
hooked call of a module (``Module._call_with_hooks``: pre-hooks, forward hooks, backward hooks).  Public through
:mod:`coretorch.nn.modules.module`, whose ``Module`` has these functions as methods."""
from __future__ import annotations

import functools
import warnings
from collections import OrderedDict

from ...tensor import Tensor
from ...utils.hooks import BackwardHook, RemovableHandle

# ---- global hooks (apply to every module) -------------------------------------------------------
_global_backward_pre_hooks: OrderedDict = OrderedDict()
_global_backward_hooks: OrderedDict = OrderedDict()
_global_is_full_backward_hook = None
_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_forward_hooks_always_called: OrderedDict = OrderedDict()
_global_forward_hooks_with_kwargs: OrderedDict = OrderedDict()
_global_buffer_registration_hooks: OrderedDict = OrderedDict()
_global_module_registration_hooks: OrderedDict = OrderedDict()
_global_parameter_registration_hooks: OrderedDict = OrderedDict()


def register_module_buffer_registration_hook(hook) -> RemovableHandle:
    """``hook(module, name, buffer) -> None or new buffer`` runs in every ``register_buffer``."""
    return RemovableHandle.add(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook) -> RemovableHandle:
    """``hook(module, name, submodule) -> None or new submodule`` runs in every ``register_module``."""
    return RemovableHandle.add(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook) -> RemovableHandle:
    """``hook(module, name, param) -> None or new param`` runs in every ``register_parameter``."""
    return RemovableHandle.add(_global_parameter_registration_hooks, hook)


def register_module_forward_pre_hook(hook) -> RemovableHandle:
    """A forward pre-hook common to all modules (runs before the modules' own pre-hooks)."""
    return RemovableHandle.add(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook, *, with_kwargs: bool = False, always_call: bool = False) -> RemovableHandle:
    """A forward hook common to all modules (runs before the modules' own forward hooks)."""
    handle = RemovableHandle(_global_forward_hooks,
                             extra_dict=[_global_forward_hooks_always_called, _global_forward_hooks_with_kwargs])
    _global_forward_hooks[handle.id] = hook
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def register_module_backward_hook(hook) -> RemovableHandle:
    """Deprecated (non-full) global backward hook; prefer ``register_module_full_backward_hook``."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is True:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a global Module "
                           "hook. Please use only one of them.")
    _global_is_full_backward_hook = False
    return RemovableHandle.add(_global_backward_hooks, hook)


def register_module_full_backward_pre_hook(hook) -> RemovableHandle:
    return RemovableHandle.add(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook) -> RemovableHandle:
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is False:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a global Module "
                           "hook. Please use only one of them.")
    _global_is_full_backward_hook = True
    return RemovableHandle.add(_global_backward_hooks, hook)


class _WrappedHook:
    """A legacy (non-full) backward hook as a graph-node post hook: ``hook(module, grad_in, grad_out)``."""

    def __init__(self, hook, module):
        self.hook = hook
        self.module = module
        functools.update_wrapper(self, hook)

    def __call__(self, grad_input, grad_output):
        return self.hook(self.module, grad_input, grad_output)


def _get_backward_hooks(self):
    """Module._get_backward_hooks: (full, non-full) backward hooks, the global ones first."""
    full, non_full = [], []
    if _global_is_full_backward_hook is True:
        full += _global_backward_hooks.values()
    if self._is_full_backward_hook is True:
        full += self._backward_hooks.values()
    if _global_is_full_backward_hook is False:
        non_full += _global_backward_hooks.values()
    if self._is_full_backward_hook is False:
        non_full += self._backward_hooks.values()
    return full, non_full

def _get_backward_pre_hooks(self):
    return [*_global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]


def _maybe_warn_non_full_backward_hook(inputs, result, grad_fn) -> None:
    """PyTorch's FutureWarnings for a (deprecated) non-full backward hook whose grad_input or grad_output will
    miss values: not tensors in and out, outputs of several nodes, or a forward of several nodes."""
    def warn(msg: str) -> None:
        warnings.warn(msg, FutureWarning, stacklevel=4)

    if isinstance(result, Tensor):
        result = (result,)
    elif not (isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)):
        return warn("Using non-full backward hooks on a Module that does not return a single Tensor or a tuple of "
                    "Tensors is deprecated and will be removed in future versions. This hook will be missing some "
                    "of the grad_output. Please use register_full_backward_hook to get the documented behavior.")
    if not all(isinstance(i, Tensor) for i in inputs):
        return warn("Using non-full backward hooks on a Module that does not take as input a single Tensor or a "
                    "tuple of Tensors is deprecated and will be removed in future versions. This hook will be "
                    "missing some of the grad_input. Please use register_full_backward_hook to get the documented "
                    "behavior.")
    out_grad_fn = {r.grad_fn for r in result if r.grad_fn is not None}
    if not out_grad_fn or (len(out_grad_fn) == 1 and grad_fn not in out_grad_fn):
        warn("Using a non-full backward hook when outputs are nested in python data structure is deprecated and "
             "will be removed in future versions. This hook will be missing some grad_output.")
    elif len(out_grad_fn) > 1:
        warn("Using a non-full backward hook when outputs are generated by different autograd Nodes is deprecated "
             "and will be removed in future versions. This hook will be missing some grad_output. Please use "
             "register_full_backward_hook to get the documented behavior.")
    elif {i.grad_fn for i in inputs if i.grad_fn is not None} != {n[0] for n in grad_fn.next_functions}:
        warn("Using a non-full backward hook when the forward contains multiple autograd Nodes is deprecated and "
             "will be removed in future versions. This hook will be missing some grad_input. Please use "
             "register_full_backward_hook to get the documented behavior.")


def _call_with_hooks(self, args, kwargs):
    result = None
    called_always = set()
    try:
        full_bw, non_full_bw = [], []
        bw_pre = []
        if self._backward_pre_hooks or _global_backward_pre_hooks:
            bw_pre = self._get_backward_pre_hooks()
        if self._backward_hooks or _global_backward_hooks:
            full_bw, non_full_bw = self._get_backward_hooks()
        if _global_forward_pre_hooks or self._forward_pre_hooks:
            for hook_id, hook in (*_global_forward_pre_hooks.items(), *self._forward_pre_hooks.items()):
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    r = hook(self, args, kwargs)
                    if r is not None:
                        if isinstance(r, tuple) and len(r) == 2:
                            args, kwargs = r
                        else:
                            raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, "
                                               f"new_kwargs), but got {r}.")
                else:
                    r = hook(self, args)
                    if r is not None:
                        args = r if isinstance(r, tuple) else (r,)
        bw_hook = None
        if full_bw or bw_pre:
            bw_hook = BackwardHook(self, full_bw, bw_pre)
            args = bw_hook.setup_input_hook(args)
        result = self.forward(*args, **kwargs)
        if _global_forward_hooks or self._forward_hooks:
            for hook_id, hook in (*_global_forward_hooks.items(), *self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called or hook_id in _global_forward_hooks_always_called:
                    called_always.add(hook_id)
                if hook_id in self._forward_hooks_with_kwargs or hook_id in _global_forward_hooks_with_kwargs:
                    r = hook(self, args, kwargs, result)
                else:
                    r = hook(self, args, result)
                if r is not None:
                    result = r
        if bw_hook is not None:
            if not isinstance(result, (Tensor, tuple)):
                warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of "
                              f"Tensors but received {type(result)}")
            result = bw_hook.setup_output_hook(result)
        if non_full_bw:
            var = result
            while not isinstance(var, Tensor):
                if isinstance(var, dict):
                    var = next(v for v in var.values() if isinstance(v, Tensor))
                else:
                    var = var[0]
            if var.grad_fn is not None:
                for hook in non_full_bw:
                    var.grad_fn.register_hook(_WrappedHook(hook, self))
                _maybe_warn_non_full_backward_hook(args, result, var.grad_fn)
        return result
    except Exception:
        # run the always_call forward hooks that have not run yet, then re-raise
        for hook_id, hook in _global_forward_hooks.items():
            if hook_id in _global_forward_hooks_always_called and hook_id not in called_always:
                try:
                    r = hook(self, args, kwargs, result) if hook_id in _global_forward_hooks_with_kwargs \
                        else hook(self, args, result)
                    if r is not None:
                        result = r
                except Exception as e:
                    warnings.warn("global module forward hook with ``always_call=True`` raised an exception "
                                  f"that was silenced as another error was raised in forward: {e}")
        for hook_id, hook in self._forward_hooks.items():
            if hook_id in self._forward_hooks_always_called and hook_id not in called_always:
                try:
                    r = hook(self, args, kwargs, result) if hook_id in self._forward_hooks_with_kwargs \
                        else hook(self, args, result)
                    if r is not None:
                        result = r
                except Exception as e:
                    warnings.warn("module forward hook with ``always_call=True`` raised an exception that was "
                                  f"silenced as another error was raised in forward: {e}")
        raise
