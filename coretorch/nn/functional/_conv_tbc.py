"""nn.functional.conv_tbc: a 1-D convolution over (time, batch, channels) inputs (fairseq's layout)."""
from __future__ import annotations

from ...ops import shape as _S
from ...tensor import Tensor
from ._conv import conv1d


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """``input`` (time, batch, in_channels) convolved with ``weight`` (kernel width, in_channels, out_channels),
    plus ``bias`` (out_channels), ``pad`` time steps of zeros on each side; the result is (time', batch,
    out_channels)."""
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    out = conv1d(_S.permute(input, (1, 2, 0)), _S.permute(weight, (2, 1, 0)), bias, padding=pad)
    return _S.permute(out, (2, 0, 1))
