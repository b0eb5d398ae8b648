"""nn.functional alpha_dropout and feature_alpha_dropout (the SELU-preserving dropout of self-normalising
networks): a dropped element becomes the SELU's negative saturation value, and an affine map a x + b restores zero
mean and unit variance (ATen's constants: alpha = 1.7580993408473766, a = ((alpha^2 p + 1)(1 - p))^(-1/2))."""
from __future__ import annotations

import math

from ...autograd.grad_mode import no_grad
from ...ops import _memfmt, creation as _C, pointwise as _P
from ...tensor import Tensor
from ._basic import _check_p

__all__ = ["alpha_dropout", "feature_alpha_dropout"]

_ALPHA = 1.7580993408473766


def _alpha(input: Tensor, p: float, training: bool, inplace: bool, feature: bool) -> Tensor:
    p = _check_p(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"result type Float can't be cast to the desired output type {input.dtype._tname[:-6]}")
    if feature and input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if p == 1.0:
        zero = _C.zeros((), dtype=input.dtype, device=input.device)
        return input.mul_(zero) if inplace else _P.mul(input, zero)
    shape = tuple(input.shape)
    noise_shape = shape[:2] + (1,) * (len(shape) - 2) if feature else shape
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    with no_grad():
        noise = _C.rand(*noise_shape, dtype=input.dtype, device=input.device)
        if not feature:  # in input's layout (PyTorch's empty_like noise), and so is the result
            noise = _memfmt.fresh(noise, None, input)
        keep = _P.lt(noise, 1.0 - p).to(input.dtype)
        b = _P.add(_P.mul(_P.sub(keep, 1.0), _ALPHA * a), _ALPHA * a * p)
        scale = _P.mul(keep, a)
    if inplace:
        return input.mul_(scale).add_(b)
    return _P.add(_P.mul(input, scale), b)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Alpha dropout (training only): keeps the zero mean and unit variance of SELU activations."""
    return _alpha(input, p, training, inplace, False)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels (dims 0 and 1 index the (N, C) pairs dropped together)."""
    return _alpha(input, p, training, inplace, True)
