"""nn.utils.parametrize: a module's parameter or buffer computed from unconstrained tensors by a chain of modules
(``register_parametrization``), as PyTorch's: the module's class becomes ``Parametrized<Class>`` whose property
``<name>`` evaluates the chain on ``module.parametrizations[<name>].original``; assigning to it applies the chain's
``right_inverse``."""
from __future__ import annotations

import contextlib
import copy
import copyreg
from collections.abc import Sequence

from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["register_parametrization", "remove_parametrizations", "is_parametrized", "cached",
           "type_before_parametrizations", "transfer_parametrizations_and_params", "ParametrizationList"]

_cache_enabled = 0
_cache: dict = {}


@contextlib.contextmanager
def cached():
    """Inside the block each parametrized tensor is computed once and reused (e.g. a weight used many times in a
    recurrent network's steps)."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register_parameter_or_buffer(module: Module, name: str, x: Tensor) -> None:
    if isinstance(x, Parameter):
        module.register_parameter(name, x)
    else:
        module.register_buffer(name, x)


def _set_data(dst: Tensor, src: Tensor) -> None:
    """Replace ``dst``'s data keeping the object (PyTorch's ``set_`` here, which refuses another device: the
    original would silently move, e.g. to the cpu of a value assigned to a device module's weight)."""
    if src.device != dst.device:
        raise RuntimeError(f"Attempted to set the storage of a tensor on device \"{dst.device}\" to a storage on "
                           f"different device \"{src.device}\".  This is no longer allowed; the devices must match.")
    dst.data = src.detach().clone() if src is dst else src.detach()


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor and the unconstrained ``original`` (or ``original0``, ``original1``...
    when the first one's ``right_inverse`` returns several tensors)."""

    def __init__(self, modules, original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype is not new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                 f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}")
            if original.device != new.device:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the device.\n"
                                 f"original.device: {original.device}\nright_inverse(original).device: {new.device}")
            if new is not original:
                with no_grad():
                    _set_data(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, orig_i in enumerate(new):
                if not isinstance(orig_i, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                                     f"Got element {i} of the sequence with type {type(orig_i).__name__}.")
                if isinstance(original, Parameter):
                    orig_i = Parameter(orig_i.detach(), original.requires_grad)
                orig_i.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", orig_i)
        if not self.unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(z).__name__}.")
            if z.dtype is not original_dtype:
                raise ValueError("Registering a parametrization may not change the dtype of the tensor, unless "
                                 f"`unsafe` flag is enabled.\nunparametrized dtype: {original_dtype}\n"
                                 f"parametrized dtype: {z.dtype}")
            if tuple(z.shape) != tuple(original_shape):
                raise ValueError("Registering a parametrization may not change the shape of the tensor, unless "
                                 f"`unsafe` flag is enabled.\nunparametrized shape: {original_shape}\n"
                                 f"parametrized shape: {z.shape}")

    def right_inverse(self, value: Tensor) -> None:
        """Store into the originals the tensors whose parametrization is ``value``."""
        with no_grad():
            for module in reversed(self):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype is not self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} while "
                                     f"`original` has dtype {self.original.dtype}")
                _set_data(self.original, value)
            else:
                if not isinstance(value, Sequence):
                    raise ValueError(f"'right_inverse' must return a sequence of tensors. Got {type(value).__name__}.")
                if len(value) != self.ntensors:
                    raise ValueError(f"'right_inverse' must return a sequence of tensors of length {self.ntensors}. "
                                     f"Got a sequence of length {len(value)}.")
                for i, t in enumerate(value):
                    original_i = getattr(self, f"original{i}")
                    if not isinstance(t, Tensor):
                        raise ValueError(f"'right_inverse' must return a sequence of tensors or reference-type "
                                         f"opaques. Got element {i} of type {type(t).__name__}.")
                    if t.dtype is not original_i.dtype:
                        raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype {t.dtype} while "
                                         f"`original{i}` has dtype {original_i.dtype}")
                    _set_data(original_i, t)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _inject_new_class(module: Module) -> None:
    cls = module.__class__

    def getstate(self):
        raise RuntimeError("Serialization of parametrized modules is only supported through state_dict(). See:\n"
                           "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
                           "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")

    def default_deepcopy(self, memo):
        # as PyTorch: a parametrized module refuses pickling but deep-copies (copy.deepcopy calls __deepcopy__
        # instead of __getstate__): a replica of the same class with a deep copy of the attributes and slots
        obj = memo.get(id(self), None)
        if obj is not None:
            return obj
        replica = self.__new__(self.__class__)
        memo[id(self)] = replica
        replica.__dict__ = copy.deepcopy(self.__dict__, memo)
        for slot in copyreg._slotnames(self.__class__):  # type: ignore[attr-defined]
            if hasattr(self, slot):
                setattr(replica, slot, copy.deepcopy(getattr(self, slot), memo))
        return replica

    dct = {"__getstate__": getstate, "__module__": cls.__module__}
    if not hasattr(cls, "__deepcopy__"):
        dct["__deepcopy__"] = default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), dct)


