"""nn.init: in-place initialisers with PyTorch's formulas, bounds and defaults (all under no_grad)."""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..autograd.grad_mode import no_grad
from ..tensor import Tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
           "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_",
           "sparse_", "uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
           "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"]


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for a nonlinearity: 1 (linear, conv, sigmoid), 5/3 (tanh), sqrt(2) (relu),
    sqrt(2 / (1 + slope^2)) (leaky_relu), 3/4 (selu)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, int) or isinstance(param, float):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor):
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    num_input_fmaps = tensor.size(1)
    num_output_fmaps = tensor.size(0)
    receptive_field_size = 1
    for s in tensor.shape[2:]:
        receptive_field_size *= s
    return num_input_fmaps * receptive_field_size, num_output_fmaps * receptive_field_size


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _on(generator, tensor: Tensor) -> dict:
    """Keywords drawing from ``generator`` on its own device (trunc_normal_, orthogonal_ and sparse_ finish the
    values on the host); as PyTorch's in-place samplers, a generator of another device than ``tensor``'s raises."""
    if generator is None:
        return {}
    if generator.device.type != tensor.device.type:
        raise RuntimeError(f"Expected a '{tensor.device.type}' device type for generator but found "
                           f"'{generator.device.type}'")
    return {"generator": generator, "device": generator.device}


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with U(a, b)."""
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with N(mean, std^2)."""
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def _c_type_names() -> dict:
    from .. import dtypes as _dt
    return {_dt.float16: "Half", _dt.bfloat16: "BFloat16", _dt.float32: "float", _dt.float64: "double"}


_C_TYPE = _c_type_names()  # (the dtypes' names in PyTorch's messages)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator=None) -> Tensor:
    """Fill with N(mean, std^2) truncated to [a, b], exactly (PyTorch 2.13's two samplers: where [a, b] holds
    more than 30% of the normal's mass, normal draws outside it are redrawn; else uniform proposals on [a, b]
    are accepted with the normal's density relative to its peak on [a, b], so a far tail or a narrow interval
    is sampled as exactly as the bulk)."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values "
                      "may be incorrect.", stacklevel=2)
    from ..ops.creation import rand, randn, tensor as _tensor

    def draw(fn, k: int) -> np.ndarray:
        return fn(k, dtype=tensor.dtype, **_on(generator, tensor))._host().astype(np.float64)

    def norm_cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    n = tensor.numel()
    p = norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std)
    with no_grad():
        if p > 0.3:
            out = draw(randn, n) * std + mean
            bad = np.flatnonzero((out < a) | (out > b))
            while bad.size:
                out[bad] = draw(randn, bad.size) * std + mean
                bad = bad[(out[bad] < a) | (out[bad] > b)]
        else:  # (PyTorch's tensor.uniform_(a, b) checks)
            if a > b:
                raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a} > to={b}")
            for name, v in (("from", a), ("to", b)):
                if not math.isfinite(v):
                    raise RuntimeError(f"{name} is out of bounds for {_C_TYPE.get(tensor.dtype, tensor.dtype)}")
            log_peak = -0.5 * ((max(a, min(mean, b)) - mean) / std) ** 2
            out = np.empty(n)
            pending = np.arange(n)
            while pending.size:
                x = a + (b - a) * draw(rand, pending.size)
                accept = np.log(draw(rand, pending.size)) <= -0.5 * ((x - mean) / std) ** 2 - log_peak
                out[pending[accept]] = x[accept]
                pending = pending[~accept]
        np.clip(out, a, b, out=out)  # (a float32 draw of b - a rounded up)
        tensor.copy_(_tensor(out.reshape(tuple(tensor.shape)), dtype=tensor.dtype))
    return tensor


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill ``tensor`` with ``val`` in place (without recording autograd) and return it."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with ones in place (without recording autograd) and return it."""
    with no_grad():
        return tensor.fill_(1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with zeros in place (without recording autograd) and return it."""
    with no_grad():
        return tensor.zero_()


def eye_(tensor: Tensor) -> Tensor:
    """The identity matrix (2-D tensors only)."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    from ..ops.creation import eye
    with no_grad():
        tensor.copy_(eye(*tensor.shape, dtype=tensor.dtype))
    return tensor


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """The Dirac delta for 3/4/5-D (convolution) weights: identity on ``min(out, in)`` channels per group."""
    dimensions = tensor.ndimension()
    if dimensions not in [3, 4, 5]:
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.size()
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_chans_per_grp = sizes[0] // groups
    min_dim = min(out_chans_per_grp, sizes[1])
    a = np.zeros(tuple(sizes), dtype=tensor.dtype.np)
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for d in range(min_dim):
            a[(g * out_chans_per_grp + d, d) + centre] = 1
    from ..ops.creation import tensor as _tensor
    with no_grad():
        tensor.copy_(_tensor(a, dtype=tensor.dtype))
    return tensor


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator=None) -> Tensor:
    """U(-bound, bound) with bound = gain * sqrt(3 / fan) (He et al., 2015)."""
    from .parameter import is_lazy
    if is_lazy(tensor):  # (PyTorch: the placeholder's __torch_function__ refuses the call, a ValueError)
        raise ValueError(f"Attempted to use an uninitialized parameter in {kaiming_uniform_}. This error happens "
                         "when you are using a `LazyModule` or explicitly manipulating "
                         "`torch.nn.parameter.UninitializedParameter` objects. When using LazyModules Call "
                         "`forward` with a dummy batch to initialize the parameters before calling torch functions")
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    bound = math.sqrt(3.0) * gain / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator=None) -> Tensor:
    """N(0, std^2) with std = gain / sqrt(fan)."""
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    return normal_(tensor, 0.0, gain / math.sqrt(fan), generator)


