"""nn.functional 3-D pooling: max_pool3d(_with_indices) and avg_pool3d over (N, C, D, H, W) or (C, D, H, W).

Both are a few tensor ops per call on any backend: max pooling gathers each window's taps (index_select per dim),
takes the argmax and reads the winners with one gather (backward: a scatter into zeros); average pooling sums
the windows dim by dim (separable), then divides by PyTorch's divisor."""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ...ops import creation as _C
from ...ops import pointwise as _P
from ...ops import reduction as _R
from ...ops import shape as _S
from ...tensor import Tensor, _make
from ._common import _check_tensor, _i64, _no_grad
from ._pooling import _avg_divisor, _pool_out
from ._window import MaxPool3DWithIndicesBackward0, cached, isel, pool_table, take, take_max, window_argmax, window_sum

__all__ = ["max_pool3d", "max_pool3d_with_indices", "avg_pool3d"]


def _triple(v, msg: str, omit_ok: bool = False):
    if omit_ok and (v is None or (isinstance(v, (tuple, list)) and len(v) == 0)):
        return None
    if isinstance(v, (tuple, list)):
        if len(v) == 1:
            return (int(v[0]),) * 3
        if len(v) != 3:
            raise RuntimeError(msg)
        return tuple(int(a) for a in v)
    return (int(v),) * 3


def _check_input(op: str, fn_name: str, input: Tensor) -> None:
    _check_tensor(op, "input", input)
    if input.ndim not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    for i in range(input.ndim):
        if input.ndim == 5 and i == 0:
            continue  # the batch may be empty
        if input.shape[i] == 0:
            # PyTorch's message prints the size (0) where it means the dim
            raise RuntimeError(f"{fn_name}: Expected input's non-batch dimensions to have positive length, but input "
                               f"has a shape of {list(input.shape)} and non-batch dimension 0 has length zero!")
    if input.dtype.is_complex or input.dtype.name == "bool":
        raise NotImplementedError(f"\"{op}\" not implemented for '{input.dtype._tname[:-6]}'")


def _check_window(k, s, d) -> None:
    if any(v == 0 for v in s):
        raise RuntimeError("stride should not be zero")
    if any(v <= 0 for v in k):
        raise RuntimeError(f"kernel size should be greater than zero, but got kT: {k[0]} kH: {k[1]} kW: {k[2]}")
    if any(v <= 0 for v in s):
        raise RuntimeError(f"stride should be greater than zero, but got dT: {s[0]} dH: {s[1]} dW: {s[2]}")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"dilation should be greater than zero, but got dilationT: {d[0]} dilationH: {d[1]} "
                           f"dilationW: {d[2]}")


def _check_pad(k, p, d) -> None:
    for i in range(3):
        if p[i] < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {p[i]}")
    for i in range(3):
        if p[i] > (d[i] * (k[i] - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p[i]}, "
                               f"kernel_size={k[i]} and dilation={d[i]}")


def _first_real(n_out: int, n_in: int, k: int, s: int, p: int, d: int) -> np.ndarray:
    pos, valid = pool_table(n_out, n_in, k, s, p, d)
    return pos[np.arange(n_out), np.argmax(valid, -1)]


def _two_stage(x: Tensor, k, s, p, d, outs) -> tuple:
    """(values, flat indices) by the backend's max_pool2d kernel over (H, W) of every depth slice, then the max
    over each window's depth taps: memory kd times the output instead of kd*kh*kw.  The first maximum in (d, h, w)
    order wins (first depth, then the kernel's first (h, w)); NaN: the last NaN, as PyTorch's loop."""
    n, c, dd, h, w = x.shape
    od, oh, ow = outs
    table = x._be
    dev = x.device
    with _no_grad():
        xs = _S.contiguous(x).reshape(n, c * dd, h, w)
        v2, i2 = table.max_pool2d(xs._data, k[1:], s[1:], p[1:], d[1:], (oh, ow))
        v = _make(v2, x.dtype, table).reshape(n, c, dd, oh, ow)
        i = _make(i2, _i64, table).reshape(n, c, dd, oh, ow)
        if p[1] or p[2]:  # an all -inf window: the kernel may name a padding tap, PyTorch the first real one
            hw_key = ("pool3d_hw", oh, ow, h, w) + tuple(k[1:]) + tuple(s[1:]) + tuple(p[1:]) + tuple(d[1:])
            first_hw = cached(hw_key, dev, lambda: _C.tensor(_first_real(oh, h, k[1], s[1], p[1], d[1])[:, None] * w
                                                             + _first_real(ow, w, k[2], s[2], p[2], d[2])[None, :],
                                                             dtype=_i64, device=dev))
            i = _P.where(v == float("-inf"), first_hw, i)
        pos, valid = pool_table(od, dd, k[0], s[0], p[0], d[0])
        key = ("pool3d_depth", od, dd, k[0], s[0], p[0], d[0])
        sel = cached(key + ("sel",), dev, lambda: _C.tensor(np.clip(pos, 0, dd - 1).reshape(-1), dtype=_i64,
                                                             device=dev))
        full = (n, c, od, k[0], oh, ow)
        vs = isel(v, 2, sel).reshape(full)
        padded = not valid.all()
        if padded:
            vt = cached(key + ("valid",), dev, lambda: _C.tensor(valid.reshape(od, k[0], 1, 1), device=dev))
            vs = _P.where(vt, vs, float("-inf"))
        kk = _R.argmax(vs, 3, keepdim=True)
        if bool(_R.any(x.isnan()).item()):  # the last NaN depth tap (the kernel already took the last NaN in (h, w))
            nan = vs.isnan()
            last = _P.sub(k[0] - 1, _R.argmax(_S.flip(nan, (3,)).to(_i64), 3, keepdim=True))
            kk = _P.where(_R.any(nan, 3, keepdim=True), last, kk)
        if padded:  # a window whose real taps are all -inf: its first real depth tap
            first = cached(key + ("first",), dev, lambda: _C.tensor(np.argmax(valid, -1).reshape(od, 1, 1, 1),
                                                                    dtype=_i64, device=dev))
            ok = take(_S.contiguous(_S.expand(vt, full)), 3, kk)
            kk = _P.where(ok, kk, first)
        dpos = cached(key + ("pos", h * w), dev, lambda: _C.tensor(pos.reshape(od, k[0], 1, 1) * (h * w), dtype=_i64,
                                                             device=dev))
        flat = _P.add(take(_S.contiguous(_S.expand(dpos, full)), 3, kk), take(isel(i, 2, sel).reshape(full), 3, kk))
        vals = take(vs, 3, kk)
    return vals.squeeze(3), flat.squeeze(3)