def _inject_property(module: Module, tensor_name: str) -> None:
    def get_parametrized(self):
        parametrization = self.parametrizations[tensor_name]
        if _cache_enabled:
            key = (id(self), tensor_name)
            value = _cache.get(key)
            if value is None:
                value = _cache[key] = parametrization()
            return value
        return parametrization()

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def _check_appended_right_inverse(parametrization: Module, x: Tensor, y: Tensor, tensor_name: str) -> None:
    """PyTorch's checks of a parametrization appended to a chain (unless ``unsafe``): its ``right_inverse``, where
    it has one, gives back a tensor of the current value's dtype and shape."""
    if not hasattr(parametrization, "right_inverse"):
        return
    try:
        z = parametrization.right_inverse(x)
    except NotImplementedError:
        return
    if not isinstance(z, Tensor):
        raise ValueError(f"parametrization.right_inverse must return a tensor. Got: {type(z).__name__}")
    for what, got, want in (("dtype", z.dtype, y.dtype), ("shape", z.shape, y.shape)):
        if got != want:
            raise ValueError(f"The tensor returned by parametrization.right_inverse must have the same {what} as "
                             f"module.{tensor_name}, unless the `unsafe` flag is enabled.\n"
                             f"module.{tensor_name}.{what}: {want}\nreturned {what}: {got}")


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization (on ``tensor_name`` when given).

    Args:
        module (nn.Module): the module.
        tensor_name (str, optional): a parameter or buffer name.

    Returns:
        bool
    """
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` the output of ``parametrization`` (appended to the chain if there is one)."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(x).__name__}.")
            if x.dtype is not y.dtype:
                raise ValueError("Registering a parametrization may not change the dtype of the tensor, unless the "
                                 f"`unsafe` flag is enabled.\nmodule.{tensor_name}.dtype: {y.dtype}\n"
                                 f"parametrization(module.{tensor_name}).dtype: {x.dtype}")
            if tuple(x.shape) != tuple(y.shape):
                raise ValueError("Registering a parametrization may not change the shape of the tensor, unless the "
                                 f"`unsafe` flag is enabled.\nmodule.{tensor_name}.shape: {y.shape}\n"
                                 f"parametrization(module.{tensor_name}).shape: {x.shape}")
            _check_appended_right_inverse(parametrization, x, y, tensor_name)
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with "
                         f"name '{tensor_name}'")
    return module


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Undo register_parametrization: ``tensor_name`` becomes a plain parameter or buffer again, holding the
    parametrized value (``leave_parametrized=True``) or the original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
                _set_data(original, t)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized "
                             "in terms of a sequence of tensors.")
        # as PyTorch: computed with grad mode on, and a Parameter exactly when the value requires grad (any
        # original, or a parameter of the parametrization itself); else a buffer holding the value
        t = getattr(module, tensor_name)
        original = Parameter(t.detach()) if t.requires_grad else t.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The class ``module`` had before ``register_parametrization`` (parametrizing
    replaces it with a subclass); ``type(module)`` for a module without parametrizations.
    """
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module, tensor_name: str | None = None):
    """Give ``to_module`` the parametrizations (and original values) of ``from_module``."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        for param_func in from_module.parametrizations[name]:
            register_parametrization(to_module, name, param_func)
        with no_grad():
            src, dst = from_module.parametrizations[name], to_module.parametrizations[name]
            if src.is_tensor:
                _set_data(dst.original, src.original)
            else:
                for i in range(src.ntensors):
                    _set_data(getattr(dst, f"original{i}"), getattr(src, f"original{i}"))
    return to_module
