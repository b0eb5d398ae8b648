"""nn.functional convolutions: conv1d/2d and the transposed forms on the backend's fused kernels."""
from __future__ import annotations

from ... import dtypes as _dt
from ...amp.autocast_mode import policy as _ac_policy
from ...autograd._node_names import named_node
from ...autograd.graph import Node
from ...ops import creation as _C
from ...ops import linalg as _L
from ...ops import pointwise as _P
from ...ops import reduction as _R
from ...ops import shape as _S
from ...ops._util import device_mismatch
from ...tensor import Tensor, _make
from ._common import _channels_last_like, _check_tensor, _needs_graph, _no_grad, _ntuple, _record
from ._padding import _pad_constant


# ---------------------------------------------------------------------------------------------
# convolution: conv2d and its two gradients, each a differentiable op of the others
# ---------------------------------------------------------------------------------------------
def _conv_out(n, k, s, p, d) -> int:
    return (n + 2 * p - d * (k - 1) - 1) // s + 1


def _unfold_fallback(x: Tensor, kh, kw, stride, padding, dilation, oh, ow, pad_value=0.0) -> Tensor:
    """(N, C, H, W) -> (N, C, KH*KW, OH, OW) with basic slicing (one slice per kernel tap, no pixel loop)."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    need_h, need_w = (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1
    eh, ew = max(0, need_h - x.shape[2] - 2 * ph), max(0, need_w - x.shape[3] - 2 * pw)
    xp = _pad_constant(x, (pw, pw + ew, ph, ph + eh), pad_value) if (ph or pw or eh or ew) else x
    taps = [xp[:, :, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]
            for i in range(kh) for j in range(kw)]
    return _S.stack(taps, 2)


def _conv2d_fallback(x: Tensor, w: Tensor, stride, padding, dilation, groups) -> Tensor:
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh, ow = _conv_out(h, kh, stride[0], padding[0], dilation[0]), _conv_out(wd, kw, stride[1], padding[1],
                                                                             dilation[1])
    cols = _unfold_fallback(x, kh, kw, stride, padding, dilation, oh, ow)       # N, C, K, OH, OW
    cols = cols.reshape(n, groups, cg * kh * kw, oh * ow)
    wm = w.reshape(1, groups, o // groups, cg * kh * kw)
    return _L.matmul(wm, cols).reshape(n, o, oh, ow)


def _conv2d_bwd_weight_fallback(x: Tensor, gy: Tensor, wshape, stride, padding, dilation, groups) -> Tensor:
    n, c = x.shape[:2]
    o, cg, kh, kw = wshape
    oh, ow = gy.shape[2:]
    cols = _unfold_fallback(x, kh, kw, stride, padding, dilation, oh, ow).reshape(n, groups, cg * kh * kw,
                                                                                   oh * ow)
    gm = gy.reshape(n, groups, o // groups, oh * ow)
    return _R.sum(_L.matmul(gm, _S.transpose(cols, -1, -2)), 0).reshape(wshape)


def _conv2d_bwd_input_fallback(gy: Tensor, w: Tensor, xshape, stride, padding, dilation, groups) -> Tensor:
    n, c, h, wd = xshape
    o, cg, kh, kw = w.shape
    oh, ow = gy.shape[2:]
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    wm = _S.transpose(w.reshape(1, groups, o // groups, cg * kh * kw), -1, -2)    # 1, G, CgKK, Og
    gc = _L.matmul(wm, gy.reshape(n, groups, o // groups, oh * ow))             # N, G, CgKK, OHOW
    gc = gc.reshape(n, c, kh, kw, oh, ow)
    hp = max(h + 2 * ph, (oh - 1) * sh + (kh - 1) * dh + 1)
    wp = max(wd + 2 * pw, (ow - 1) * sw + (kw - 1) * dw + 1)
    gxp = _C.zeros(n, c, hp, wp, dtype=gy.dtype, device=gy.device)
    for i in range(kh):
        for j in range(kw):
            key = (slice(None), slice(None), slice(i * dh, i * dh + (oh - 1) * sh + 1, sh),
                   slice(j * dw, j * dw + (ow - 1) * sw + 1, sw))
            gxp[key] = _P.add(gxp[key], gc[:, :, i, j])
    return _S.contiguous(gxp[:, :, ph:ph + h, pw:pw + wd])


def _conv_call(kernel: str, fallback, a: Tensor, b: Tensor, shape, stride, padding, dilation, groups):
    table = a._be
    if b._be is not table:
        raise device_mismatch(kernel, a, b)
    if table.has(kernel):
        if shape is None:
            return table.conv2d(a._data, b._data, stride, padding, dilation, groups)
        return getattr(table, kernel)(a._data, b._data, tuple(shape), stride, padding, dilation, groups)
    with _no_grad():
        ta, tb = _make(a._data, a.dtype, table), _make(b._data, b.dtype, table)
        r = fallback(ta, tb, stride, padding, dilation, groups) if shape is None else \
            fallback(ta, tb, tuple(shape), stride, padding, dilation, groups)
    return r._data


class _ConvNode(Node):
    __slots__ = ("args", "shape", "need")


class ConvolutionBackward0(_ConvNode):
    __slots__ = ()

    def backward(self, gy):
        x, w = self.saved()
        nx, nw = self.need
        return (_conv2d_input_grad(gy, w, x.shape, *self.args) if nx else None,
                _conv2d_weight_grad(x, gy, w.shape, *self.args) if nw else None)


class ConvolutionBackwardInput(_ConvNode):
    """The input-gradient op gx = J_x^T gy: linear in gy and in w."""
    __slots__ = ()

    def backward(self, ggx):
        gy, w = self.saved()
        ngy, nw = self.need
        ggy = None
        if ngy:
            ggy = _conv2d_raw(ggx, w, *self.args)
            oh, ow = gy.shape[2:]
            if tuple(ggy.shape[2:]) != (oh, ow):  # an output_padding >= stride (allowed below the dilation): the
                ggy = ggy[:, :, :oh, :ow]          # convolution of the padded rows reaches past gy's size
        return (ggy,
                _conv2d_weight_grad(ggx, gy, w.shape, *self.args) if nw else None)


class ConvolutionBackwardWeight(_ConvNode):
    """The weight-gradient op gw: linear in x and in gy."""
    __slots__ = ()

    def backward(self, ggw):
        x, gy = self.saved()
        nx, ngy = self.need
        return (_conv2d_input_grad(gy, ggw, x.shape, *self.args) if nx else None,
                _conv2d_raw(x, ggw, *self.args) if ngy else None)


def _conv_op(node_cls, kernel, fallback, a, b, shape, args):
    out = _conv_call(kernel, fallback, a, b, shape, *args)
    dt, table = a.dtype, a._be
    if _needs_graph(a, b):
        node = node_cls()
        node.args, node.need = args, (a._rg, b._rg)
        node.save(a, b)
        return _record(node, out, dt, table, a, b)
    return _make(out, dt, table)


def _conv2d_raw(x, w, stride, padding, dilation, groups):
    return _conv_op(ConvolutionBackward0, "conv2d", _conv2d_fallback, x, w, None,
                    (stride, padding, dilation, groups))


def _conv2d_input_grad(gy, w, xshape, stride, padding, dilation, groups):
    return _conv_op(ConvolutionBackwardInput, "conv2d_backward_input", _conv2d_bwd_input_fallback, gy, w,
                    tuple(xshape), (stride, padding, dilation, groups))


def _conv2d_weight_grad(x, gy, wshape, stride, padding, dilation, groups):
    return _conv_op(ConvolutionBackwardWeight, "conv2d_backward_weight", _conv2d_bwd_weight_fallback, x, gy,
                    tuple(wshape), (stride, padding, dilation, groups))


_CTYPE = {_dt.float32: "float", _dt.float64: "double", _dt.float16: "c10::Half", _dt.bfloat16: "c10::BFloat16"}


def _check_conv(op, input, weight, bias, groups, nsp):
    _check_tensor(op, "input", input)
    _check_tensor(op, "weight", weight)
    if weight.ndim != nsp + 2:
        raise RuntimeError(f"weight should have at least three dimensions (expected {nsp + 2}-D weight for "
                           f"{op}, got {weight.ndim}-D weight of size {list(weight.shape)})")
    if input.ndim not in (nsp + 1, nsp + 2):
        raise RuntimeError(f"Expected {nsp + 1}D (unbatched) or {nsp + 2}D (batched) input to {op}, but got input "
                           f"of size: {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"Input type ({input.dtype._tname[:-6]}) and weight type ({weight.dtype._tname[:-6]}) "
                           "should be the same")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"\"{op}\" not implemented for '{input.dtype._tname[:-6]}'")
    transposed = op.startswith("conv_transpose")
    if bias is not None and bias.dtype is not input.dtype and not transposed:
        # (PyTorch's check, in its C++ type names; a transposed convolution casts the bias to the input's dtype)
        raise RuntimeError(f"Input type ({_CTYPE.get(input.dtype, input.dtype)}) and bias type "
                           f"({_CTYPE.get(bias.dtype, bias.dtype)}) should be the same")
    nb = weight.shape[1] * groups if transposed else weight.shape[0]
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != nb):
        raise RuntimeError(f"Given {'transposed=1, ' if transposed else ''}weight of size {list(weight.shape)}, "
                           f"expected bias to be 1-dimensional with {nb} elements, but got bias of size "
                           f"{list(bias.shape)} instead")


def _check_channels(input, weight, groups: int, nsp: int, transposed: bool) -> None:
    """PyTorch's input-channel and groups checks, naming the batched input shape (an unbatched input is reported
    with its batch dim of 1, as ATen unsqueezes it first) and the op's own weight."""
    shape = list(input.shape) if input.ndim == nsp + 2 else [1] + list(input.shape)
    c, w = shape[1], list(weight.shape)
    want = weight.shape[0] if transposed else weight.shape[1] * groups
    if c != want:
        raise RuntimeError(f"Given {'transposed=1' if transposed else f'groups={groups}'}, weight of size {w}, "
                           f"expected input{shape} to have {want} channels, but got {c} channels instead")
    if weight.shape[0] % groups:  # PyTorch's message prints the size in double brackets
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size [{w}] instead")


