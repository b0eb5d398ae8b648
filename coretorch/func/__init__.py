"""torch.func: function transforms (``grad``, ``vjp``, ``jacrev``, ``hessian``, ``vmap``...) and the functional
module API (``functional_call``, ``stack_module_state``), as PyTorch's, on coretorch's reverse-mode autograd.

What differs from PyTorch: ``vmap`` calls the function once per batch entry (PyTorch's fallback path, taken for
every op: correct for functions without side effects, slower than batching rules); ``jacfwd``/``jvp``/``hessian``
give forward mode's values through reverse mode; a batch of size 0 cannot be mapped.  See ``_eager_transforms.py``
and ``_vmap.py``."""
from __future__ import annotations

from typing import Any, Sequence

from ._eager_transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp
from ._vmap import vmap

__all__ = ["grad", "grad_and_value", "vmap", "replace_all_batch_norm_modules_", "functionalize", "hessian",
           "jacfwd", "jacrev", "jvp", "linearize", "vjp", "functional_call", "stack_module_state", "debug_unwrap"]


def functional_call(module: Any, parameter_and_buffer_dicts: Any, args: Any = None, kwargs: dict | None = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with its named parameters and buffers replaced for the call by the tensors given
    (a dict, or a sequence of dicts whose keys do not overlap); gradients reach the given tensors."""
    import warnings

    from ..nn.utils import stateless
    if isinstance(parameter_and_buffer_dicts, dict):
        merged = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        seen: dict = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                seen[k] = seen.get(k, 0) + 1
        dup = [k for k, c in seen.items() if c > 1]
        if dup:
            raise ValueError(f"{dup} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        merged = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # (the deprecation of stateless's spelling, not this one)
        return stateless.functional_call(module, merged, args, kwargs, tie_weights=tie_weights, strict=strict)


def stack_module_state(models: Any) -> tuple[dict, dict]:
    """The parameters and buffers of ``models`` (modules of one structure) stacked along a new first dimension:
    ``(params, buffers)``, the stacked parameters new leaves that require grad as the originals (for
    ``vmap(functional_call)`` over an ensemble)."""
    from ..ops.shape import stack
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    ref = type(models[0])
    if not all(type(m) is ref for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    names = [n for n, _ in models[0].named_parameters()]
    params = {n: stack([dict(m.named_parameters())[n].detach() for m in models]).requires_grad_(
        dict(models[0].named_parameters())[n].requires_grad) for n in names}
    bnames = [n for n, _ in models[0].named_buffers()]
    buffers = {n: stack([dict(m.named_buffers())[n] for m in models]) for n in bnames}
    return params, buffers


def functionalize(func: Any, *, remove: str = "mutations") -> Any:
    """``func`` itself: functionalization removes mutations from a traced program without changing its results,
    and coretorch runs programs eagerly (nothing to rewrite)."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. "
                           "Valid options are:\n     remove='mutations': all inputs and outputs to the function "
                           "will be un-functionalized\n     remove='mutations_and_views': all inputs and outputs to "
                           "the function will be un-functionalized")
    return func


def replace_all_batch_norm_modules_(root: Any) -> Any:
    """Set every batch norm module of ``root`` to use batch statistics only (no running stats), in place, as
    PyTorch's (so a vmapped model does not update shared running statistics); returns ``root``."""
    from ..nn.modules.normalization import _BatchNorm
    for m in root.modules():
        if isinstance(m, _BatchNorm):
            m.running_mean = None
            m.running_var = None
            m.num_batches_tracked = None
            m.track_running_stats = False
    return root


def debug_unwrap(tensor: Any, *, recurse: bool = True) -> Any:
    """The tensor itself (coretorch's transforms wrap nothing)."""
    return tensor
