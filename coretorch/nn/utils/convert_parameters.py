"""parameters_to_vector / vector_to_parameters."""
from __future__ import annotations

from ...tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_param_device(param: Tensor, old_param_device):
    if old_param_device is None:
        return param.device
    if param.device != old_param_device:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return old_param_device


def parameters_to_vector(parameters) -> Tensor:
    """One 1-D tensor of all parameters, flattened and concatenated (differentiable)."""
    from ...ops.shape import cat
    param_device = None
    vec = []
    for param in parameters:
        param_device = _check_param_device(param, param_device)
        vec.append(param.view(-1))
    return cat(vec)


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Copy consecutive slices of ``vec`` into the parameters' ``.data``."""
    if not isinstance(vec, Tensor):
        from ..modules.module import _typename
        raise TypeError(f"expected torch.Tensor, but got: {_typename(vec)}")
    param_device = None
    pointer = 0
    for param in parameters:
        param_device = _check_param_device(param, param_device)
        num_param = param.numel()
        param.data = vec[pointer:pointer + num_param].view_as(param).data
        pointer += num_param