def orthogonal_(tensor: Tensor, gain: float = 1, generator=None) -> Tensor:
    """A (semi-)orthogonal matrix from the QR decomposition of a normal matrix (Saxe et al., 2013);
    trailing dims are flattened."""
    if tensor.ndimension() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    from ..ops.creation import randn, tensor as _tensor
    rows = tensor.size(0)
    cols = tensor.numel() // rows
    flattened = randn(rows, cols, dtype=tensor.dtype, **_on(generator, tensor))._host().astype(np.float64)
    if rows < cols:
        flattened = flattened.T
    q, r = np.linalg.qr(flattened)
    q = q * np.sign(np.diag(r))  # make the decomposition unique (uniform over the orthogonal group)
    if rows < cols:
        q = q.T
    with no_grad():
        tensor.copy_(_tensor((q * gain).reshape(tuple(tensor.shape)), dtype=tensor.dtype))
    return tensor


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """2-D only: N(0, std^2) with a fraction ``sparsity`` of each column set to zero."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    from ..ops.creation import randperm
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with no_grad():
        tensor.normal_(0, std, generator=generator)
        for col_idx in range(cols):
            zero_indices = randperm(rows, **_on(generator, tensor))[:num_zeros]
            tensor[zero_indices, col_idx] = 0
    return tensor


def _deprecated_alias(fn):
    """PyTorch keeps the pre-0.4 names without the trailing underscore, warning that they are deprecated."""
    new, old = fn.__name__, fn.__name__[:-1]

    def alias(*args, **kwargs):
        warnings.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new}`.", FutureWarning,
                      stacklevel=2)
        return fn(*args, **kwargs)
    alias.__name__ = alias.__qualname__ = old
    alias.__doc__ = f"Deprecated alias of :func:`{new}`."
    return alias


_make_deprecate = _deprecated_alias  # (PyTorch's name)


# PyTorch's private helpers, which libraries import (``from torch.nn.init import _no_grad_trunc_normal_``)
def _no_grad_uniform_(tensor: Tensor, a: float, b: float, generator=None) -> Tensor:
    return uniform_(tensor, a, b, generator)


def _no_grad_normal_(tensor: Tensor, mean: float, std: float, generator=None) -> Tensor:
    return normal_(tensor, mean, std, generator)


def _no_grad_trunc_normal_(tensor: Tensor, mean: float, std: float, a: float, b: float, generator=None) -> Tensor:
    return trunc_normal_(tensor, mean, std, a, b, generator)


def _no_grad_fill_(tensor: Tensor, val: float) -> Tensor:
    return constant_(tensor, val)


def _no_grad_zero_(tensor: Tensor) -> Tensor:
    return zeros_(tensor)


uniform = _deprecated_alias(uniform_)
normal = _deprecated_alias(normal_)
constant = _deprecated_alias(constant_)
xavier_uniform = _deprecated_alias(xavier_uniform_)
xavier_normal = _deprecated_alias(xavier_normal_)
kaiming_uniform = _deprecated_alias(kaiming_uniform_)
kaiming_normal = _deprecated_alias(kaiming_normal_)
orthogonal = _deprecated_alias(orthogonal_)
sparse = _deprecated_alias(sparse_)
eye = _deprecated_alias(eye_)
dirac = _deprecated_alias(dirac_)
