"""Conv1d/2d/3d, ConvTranspose1d/2d/3d, initialised as PyTorch's (kaiming_uniform_(a=sqrt(5)) weight, bias
U(-1/sqrt(fan_in), 1/sqrt(fan_in)))."""
from __future__ import annotations

import math
from typing import cast

from ...ops.creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedParameter
from ._errors import layer_error
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d"]


def _tuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


class _ConvNd(Module):
    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode", "output_padding", "in_channels",
                     "out_channels", "kernel_size"]

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None) -> None:
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_padding_modes:
            raise ValueError(f"padding_mode must be one of {valid_padding_modes}, but got padding_mode="
                             f"'{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(self.padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total_padding = d * (k - 1)
                    left_pad = total_padding // 2
                    self._reversed_padding_repeated_twice[2 * i] = left_pad
                    self._reversed_padding_repeated_twice[2 * i + 1] = total_padding - left_pad
        else:
            self._reversed_padding_repeated_twice = [p for p in reversed(self.padding) for _ in range(2)]
        if transposed:
            shape = (in_channels, out_channels // groups, *kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *kernel_size)
        self.weight = Parameter(empty(shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"


class Conv1d(_ConvNd):
    """A 1-D convolution (cross-correlation, as PyTorch) of an input with ``C_in`` channels by ``C_out`` learned
    filters.

    Args:
        in_channels (int): ``C_in``.
        out_channels (int): ``C_out``.
        kernel_size (int or tuple): the filter size.
        stride (int or tuple): the filter step (default 1).
        padding (int, tuple or str): implicit padding on each side (default 0; ``"same"``/``"valid"`` for
            convolutions).
        padding_mode (str): ``"zeros"`` (default), ``"reflect"``, ``"replicate"`` or ``"circular"``.
        dilation (int or tuple): the spacing between filter elements (default 1).
        groups (int): split the channels into this many independent groups (default 1).
        bias (bool): add a learned bias (default True).
        device, dtype: of the parameters.

    Shape:
        Input: ``(N, C_in, L)`` (or without ``N``). Output: ``(N, C_out, L_out)``, each size ``floor((L + 2 * padding
        - dilation * (kernel_size - 1) - 1) / stride) + 1``.

    Attributes:
        weight (Parameter): ``(C_out, C_in / groups, *kernel_size)``, initialised Kaiming-uniform as in PyTorch.
        bias (Parameter): ``(C_out,)``.

    Example:
        >>> conv = nn.Conv1d(3, 8, kernel_size=3, padding=1)
    """
    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, _tuple(kernel_size, 1), _tuple(stride, 1),
                         padding if isinstance(padding, str) else _tuple(padding, 1), _tuple(dilation, 1), False,
                         (0,), groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        if self.padding_mode != "zeros":
            return F.conv1d(F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode), weight,
                            bias, self.stride, 0, self.dilation, self.groups)
        return F.conv1d(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        try:
            return self._conv_forward(input, self.weight, self.bias)
        except RuntimeError as e:  # name the layer and the shape it expects
            raise layer_error(self, input, e, f"(N, {self.in_channels}, L) or ({self.in_channels}, L)") from None


class Conv2d(_ConvNd):
    """A 2-D convolution (cross-correlation, as PyTorch) of an input with ``C_in`` channels by ``C_out`` learned
    filters.

    Args:
        in_channels (int): ``C_in``.
        out_channels (int): ``C_out``.
        kernel_size (int or tuple): the filter size.
        stride (int or tuple): the filter step (default 1).
        padding (int, tuple or str): implicit padding on each side (default 0; ``"same"``/``"valid"`` for
            convolutions).
        padding_mode (str): ``"zeros"`` (default), ``"reflect"``, ``"replicate"`` or ``"circular"``.
        dilation (int or tuple): the spacing between filter elements (default 1).
        groups (int): split the channels into this many independent groups (default 1).
        bias (bool): add a learned bias (default True).
        device, dtype: of the parameters.

    Shape:
        Input: ``(N, C_in, H, W)`` (or without ``N``). Output: ``(N, C_out, H_out, W_out)``, each size ``floor((L + 2
        * padding - dilation * (kernel_size - 1) - 1) / stride) + 1``.

    Attributes:
        weight (Parameter): ``(C_out, C_in / groups, *kernel_size)``, initialised Kaiming-uniform as in PyTorch.
        bias (Parameter): ``(C_out,)``.

    Example:
        >>> conv = nn.Conv2d(3, 8, kernel_size=3, padding=1)
    """
    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, _tuple(kernel_size, 2), _tuple(stride, 2),
                         padding if isinstance(padding, str) else _tuple(padding, 2), _tuple(dilation, 2), False,
                         (0, 0), groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        if self.padding_mode != "zeros":
            return F.conv2d(F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode), weight,
                            bias, self.stride, 0, self.dilation, self.groups)
        return F.conv2d(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        try:
            return self._conv_forward(input, self.weight, self.bias)
        except RuntimeError as e:  # name the layer and the shape it expects
            raise layer_error(self, input, e, f"(N, {self.in_channels}, H, W) or ({self.in_channels}, H, W)") \
                from None


class Conv3d(_ConvNd):
    """A 3-D convolution (cross-correlation, as PyTorch) of an input with ``C_in`` channels by ``C_out`` learned
    filters.

    Args:
        in_channels (int): ``C_in``.
        out_channels (int): ``C_out``.
        kernel_size (int or tuple): the filter size.
        stride (int or tuple): the filter step (default 1).
        padding (int, tuple or str): implicit padding on each side (default 0; ``"same"``/``"valid"`` for
            convolutions).
        padding_mode (str): ``"zeros"`` (default), ``"reflect"``, ``"replicate"`` or ``"circular"``.
        dilation (int or tuple): the spacing between filter elements (default 1).
        groups (int): split the channels into this many independent groups (default 1).
        bias (bool): add a learned bias (default True).
        device, dtype: of the parameters.

    Shape:
        Input: ``(N, C_in, D, H, W)`` (or without ``N``). Output: ``(N, C_out, D_out, H_out, W_out)``, each size
        ``floor((L + 2 * padding - dilation * (kernel_size - 1) - 1) / stride) + 1``.

    Attributes:
        weight (Parameter): ``(C_out, C_in / groups, *kernel_size)``, initialised Kaiming-uniform as in PyTorch.
        bias (Parameter): ``(C_out,)``.

    Example:
        >>> conv = nn.Conv3d(3, 8, kernel_size=3, padding=1)
    """
    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, _tuple(kernel_size, 3), _tuple(stride, 3),
                         padding if isinstance(padding, str) else _tuple(padding, 3), _tuple(dilation, 3), False,
                         (0, 0, 0), groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        if self.padding_mode != "zeros":
            return F.conv3d(F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode), weight,
                            bias, self.stride, 0, self.dilation, self.groups)
        return F.conv3d(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        try:
            return self._conv_forward(input, self.weight, self.bias)
        except RuntimeError as e:  # name the layer and the shape it expects
            raise layer_error(self, input, e, f"(N, {self.in_channels}, D, H, W) or ({self.in_channels}, D, H, W)") \
                from None


class _ConvTransposeNd(_ConvNd):
    _nsp = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        n = self._nsp
        super().__init__(in_channels, out_channels, _tuple(kernel_size, n), _tuple(stride, n), _tuple(padding, n),
                         _tuple(dilation, n), True, _tuple(output_padding, n), groups, bias, padding_mode, device,
                         dtype)

    def _output_padding(self, input, output_size, stride, padding, kernel_size, num_spatial_dims, dilation=None):
        """PyTorch's: output_padding from a requested output_size (spatial sizes, or with the batch/channel dims)."""
        if output_size is None:
            return self.output_padding
        has_batch_dim = input.dim() == num_spatial_dims + 2
        num_non_spatial_dims = 2 if has_batch_dim else 1
        output_size = list(output_size)
        if len(output_size) == num_non_spatial_dims + num_spatial_dims:
            output_size = output_size[num_non_spatial_dims:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, output_size must have "
                             f"{num_spatial_dims} or {num_non_spatial_dims + num_spatial_dims} elements (got "
                             f"{len(output_size)})")
        min_sizes, max_sizes = [], []
        for d in range(num_spatial_dims):
            dim_size = ((input.size(d + num_non_spatial_dims) - 1) * stride[d] - 2 * padding[d]
                        + (dilation[d] if dilation is not None else 1) * (kernel_size[d] - 1) + 1)
            min_sizes.append(dim_size)
            max_sizes.append(min_sizes[d] + stride[d] - 1)
        for i, size in enumerate(output_size):
            if size < min_sizes[i] or size > max_sizes[i]:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {min_sizes} "
                                 f"to {max_sizes} (for an input of {input.size()[2:]})")
        return tuple(output_size[d] - min_sizes[d] for d in range(num_spatial_dims))

    def _forward(self, fn, input, output_size):
        if self.padding_mode != "zeros":
            raise ValueError(f"Only `zeros` padding mode is supported for {type(self).__name__}")
        op = self._output_padding(input, output_size, self.stride, self.padding, self.kernel_size, self._nsp,
                                  self.dilation)
        return fn(input, self.weight, self.bias, self.stride, self.padding, op, self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """A 1-D transposed convolution (the gradient of ``Conv1d`` with respect to its input; sometimes called a
    deconvolution).

    Args:
        in_channels (int): ``C_in``.
        out_channels (int): ``C_out``.
        kernel_size (int or tuple): the filter size.
        stride (int or tuple): the filter step (default 1).
        padding (int, tuple or str): implicit padding on each side (default 0; ``"same"``/``"valid"`` for
            convolutions).
        output_padding (int or tuple): extra size added to one side of the output (default 0).
        dilation (int or tuple): the spacing between filter elements (default 1).
        groups (int): split the channels into this many independent groups (default 1).
        bias (bool): add a learned bias (default True).
        device, dtype: of the parameters.

    Shape:
        Input: ``(N, C_in, L)`` (or without ``N``). Output: ``(N, C_out, L_out)``, each size ``(L - 1) * stride - 2 *
        padding + dilation * (kernel_size - 1) + output_padding + 1``.

    Attributes:
        weight (Parameter): ``(C_in, C_out / groups, *kernel_size)``, initialised Kaiming-uniform as in PyTorch.
        bias (Parameter): ``(C_out,)``.

    Example:
        >>> conv = nn.Conv1d(3, 8, kernel_size=3, padding=1)
    """
    _nsp = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, output_padding, groups, bias,
                         dilation, padding_mode, device, dtype)

    def forward(self, input, output_size=None):
        return self._forward(F.conv_transpose1d, input, output_size)


class ConvTranspose2d(_ConvTransposeNd):
    """A 2-D transposed convolution (the gradient of ``Conv2d`` with respect to its input; sometimes called a
    deconvolution).

    Args:
        in_channels (int): ``C_in``.
        out_channels (int): ``C_out``.
        kernel_size (int or tuple): the filter size.
        stride (int or tuple): the filter step (default 1).
        padding (int, tuple or str): implicit padding on each side (default 0; ``"same"``/``"valid"`` for
            convolutions).
        output_padding (int or tuple): extra size added to one side of the output (default 0).
        dilation (int or tuple): the spacing between filter elements (default 1).
        groups (int): split the channels into this many independent groups (default 1).
        bias (bool): add a learned bias (default True).
        device, dtype: of the parameters.

    Shape:
        Input: ``(N, C_in, H, W)`` (or without ``N``). Output: ``(N, C_out, H_out, W_out)``, each size ``(L - 1) *
        stride - 2 * padding + dilation * (kernel_size - 1) + output_padding + 1``.

    Attributes:
        weight (Parameter): ``(C_in, C_out / groups, *kernel_size)``, initialised Kaiming-uniform as in PyTorch.
        bias (Parameter): ``(C_out,)``.

    Example:
        >>> conv = nn.Conv2d(3, 8, kernel_size=3, padding=1)
    """
    _nsp = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, output_padding, groups, bias,
                         dilation, padding_mode, device, dtype)

    def forward(self, input, output_size=None):
        return self._forward(F.conv_transpose2d, input, output_size)


class ConvTranspose3d(_ConvTransposeNd):
    """A 3-D transposed convolution (the gradient of ``Conv3d`` with respect to its input; sometimes called a
    deconvolution).

    Args:
        in_channels (int): ``C_in``.
        out_channels (int): ``C_out``.
        kernel_size (int or tuple): the filter size.
        stride (int or tuple): the filter step (default 1).
        padding (int, tuple or str): implicit padding on each side (default 0; ``"same"``/``"valid"`` for
            convolutions).
        output_padding (int or tuple): extra size added to one side of the output (default 0).
        dilation (int or tuple): the spacing between filter elements (default 1).
        groups (int): split the channels into this many independent groups (default 1).
        bias (bool): add a learned bias (default True).
        device, dtype: of the parameters.

    Shape:
        Input: ``(N, C_in, D, H, W)`` (or without ``N``). Output: ``(N, C_out, D_out, H_out, W_out)``, each size ``(L
        - 1) * stride - 2 * padding + dilation * (kernel_size - 1) + output_padding + 1``.

    Attributes:
        weight (Parameter): ``(C_in, C_out / groups, *kernel_size)``, initialised Kaiming-uniform as in PyTorch.
        bias (Parameter): ``(C_out,)``.

    Example:
        >>> conv = nn.Conv3d(3, 8, kernel_size=3, padding=1)
    """
    _nsp = 3

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, output_padding, groups, bias,
                         dilation, padding_mode, device, dtype)

    def forward(self, input, output_size=None):
        return self._forward(F.conv_transpose3d, input, output_size)


class _LazyConvXdMixin(LazyModuleMixin):
    """in_channels inferred from the first input (dim 1 batched, dim 0 unbatched)."""
    _nsp = 2
    # set by the _ConvNd this is mixed into (declared for type checkers)
    groups: int
    transposed: bool
    in_channels: int
    out_channels: int
    kernel_size: tuple[int, ...]
    weight: Parameter  # an UninitializedParameter until the first forward
    bias: Parameter

    def _lazy_init(self, out_channels: int, bias: bool, device, dtype) -> None:
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()  # type: ignore[misc]  # a mixin: super() is the _ConvNd it precedes

    def initialize_parameters(self, input, *args, **kwargs) -> None:
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self.transposed:
                cast(UninitializedParameter, self.weight).materialize(
                    (self.in_channels, self.out_channels // self.groups, *self.kernel_size))
            else:
                cast(UninitializedParameter, self.weight).materialize(
                    (self.out_channels, self.in_channels // self.groups, *self.kernel_size))
            if self.bias is not None:
                cast(UninitializedParameter, self.bias).materialize((self.out_channels,))
            self.reset_parameters()

    def _get_in_channels(self, input) -> int:
        nb = self._nsp + 1
        if input.dim() not in (nb, nb + 1):
            raise RuntimeError(f"Expected {nb}D (unbatched) or {nb + 1}D (batched) input to "
                               f"{self.__class__.__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.dim() == nb + 1 else input.shape[0]


def _lazy_conv(base: type[_ConvNd]):
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1, groups: int = 1,
                 bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        # no bias yet: the placeholders replace the empty tensors
        base.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, device, dtype)
        self._register_lazy_hooks()
        self._lazy_init(out_channels, bias, device, dtype)
    return __init__


def _lazy_conv_transpose(base: type[_ConvNd]):
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0, groups: int = 1,
                 bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        base.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode,
                      device, dtype)
        self._register_lazy_hooks()
        self._lazy_init(out_channels, bias, device, dtype)
    return __init__


class LazyConv1d(_LazyConvXdMixin, Conv1d):
    """A Conv1d whose in_channels is inferred from the first input (it then becomes a Conv1d)."""
    cls_to_become, _nsp = Conv1d, 1
    __init__ = _lazy_conv(Conv1d)


class LazyConv2d(_LazyConvXdMixin, Conv2d):
    """A Conv2d whose in_channels is inferred from the first input (it then becomes a Conv2d)."""
    cls_to_become, _nsp = Conv2d, 2
    __init__ = _lazy_conv(Conv2d)


class LazyConv3d(_LazyConvXdMixin, Conv3d):
    """A Conv3d whose in_channels is inferred from the first input (it then becomes a Conv3d)."""
    cls_to_become, _nsp = Conv3d, 3
    __init__ = _lazy_conv(Conv3d)


class LazyConvTranspose1d(_LazyConvXdMixin, ConvTranspose1d):
    """A ConvTranspose1d whose in_channels is inferred from the first input."""
    cls_to_become, _nsp = ConvTranspose1d, 1
    __init__ = _lazy_conv_transpose(ConvTranspose1d)


class LazyConvTranspose2d(_LazyConvXdMixin, ConvTranspose2d):
    """A ConvTranspose2d whose in_channels is inferred from the first input."""
    cls_to_become, _nsp = ConvTranspose2d, 2
    __init__ = _lazy_conv_transpose(ConvTranspose2d)


class LazyConvTranspose3d(_LazyConvXdMixin, ConvTranspose3d):
    """A ConvTranspose3d whose in_channels is inferred from the first input."""
    cls_to_become, _nsp = ConvTranspose3d, 3
    __init__ = _lazy_conv_transpose(ConvTranspose3d)

