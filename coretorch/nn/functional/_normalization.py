"""nn.functional normalisation: batch, instance, layer, RMS, group and local response norm."""
from __future__ import annotations

import math

from ... import dtypes as _dt
from ...amp.autocast_mode import cast_inputs as _ac_cast
from ...amp.autocast_mode import state as _ac
from ...amp.autocast_mode import suspended as _ac_off
from ...autograd.grad_mode import no_grad
from ..._compat import channels_last, channels_last_3d
from ...ops import _memfmt
from ...ops import pointwise as _P
from ...ops import reduction as _R
from ...ops._own import own
from ...tensor import Tensor
from . import _fused
from ._common import _check_tensor, _no_grad
from ._padding import _pad_constant
from ._pooling import avg_pool2d


# ---------------------------------------------------------------------------------------------
# normalization
# ---------------------------------------------------------------------------------------------
_REDUCED = (_dt.float16, _dt.bfloat16)


def _f32(t):
    """A float16/bfloat16 tensor (weight, bias, input) as float32, anything else as it is."""
    return t.float() if isinstance(t, Tensor) and t.dtype in _REDUCED else t


# The normalisations of a float16/bfloat16 input compute in float32 and round the result once, as PyTorch's CPU
# kernels (opmath): in half, the variance of a row [60000, -60000] overflowed and the row normalised to [0, 0].
# Running statistics stay the caller's tensors (updated in place in their own dtype).


def _verify_batch_size(shape, size_name: bool = True) -> None:
    size_prods = shape[0]
    for s in shape[2:]:
        size_prods *= s
    if size_prods == 1:
        size = f"coretorch.Size({list(shape)})" if size_name else str(list(shape))
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")


def _check_mixed_dtypes(input, *params) -> None:
    """PyTorch's mixed-dtype rule of the normalisations: parameters (and running statistics) of another dtype than
    the input may only be float32 ones with a float16/bfloat16 input (a float32 module fed half precision, computed
    in float32 as every half input is); any other mix raises its RuntimeError."""
    dt = input.dtype
    if all(t is None or t.dtype is dt for t in params):
        return
    where = "CPU" if input.device.type == "cpu" else input.device.type
    if any(t is not None and t.dtype is not _dt.float32 for t in params):
        raise RuntimeError(f"mixed dtype ({where}): expect parameter to have scalar type of Float")
    if dt not in _REDUCED:
        raise RuntimeError(f"mixed dtype ({where}): all inputs must share same datatype.")


def _suggested_layout(out: Tensor, input: Tensor) -> Tensor:
    """``out`` in ``input.suggest_memory_format()``, as PyTorch's batch, group and RMS norm write their result:
    channels-last for a channels-last 4-D/5-D input, row-major otherwise (a permuted or sliced input gave a result
    in its own layout, or a channels-last one a row-major result: a ``.view`` PyTorch allows raised)."""
    if input.ndim in (4, 5) and _memfmt.strides_like_channels_last(tuple(input.shape), input.stride()):
        fmt = channels_last if input.ndim == 4 else channels_last_3d
        return out if out.is_contiguous(memory_format=fmt) else out.contiguous(memory_format=fmt)
    return out if out.is_contiguous() else out.contiguous()


def _check_floating(kernel: str, input: Tensor) -> None:
    """PyTorch's NotImplementedError for an integer or bool input of a normalisation kernel (before its mixed-dtype
    check: an int64 input of a float32 module named neither the kernel nor the dtype)."""
    if not input.dtype.is_floating_point and not input.dtype.is_complex:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{input.dtype._tname[:-6]}'")


def _both_or_neither(running_mean, running_var) -> None:
    """PyTorch's ValueError for a running mean without a running variance (or the reverse) when the batch
    statistics are used: it updated the one it had and silently dropped the other."""
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither be None")


