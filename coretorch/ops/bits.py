"""Integer bit ops and float steps: gcd, lcm, the bitwise shifts (``<<``, ``>>`` and their in-place forms) and
nextafter.

gcd/lcm and the shifts are the backends' optional integer kernels (``coretorch._backend.PRIMITIVES``); PyTorch's
rules: integer dtypes only (floats and bool raise NotImplementedError), gcd/lcm take tensors only, a shift count
outside ``[0, bits)`` gives 0 for a left shift and the sign fill (0 or -1) for a right shift, and a result wraps in
the operands' promoted dtype.  nextafter is a composite of frexp/exp2 (the spacing of floats at ``x``), so every
float dtype works on every device; its gradient is PyTorch's: ``grad`` for ``input``, zero for ``other``.
"""
from __future__ import annotations

import math

from .. import dtypes as _dt
from ..autograd.grad_mode import no_grad, state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make
from . import creation as _creation
from ._out import write_out
from ._util import edge, sum_to
from .inplace import apply_inplace
from .special import exp2, frexp
from .pointwise import (_make_binary, abs as _abs, add, eq, gt, isnan, logical_or, lt, maximum, mul, ne, sub,
                        where)

__all__: list[str] = ["gcd", "gcd_", "lcm", "lcm_", "bitwise_left_shift", "bitwise_right_shift", "nextafter"]
METHODS: dict = {}


def _check_tensors(op: str, input, other) -> None:
    for pos, (arg, v) in enumerate((("input", input), ("other", other)), 1):
        if not isinstance(v, Tensor):
            raise TypeError(f"{op}(): argument '{arg}' (position {pos}) must be Tensor, not {type(v).__name__}")


def _integer_op(name: str, kernel_name: str, tensors_only: bool):
    f = _make_binary(name, None, "bitwise")

    def fn(input, other, *, out=None) -> Tensor:
        if tensors_only:
            _check_tensors(name, input, other)
        elif not isinstance(input, Tensor) and not isinstance(other, Tensor):
            raise TypeError(f"{name}(): expected a Tensor operand")
        rt = _dt.result_type((input, other), _dt.default)
        if rt.is_floating_point or rt is _dt.bool_:
            raise NotImplementedError(f"\"{kernel_name}_cpu\" not implemented for '{rt._tname[:-6]}'")
        if not isinstance(input, Tensor):  # a Python int first (3 << t): a 0-d tensor of the result dtype
            input = _creation.full((), input, dtype=rt, device=other.device)
        r = f(input, other)
        return r if out is None else write_out(name, out, r, inputs=(input, other))
    fn.__name__ = fn.__qualname__ = name
    return fn


gcd = _integer_op("gcd", "gcd", True)
gcd.__doc__ = "torch.gcd: the greatest common divisor of each pair (non-negative; gcd(0, 0) is 0). Integers only."
lcm = _integer_op("lcm", "lcm", True)
lcm.__doc__ = "torch.lcm: the least common multiple of each pair (0 if either is 0), wrapping. Integers only."
bitwise_left_shift = _integer_op("bitwise_left_shift", "lshift", False)
bitwise_left_shift.__doc__ = ("torch.bitwise_left_shift: ``input << other`` (wrapping; a count below 0 or of the "
                              "dtype's width or more gives 0). Integers only.")
bitwise_right_shift = _integer_op("bitwise_right_shift", "rshift", False)
bitwise_right_shift.__doc__ = ("torch.bitwise_right_shift: ``input >> other``, arithmetic for signed dtypes (a count "
                               "below 0 or of the dtype's width or more gives the sign fill, 0 or -1). Integers only.")


def _inplace(name: str, fn):
    def m(self: Tensor, other) -> Tensor:
        return apply_inplace(self, name, lambda s: fn(s, other), other)
    m.__name__ = m.__qualname__ = name
    m.__doc__ = f"In-place :func:`{name[:-1]}`."
    return m


gcd_ = _inplace("gcd_", gcd)
lcm_ = _inplace("lcm_", lcm)


def _operator(fn, reflected: bool = False):
    def m(self: Tensor, other) -> Tensor:
        return fn(other, self) if reflected else fn(self, other)
    return m


