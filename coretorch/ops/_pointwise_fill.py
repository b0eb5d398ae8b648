"""lerp and masked_fill: composites of the pointwise ops with PyTorch's dtype rules and exact formulas."""
from __future__ import annotations

import builtins
import math
from typing import TYPE_CHECKING

from .. import dtypes as _dt
from ..tensor import Tensor
from ._util import broadcast_shape

if TYPE_CHECKING:
    from .pointwise import abs, add, lt, mul, sub, where
# bound by ops.pointwise (bind_late), which imports this module and re-exports lerp and masked_fill
_LATE = ("abs", "add", "lt", "mul", "sub", "where")
_bool = _dt.bool_


def _lerp_check(input, end, weight) -> None:
    for t in (input, end):
        if not isinstance(t, Tensor):
            raise TypeError(f"lerp(): argument 'input' and 'end' must be Tensor, not {type(t).__name__}")
    if not input.dtype.is_floating_point:
        kind = "tensor" if isinstance(weight, Tensor) else "scalar"
        raise NotImplementedError(f"\"lerp_kernel_{kind}\" not implemented for '{input.dtype._tname[:-6]}'")
    if end.dtype is not input.dtype:
        raise RuntimeError(f"expected dtype {input.dtype} for `end` but got dtype {end.dtype}")
    if isinstance(weight, Tensor) and weight.ndim and weight.dtype is not input.dtype:
        raise RuntimeError(f"expected dtype {input.dtype} for `weight` but got dtype {weight.dtype}")


def lerp(input, end, weight):
    """input + weight * (end - input), as PyTorch computes it: from ``end`` backwards when |weight| >= 0.5, so
    that weight 1 gives ``end`` exactly (lerp(1e8, 1, 1.0) is 1, not 0 in float32)."""
    _lerp_check(input, end, weight)
    if input.dtype is _dt.float16 or input.dtype is _dt.bfloat16:  # PyTorch's opmath: float32, rounded once (in
        # half, end - input overflowed: lerp(60000, -60000, 0.5) was inf for 0)
        w = weight.float() if isinstance(weight, Tensor) and weight.dtype is input.dtype else weight
        return lerp(input.float(), end.float(), w).to(input.dtype)
    d = sub(end, input)
    if not isinstance(weight, Tensor):
        if builtins.abs(weight) < 0.5:
            return add(input, mul(d, weight))
        return sub(end, mul(d, 1 - weight))
    if weight.dtype is not input.dtype:
        weight = weight.to(input.dtype)
    return where(lt(abs(weight), 0.5), add(input, mul(weight, d)), sub(end, mul(d, sub(1, weight))))





def _fill_value(value, dt):
    """The Python number ``value`` converted to ``dt`` as PyTorch's masked_fill converts it: checked (an int8
    tensor filled with 300 or a half tensor with 1e5 raises), a float truncated for an integer dtype."""
    if dt is _bool:
        return bool(value)
    if isinstance(value, bool):
        return int(value) if dt.category == 1 else float(value)
    if isinstance(value, complex):  # no complex dtypes: PyTorch's message for a complex into a real tensor
        raise RuntimeError(f"value cannot be converted to type {_dt._C_NAMES[dt.name]} without overflow")
    if dt.is_floating_point:
        return _dt.fit_scalar(value, dt)
    if isinstance(value, float):
        if not math.isfinite(value):
            _dt.fit_scalar(float("inf"), dt)  # raises PyTorch's "cannot be converted ... without overflow"
        return int(_dt.fit_scalar(value, dt))
    return _dt.fit_scalar(int(value), dt)


_NODES: dict = {}


def _masked_fill_node(base: type, tensor_value: bool) -> type:
    """where's node class renamed as PyTorch names masked_fill's (same backward)."""
    key = (base, tensor_value)
    cls = _NODES.get(key)
    if cls is None:
        cls = _NODES[key] = type(f"MaskedFillBackward{int(tensor_value)}", (base,), {"__slots__": ()})
    return cls


def masked_fill(input, mask, value):
    """A copy of ``input`` with ``value`` where the bool ``mask`` (broadcast to ``input``) is True."""
    if not isinstance(mask, Tensor) or mask.dtype is not _bool:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{getattr(mask, 'dtype', type(mask).__name__)}")
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor "
                               f"with {value.ndim} dimension(s).")
        if not value._rg:
            value = value.item()
    # out of place, self broadcasts with the mask as PyTorch (zeros(3).masked_fill(mask_2x3, v) is 2x3); in place,
    # the in-place wrapper refuses a result bigger than self
    broadcast_shape(input._data.shape, mask._data.shape, "masked_fill")
    if not isinstance(value, Tensor):
        # the value in the input's dtype first: where() would promote an int32 input to float for 0.5, and the
        # round trip through float32 changes large integers (1530042770 -> 1530042752)
        value = _fill_value(value, input.dtype)
    out = where(mask, value, input)
    gf = out.grad_fn
    if gf is not None:  # PyTorch's node names: MaskedFillBackward0 (a number), MaskedFillBackward1 (a tensor)
        gf.__class__ = _masked_fill_node(type(gf), isinstance(value, Tensor))
    if not out._be.is_contiguous(out._data):  # (PyTorch fills a contiguous clone: where() keeps a transposed layout)
        out = out.contiguous()
    return out if out.dtype is input.dtype else out.to(input.dtype)