def max_pool3d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
                            return_indices: bool = True):
    """(values, int64 flat indices into D*H*W) of 3-D max pooling, as ``torch.nn.functional``'s."""
    k = _triple(kernel_size, "max_pool3d: kernel_size must either be a single int, or a tuple of three ints")
    s = _triple(stride, "max_pool3d: stride must either be omitted, a single int, or a tuple of three ints", True)
    s = k if s is None else s
    p = _triple(padding, "max_pool3d: padding must either be a single int, or a tuple of three ints")
    d = _triple(dilation, "max_pool3d: dilation must be either a single int, or a tuple of three ints")
    _check_window(k, s, d)
    _check_input("max_pool3d", "max_pool3d_with_indices_out_cpu_template()", input)
    _check_pad(k, p, d)
    batched = input.ndim == 5
    x = input if batched else _S.unsqueeze(input, 0)
    sp = tuple(x.shape[2:])
    outs = tuple(_pool_out(sp[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(3))
    if any(o < 1 for o in outs):
        c = x.shape[1]
        raise RuntimeError(f"Given input size: ({c}x{sp[0]}x{sp[1]}x{sp[2]}). Calculated output size: "
                           f"({c}x{outs[0]}x{outs[1]}x{outs[2]}). Output size is too small")
    if x.dtype.is_floating_point and x._be.has("max_pool2d") and x.numel():
        vals, idx = _two_stage(x, k, s, p, d, outs)
        out = take_max(MaxPool3DWithIndicesBackward0, x, idx, vals)
    else:
        idx = window_argmax(x, [pool_table(outs[i], sp[i], k[i], s[i], p[i], d[i]) for i in range(3)])
        out = take_max(MaxPool3DWithIndicesBackward0, x, idx)
    if not batched:
        out, idx = _S.squeeze(out, 0), _S.squeeze(idx, 0)
    return out, idx


def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """3-D max pooling over (N, C, D, H, W) or (C, D, H, W); with ``return_indices`` also the flat indices."""
    out, idx = max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override=None) -> Tensor:
    """3-D average pooling with PyTorch's divisor rules (count_include_pad, divisor_override, ceil_mode)."""
    k = _triple(kernel_size, "avg_pool3d: kernel_size must be a single int, or a tuple of three ints")
    s = _triple(stride, "avg_pool3d: stride must be omitted, a single int, or a tuple of three ints", True)
    s = k if s is None else s
    p = _triple(padding, "avg_pool3d: padding must be a single int, or a tuple of three ints")
    if divisor_override is not None and not isinstance(divisor_override, (int, np.integer)):
        raise TypeError(f"avg_pool3d(): argument 'divisor_override' must be int, not "
                        f"{type(divisor_override).__name__}")
    _check_window(k, s, (1, 1, 1))
    _check_input("avg_pool3d", "avg_pool3d()", input)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    if input.dtype is _dt.float16 or input.dtype is _dt.bfloat16:  # opmath: float32 sums, one rounding (avg_pool2d)
        return avg_pool3d(input.float(), kernel_size, stride, padding, ceil_mode, count_include_pad,
                          divisor_override).to(input.dtype)
    sp = tuple(input.shape[-3:])
    if any(sp[i] < k[i] for i in range(3)):
        raise RuntimeError(f"input image (T: {sp[0]} H: {sp[1]} W: {sp[2]}) smaller than kernel size (kT: {k[0]} "
                           f"kH: {k[1]} kW: {k[2]})")
    _check_pad(k, p, (1, 1, 1))
    outs = tuple(_pool_out(sp[i], k[i], s[i], p[i], 1, ceil_mode) for i in range(3))
    tables = [pool_table(outs[i], sp[i], k[i], s[i], p[i], 1) for i in range(3)]
    sums = window_sum(input, tables)
    if divisor_override is not None:
        div = np.full(outs, int(divisor_override))
    else:
        per_dim = [np.array(_avg_divisor(sp[i], k[i], s[i], p[i], outs[i], count_include_pad)) for i in range(3)]
        div = per_dim[0][:, None, None] * per_dim[1][None, :, None] * per_dim[2][None, None, :]
    if input.dtype.is_floating_point:
        if len(np.unique(div)) == 1:
            return _P.div(sums, float(div.flat[0]))
        return _P.div(sums, _C.tensor(div.astype(np.float64), dtype=input.dtype, device=input.device))
    # integer input: C's truncating division of the (int64) sum, back in the input's dtype
    dt = _C.tensor(div.astype(np.int64), device=input.device)
    return _P.div(sums, dt, rounding_mode="trunc").to(input.dtype)
