"""nn.functional.conv3d as kd two-dimensional convolutions: each depth tap of the kernel is a conv2d over the
matching depth slices of the input (folded into the batch), summed; so autograd, groups, stride, dilation and
padding come from conv2d's kernels on every device."""
from __future__ import annotations

from ...ops import pointwise as _P, shape as _S
from ...tensor import Tensor
from ...amp.autocast_mode import cast_inputs as _ac_cast, state as _ac
from ._common import _ntuple
from ._conv import _add_bias, _check_conv, _resolve_conv_padding, conv2d
from ._padding import _pad_constant

__all__ = ["conv3d"]


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """Applies a 3-D convolution over (N, C, D, H, W) (or unbatched (C, D, H, W)) input."""
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, weight, bias = _ac_cast("conv3d", input, weight, bias)
    _check_conv("conv3d", input, weight, bias, groups, 3)
    batched = input.ndim == 5
    x = input if batched else _S.unsqueeze(input, 0)
    stride, dilation = _ntuple(stride, 3, "stride"), _ntuple(dilation, 3, "dilation")
    ks = tuple(weight.shape[2:])
    x, padding = _resolve_conv_padding(x, padding, stride, dilation, ks)
    if padding[0]:
        x = _pad_constant(x, (0, 0, 0, 0, padding[0], padding[0]), 0.0)
    n, c, d, h, w = x.shape
    kd = ks[0]
    d_out = (d - dilation[0] * (kd - 1) - 1) // stride[0] + 1
    if d_out <= 0:
        raise RuntimeError(f"Calculated padded input size per channel: ({d} x {h} x {w}). Kernel size: "
                           f"({' x '.join(map(str, ks))}). Kernel size can't be greater than actual input size")
    out = None
    for i in range(kd):  # one conv2d per depth tap, over every output depth at once
        start = i * dilation[0]
        xs = x[:, :, start:start + stride[0] * (d_out - 1) + 1:stride[0]]          # (N, C, D_out, H, W)
        xs = _S.permute(xs, (0, 2, 1, 3, 4)).reshape(n * d_out, c, h, w)
        y = conv2d(xs, weight[:, :, i], None, stride[1:], padding[1:], dilation[1:], groups)
        out = y if out is None else _P.add(out, y)
    o, ho, wo = out.shape[1:]
    out = _S.permute(out.reshape(n, d_out, o, ho, wo), (0, 2, 1, 3, 4))
    out = _add_bias(out, bias, 3)
    return out if batched else _S.squeeze(out, 0)