def _scale_shift(xc: Tensor, var: Tensor, eps: float, weight, bias, bshape: tuple) -> Tensor:
    """(x - mean) / sqrt(var + eps), then the per-channel affine (weight and bias of shape ``bshape``)."""
    out = _P.mul(xc, _P.rsqrt(_P.add(var, eps)))
    if weight is not None:
        out = _P.mul(out, weight.reshape(bshape))
    if bias is not None:
        out = _P.add(out, bias.reshape(bshape))
    return out


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Batch normalisation of ``input`` ``(N, C, *)`` per channel (see :class:`coretorch.nn.BatchNorm1d`).

    Args:
        input (Tensor): ``(N, C, *)``.
        running_mean, running_var (Tensor or None): ``(C,)``; updated in place when ``training``.
        weight, bias (Tensor, optional): ``(C,)`` affine parameters.
        training (bool): use (and record) batch statistics instead of the running ones.
        momentum (float): the running-average factor.
        eps (float): added to the variance.
    """
    if (eps <= 0.0 and training) or eps < 0.0:  # (PyTorch's F.batch_norm checks; torch.batch_norm does not)
        if training and isinstance(input, Tensor) and input.ndim >= 2:
            _verify_batch_size(tuple(input.shape))
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}" if training else
                         f"batch_norm eps must be non-negative, but got {eps}")
    return batch_norm_any_eps(input, running_mean, running_var, weight, bias, training, momentum, eps)


def batch_norm_any_eps(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
                       eps=1e-5):
    """batch_norm without F.batch_norm's check of ``eps`` (``torch.batch_norm``, PyTorch's ATen op, has none)."""
    if momentum is None:  # (PyTorch's argument parser: the modules pass a float for momentum=None; before, eval mode
        # ignored it and training mode raised a bare operand TypeError)
        raise TypeError("batch_norm(): argument 'momentum' (position 7) must be float, not NoneType")
    if _ac.on and (off := _ac_off(input)) is not None:  # autocast: on no list, its inner ops as they are
        with off:
            return batch_norm_any_eps(input, running_mean, running_var, weight, bias, training, momentum, eps)
    _check_tensor("batch_norm", "input", input)
    _check_floating("batch_norm", input)
    _check_mixed_dtypes(input, weight, bias, running_mean, running_var)  # (PyTorch's mixed-dtype checks)
    if input.dtype in _REDUCED:
        out = _batch_norm(input.float(), running_mean, running_var, _f32(weight), _f32(bias), training, momentum,
                          eps).to(input.dtype)
    else:
        out = _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    return _suggested_layout(out, input)


def _update_stat(stat: Tensor, value: Tensor) -> None:
    """Write a running statistic as PyTorch's batch-norm kernel does: in place, without bumping its version counter
    (``bn.running_mean._version`` stays as it was; a graph that saved it does not raise)."""
    stat._be.assign_(stat._data, value.to(stat.dtype)._data)


def _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps):
    """batch_norm after its checks (a float16/bfloat16 input arrives as float32; running statistics keep their own
    dtype, updated in place)."""
    if input.ndim < 2:
        raise ValueError(f"expected 2D or 3D input (got {input.ndim}D input)")
    c = input.shape[1]
    axes = (0,) + tuple(range(2, input.ndim))
    bshape = (1, c) + (1,) * (input.ndim - 2)
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
    if training:
        _both_or_neither(running_mean, running_var)
        _verify_batch_size(tuple(input.shape))
        mean = _R.mean(input, axes, keepdim=True)
        xc = _P.sub(input, mean)
        var = _R.mean(_P.mul(xc, xc), axes, keepdim=True)
        if running_mean is not None and input.numel():  # (an empty batch leaves them as they are, as PyTorch)
            n = input.numel() // c
            with _no_grad():
                _update_stat(running_mean, _P.add(_P.mul(running_mean, 1 - momentum),
                                                  _P.mul(mean.reshape(c).to(running_mean.dtype), momentum)))
                unbiased = _P.mul(var.reshape(c), n / max(n - 1, 1)).to(running_var.dtype)
                _update_stat(running_var, _P.add(_P.mul(running_var, 1 - momentum), _P.mul(unbiased, momentum)))
    else:
        for name, t in (("running_mean", running_mean), ("running_var", running_var)):
            if t is None:
                raise RuntimeError(f"{name} must be defined in evaluation mode")
        mean = running_mean.reshape(bshape)
        xc = _P.sub(input, mean)
        var = running_var.reshape(bshape)
    return _scale_shift(xc, var, eps, weight, bias, bshape)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalise each (instance, channel) over its spatial dims; with running stats, update them by the batch
    mean of the per-instance statistics (unbiased variance), or normalise by them when not use_input_stats."""
    if _ac.on and (off := _ac_off(input)) is not None:  # autocast: on no list, its inner ops as they are
        with off:
            return instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)
    _check_tensor("instance_norm", "input", input)
    if momentum is None:  # (PyTorch's argument parser; before: an operand TypeError with running stats, else none)
        raise TypeError("instance_norm(): argument 'momentum' (position 7) must be float, not NoneType")
    if use_input_stats and (input.ndim < 2 or math.prod(input.shape[2:]) == 1):  # (1-D: PyTorch's same error)
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"coretorch.Size({list(input.shape)})")
    if use_input_stats:
        _both_or_neither(running_mean, running_var)
    _check_floating("batch_norm", input)  # (PyTorch's instance_norm runs its batch_norm)
    _check_mixed_dtypes(input, weight, bias)  # (PyTorch's mixed-dtype checks; running statistics may differ)
    if not input.is_contiguous():  # PyTorch normalises a row-major (1, N * C, *) view: its result is row-major
        input = input.contiguous()
    if input.dtype in _REDUCED:
        return instance_norm(input.float(), running_mean, running_var, _f32(weight), _f32(bias), use_input_stats,
                             momentum, eps).to(input.dtype)
    bshape = (1, input.shape[1]) + (1,) * (input.ndim - 2)
    if use_input_stats:
        axes = tuple(range(2, input.ndim))
        mean = _R.mean(input, axes, keepdim=True)
        xc = _P.sub(input, mean)
        var = _R.mean(_P.mul(xc, xc), axes, keepdim=True)
        if running_mean is not None or running_var is not None:
            cnt = 1
            for d in axes:
                cnt *= input.shape[d]
            with no_grad():
                if running_mean is not None:
                    batch_mean = _R.mean(mean.reshape(input.shape[0], input.shape[1]), 0)
                    running_mean.mul_(1 - momentum).add_(_P.mul(batch_mean, momentum))
                if running_var is not None:
                    unbiased = _P.mul(var.reshape(input.shape[0], input.shape[1]), cnt / max(cnt - 1, 1))
                    running_var.mul_(1 - momentum).add_(_P.mul(_R.mean(unbiased, 0), momentum))
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
        xc = _P.sub(input, running_mean.reshape(bshape).to(input.dtype))
        var = running_var.reshape(bshape).to(input.dtype)
    return _scale_shift(xc, var, eps, weight, bias, bshape)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5) -> Tensor:
    """Layer normalisation over the trailing ``normalized_shape`` dimensions (see :class:`coretorch.nn.LayerNorm`).

    Args:
        input (Tensor): ``(*, *normalized_shape)``.
        normalized_shape (tuple of ints): the normalised trailing shape.
        weight, bias (Tensor, optional): of shape ``normalized_shape``.
        eps (float): added to the variance.
    """
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, weight, bias = _ac_cast("layer_norm", input, weight, bias)
    _check_tensor("layer_norm", "input", input)
    if not input.dtype.is_floating_point:  # (it raised mean()'s error)
        raise NotImplementedError(f"\"LayerNormKernelImpl\" not implemented for '{input.dtype._tname[:-6]}'")
    ns = (int(normalized_shape),) if isinstance(normalized_shape, int) else tuple(int(s) for s in normalized_shape)
    k = len(ns)
    if k == 0 or input.ndim < k or tuple(input.shape[-k:]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape [*, "
                           f"{', '.join(map(str, ns))}], but got input of size{list(input.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != ns:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(t.shape)} and normalized_shape = {list(ns)}")
    _check_mixed_dtypes(input, weight, bias)  # (PyTorch's mixed-dtype checks)
    if input.dtype in _REDUCED:
        return layer_norm(input.float(), ns, _f32(weight), _f32(bias), eps).to(input.dtype)
    if not input.is_contiguous():  # PyTorch normalises a row-major copy: its result is row-major
        input = input.contiguous()
    if input.numel() and _fused.fused_ok(input, weight, bias):  # one node on kernel calls (issue 14 speed)
        return _fused.layer_norm(input, k, weight, bias, eps, _layer_norm_composite)
    return _layer_norm_composite(input, k, weight, bias, eps)


def _layer_norm_composite(input, k, weight, bias, eps):
    """layer_norm from differentiable ops (what a create_graph backward of the fused node differentiates)."""
    axes = tuple(range(input.ndim - k, input.ndim))
    mean = _R.mean(input, axes, keepdim=True)
    xc = _P.sub(input, mean)
    out = _P.mul(xc, _P.rsqrt(_P.add(_R.mean(_P.mul(xc, xc), axes, keepdim=True), eps)))
    if weight is not None:
        out = _P.mul(out, weight)
    if bias is not None:
        out = _P.add(out, bias)
    return out


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Root-mean-square normalisation over the trailing ``normalized_shape`` dimensions:
    ``y = x / sqrt(mean(x**2) + eps) * weight``, as PyTorch's composite: float16/bfloat16 computed in float32 (``eps``
    defaults to the machine epsilon of that computing dtype), the result in the input's dtype.
    """
    _check_tensor("rms_norm", "input", input)
    _check_floating("rms_norm", input)
    ns = (int(normalized_shape),) if isinstance(normalized_shape, int) else tuple(int(s) for s in normalized_shape)
    k = len(ns)
    if k == 0 or input.ndim < k or tuple(input.shape[-k:]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape [*{', '.join(map(str, ns))}]"
                           f", but got input of size{list(input.shape)}")
    if weight is not None and tuple(weight.shape) != ns:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got weight of shape "
                           f"{list(weight.shape)} and normalized_shape = {list(ns)}")
    dt = input.dtype
    x = input.to(_dt.float32) if dt in _REDUCED else input
    e = eps if eps is not None else (2.220446049250313e-16 if dt is _dt.float64 else 1.1920928955078125e-07)
    axes = tuple(range(input.ndim - k, input.ndim))
    out = _P.mul(x, _P.rsqrt(_P.add(_R.mean(_P.mul(x, x), axes, keepdim=True), e)))
    if out.dtype != dt:
        out = out.to(dt)
    if weight is not None:
        out = _P.mul(out, weight)
        if out.dtype != dt:
            out = out.to(dt)
    return _suggested_layout(out, input)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Group normalisation (see :class:`coretorch.nn.GroupNorm`); ``weight``/``bias`` are ``(C,)``."""
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, weight, bias = _ac_cast("group_norm", input, weight, bias)
    _check_tensor("group_norm", "input", input)
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    n, c = input.shape[:2]
    _verify_batch_size((n * c // num_groups, num_groups) + tuple(input.shape[2:]), False)  # (one value per group)
    if num_groups <= 0:
        raise RuntimeError(f"Expected num groups to be greater than 0, got {num_groups}")
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.numel() != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, "
                               f"but got {name} of shape {list(t.shape)} and input of shape {list(input.shape)}")
    _check_floating("GroupNormKernelImpl", input)
    _check_mixed_dtypes(input, weight, bias)  # (PyTorch's mixed-dtype checks)
    if input.dtype in _REDUCED:
        return _suggested_layout(group_norm(input.float(), num_groups, _f32(weight), _f32(bias), eps).to(input.dtype),
                                 input)
    x = input.reshape(n, num_groups, math.prod(input.shape[1:]) // num_groups)  # (n may be 0)
    mean = _R.mean(x, 2, keepdim=True)
    xc = _P.sub(x, mean)
    out = own(_P.mul(xc, _P.rsqrt(_P.add(_R.mean(_P.mul(xc, xc), 2, keepdim=True), eps))).reshape(input.shape))
    bshape = (1, c) + (1,) * (input.ndim - 2)
    if weight is not None:
        out = _P.mul(out, weight.reshape(bshape))
    if bias is not None:
        out = _P.add(out, bias.reshape(bshape))
    return _suggested_layout(out, input)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Local response normalisation across channels:
    ``b_c = a_c / (k + alpha / size * sum_{c' near c} a_{c'}**2) ** beta`` over a window of ``size`` channels.
    """
    _check_tensor("local_response_norm", "input", input)
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} dimensions)")
    if input.numel() == 0:  # (PyTorch returns the empty input itself)
        return input
    sq = _P.mul(input, input).unsqueeze(1)
    div = _pad_constant(sq, (0, 0) * (input.ndim - 2) + (size // 2, (size - 1) // 2), 0.0)
    div = avg_pool2d(div.reshape(input.shape[0], 1, div.shape[2], -1), (size, 1), stride=1)
    div = div.reshape(input.shape)
    return _P.div(input, _P.pow(_P.add(_P.mul(div, alpha), k), beta))
