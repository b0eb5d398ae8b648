"""MaxPool1d/2d/3d, AvgPool1d/2d/3d, AdaptiveAvgPool1d/2d/3d, AdaptiveMaxPool1d/2d/3d, MaxUnpool1d/2d/3d,
LPPool1d/2d/3d, FractionalMaxPool2d/3d."""
from __future__ import annotations

from .. import functional as F
from .module import Module


def _ntuple(v, n: int) -> tuple:
    """PyTorch's _single/_pair/_triple: an iterable stays as a tuple, a number repeats n times."""
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d",
           "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "LPPool1d", "LPPool2d", "LPPool3d", "FractionalMaxPool2d",
           "FractionalMaxPool3d"]


class _MaxPoolNd(Module):
    __constants__ = ["kernel_size", "stride", "padding", "dilation", "return_indices", "ceil_mode"]

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return ("kernel_size={kernel_size}, stride={stride}, padding={padding}, dilation={dilation}, "
                "ceil_mode={ceil_mode}").format(**self.__dict__)


class MaxPool2d(_MaxPoolNd):
    """Max pooling over the last 2 dimension(s) of an input ``(N, C, H, W)`` (or without ``N``).

    Args:
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step (default ``kernel_size``).
        padding (int or tuple): implicit -inf padding on each side (default 0).
        dilation (int or tuple): the spacing between window elements (default 1).
        return_indices (bool): also return the argmax indices (for ``MaxUnpool``).
        ceil_mode (bool): round the output size up instead of down.

    Shape:
        Input: ``(N, C, H, W)``. Output: the same leading dimensions, each pooled size
        ``floor((L + 2 * padding - dilation * (kernel_size - 1) - 1) / stride) + 1`` (ceil with ``ceil_mode``).
    """
    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool1d(_MaxPoolNd):
    """Max pooling over the last 1 dimension(s) of an input ``(N, C, L)`` (or without ``N``).

    Args:
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step (default ``kernel_size``).
        padding (int or tuple): implicit -inf padding on each side (default 0).
        dilation (int or tuple): the spacing between window elements (default 1).
        return_indices (bool): also return the argmax indices (for ``MaxUnpool``).
        ceil_mode (bool): round the output size up instead of down.

    Shape:
        Input: ``(N, C, L)``. Output: the same leading dimensions, each pooled size
        ``floor((L + 2 * padding - dilation * (kernel_size - 1) - 1) / stride) + 1`` (ceil with ``ceil_mode``).
    """
    def forward(self, input):
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool3d(_MaxPoolNd):
    """Max pooling over the last 3 dimension(s) of an input ``(N, C, D, H, W)`` (or without ``N``).

    Args:
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step (default ``kernel_size``).
        padding (int or tuple): implicit -inf padding on each side (default 0).
        dilation (int or tuple): the spacing between window elements (default 1).
        return_indices (bool): also return the argmax indices (for ``MaxUnpool``).
        ceil_mode (bool): round the output size up instead of down.

    Shape:
        Input: ``(N, C, D, H, W)``. Output: the same leading dimensions, each pooled size
        ``floor((L + 2 * padding - dilation * (kernel_size - 1) - 1) / stride) + 1`` (ceil with ``ceil_mode``).
    """
    def forward(self, input):
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class _AvgPoolNd(Module):
    """AvgPool2d's and AvgPool3d's arguments and repr (a private base: in PyTorch neither is a subclass of the
    other)."""
    __constants__ = ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override"]

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override=None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """Average pooling over the last 2 dimension(s) of an input ``(N, C, H, W)`` (or without ``N``).

    Args:
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step (default ``kernel_size``).
        padding (int or tuple): implicit zero padding on each side (default 0).
        ceil_mode (bool): round the output size up instead of down.
        count_include_pad (bool): count the padding zeros in the average (default True).
        divisor_override (int, optional): divide by this instead of the window size.

    Shape:
        Input: ``(N, C, H, W)``. Output: the same leading dimensions, each pooled size
        ``floor((L + 2 * padding - dilation * (kernel_size - 1) - 1) / stride) + 1`` (ceil with ``ceil_mode``).
    """
    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AvgPool3d(_AvgPoolNd):
    """Average pooling over the last 3 dimension(s) of an input ``(N, C, D, H, W)`` (or without ``N``).

    Args:
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step (default ``kernel_size``).
        padding (int or tuple): implicit zero padding on each side (default 0).
        ceil_mode (bool): round the output size up instead of down.
        count_include_pad (bool): count the padding zeros in the average (default True).
        divisor_override (int, optional): divide by this instead of the window size.

    Shape:
        Input: ``(N, C, D, H, W)``. Output: the same leading dimensions, each pooled size
        ``floor((L + 2 * padding - dilation * (kernel_size - 1) - 1) / stride) + 1`` (ceil with ``ceil_mode``).
    """
    def forward(self, input):
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AvgPool1d(_AvgPoolNd):
    """Average pooling over the last 1 dimension(s) of an input ``(N, C, L)`` (or without ``N``).

    Args:
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step (default ``kernel_size``).
        padding (int or tuple): implicit zero padding on each side (default 0).
        ceil_mode (bool): round the output size up instead of down.
        count_include_pad (bool): count the padding zeros in the average (default True).

    Shape:
        Input: ``(N, C, L)``. Output: the same leading dimensions, each pooled size
        ``floor((L + 2 * padding - dilation * (kernel_size - 1) - 1) / stride) + 1`` (ceil with ``ceil_mode``).
    """
    __constants__ = ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad"]

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        Module.__init__(self)  # (not _AvgPoolNd's: AvgPool1d has no divisor_override)
        self.kernel_size = (kernel_size,) if isinstance(kernel_size, int) else tuple(kernel_size)
        s = stride if stride is not None else kernel_size
        self.stride = (s,) if isinstance(s, int) else tuple(s)
        self.padding = (padding,) if isinstance(padding, int) else tuple(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AdaptiveNd(Module):
    __constants__ = ["output_size"]

    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class _AdaptiveAvgPoolNd(_AdaptiveNd):
    """The adaptive average poolings' base (PyTorch's name: ``isinstance(m, _AdaptiveAvgPoolNd)``)."""


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Adaptive average pooling: windows chosen so that the output has the size ``output_size`` whatever the input size.

    Window ``i`` of an input size ``L`` covers ``floor(i * L / out)`` to ``ceil((i + 1) * L / out)``.

    Args:
        output_size (int or tuple): the output size of the last 2 dimension(s) (None keeps a size).

    Shape:
        Input: ``(N, C, H, W)`` (or without ``N``). Output: the leading dimensions, then ``output_size``.
    """
    def forward(self, input):
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Adaptive average pooling: windows chosen so that the output has the size ``output_size`` whatever the input size.

    Window ``i`` of an input size ``L`` covers ``floor(i * L / out)`` to ``ceil((i + 1) * L / out)``.

    Args:
        output_size (int or tuple): the output size of the last 1 dimension(s) (None keeps a size).

    Shape:
        Input: ``(N, C, L)`` (or without ``N``). Output: the leading dimensions, then ``output_size``.
    """
    def forward(self, input):
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Adaptive average pooling: windows chosen so that the output has the size ``output_size`` whatever the input size.

    Window ``i`` of an input size ``L`` covers ``floor(i * L / out)`` to ``ceil((i + 1) * L / out)``.

    Args:
        output_size (int or tuple): the output size of the last 3 dimension(s) (None keeps a size).

    Shape:
        Input: ``(N, C, D, H, W)`` (or without ``N``). Output: the leading dimensions, then ``output_size``.
    """
    def forward(self, input):
        return F.adaptive_avg_pool3d(input, self.output_size)


class _AdaptiveMaxPoolNd(_AdaptiveNd):
    __constants__ = ["output_size", "return_indices"]

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Adaptive max pooling: windows chosen so that the output has the size ``output_size`` whatever the input size.

    Window ``i`` of an input size ``L`` covers ``floor(i * L / out)`` to ``ceil((i + 1) * L / out)``.

    Args:
        output_size (int or tuple): the output size of the last 1 dimension(s) (None keeps a size).
        return_indices (bool): also return the argmax indices.

    Shape:
        Input: ``(N, C, L)`` (or without ``N``). Output: the leading dimensions, then ``output_size``.
    """
    def forward(self, input):
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Adaptive max pooling: windows chosen so that the output has the size ``output_size`` whatever the input size.

    Window ``i`` of an input size ``L`` covers ``floor(i * L / out)`` to ``ceil((i + 1) * L / out)``.

    Args:
        output_size (int or tuple): the output size of the last 2 dimension(s) (None keeps a size).
        return_indices (bool): also return the argmax indices.

    Shape:
        Input: ``(N, C, H, W)`` (or without ``N``). Output: the leading dimensions, then ``output_size``.
    """
    def forward(self, input):
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Adaptive max pooling: windows chosen so that the output has the size ``output_size`` whatever the input size.

    Window ``i`` of an input size ``L`` covers ``floor(i * L / out)`` to ``ceil((i + 1) * L / out)``.

    Args:
        output_size (int or tuple): the output size of the last 3 dimension(s) (None keeps a size).
        return_indices (bool): also return the argmax indices.

    Shape:
        Input: ``(N, C, D, H, W)`` (or without ``N``). Output: the leading dimensions, then ``output_size``.
    """
    def forward(self, input):
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class _MaxUnpoolNd(Module):
    _n = 2

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        n = self._n
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride = _ntuple(stride if stride is not None else kernel_size, n)
        self.padding = _ntuple(padding, n)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Inverse of MaxPool1d: ``forward(input, indices, output_size=None)``."""
    _n = 1

    def forward(self, input, indices, output_size=None):
        return F.max_unpool1d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool2d(_MaxUnpoolNd):
    """Inverse of MaxPool2d: ``forward(input, indices, output_size=None)``."""
    _n = 2

    def forward(self, input, indices, output_size=None):
        return F.max_unpool2d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool3d(_MaxUnpoolNd):
    """Inverse of MaxPool3d: ``forward(input, indices, output_size=None)``."""
    _n = 3

    def forward(self, input, indices, output_size=None):
        return F.max_unpool3d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class _LPPoolNd(Module):
    __constants__ = ["norm_type", "kernel_size", "stride", "ceil_mode"]

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def extra_repr(self) -> str:
        return ("norm_type={norm_type}, kernel_size={kernel_size}, stride={stride}, "
                "ceil_mode={ceil_mode}").format(**self.__dict__)


class LPPool1d(_LPPoolNd):
    """(sum over each window of x^p)^(1/p) over the last dim."""

    def forward(self, input):
        return F.lp_pool1d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool2d(_LPPoolNd):
    """(sum over each window of x^p)^(1/p) over the last two dims."""

    def forward(self, input):
        return F.lp_pool2d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool3d(_LPPoolNd):
    """(sum over each window of x^p)^(1/p) over the last three dims."""

    def forward(self, input):
        return F.lp_pool3d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class _FractionalMaxPoolNd(Module):
    _nd = 2
    __constants__ = ["kernel_size", "return_indices", "output_size", "output_ratio"]

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False,
                 _random_samples=None) -> None:
        super().__init__()
        n, name = self._nd, type(self).__name__
        self.kernel_size = _ntuple(kernel_size, n)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _ntuple(output_size, n) if output_size is not None else None
        self.output_ratio = _ntuple(output_ratio, n) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        fn = F.fractional_max_pool2d if self._nd == 2 else F.fractional_max_pool3d
        return fn(input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                  _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """2-d fractional max pooling (windows at pseudo-random steps; see F.fractional_max_pool2d)."""
    _nd = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """3-d fractional max pooling (see F.fractional_max_pool3d)."""
    _nd = 3