# ---- nextafter ----------------------------------------------------------------------------------------------
class NextafterBackward0(Node):
    """PyTorch's (2.13): ``input`` gets the gradient where input != other (0 at the ties, where the result is
    ``other``; NaN passes it), summed to its shape; ``other`` gets zeros."""
    __slots__ = ("need", "shapes", "dtypes")

    def backward(self, g):
        (nx, ny), (sx, sy) = self.need, self.shapes
        gx = None
        if nx:
            x, y = self.saved()
            gx = sum_to(where(ne(x, y), g, 0.0), sx).to(self.dtypes[0])
        gy = _creation.zeros(sy, dtype=self.dtypes[1], device=g.device) if ny else None
        return gx, gy


def _digits(dt: _dt.dtype) -> int:
    return 1 - round(math.log2(_dt.finfo(dt).eps))  # 24 (float32), 53, 11 (float16), 8 (bfloat16)


def _nextafter(x: Tensor, y: Tensor) -> Tensor:
    dt = x.dtype
    fi = _dt.finfo(dt)
    p = _digits(dt)
    tiny = fi.smallest_normal * fi.eps  # the smallest subnormal
    m, e = frexp(x)
    # the spacing of floats at |x| going up (2^(e - p)) and going down (half that at a power of two), at least tiny
    up = maximum(exp2(sub(e, p).to(dt)), tiny)
    down = where(eq(_abs(m), 0.5), maximum(mul(up, 0.5), tiny), up)
    away = eq(gt(y, x), gt(x, 0))  # moving away from zero
    sign = where(lt(x, 0), -1.0, 1.0).to(dt)
    r = where(away, add(x, mul(sign, up)), sub(x, mul(sign, down)))
    # (tiny multiplied in dt: float64's smallest subnormal underflows in a float32 constant)
    r = where(eq(x, 0), mul(where(gt(y, 0), 1.0, -1.0).to(dt), tiny), r)
    r = where(eq(_abs(x), math.inf), mul(sign, fi.max), r)  # (inf moves toward y, which is finite or equal)
    r = where(eq(x, y), y, r)
    return where(logical_or(isnan(x), isnan(y)), add(x, y), r)


def nextafter(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """torch.nextafter: the next representable float after ``input`` toward ``other`` (``other`` where they are
    equal, NaN where either is NaN); float dtypes only, both operands tensors."""
    _check_tensors("nextafter", input, other)
    rt = _dt.result_type((input, other), _dt.default)
    if not rt.is_floating_point:
        raise NotImplementedError(f"\"nextafter_cpu\" not implemented for '{rt._tname[:-6]}'")
    with no_grad():
        r = _nextafter(input.to(rt), other.to(rt))
    if _gs.enabled and (input._rg or other._rg):
        node = NextafterBackward0()
        node.need = (input._rg, other._rg)
        node.shapes = (tuple(input.shape), tuple(other.shape))
        node.dtypes = (input.dtype, other.dtype)
        if input._rg:
            node.save(input, other)
        node.next_functions = (edge(input), edge(other))
        r = _make(r._data, rt, r._be, node)
    return r if out is None else write_out("nextafter", out, r, inputs=(input, other))


nextafter_ = _inplace("nextafter_", nextafter)

METHODS.update({
    "gcd": gcd, "gcd_": gcd_, "lcm": lcm, "lcm_": lcm_, "nextafter": nextafter, "nextafter_": nextafter_,
    "bitwise_left_shift": bitwise_left_shift, "bitwise_right_shift": bitwise_right_shift,
    "bitwise_left_shift_": _inplace("bitwise_left_shift_", bitwise_left_shift),
    "bitwise_right_shift_": _inplace("bitwise_right_shift_", bitwise_right_shift),
    "__lshift__": _operator(bitwise_left_shift), "__rshift__": _operator(bitwise_right_shift),
    "__rlshift__": _operator(bitwise_left_shift, True), "__rrshift__": _operator(bitwise_right_shift, True),
    "__ilshift__": _inplace("bitwise_left_shift_", bitwise_left_shift),
    "__irshift__": _inplace("bitwise_right_shift_", bitwise_right_shift),
})