def _check_kernel_fits(sizes, padding, dilation, ks) -> None:
    """PyTorch's check that the dilated kernel fits the padded input, worded over every spatial dim."""
    padded = [s + 2 * p for s, p in zip(sizes, padding)]
    dilated = [d * (k - 1) + 1 for d, k in zip(dilation, ks)]
    if any(p < k for p, k in zip(padded, dilated)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel "
                           f"size: ({' x '.join(map(str, dilated))}). Kernel size can't be greater than actual "
                           "input size")


def _transpose_args(op: str, nsp: int, stride, padding, output_padding, dilation):
    """A transposed convolution's (stride, padding, output_padding, dilation) as nsp-tuples, with PyTorch's
    checks (a string padding is a TypeError: 'same'/'valid' are for the forward convolutions only)."""
    if isinstance(padding, str):
        raise TypeError(f"{op}(): argument 'padding' must be tuple of ints, not str")
    stride, padding = _ntuple(stride, nsp, "stride"), _ntuple(padding, nsp, "padding")
    output_padding, dilation = _ntuple(output_padding, nsp, "output_padding"), _ntuple(dilation, nsp, "dilation")
    if any(v <= 0 for v in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(v < 0 for v in padding):
        raise RuntimeError("negative padding is not supported")
    if any(v < 0 for v in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(v <= 0 for v in dilation):
        names = ("depth", "height", "width")[3 - max(nsp, 2):]  # 1-d: ATen runs it as 2-d (height 1)
        dil = dilation if nsp > 1 else (1,) + dilation
        raise RuntimeError("dilation should be greater than zero, but got " + ", ".join(
            f"dilation_{n}: {v}" for n, v in zip(names, dil)))
    return stride, padding, output_padding, dilation


def _half_bias(op, input, weight, bias, **kwargs) -> Tensor | None:
    """A float16/bfloat16 convolution with a bias in float32, the bias added before the one rounding (PyTorch's op
    math; the half result rounded first and the bias added in half was an ulp off in ~15% of the elements); None
    for any other call."""
    dt = input.dtype
    if bias is None or (dt is not _dt.float16 and dt is not _dt.bfloat16) or not weight.dtype is bias.dtype is dt:
        return None
    return named_node(_L.in_float32(op, input, weight, bias, **kwargs), "ConvolutionBackward0")


def _add_bias(out: Tensor, bias, nsp: int) -> Tensor:
    if bias is None:
        return out
    if bias.dtype is not out.dtype:  # a transposed convolution's bias of another dtype: PyTorch casts it (a float64
        bias = bias.to(out.dtype)    # bias made a float32 convolution's result float64)
    return _P.add(out, bias.reshape((bias.shape[0],) + (1,) * nsp))


# A float16/bfloat16 convolution runs in float32 and rounds once, bias included, as PyTorch's kernels accumulate in
# float (rounding the kernel's result and then adding the bias was 1 ulp off in bfloat16; so were the summed taps).
REDUCED = (_dt.float16, _dt.bfloat16)


def _f32(t):
    """A float16/bfloat16 tensor as float32 (a differentiable cast), anything else (None included) as it is."""
    return t.float() if t is not None and t.dtype in REDUCED else t


def _same_padding(ks, dilation):
    """PyTorch's padding='same': total d*(k-1), the extra element (odd totals) on the right/bottom."""
    lo, extra = [], []
    for k, d in zip(ks, dilation):
        total = d * (k - 1)
        lo.append(total // 2)
        extra.append(total - 2 * (total // 2))
    return tuple(lo), tuple(extra)


def _resolve_conv_padding(x: Tensor, padding, stride: tuple, dilation: tuple, ks: tuple):
    """(input, per-dim padding) for a convolution: 'valid' is none; 'same' pads d*(k-1) with the odd element on
    the far side (padded into ``x`` here); then PyTorch's checks of stride, padding and dilation."""
    nsp = len(ks)
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,) * nsp
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            padding, extra = _same_padding(ks, dilation)
            if any(extra):
                pads: tuple[int, ...] = ()
                for e in reversed(extra):  # F.pad order: last dim first
                    pads += (0, e)
                x = _pad_constant(x, pads, 0.0)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        padding = _ntuple(padding, nsp, "padding")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")
    return x, padding


@_ac_policy("conv2d", 3)  # autocast: input, weight, bias cast by the op's dtype policy
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """A 2-D convolution (cross-correlation) of ``input`` (N, C_in, H, W) by ``weight`` ``(C_out, C_in / groups, *k)``.

    Args:
        input (Tensor): ``(N, C_in, H, W)`` (or without ``N``).
        weight (Tensor): the filters.
        bias (Tensor, optional): ``(C_out,)``.
        stride, padding, dilation (int or tuple): as :class:`coretorch.nn.Conv2d` (``padding`` may be
            ``"same"`` or ``"valid"``).
        groups (int): the number of channel groups.

    Example:
        >>> F.conv2d(torch.randn(1, 3, *([8] * 2)), torch.randn(4, 3, *([3] * 2)), padding=1).shape[1]
        4
    """
    return _channels_last_like(_conv2d(input, weight, bias, stride, padding, dilation, groups), input, weight)


def _conv2d(input: Tensor, weight: Tensor, bias, stride, padding, dilation, groups: int) -> Tensor:
    """conv2d below its autocast policy: conv1d and conv3d call it on inputs they have cast themselves."""
    _check_conv("conv2d", input, weight, bias, groups, 2)
    if (r := _half_bias(conv2d, input, weight, bias, stride=stride, padding=padding, dilation=dilation,
                        groups=groups)) is not None:
        return r
    batched = input.ndim == 4
    x = input if batched else _S.unsqueeze(input, 0)
    stride, dilation = _ntuple(stride, 2, "stride"), _ntuple(dilation, 2, "dilation")
    kh, kw = weight.shape[2:]
    x, padding = _resolve_conv_padding(x, padding, stride, dilation, (kh, kw))
    _check_channels(input, weight, groups, 2, False)
    _check_kernel_fits(x.shape[2:], padding, dilation, (kh, kw))
    out = _add_bias(_conv2d_raw(_f32(x), _f32(weight), stride, padding, dilation, groups), _f32(bias), 2)
    out = out.to(input.dtype) if input.dtype in REDUCED else out
    return out if batched else _S.squeeze(out, 0)


@_ac_policy("conv1d", 3)  # autocast: input, weight, bias cast by the op's dtype policy
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """A 1-D convolution (cross-correlation) of ``input`` (N, C_in, L) by ``weight`` ``(C_out, C_in / groups, *k)``.

    Args:
        input (Tensor): ``(N, C_in, L)`` (or without ``N``).
        weight (Tensor): the filters.
        bias (Tensor, optional): ``(C_out,)``.
        stride, padding, dilation (int or tuple): as :class:`coretorch.nn.Conv1d` (``padding`` may be
            ``"same"`` or ``"valid"``).
        groups (int): the number of channel groups.

    Example:
        >>> F.conv1d(torch.randn(1, 3, *([8] * 1)), torch.randn(4, 3, *([3] * 1)), padding=1).shape[1]
        4
    """
    _check_conv("conv1d", input, weight, bias, groups, 1)
    if (r := _half_bias(conv1d, input, weight, bias, stride=stride, padding=padding, dilation=dilation,
                        groups=groups)) is not None:
        return r
    batched = input.ndim == 3
    x = input if batched else _S.unsqueeze(input, 0)
    s, d = _ntuple(stride, 1, "stride")[0], _ntuple(dilation, 1, "dilation")[0]
    _check_channels(input, weight, groups, 1, False)  # (worded for 1-d here: conv2d would name 4-d shapes)
    if not isinstance(padding, str):
        p = _ntuple(padding, 1, "padding")[0]
        if p >= 0 and d > 0:
            _check_kernel_fits(x.shape[2:], (p,), (d,), weight.shape[2:])
        padding = (0, p)
    # (the bias added inside conv2d: a half convolution rounds once, bias included)
    out = _S.squeeze(_conv2d(_S.unsqueeze(x, 2), _S.unsqueeze(weight, 2), bias, (1, s), padding, (1, d), groups), 2)
    return out if batched else _S.squeeze(out, 0)


@_ac_policy("conv_transpose2d", 3)  # autocast: input, weight, bias cast by the op's dtype policy
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """A 2-D transposed convolution of ``input`` (N, C_in, H, W) by ``weight`` ``(C_in, C_out / groups, *k)``.

    Arguments as :class:`coretorch.nn.ConvTranspose2d` (``output_padding`` adds to one side of the output).
    """
    out = _conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)
    return _channels_last_like(out, input, weight)


def _conv_transpose2d(input: Tensor, weight: Tensor, bias, stride, padding, output_padding, groups: int,
                      dilation) -> Tensor:
    """conv_transpose2d below its autocast policy: conv_transpose1d/3d call it on inputs they have cast themselves."""
    _check_conv("conv_transpose2d", input, weight, bias, groups, 2)
    batched = input.ndim == 4
    x = input if batched else _S.unsqueeze(input, 0)
    stride, padding, output_padding, dilation = _transpose_args("conv_transpose2d", 2, stride, padding,
                                                                output_padding, dilation)
    n, c, h, w = x.shape
    cin, cog, kh, kw = weight.shape
    _check_channels(input, weight, groups, 2, True)
    for k in range(2):
        if output_padding[k] >= stride[k] and output_padding[k] >= dilation[k]:
            raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got "
                               f"output_padding_height: {output_padding[0]} output_padding_width: "
                               f"{output_padding[1]} stride_height: {stride[0]} stride_width: {stride[1]} "
                               f"dilation_height: {dilation[0]} dilation_width: {dilation[1]}")
    oh = (h - 1) * stride[0] - 2 * padding[0] + dilation[0] * (kh - 1) + output_padding[0] + 1
    ow = (w - 1) * stride[1] - 2 * padding[1] + dilation[1] * (kw - 1) + output_padding[1] + 1
    if oh <= 0 or ow <= 0:
        raise RuntimeError(f"Given input size per channel: ({h} x {w}). Calculated output size per channel: "
                           f"({oh} x {ow}). Output size is too small")
    out = _conv2d_input_grad(_f32(x), _f32(weight), (n, cog * groups, oh, ow), stride, padding, dilation, groups)
    out = _add_bias(out, _f32(bias), 2)
    out = out.to(input.dtype) if input.dtype in REDUCED else out
    return out if batched else _S.squeeze(out, 0)


@_ac_policy("conv_transpose1d", 3)  # autocast: input, weight, bias cast by the op's dtype policy
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """A 1-D transposed convolution of ``input`` (N, C_in, L) by ``weight`` ``(C_in, C_out / groups, *k)``.

    Arguments as :class:`coretorch.nn.ConvTranspose1d` (``output_padding`` adds to one side of the output).
    """
    _check_conv("conv_transpose1d", input, weight, bias, groups, 1)
    batched = input.ndim == 3
    x = input if batched else _S.unsqueeze(input, 0)
    _transpose_args("conv_transpose1d", 1, stride, padding, output_padding, dilation)
    _check_channels(input, weight, groups, 1, True)  # (worded for 1-d here: conv_transpose2d names 4-d shapes)
    one = lambda v: (1, _ntuple(v, 1)[0])  # noqa: E731
    out = _conv_transpose2d(_S.unsqueeze(x, 2), _S.unsqueeze(weight, 2), bias, one(stride),
                            (0, _ntuple(padding, 1)[0]), (0, _ntuple(output_padding, 1)[0]), groups, one(dilation))
    out = _S.squeeze(out, 2)  # (the bias added inside: a half convolution rounds once, bias included)
    return out if batched else _S.squeeze(out, 0)
