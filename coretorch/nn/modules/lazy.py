"""LazyModuleMixin (PyTorch's torch/nn/modules/lazy.py): modules whose parameters are UninitializedParameter /
UninitializedBuffer placeholders until the first forward infers their shapes from the input.

On the first call a forward pre-hook runs ``initialize_parameters(*args, **kwargs)``, which materialises the
placeholders in place (the same Parameter objects, so an optimizer built before the first forward trains them),
then the hooks go away and the module becomes ``cls_to_become`` (LazyLinear becomes Linear).  Loading a state
dict with real tensors materialises the matching placeholders first."""
from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, Callable

from ...autograd.grad_mode import no_grad
from ..parameter import is_lazy

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    """Mix in before a Module class; define ``initialize_parameters(input)`` and set ``cls_to_become``."""

    cls_to_become: type | None = None
    if TYPE_CHECKING:  # provided by the Module this is mixed into
        _parameters: dict[str, Any]
        _buffers: dict[str, Any]
        _register_load_state_dict_pre_hook: Callable[..., Any]
        register_forward_pre_hook: Callable[..., Any]
        _get_name: Callable[[], str]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._register_lazy_hooks()

    def _register_lazy_hooks(self) -> None:
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                        error_msgs) -> None:
        """Materialise each placeholder the state dict holds a real tensor for (its shape), before loading."""
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and param is not None:
                input_param = state_dict[key]
                if is_lazy(param) and not is_lazy(input_param):
                    with no_grad():
                        param.materialize(input_param.shape)

    def initialize_parameters(self, *args, **kwargs) -> None:
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self) -> bool:
        """Whether any parameter or buffer of this module is still a placeholder."""
        for param in itertools.chain(self._parameters.values(), self._buffers.values()):
            if is_lazy(param):
                return True
        return False

    def _infer_parameters(self, module, args, kwargs=None) -> None:
        kwargs = kwargs if kwargs else {}
        module.initialize_parameters(*args, **kwargs)
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with `DataParallel`. Run a dummy "
                           "forward pass to correctly initialize the modules")
