"""nn.functional.conv3d as kd two-dimensional convolutions: each depth tap of the kernel is a conv2d over the
matching depth slices of the input (folded into the batch), summed; so autograd, groups, stride, dilation and
padding come from conv2d's kernels on every device."""
from __future__ import annotations

from ...ops import creation as _C, pointwise as _P, shape as _S
from ...tensor import Tensor
from ...amp.autocast_mode import policy as _ac_policy
from ._common import _ntuple
from ._conv import (REDUCED, _add_bias, _check_channels, _check_conv, _check_kernel_fits, _f32, _resolve_conv_padding,
                    _conv2d, _conv_transpose2d, _transpose_args)
from ._padding import _pad_constant

__all__ = ["conv3d", "conv_transpose3d"]

# The depth taps are summed here, outside conv2d's kernels: a float16/bfloat16 convolution sums them and adds the bias
# in float32 and rounds once, as PyTorch's kernel accumulates in float (summing per-tap results in the half dtype
# rounded kd times: a bfloat16 conv3d was several ulps off, its input gradient too).


@_ac_policy("conv3d", 3)  # autocast: input, weight, bias cast by the op's dtype policy
def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """Applies a 3-D convolution over (N, C, D, H, W) (or unbatched (C, D, H, W)) input."""
    _check_conv("conv3d", input, weight, bias, groups, 3)
    batched = input.ndim == 5
    x = input if batched else _S.unsqueeze(input, 0)
    stride, dilation = _ntuple(stride, 3, "stride"), _ntuple(dilation, 3, "dilation")
    ks = tuple(weight.shape[2:])
    x, padding = _resolve_conv_padding(x, padding, stride, dilation, ks)
    _check_channels(input, weight, groups, 3, False)  # (before conv2d's per-tap calls name 4-d shapes)
    if padding[0]:
        x = _pad_constant(x, (0, 0, 0, 0, padding[0], padding[0]), 0.0)
    n, c, d, h, w = x.shape
    kd = ks[0]
    _check_kernel_fits((d, h, w), (0,) + tuple(padding[1:]), dilation, ks)  # (depth padding already applied)
    d_out = (d - dilation[0] * (kd - 1) - 1) // stride[0] + 1
    x, weight = _f32(x), _f32(weight)
    out = None
    for i in range(kd):  # one conv2d per depth tap, over every output depth at once
        start = i * dilation[0]
        xs = x[:, :, start:start + stride[0] * (d_out - 1) + 1:stride[0]]          # (N, C, D_out, H, W)
        xs = _S.permute(xs, (0, 2, 1, 3, 4)).reshape(n * d_out, c, h, w)
        y = _conv2d(xs, weight[:, :, i], None, stride[1:], padding[1:], dilation[1:], groups)
        out = y if out is None else _P.add(out, y)
    assert out is not None  # kd >= 1
    o, ho, wo = out.shape[1:]
    out = _S.permute(out.reshape(n, d_out, o, ho, wo), (0, 2, 1, 3, 4))
    out = _add_bias(out, _f32(bias), 3)
    out = _S.contiguous(out.to(input.dtype) if input.dtype in REDUCED else out)  # PyTorch's result is row-major
    return out if batched else _S.squeeze(out, 0)                                    # (``.view(n, -1)`` works)


def _check_output_padding(stride, output_padding, dilation) -> None:
    for k in range(3):
        if output_padding[k] >= stride[k] and output_padding[k] >= dilation[k]:
            raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                               f"output_padding_depth: {output_padding[0]} output_padding_height: {output_padding[1]} "
                               f"output_padding_width: {output_padding[2]} stride_depth: {stride[0]} stride_height: "
                               f"{stride[1]} stride_width: {stride[2]} dilation_depth: {dilation[0]} "
                               f"dilation_height: {dilation[1]} dilation_width: {dilation[2]}")


@_ac_policy("conv_transpose3d", 3)  # autocast: input, weight, bias cast by the op's dtype policy
def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """Applies a 3-D transposed convolution over (N, C, D, H, W) (or unbatched (C, D, H, W)) input.

    One conv_transpose2d over every input depth slice at once, with the depth taps folded into its output
    channels; each tap's slab is then added at its output depths (i * dilation + d * stride - padding)."""
    _check_conv("conv_transpose3d", input, weight, bias, groups, 3)
    batched = input.ndim == 5
    x = input if batched else _S.unsqueeze(input, 0)
    stride, padding, output_padding, dilation = _transpose_args("conv_transpose3d", 3, stride, padding,
                                                                output_padding, dilation)
    n, c, d, h, w = x.shape
    cin, cog, kd, kh, kw = weight.shape
    _check_channels(input, weight, groups, 3, True)
    _check_output_padding(stride, output_padding, dilation)
    outs = [(sz - 1) * st - 2 * p + dl * (k - 1) + op + 1 for sz, st, p, dl, k, op in
            zip((d, h, w), stride, padding, dilation, (kd, kh, kw), output_padding)]
    if any(o <= 0 for o in outs):
        raise RuntimeError(f"Given input size per channel: ({d} x {h} x {w}). Calculated output size per channel: "
                           f"({outs[0]} x {outs[1]} x {outs[2]}). Output size is too small")
    o = cog * groups
    x, weight = _f32(x), _f32(weight)
    xs = _S.permute(x, (0, 2, 1, 3, 4)).reshape(n * d, c, h, w)
    y = _conv_transpose2d(xs, weight.reshape(cin, cog * kd, kh, kw), None, stride[1:], padding[1:],
                          output_padding[1:], groups, dilation[1:])           # (N*D, O*kd, Ho, Wo)
    ho, wo = y.shape[2:]
    y = y.reshape(n, d, o, kd, ho, wo)
    sd, dd, pd = stride[0], dilation[0], padding[0]
    full = (d - 1) * sd + dd * (kd - 1) + 1 + output_padding[0]
    if kd == 1 and sd == 1 and output_padding[0] == 0:
        out = y[:, :, :, 0]
    else:
        out = _C.zeros(n, full, o, ho, wo, dtype=y.dtype, device=y.device)
        for i in range(kd):
            key = (slice(None), slice(i * dd, i * dd + (d - 1) * sd + 1, sd))
            out[key] = _P.add(out[key], y[:, :, :, i])
    out = _add_bias(_S.permute(out[:, pd:pd + outs[0]], (0, 2, 1, 3, 4)), _f32(bias), 3)
    out = _S.contiguous(out.to(input.dtype) if input.dtype in REDUCED else out)  # PyTorch's result is row-major
    return out if batched else _S.squeeze(out, 0)
