"""BatchNorm1d/2d (running statistics as buffers), LayerNorm, GroupNorm, as PyTorch's batchnorm.py and
normalization.py."""
from __future__ import annotations

from typing import cast

from ... import dtypes as _dt
from ...autograd._node_names import named_node
from ...ops.creation import empty, ones, tensor, zeros
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedBuffer, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "LayerNorm", "GroupNorm", "LocalResponseNorm", "CrossMapLRN2d"]


class _NormBase(Module):
    __constants__ = ["track_running_stats", "momentum", "eps", "num_features", "affine"]

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = Parameter(empty(num_features, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(empty(num_features, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if self.track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=_dt.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input):
        raise NotImplementedError

    _version = 2

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        # As PyTorch: a state dict without version 2 metadata (a plain dict, or one saved before
        # num_batches_tracked existed) gets the module's own counter, so it is not reported missing.
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                nbt = self.num_batches_tracked
                state_dict[key] = nbt if nbt is not None else tensor(0, dtype=_dt.int64)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def extra_repr(self) -> str:  # PyTorch 2.x prints whether there is a bias
        return ("{num_features}, eps={eps}, momentum={momentum}, affine={affine}, bias={has_bias}, "
                "track_running_stats={track_running_stats}").format(**self.__dict__, has_bias=self.bias is not None)


def _varying_read(why: str) -> None:
    from ..._compile.capture import varying_read  # (imported on use: compile imports nn)
    varying_read(why)


class _BatchNorm(_NormBase):
    def forward(self, input):
        self._check_input_dim(input)
        eaf = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            # momentum None: a cumulative moving average
            if self.momentum is None:
                _varying_read("BatchNorm with momentum=None reads num_batches_tracked, which changes every step")
                eaf = 1.0 / float(self.num_batches_tracked.item())
        bn_training = True if self.training else (self.running_mean is None and self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_stats else None,
                            self.running_var if use_stats else None, self.weight, self.bias, bn_training, eaf,
                            self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over an input ``(N, C) or (N, C, L)``: ``y = (x - mean) / sqrt(var + eps) * weight + bias``.

    In training, mean and (biased) variance are the batch's per channel, and the running estimates are updated
    with ``momentum`` (unbiased variance); in eval mode the running estimates are used.

    Args:
        num_features (int): ``C``.
        eps (float): added to the variance (default 1e-5).
        momentum (float or None): the running-average factor (default 0.1; None for a cumulative average).
        affine (bool): learn ``weight`` and ``bias`` (default True).
        track_running_stats (bool): keep running estimates (default True); without them batch statistics are
            always used.
        device, dtype: of the parameters and buffers.

    Shape:
        Input: ``(N, C) or (N, C, L)``. Output: the same shape.
    """
    def _check_input_dim(self, input):
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over an input ``(N, C, H, W)``: ``y = (x - mean) / sqrt(var + eps) * weight + bias``.

    In training, mean and (biased) variance are the batch's per channel, and the running estimates are updated
    with ``momentum`` (unbiased variance); in eval mode the running estimates are used.

    Args:
        num_features (int): ``C``.
        eps (float): added to the variance (default 1e-5).
        momentum (float or None): the running-average factor (default 0.1; None for a cumulative average).
        affine (bool): learn ``weight`` and ``bias`` (default True).
        track_running_stats (bool): keep running estimates (default True); without them batch statistics are
            always used.
        device, dtype: of the parameters and buffers.

    Shape:
        Input: ``(N, C, H, W)``. Output: the same shape.
    """
    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch normalisation over an input ``(N, C, D, H, W)``: ``y = (x - mean) / sqrt(var + eps) * weight + bias``.

    In training, mean and (biased) variance are the batch's per channel, and the running estimates are updated
    with ``momentum`` (unbiased variance); in eval mode the running estimates are used.

    Args:
        num_features (int): ``C``.
        eps (float): added to the variance (default 1e-5).
        momentum (float or None): the running-average factor (default 0.1; None for a cumulative average).
        affine (bool): learn ``weight`` and ``bias`` (default True).
        track_running_stats (bool): keep running estimates (default True); without them batch statistics are
            always used.
        device, dtype: of the parameters and buffers.

    Shape:
        Input: ``(N, C, D, H, W)``. Output: the same shape.
    """
    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class _LazyNormBase(LazyModuleMixin, _NormBase):
    """num_features inferred from the first input's dim 1; weight/bias and the running statistics are
    placeholders until then (num_batches_tracked is a real 0)."""

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__(0, eps, momentum, False, False, device, dtype)  # placeholders replace the tensors below
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = tensor(0, dtype=_dt.int64, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            if self.affine:
                cast(UninitializedParameter, self.weight).materialize((self.num_features,))
                if self.bias is not None:
                    cast(UninitializedParameter, self.bias).materialize((self.num_features,))
            if self.track_running_stats:
                self.running_mean.materialize((self.num_features,))
                self.running_var.materialize((self.num_features,))
            self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    """A BatchNorm1d whose num_features is inferred from the first input (as PyTorch's, no BatchNorm1d until
    then: it becomes one)."""
    cls_to_become = BatchNorm1d
    _check_input_dim = BatchNorm1d._check_input_dim


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    """A BatchNorm2d whose num_features is inferred from the first input (as PyTorch's, no BatchNorm2d until
    then: it becomes one)."""
    cls_to_become = BatchNorm2d
    _check_input_dim = BatchNorm2d._check_input_dim


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    """A BatchNorm3d whose num_features is inferred from the first input (as PyTorch's, no BatchNorm3d until
    then: it becomes one)."""
    cls_to_become = BatchNorm3d
    _check_input_dim = BatchNorm3d._check_input_dim


class LayerNorm(Module):
    """Layer normalisation over the last dimensions ``normalized_shape``:
    ``y = (x - mean) / sqrt(var + eps) * weight + bias`` (biased variance), per sample.

    Args:
        normalized_shape (int or tuple): the shape of the normalised trailing dimensions.
        eps (float): added to the variance (default 1e-5).
        elementwise_affine (bool): learn ``weight`` (ones) and ``bias`` (zeros) of that shape (default True).
        bias (bool): learn the bias too (default True).

    Shape:
        Input: ``(*, *normalized_shape)``. Output: the same shape.

    Example:
        >>> nn.LayerNorm(64)(torch.randn(8, 10, 64)).shape
        coretorch.Size([8, 10, 64])
    """
    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if self.elementwise_affine:
            self.weight = Parameter(empty(self.normalized_shape, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(empty(self.normalized_shape, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Reset the affine weight to ones and bias to zeros."""
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}, bias={has_bias}".format(
            **self.__dict__, has_bias=self.bias is not None)


class GroupNorm(Module):
    """Group normalisation: the channels are split into ``num_groups`` groups, each normalised over its channels
    and spatial positions, per sample.

    Args:
        num_groups (int): must divide ``num_channels``.
        num_channels (int): ``C``.
        eps (float): added to the variance (default 1e-5).
        affine (bool): learn a per-channel ``weight`` and ``bias`` (default True).

    Shape:
        Input: ``(N, C, *)``. Output: the same shape.
    """
    __constants__ = ["num_groups", "num_channels", "eps", "affine"]

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        if self.affine:
            self.weight = Parameter(empty(num_channels, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(empty(num_channels, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Reset the affine weight to ones and bias to zeros."""
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return "{num_groups}, {num_channels}, eps={eps}, affine={affine}, bias={has_bias}".format(
            **self.__dict__, has_bias=self.bias is not None)


class _LRNBase(Module):
    """LocalResponseNorm's and CrossMapLRN2d's arguments (a private base: in PyTorch neither is a subclass of
    the other)."""
    __constants__ = ["size", "alpha", "beta", "k"]

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def extra_repr(self) -> str:
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


class LocalResponseNorm(_LRNBase):
    """x / (k + alpha/size * sum of x^2 over ``size`` neighbouring channels) ** beta."""

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)


class CrossMapLRN2d(_LRNBase):
    """LocalResponseNorm of a 4-D input (PyTorch's legacy Lua-torch layer; the same values)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__(size, alpha, beta, k)

    def forward(self, input):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        return named_node(F.local_response_norm(input, self.size, self.alpha, self.beta, self.k),
                          "CrossMapLRN2dBackward")  # PyTorch's autograd.Function's name


def __getattr__(name: str):
    if name == "RMSNorm":  # (PyTorch's module path of nn.RMSNorm, which the extra-ops plugin provides)
        from ... import nn
        return getattr(nn, "RMSNorm")  # (set by the plugin at load: no static attribute)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
