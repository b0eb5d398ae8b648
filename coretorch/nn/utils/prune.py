"""torch.nn.utils.prune: pruning by masks, as PyTorch's.

Pruning ``module.<name>`` moves the parameter to ``<name>_orig``, registers the 0/1 mask as the buffer
``<name>_mask`` and makes ``module.<name>`` the plain tensor ``mask * orig``, recomputed before every forward by the
pruning method itself (a forward pre-hook), so gradients reach ``<name>_orig`` through the mask.  Pruning the same
tensor again combines the methods in a :class:`PruningContainer`: the new method only chooses among the entries (or
channels) the earlier masks kept.  :func:`remove` makes the pruning permanent."""
from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

from ...tensor import Tensor

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
           "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured", "l1_unstructured",
           "random_structured", "ln_structured", "global_unstructured", "custom_from_mask", "remove", "is_pruned"]


def _torch():
    import coretorch
    return coretorch


class BasePruningMethod(ABC):
    """The base of pruning methods: subclasses define :meth:`compute_mask` (and ``PRUNING_TYPE``:
    ``"unstructured"``, ``"structured"`` with a ``dim``, or ``"global"``)."""

    _tensor_name: str
    PRUNING_TYPE: str = "unstructured"

    def __call__(self, module: Any, inputs: Any) -> None:
        """The forward pre-hook: ``module.<name> = mask * orig`` before the forward."""
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The mask for the importance scores ``t``, on top of ``default_mask`` (the earlier pruning's)."""

    def apply_mask(self, module: Any) -> Tensor:
        """``mask * orig`` of the module's tensor this method prunes."""
        if getattr(self, "_tensor_name", None) is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module: Any, name: str, *args, importance_scores: Tensor | None = None, **kwargs):
        """Prune ``module.<name>`` with a new ``cls(*args, **kwargs)`` (combined with an earlier method on the same
        tensor); returns the method (or the container) now registered as the module's forward pre-hook."""
        old, keys = None, []
        for k, hook in module._forward_pre_hooks.items():
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                old = hook
                keys.append(k)
        if len(keys) > 1:
            raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. "
                                 "Use a PruningContainer.")
        for k in keys:
            del module._forward_pre_hooks[k]
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if old is not None:
            if isinstance(old, PruningContainer):
                old.add_pruning_method(method)
                method = old
            else:
                container = PruningContainer(old)
                container.add_pruning_method(method)
                method = container
        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                raise AssertionError(f"importance_scores should have the same shape as parameter {name} of {module}, "
                                     f"got {importance_scores.shape} vs {orig.shape}")
        else:
            importance_scores = orig
        first = not isinstance(method, PruningContainer)
        torch = _torch()
        if first:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = torch.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone(memory_format=torch.contiguous_format)
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first:  # (roll back: the parameter where it was)
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None, importance_scores: Tensor | None = None) -> Tensor:
        """``t`` with this method's mask applied (no module involved)."""
        if importance_scores is not None:
            if importance_scores.shape != t.shape:
                raise AssertionError("importance_scores should have the same shape as tensor t")
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else _torch().ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module: Any) -> None:
        """Make the pruning permanent: ``module.<name>`` becomes a parameter holding ``mask * orig``; the
        ``_orig`` parameter and the ``_mask`` buffer go."""
        if getattr(self, "_tensor_name", None) is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """The pruning methods applied to one tensor, in order; the last one's mask is computed on what the earlier
    ones kept (the unmasked entries for unstructured methods, the channels not yet all zero for structured ones)."""

    def __init__(self, *args) -> None:
        self._pruning_methods: tuple = ()
        if len(args) == 1 and isinstance(args[0], BasePruningMethod):
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for m in args:
                self.add_pruning_method(m)

    def add_pruning_method(self, method: Any) -> None:
        """Append ``method`` (which must prune the same tensor)."""
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and getattr(self, "_tensor_name", None) != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named "
                             f"'{getattr(self, '_tensor_name', None)}' to PruningContainer {self}. Found "
                             f"'{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx: int) -> Any:
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The last method's mask, computed on the part of ``t`` ``default_mask`` keeps, merged into it."""
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            slc: Any = default_mask == 1
        elif kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have the attribute `dim` '
                                     "defined.")
            nd = t.dim()
            dim = method.dim + nd if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {nd}")
            keep = default_mask.sum(dim=[d for d in range(nd) if d != dim]) != 0
            slc = tuple(keep if d == dim else slice(None) for d in range(nd))
        elif kind == "global":
            slc = tuple(slice(None) for _ in range(t.dim()))
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
        partial = method.compute_mask(t[slc], default_mask=default_mask[slc])
        new_mask[slc] = partial.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """A mask of ones: the reparametrization without pruning."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask

    @classmethod
    def apply(cls, module: Any, name: str):  # type: ignore[override]
        return super().apply(module, name)


def _check_amount(amount: Any) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if isinstance(amount, numbers.Integral) and int(amount) < 0 or \
            not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or float(amount) < 0.0):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _count(amount: Any, size: int) -> int:
    """How many units ``amount`` prunes of ``size`` (an int as it is, a fraction rounded as Python's ``round``)."""
    k = amount if isinstance(amount, numbers.Integral) else round(amount * size)
    if isinstance(amount, numbers.Integral) and int(amount) > size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={size}")
    return int(k)


def _check_structured(t: Tensor, dim: int) -> None:
    if t.dim() <= 1:
        raise ValueError(f"Structured pruning can only be applied to multidimensional tensors. Found tensor of shape "
                         f"{t.shape} with {t.dim()} dims")
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _channel_mask(t: Tensor, dim: int, keep: Tensor) -> Tensor:
    """Zeros like ``t`` with ones on the channels ``keep`` (indices or a bool mask) along ``dim``."""
    mask = _torch().zeros_like(t)
    mask[tuple(keep if d == dim % t.dim() else slice(None) for d in range(t.dim()))] = 1
    return mask


def _unstructured(default_mask: Tensor, scores: Tensor, k: int, largest: bool) -> Tensor:
    """``default_mask`` with the ``k`` entries of the largest (or smallest) ``scores`` zeroed."""
    torch = _torch()
    mask = default_mask.clone(memory_format=torch.contiguous_format)
    if k:
        mask.view(-1)[torch.topk(scores.view(-1), k=k, largest=largest).indices] = 0
    return mask


class RandomUnstructured(BasePruningMethod):
    """Prune ``amount`` of the (unpruned) entries at random (an int: that many; a float: that fraction)."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: Any) -> None:
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return _unstructured(default_mask, _torch().rand_like(t), _count(self.amount, t.nelement()), True)

    @classmethod
    def apply(cls, module: Any, name: str, amount: Any):  # type: ignore[override]
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prune ``amount`` of the (unpruned) entries with the smallest absolute values."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: Any) -> None:
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return _unstructured(default_mask, _torch().abs(t), _count(self.amount, t.nelement()), False)

    @classmethod
    def apply(cls, module: Any, name: str, amount: Any,  # type: ignore[override]
              importance_scores: Tensor | None = None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prune ``amount`` of the (unpruned) channels along ``dim`` at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: Any, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        torch = _torch()
        _check_structured(t, self.dim)
        n = t.shape[self.dim]
        k = _count(self.amount, n)
        if k == 0:
            return default_mask
        prob = torch.rand(n)
        threshold = torch.kthvalue(prob, k=k).values
        mask = _channel_mask(t, self.dim, (prob > threshold).to(t.device))
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module: Any, name: str, amount: Any, dim: int = -1):  # type: ignore[override]
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prune ``amount`` of the (unpruned) channels along ``dim`` with the smallest L``n`` norms (``n`` as
    ``torch.norm``'s ``p``)."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: Any, n: Any, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        torch = _torch()
        _check_structured(t, self.dim)
        size = t.shape[self.dim]
        k = _count(self.amount, size)
        dims = list(range(t.dim()))
        dims.remove(self.dim % t.dim())
        norm = torch.norm(t, p=self.n, dim=dims)
        top = torch.topk(norm, k=size - k, largest=True)
        if k == 0:
            return default_mask
        mask = _channel_mask(t, self.dim, top.indices)
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module: Any, name: str, amount: Any, n: Any, dim: int,  # type: ignore[override]
              importance_scores: Tensor | None = None):
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prune by a given mask (on top of the earlier one)."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if default_mask.shape != self.mask.shape:
            raise AssertionError("default_mask and the mask must have the same shape")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module: Any, name: str, mask: Tensor):  # type: ignore[override]
        return super().apply(module, name, mask=mask)


def identity(module: Any, name: str) -> Any:
    """The pruning reparametrization of ``module.<name>`` with a mask of ones; returns ``module``."""
    Identity.apply(module, name)
    return module


def random_unstructured(module: Any, name: str, amount: Any) -> Any:
    """Prune ``amount`` of ``module.<name>``'s unpruned entries at random; returns ``module``."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Any, name: str, amount: Any, importance_scores: Tensor | None = None) -> Any:
    """Prune ``amount`` of ``module.<name>``'s unpruned entries with the smallest magnitudes (of
    ``importance_scores`` when given); returns ``module``."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Any, name: str, amount: Any, dim: int) -> Any:
    """Prune ``amount`` of ``module.<name>``'s unpruned channels along ``dim`` at random; returns ``module``."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: Any, name: str, amount: Any, n: Any, dim: int,
                  importance_scores: Tensor | None = None) -> Any:
    """Prune ``amount`` of ``module.<name>``'s channels along ``dim`` with the smallest L``n`` norms; returns
    ``module``."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters: Any, pruning_method: Any, importance_scores: dict | None = None,
                        **kwargs) -> None:
    """Prune the ``(module, name)`` tensors of ``parameters`` together: ``pruning_method`` (an unstructured method
    class, e.g. ``L1Unstructured``, with its ``amount=``) chooses across all their entries at once."""
    from .convert_parameters import parameters_to_vector
    torch = _torch()
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = parameters_to_vector([importance_scores.get((m, n), getattr(m, n)) for m, n in parameters])
    default_mask = parameters_to_vector([getattr(m, n + "_mask", torch.ones_like(getattr(m, n)))
                                         for m, n in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final = container.compute_mask(scores, default_mask)
    at = 0
    for m, n in parameters:
        p = getattr(m, n)
        custom_from_mask(m, n, mask=final[at:at + p.numel()].view_as(p))
        at += p.numel()


def custom_from_mask(module: Any, name: str, mask: Tensor) -> Any:
    """Prune ``module.<name>`` by ``mask``; returns ``module``."""
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module: Any, name: str) -> Any:
    """Make the pruning of ``module.<name>`` permanent (the parameter holds the pruned values; ``_orig``, ``_mask``
    and the hook go); returns ``module``."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module: Any) -> bool:
    """Whether a pruning method is registered on ``module`` or one of its submodules."""
    return any(isinstance(hook, BasePruningMethod) for _, sub in module.named_modules()
               for hook in sub._forward_pre_hooks.values())
