"""lerp and masked_fill: composites of the pointwise ops with PyTorch's dtype rules and exact formulas."""
from __future__ import annotations

import builtins
import math
from typing import TYPE_CHECKING

from .. import dtypes as _dt
from ..autograd.grad_mode import no_grad, state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make
from ._util import broadcast_shape, edge, sum_to

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


class LerpBackward0(Node):
    """A number weight w: PyTorch's formulas, grad * (1 - w) and grad * w (one node: the composite's chain rule
    gave g - g * w, another rounding)."""
    __slots__ = ("w", "shapes", "need")

    def backward(self, g):
        (si, se), (ni, ne) = self.shapes, self.need
        return (sum_to(mul(g, 1 - self.w), si) if ni else None, sum_to(mul(g, self.w), se) if ne else None)


class LerpBackward1(Node):
    """A tensor weight: PyTorch's formulas grad * (1 - weight), grad * weight, grad * (end - input), each summed to
    its operand's shape (the composite's where() sent 0 * inf = NaN from the untaken branch at infinite operands)."""
    __slots__ = ("shapes", "need", "wdt")

    def backward(self, g):
        (si, se, sw), (ni, ne, nw) = self.shapes, self.need
        saved = self.saved()  # (input and end only where weight's gradient reads them, as PyTorch saves)
        w = saved[-1]
        gw = None
        if nw:
            a, b = saved[0], saved[1]
            gw = sum_to(mul(g, sub(b, a)), sw)
            if gw.dtype is not self.wdt:
                gw = gw.to(self.wdt)
        return (sum_to(mul(g, sub(1, w)), si) if ni else None, sum_to(mul(g, w), se) if ne else None, gw)


def lerp(input, end, weight):
    """input + weight * (end - input), as PyTorch computes it: from ``end`` backwards when |weight| >= 0.5, so
    that weight 1 gives ``end`` exactly (lerp(1e8, 1, 1.0) is 1, not 0 in float32); one node with PyTorch's
    gradient formulas."""
    _lerp_check(input, end, weight)
    if input.dtype is _dt.float16 or input.dtype is _dt.bfloat16:  # PyTorch's opmath: float32, rounded once (in
        # half, end - input overflowed: lerp(60000, -60000, 0.5) was inf for 0)
        w = weight.float() if isinstance(weight, Tensor) and weight.dtype is input.dtype else weight
        return lerp(input.float(), end.float(), w).to(input.dtype)
    wt = isinstance(weight, Tensor)
    need = (input._rg, end._rg, wt and weight._rg)
    if not (_gs.enabled and any(need)):
        return _lerp(input, end, weight)
    with no_grad():
        r = _lerp(input, end, weight)
    shapes = tuple(tuple(t.shape) for t in ((input, end, weight) if wt else (input, end)))
    if wt:
        node: Node = LerpBackward1()
        node.wdt = weight.dtype
        w = weight if weight.dtype is input.dtype else weight.to(input.dtype)
        node.save(*((input, end, w) if need[2] else (w,)))
        node.next_functions = (edge(input), edge(end), edge(weight))
    else:
        node = LerpBackward0()
        node.w = weight
        node.next_functions = (edge(input), edge(end))
    node.shapes, node.need = shapes, need[:len(shapes)]
    return _make(r._data, r.dtype, r._be, node)


def _lerp(input, end, weight):
    d = sub(end, input)
    if not isinstance(weight, Tensor):
        if d.dtype is _dt.float64 or d.dtype is _dt.float32:
            # PyTorch's vectorised lerp: fmadd(w, end - self, self), or fmadd(w - 1, end - self, end) for
            # |w| >= 0.5: the fused add of the ``axpy_`` kernel (one rounding; it rounds alpha to the dtype). Python
            # arithmetic on the weight, which a compiled optimizer step records (float32 from the end: w - 1 is
            # rounded once to float32 where PyTorch subtracts the float32 w, a rounding apart for some w)
            if builtins.abs(weight) < 0.5:
                return add(input, d, alpha=weight)
            return add(end, d, alpha=weight - 1)
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
                           f"{_dt.cpp_name(mask.dtype) if isinstance(mask, Tensor) else type(mask).__name__}")
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
