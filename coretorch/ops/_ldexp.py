"""frexp and ldexp: a float's mantissa and exponent, and a float scaled by a power of two (PyTorch's gradients and
dtype rules: ``ldexp`` computes float32/float64 and rounds half types once)."""
from __future__ import annotations

from .. import dtypes as _dt
from ..autograd.grad_mode import no_grad, state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make
from ._special_util import _check, _named, _out, _passthrough
from ._util import align_devices, broadcast_shape, edge, return_type, sum_to
from .pointwise import clamp, div, mul, pow as _pow, sub

_bool = _dt.bool_


class LdexpBackward0(Node):
    """An integer exponent's ldexp: the input's gradient is ldexp(grad, other), exact as the forward."""
    __slots__ = ("shape",)

    def backward(self, g):
        (e,) = self.saved()
        return sum_to(ldexp(g, e), self.shape), None


_LdexpFloat = _passthrough("LdexpBackward0")  # a float exponent: the composite's graph under PyTorch's name
_LDEXP_DTYPES = (_dt.float32, _dt.float64)  # what ldexp computes in (half types: in float32, rounded once)


def ldexp(input: Tensor, other, *, out=None) -> Tensor:
    """input * 2 ** other in the operands' promoted float dtype, as PyTorch: an integer exponent scales exactly (C's
    ldexp, the exponent taken as int32: one rounding, so ``ldexp(2.0**100, -200)`` in float32 is 2**-100 and float64
    reaches 2**1023), a float exponent multiplies by ``2 ** other``."""
    _check("ldexp", input)
    if not isinstance(other, Tensor):
        raise TypeError(f"ldexp(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    if other.dtype is _bool and input.dtype.is_floating_point:
        raise NotImplementedError("ldexp: a bool exponent is not supported (PyTorch: \"ldexp_cpu_exp\" not "
                                  "implemented for 'Bool'); pass an integer or float tensor")
    if other.dtype.is_floating_point or not input.dtype.is_floating_point:
        # (an integer or bool input: PyTorch's input * 2.0 ** other in float32, the exponent not wrapped to int32:
        # ldexp(int64 2**40, 2**40) is inf)
        return _out(_named(mul(input, _pow(2.0, other)), _LdexpFloat), out, "ldexp", input, other)
    a, b = (input, other) if input._be is other._be else align_devices("ldexp", input, other)
    rt = a.dtype if a.dtype.is_floating_point else _dt.default  # (an integer exponent never promotes a float)
    work = rt if rt in _LDEXP_DTYPES else _dt.float32  # (half types: exact in float32, then one rounding)
    table = a._be
    xa = a._data if a.dtype is work else table.cast(a._data, work.np)
    xe = b._data if b.dtype is _dt.int32 else table.cast(b._data, _dt.int32.np)  # (wraps, as PyTorch's int cast)
    shape = broadcast_shape(xa.shape, xe.shape, "ldexp")
    if xa.shape != shape:
        xa = table.expand(xa, shape)
    if xe.shape != shape:
        xe = table.expand(xe, shape)
    if table.has("ldexp"):
        r = table.ldexp(xa, xe)
    else:  # a backend without the kernel: a product of powers of two, exact where the result is a normal float
        with no_grad():
            r = _ldexp_composite(_make(xa, work, table), _make(xe, _dt.int32, table))._data
    if work is not rt:
        r = table.cast(r, rt.np)
    node = None
    if input._rg and _gs.enabled:
        node = LdexpBackward0()
        node.shape = tuple(input.shape)
        node.save(b if b.dtype is _dt.int32 else _make(xe, _dt.int32, table))
        node.next_functions = (edge(input), edge(other))
    return _out(_make(r, rt, table, node), out, "ldexp", input, other)


def _ldexp_composite(x: Tensor, e: Tensor) -> Tensor:
    """x * 2 ** e as three multiplications by powers of two, each finite and normal (|e| / 3 <= 700 in float64, 93
    in float32; e clamped where the result is 0 or inf for every finite nonzero x, so 0 * 2 ** huge stays 0)."""
    n = 3
    lim = 2100 if x.dtype is _dt.float64 else 279  # (past 1074 + 1024, 149 + 128: 0 or inf for any finite x)
    e = clamp(e, -lim, lim)
    for i in range(n):
        part = div(e, n - i, rounding_mode="trunc")
        x = mul(x, _pow(2.0, part.to(x.dtype)))
        e = sub(e, part)
    return x


frexp_result = return_type("frexp", ("mantissa", "exponent"))


class FrexpBackward0(Node):
    __slots__ = ()

    def backward(self, g):
        (e,) = self.saved()
        return (div(g, _pow(2.0, e.to(g.dtype))),)


def frexp(input: Tensor, *, out=None):
    """(mantissa, exponent) with input = mantissa * 2 ** exponent, |mantissa| in [0.5, 1); exponent int32."""
    _check("frexp", input)
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    table = input._be
    m, e = table.frexp(input._data)
    et = _make(e, _dt.int32, table)
    if input._rg and _gs.enabled:
        node = FrexpBackward0()
        node.save(et)
        node.next_functions = (edge(input),)
        mt = _make(m, input.dtype, table, node)
    else:
        mt = _make(m, input.dtype, table)
    if out is not None:
        return frexp_result(_out(mt, out[0], "frexp", input), _out(et, out[1], "frexp", input))
    return frexp_result(mt, et)


# addcmul / addcdiv of float16/bfloat16 operands compute in float32 and round once, as PyTorch's kernels (opmath):
# in half, 300 * 300 overflowed before the 0.001 scaled it (inf for 90), 60000 / 0.001 before the 0.001 (inf for
# 60000)
