"""Elementwise ops: unary, binary (with broadcasting and type promotion), where, clamp."""
from __future__ import annotations

import builtins
import math
from typing import Callable

import numpy as np

from .. import dtypes as _dt
from ..amp.autocast_mode import cast_inputs as _ac_cast, fp32_unary as _ac_unary, state as _ac
from ..autograd._zero import keep_graph as _keep_graph, not_implemented_graph as _not_implemented_graph
from ..autograd.grad_mode import state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make
from ._util import align_devices, broadcast_shape, edge, sum_to

_bool = _dt.bool_
builtins_abs = builtins.abs
_SCALARS = (int, float, bool)


# ---------------------------------------------------------------------------------------------
# binary ops
# ---------------------------------------------------------------------------------------------
class _BinaryNode(Node):
    __slots__ = ("sa", "sb", "scalar", "alpha", "need", "dts")

    def grads(self, ga, gb):
        """Reduce broadcast gradients back to the input shapes (and dtypes, when they were promoted)."""
        if ga is not None and self.sa is not None:
            ga = sum_to(ga, self.sa)
        if gb is not None and self.sb is not None:
            gb = sum_to(gb, self.sb)
        if self.dts is not None:
            ga, gb = _cast_grads((ga, gb), self.dts)
        return (ga, gb)


_SUB_BOOL = ("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a "
             "mask, use the `~` or `logical_not()` operator instead.")


def _is_bool(x) -> bool:
    """A bool tensor or a Python bool (PyTorch wraps the latter into a bool tensor)."""
    return x.dtype is _bool if isinstance(x, Tensor) else type(x) is bool


def _cast_grads(grads, dtypes):
    """Each input gets its gradient in its own dtype, as PyTorch's engine does (mixed-dtype ops)."""
    return tuple(g if g is None or d is None or g.dtype is d else g.to(d) for g, d in zip(grads, dtypes))


def _mixed(dt, *tensors):
    """The input dtypes that differ from the result dtype ``dt`` (None when none does)."""
    ds = tuple(t.dtype if isinstance(t, Tensor) and t.dtype is not dt and t.dtype.is_floating_point else None
               for t in tensors)
    return ds if any(d is not None for d in ds) else None


def _operands(op: str, a, b):
    """Common front half of every binary op: devices, promotion, broadcasting -> arrays + dtype."""
    if isinstance(b, Tensor):
        if not isinstance(a, Tensor):
            return _operands_scalar_first(op, a, b)
        if a._be is not b._be:
            a, b = align_devices(op, a, b)
        table = a._be
        da, db = a.dtype, b.dtype
        dt = da if da is db else _dt.result_type((a, b), _dt.default)
        xa, xb = a._data, b._data
        if da is not dt:
            xa = table.cast(xa, dt.np)
        if db is not dt:
            xb = table.cast(xb, dt.np)
        sa, sb = xa.shape, xb.shape
        if sa != sb:
            shape = broadcast_shape(sa, sb, op)
            if not table.native_broadcast:
                if sa != shape:
                    xa = table.expand(xa, shape)
                if sb != shape:
                    xb = table.expand(xb, shape)
        return a, b, xa, xb, dt, table
    if type(b) not in _SCALARS:
        if hasattr(b, "__index__") or hasattr(b, "__float__") and not hasattr(b, "__len__"):
            b = b.item() if hasattr(b, "item") else float(b)
        else:
            raise TypeError(f"{op}(): unsupported operand type(s): 'Tensor' and '{type(b).__name__}'")
    try:
        table = a._be
    except AttributeError:  # two numbers (torch.add(2, 3)): only a few ops take them
        return _operands(op, _numbers_first(op, a, b), b)
    da = a.dtype
    dt = da if _SCALAR_KEEPS.get((da, type(b))) else _dt.result_type((a, b), _dt.default)
    xa = a._data if da is dt else table.cast(a._data, dt.np)
    if dt is _bool:
        b = bool(b)
    elif not dt.is_floating_point:
        b = int(b)
        lo, hi = _INT_RANGE[dt]
        if b < lo or b > hi:  # PyTorch wraps an out-of-range Python int to the tensor's integer type
            b = (b - lo) % (hi - lo + 1) + lo
    return a, b, xa, b, dt, table


_INT_RANGE = {d: (int(np.iinfo(d.np).min), int(np.iinfo(d.np).max)) for d in _dt.all_dtypes
              if d.category == 1}


_SCALAR_KEEPS: dict = {}  # (tensor dtype, scalar type) -> result keeps the tensor's dtype


def _scalar_keeps_init():
    class Probe:
        ndim = 1

        def __init__(self, d):
            self.dtype = d
    for d in _dt.all_dtypes:
        for t in _SCALARS:
            _SCALAR_KEEPS[(d, t)] = t is not float and _dt.result_type((Probe(d), t(1)), _dt.float32) is d
        # float scalars keep float dtypes whatever the default dtype is
        _SCALAR_KEEPS[(d, float)] = d.is_floating_point


_scalar_keeps_init()


_NUMBER_PAIRS = ("add", "sub", "mul", "div", "floor_divide")


def _numbers_first(op: str, a, b) -> Tensor:
    """PyTorch's add/sub/mul/div/floor_divide of two Python numbers: the first as a 0-d tensor (torch.add(2, 3) is
    tensor(5)); every other op has no overload for two numbers (TypeError)."""
    if op not in _NUMBER_PAIRS or type(a) not in _SCALARS:
        raise TypeError(f"{op}() received an invalid combination of arguments - got ({type(a).__name__}, "
                        f"{type(b).__name__}), but expected one of:\n * (Tensor input, Tensor other)\n"
                        " * (Tensor input, Number other)")
    return _creation.tensor(a)


def _operands_scalar_first(op, s, b: Tensor):
    dt = _dt.result_type((s, b), _dt.default)
    if type(s) is int and dt.category == 1:  # PyTorch wraps the Python int to the integer type (300 - u8)
        lo, hi = _INT_RANGE[dt]
        if s < lo or s > hi:
            s = (s - lo) % (hi - lo + 1) + lo
    a = _creation.full((), s, dtype=dt, device=b.device)
    return _operands(op, a, b)


def _record(node: Node, out, dt, table, a, b, bt: bool, xa_shape, xb_shape, out_shape):
    node.next_functions = (edge(a), edge(b)) if bt else (edge(a),)
    node.sa = xa_shape if xa_shape != out_shape else None
    node.sb = xb_shape if bt and xb_shape != out_shape else None
    node.dts = None if a.dtype is dt and (not bt or b.dtype is dt) else _mixed(dt, a, b)
    return _make(out, dt, table, node)


_NEG_POW = "Integers to negative integer powers are not allowed."
_REDUCED = (_dt.float16, _dt.bfloat16)
_F32NP = _dt.float32.np


def _scalar_opmath(table) -> bool:
    """Whether the device's float16/bfloat16 kernels take a Python scalar in float32 themselves (opencl: its
    kernels compute in float); otherwise the core computes such ops in float32 and rounds once."""
    return getattr(table.backend, "scalar_opmath", False)


def _round_to(v, dt) -> float:
    """The Python number ``v`` rounded to the float dtype ``dt`` (out of range: inf, silently)."""
    with np.errstate(over="ignore"):
        return float(dt.np.type(v))


def _to_default(t: Tensor) -> Tensor:
    """An integer (or bool) tensor's values in the default float dtype (no autograd: integers need none)."""
    return _make(t._be.cast(t._data, _dt.default.np), _dt.default, t._be)


def _check_divisor(table, b, bt: bool) -> None:
    """PyTorch's RuntimeError("ZeroDivisionError") for an integer (or bool) divisor ``b`` with a zero: a scalar at
    once, an array through ``_check_values``."""
    if not bt:
        if b == 0:
            raise RuntimeError("ZeroDivisionError")
    else:
        _check_values(table, b, "nonzero", "ZeroDivisionError")


def _check_values(table, x, kind: str, message: str) -> None:
    """RuntimeError(message) when an element of the integer array ``x`` is 0 (kind 'nonzero', the only kind): at
    once in host memory; on a device with the 'check_values' primitive, at the next host read (no host round trip
    inside the op); elsewhere by reading the reduction back."""
    if not table.host_memory and table.has("check_values"):
        table.check_values(x, kind, message)
        return
    bad = table.eq(x, 0)
    if bool(table.to_numpy(table.any(bad, None, False))):
        raise RuntimeError(message)


def _make_binary(name: str, node_cls, kind: str):
    """Build the public function for a binary op.  kind: arith | div | cmp | logical | bitwise | nodiff."""

    # add/mul/maximum/minimum on floats need none of the checks below: decided here, once, not per call
    plain = kind == "arith" and name in ("add", "mul", "maximum", "minimum")
    # the common case of a differentiable float op, two tensors of one dtype, shape and device: no promotion,
    # broadcasting or checks to do, so it skips _operands/_record (per-op overhead: ~15 % fewer instructions)
    fast = node_cls is not None and (plain or name in ("sub", "div"))
    save_inputs = node_cls is not None and node_cls.save_inputs
    save_output = node_cls is not None and node_cls.save_output
    is_sub = name == "sub"
    # the ops whose PyTorch kernels take a Python scalar in float32 for float16/bfloat16 (add/sub round it to the
    # tensor's dtype first, as numpy does: half(1) + 2049.0 is 2048)
    opmath = name in ("mul", "div")

    def fn(a, b) -> Tensor:
        if fast and isinstance(b, Tensor) and isinstance(a, Tensor):
            table, dt = a._be, a.dtype
            xa, xb = a._data, b._data
            if b._be is table and b.dtype is dt and xa.shape == xb.shape and dt.is_floating_point:
                out = getattr(table, name)(xa, xb)
                if _gs.enabled and (a._rg or b._rg):
                    node = node_cls()
                    node.need = (a._rg, b._rg)
                    node.scalar = node.sa = node.sb = node.dts = None
                    if save_inputs:
                        node.save(*node_cls.to_save(a, b, node.need))
                    node.next_functions = (edge(a), edge(b))
                    r = _make(out, dt, table, node)
                    if save_output and (save_output is True or node.need[0]):
                        # kept, and version-checked: an in-place change of r makes backward raise ("a": only read
                        # by the first operand's gradient)
                        node.out = r
                        node.save(*node._saved, r)
                    return r
                return _make(out, dt, table)
        if _ac.on:  # autocast: pow is on the float32 list of GPU-like devices (one attribute check when off)
            a, b = _ac_cast(name, a, b)
        a0, b0 = a, b  # as given: _operands wraps a Python int to the tensor's integer range (uint8 ** -1: 255)
        if kind == "div" and not isinstance(a, Tensor) and isinstance(b, Tensor) and type(a) in _SCALARS \
                and not b.dtype.is_floating_point:
            # true division of a Python number by an integer tensor: the number as given (-3 / u8), not wrapped
            a = _creation.full((), float(a), dtype=_dt.default, device=b.device)
        if is_sub and _is_bool(a) is not _is_bool(b):
            raise RuntimeError(_SUB_BOOL)
        if kind == "div" and isinstance(a, Tensor) and isinstance(b, Tensor) and not a.dtype.is_floating_point \
                and not b.dtype.is_floating_point:
            # integer / integer: each operand goes to the float dtype as it is (u8 / tensor(-1) is -200, not the
            # -1 wrapped to u8 first by the integer promotion)
            a, b = _to_default(a), _to_default(b)
        elif opmath and isinstance(b, Tensor) and b._data.ndim == 0 and isinstance(a, Tensor) \
                and a.dtype in _REDUCED and b.dtype is not a.dtype and b._be.type == "cpu" and not b._rg \
                and a._data.ndim and b.dtype is not _bool:
            b = b.item()  # a 0-d cpu tensor is a scalar to PyTorch's kernels: h * tensor(65536.) is 32768
        a, b, xa, xb, dt, table = _operands(name, a, b)
        bt = isinstance(b, Tensor)
        out = None
        if not bt and not opmath and dt in _REDUCED and xb.__class__ is not bool and _scalar_opmath(table):
            # PyTorch rounds the scalar to float16/bfloat16 for every op but mul/div (half(1) + 2049.0 is 2048,
            # half(65504) == 65505.0 is True), as the cpu kernels do; this device's kernels would take it in float
            xb = _round_to(xb, dt)
        if opmath and not bt and dt in _REDUCED and not _scalar_opmath(table):
            # PyTorch computes float16/bfloat16 with a Python number in float32 (the op math type) and rounds once:
            # half([0.5]) * 65536.0 is 32768, not the scalar rounded to half (inf) first
            out = table.cast(getattr(table, name)(table.cast(xa, _F32NP), xb), dt.np)
        elif plain:
            pass
        elif kind == "div":
            if not dt.is_floating_point:
                dt = _dt.default
                xa = table.cast(xa, dt.np)
                xb = table.cast(xb, dt.np) if bt else float(b0)  # the scalar as given: u8 / -3 is negative
        elif kind == "cmp" or kind == "logical":
            return _make(getattr(table, name)(xa, xb), _bool, table)
        elif kind == "bitwise":
            if dt.is_floating_point:
                raise NotImplementedError(f"\"{name}\" not implemented for '{dt._tname[:-6]}': bitwise ops take "
                                   "integer or bool tensors")
        elif name == "sub" and dt is _bool:
            raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                               "Use the `^` or `logical_xor()` operator instead.")
        elif name == "pow" and not bt and b0.__class__ is float and (b0 == 0.5 or b0 == -0.5) \
                and (dt is _dt.float32 or dt is _dt.float64):
            # PyTorch's scalar-exponent kernel takes sqrt / rsqrt for +-0.5: (-inf) ** 0.5 is nan (C's pow: inf);
            # its float16/bfloat16 kernels keep pow
            out = table.sqrt(xa) if b0 == 0.5 else table.rsqrt(xa)
        elif name == "pow" and not bt and dt in _REDUCED:
            _dt.fit_scalar(b0, dt)  # PyTorch: half ** 70000. raises (the exponent is converted to half, checked)
        elif name == "pow" and not dt.is_floating_point:
            # PyTorch: only a negative Python-int exponent raises; a tensor exponent (scalar bases are wrapped into
            # tensors) takes powi's truncated integral value for a negative entry (1, +-1 for base -1, else 0)
            if dt is _bool:  # PyTorch's pow kernels have no bool: only a bool scalar exponent short-circuits
                if bt:
                    raise NotImplementedError("\"pow\" not implemented for 'Bool'")
                return _make(table.logical_or(xa, not xb), _bool, table)  # x ** True == x, x ** False == 1
            if not bt and b0 < 0:
                raise RuntimeError(_NEG_POW)
            if not bt and b0.__class__ is int and dt.category == 1:
                _dt.fit_scalar(b0, dt)  # PyTorch: int8 ** 200 raises (the exponent must fit the dtype)
        elif (name == "floor_divide" or name == "remainder") and not dt.is_floating_point:
            if dt is _bool:
                raise NotImplementedError(f"\"{'div_floor' if name == 'floor_divide' else name}_cpu\" not "
                                          "implemented for 'Bool'")
            # an empty result divides nothing by zero (PyTorch: empty // 0, or an empty broadcast, is no error)
            if 0 not in (broadcast_shape(xa.shape, xb.shape) if bt else xa.shape):
                _check_divisor(table, xb, bt)
        if out is None:
            out = getattr(table, name)(xa, xb)
        if node_cls is not None and _gs.enabled and (a._rg or (bt and b._rg)):
            if node_cls is PowBackward0 and a0.__class__ in _SCALARS:
                return _record_rpow(a0, b, out, dt, table)
            node = node_cls() if not bt or node_cls is not PowBackward0 else PowBackward1()
            node.need = (a._rg, bt and b._rg)
            node.scalar = None if bt else xb
            if node_cls.save_inputs:
                node.save(*node_cls.to_save(a, b if bt else None, node.need))
            r = _record(node, out, dt, table, a, b, bt, a._data.shape, b._data.shape if bt else None,
                        out.shape)
            if node_cls.save_output and (node_cls.save_output is True or node.need[0]):
                node.out = r
                node.save(*node._saved, r)
            elif bt and node_cls is PowBackward0:  # PowBackward1: PyTorch's tensor ** tensor saves its result too
                node.save(*node._saved, r)
            return r
        return _make(out, dt, table)
    fn.__name__ = name
    fn.__qualname__ = name
    return fn


def _save_both(a, b, need):
    return a, b


def _save_mul(a, b, need):
    """PyTorch saves only what the needed gradients read (a's needs b, b's needs a): modifying the other operand
    in place afterwards is no error (y = c * x; x.exp_() when only c requires grad)."""
    return (a if need[1] else None), (b if need[0] else None)


def _save_div(a, b, need):
    return (a if need[1] else None), b


def _save_first(a, b, need):
    """Only the first operand, where its own gradient is needed (copysign: the sign's gradient is zero)."""
    return (a if need[0] else None), None


def _save_remainder(a, b, need):
    return (a, b) if need[1] else (None, None)


def _binary_node(name: str, backward, save_inputs=True, save_output=False, to_save=_save_both):
    cls = type(name, (_BinaryNode,), {"__slots__": ("out",) if save_output else (), "backward": backward,
                                      "save_inputs": save_inputs, "save_output": save_output,
                                      "to_save": staticmethod(to_save)})
    return cls


def _add_bw(self, g):
    na, nb = self.need
    return self.grads(g if na else None, g if nb else None)


def _sub_bw(self, g):
    na, nb = self.need
    return self.grads(g if na else None, neg(g) if nb else None)


def _mul_bw(self, g):
    a, b = self.saved()
    na, nb = self.need
    if self.scalar is not None:
        return self.grads(mul(g, self.scalar), None)
    return self.grads(mul(g, b) if na else None, mul(g, a) if nb else None)


def _div_bw(self, g):
    a, b = self.saved()
    na, nb = self.need
    if self.scalar is not None:
        return self.grads(div(g, self.scalar), None)
    return self.grads(div(g, b) if na else None, neg(div(mul(g, a), mul(b, b))) if nb else None)


def _pow_bw(self, g):
    saved = self.saved()
    a, b = saved[0], saved[1]
    na, nb = self.need
    if b is None:
        e = self.scalar
        ga = mul(g, mul(pow(a, e - 1), e)) if e != 0 else mul(g, 0.0)
        return self.grads(ga, None)
    # PyTorch masks the exponent == 0 case to 0 (0 ** -1 * 0 would be nan at a == 0)
    ga = where(eq(b, 0), 0.0, mul(g, mul(b, pow(a, sub(b, 1))))) if na else None
    gb = None
    if nb:
        out = saved[2] if len(saved) > 2 else pow(a, b)
        # d/db a**b = a**b * log(a); PyTorch masks the a == 0, b >= 0 case to 0
        mask = logical_and(eq(a, 0), ge(b, 0))
        # (log of the base in the result's dtype, as PyTorch: an int64 base with a float64 exponent is not
        # logged in float32)
        gb = where(mask, 0.0, mul(g, mul(out, log(a if a.dtype is out.dtype else a.to(out.dtype)))))
    return self.grads(ga, gb)


def _maxmin_bw(loses):
    """PyTorch's formula: the gradient is halved at ties and masked where an operand loses, so at a NaN (no
    order) both operands get the whole gradient."""
    def bw(self, g):
        a, b = self.saved()
        na, nb = self.need
        if b is None:
            b = self.scalar
        gh = where(eq(a, b), mul(g, 0.5), g)
        ga = where(loses(a, b), 0.0, gh) if na else None
        gb = where(loses(b, a), 0.0, gh) if nb and isinstance(b, Tensor) else None
        return self.grads(ga, gb)
    return bw


def _remainder_bw(self, g):
    a, b = self.saved()
    na, nb = self.need
    if not nb:
        return self.grads(g, None)
    return self.grads(g if na else None, mul(neg(g), div(a, b, rounding_mode="floor")) if nb else None)


# ops that backward lambdas call before their definition below (declared for type checkers)
lt: Callable[..., Tensor]
gt: Callable[..., Tensor]
neg: Callable[..., Tensor]
cos: Callable[..., Tensor]

AddBackward0 = _binary_node("AddBackward0", _add_bw, save_inputs=False)
SubBackward0 = _binary_node("SubBackward0", _sub_bw, save_inputs=False)
MulBackward0 = _binary_node("MulBackward0", _mul_bw, to_save=_save_mul)
DivBackward0 = _binary_node("DivBackward0", _div_bw, to_save=_save_div)
PowBackward0 = _binary_node("PowBackward0", _pow_bw)
PowBackward1 = type("PowBackward1", (PowBackward0,), {"__slots__": ()})  # tensor ** tensor, as PyTorch names it


class PowBackward2(Node):
    """number ** tensor: PyTorch saves the exponent and the result (an in-place change of either makes the
    backward raise) and multiplies by log(number) in double."""
    __slots__ = ("base", "dts")

    def backward(self, g):
        b, out = self.saved()
        if self.base == 0:  # 0 ** b: the gradient is 0 where b >= 0 (log 0 = -inf elsewhere)
            gb = where(ge(b, 0), 0.0, mul(g, mul(out, -math.inf)))
        else:
            gb = mul(g, mul(out, math.log(self.base) if self.base > 0 else math.nan))
        return (gb if self.dts is None else gb.to(self.dts),)


def _record_rpow(base, b: Tensor, out, dt, table) -> Tensor:
    node = PowBackward2()
    node.base = base
    node.dts = b.dtype if b.dtype is not dt else None
    node.next_functions = (edge(b),)
    r = _make(out, dt, table, node)
    node.save(b, r)
    return r


MaximumBackward0 = _binary_node("MaximumBackward0", _maxmin_bw(lambda a, b: lt(a, b)))
MinimumBackward0 = _binary_node("MinimumBackward0", _maxmin_bw(lambda a, b: gt(a, b)))
RemainderBackward0 = _binary_node("RemainderBackward0", _remainder_bw, to_save=_save_remainder)

_add = _make_binary("add", AddBackward0, "arith")
_sub = _make_binary("sub", SubBackward0, "arith")
mul = _make_binary("mul", MulBackward0, "arith")
_div = _make_binary("div", DivBackward0, "div")
pow = _make_binary("pow", PowBackward0, "arith")
maximum = _make_binary("maximum", MaximumBackward0, "arith")
minimum = _make_binary("minimum", MinimumBackward0, "arith")
remainder = _make_binary("remainder", RemainderBackward0, "arith")
_floor_divide = _make_binary("floor_divide", None, "arith")
eq = _make_binary("eq", None, "cmp")
ne = _make_binary("ne", None, "cmp")
lt = _make_binary("lt", None, "cmp")
le = _make_binary("le", None, "cmp")
gt = _make_binary("gt", None, "cmp")
ge = _make_binary("ge", None, "cmp")
logical_and = _make_binary("logical_and", None, "logical")
logical_or = _make_binary("logical_or", None, "logical")
logical_xor = _make_binary("logical_xor", None, "logical")
bitwise_and = _make_binary("bitwise_and", None, "bitwise")
bitwise_or = _make_binary("bitwise_or", None, "bitwise")
bitwise_xor = _make_binary("bitwise_xor", None, "bitwise")
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne
multiply = mul


def _alpha(input, other, alpha, op):
    """other * alpha with PyTorch's checks: a float alpha needs a floating result, a bool alpha a bool one."""
    dt = _dt.result_type((input, other), _dt.default)
    if isinstance(alpha, bool) and dt is not _bool:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if isinstance(alpha, float) and not dt.is_floating_point:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    if dt is _bool:  # bool arithmetic: other * alpha is `other and alpha`
        if op == "sub":
            return other
        return logical_and(other, bool(alpha)) if isinstance(other, Tensor) else bool(other) and bool(alpha)
    _dt.fit_scalar(alpha, dt)  # PyTorch converts alpha to the result type (half: alpha=1e5 raises)
    if not isinstance(other, Tensor):
        return other * alpha
    # promote first, then scale: int32 + int8 * 2 is computed in int32 (not wrapped in int8), f32 + u8 * -1 in f32
    return mul(other if other.dtype is dt else other.to(dt), alpha)


def add(input, other, *, alpha=1):
    """Adds ``other``, scaled by ``alpha``, to ``input``: ``out = input + alpha * other``.

    The operands broadcast against each other and the result dtype follows type promotion (a Python
    number does not widen a tensor's dtype category: ``int_tensor + 2.5`` is float, ``float16 + 1`` stays float16).

    Args:
        input (Tensor or Number): the first operand.
        other (Tensor or Number): the second operand.
        alpha (Number): the multiplier of ``other`` (default 1).
        out (Tensor, optional): the output tensor.

    Example:
        >>> a = torch.tensor([1.0, 2.0])
        >>> torch.add(a, torch.ones(2), alpha=10)
        tensor([11., 12.])
    """
    if alpha != 1 or type(alpha) is not int:
        other = _alpha(input, other, alpha, "add")
        if isinstance(other, Tensor) and other.dtype is _bool and isinstance(input, Tensor) \
                and input.dtype is _bool:
            return logical_or(input, other)
    return _add(input, other)


def sub(input, other, *, alpha=1):
    """Subtracts ``other``, scaled by ``alpha``, from ``input``: ``out = input - alpha * other``.

    Broadcasting and type promotion as :func:`add`; bool tensors cannot be subtracted.

    Args:
        input (Tensor or Number): the first operand.
        other (Tensor or Number): the second operand.
        alpha (Number): the multiplier of ``other`` (default 1).
        out (Tensor, optional): the output tensor.
    """
    if alpha != 1 or type(alpha) is not int:
        if _is_bool(input) is not _is_bool(other):  # before alpha scales the bool away: PyTorch checks first
            raise RuntimeError(_SUB_BOOL)
        other = _alpha(input, other, alpha, "sub")
    return _sub(input, other)


subtract = sub


def div(input, other, *, rounding_mode=None):
    """Divide ``input`` by ``other`` element-wise, with broadcasting.

    True division by default (integer inputs give a float result); ``rounding_mode="trunc"`` rounds the
    quotient toward zero and ``"floor"`` toward negative infinity, both keeping integer dtypes.

    Args:
        input (Tensor or Number): the dividend.
        other (Tensor or Number): the divisor.
        rounding_mode (str, optional): None, ``"trunc"`` or ``"floor"``.
        out (Tensor, optional): the output tensor.
    """
    if rounding_mode is None:
        return _div(input, other)
    if rounding_mode == "floor" or rounding_mode == "trunc":
        # a step function: recorded as PyTorch does, one DivBackward2 node with zero gradients
        prev = _gs.enabled
        _gs.enabled = False
        try:
            r = _div_rounding(input, other, rounding_mode)
        finally:
            _gs.enabled = prev
        return _keep_graph(r, (input, other), "DivBackward2")
    raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                       f"'{rounding_mode}'")


def _div_rounding(input, other, rounding_mode: str):
    s = _opmath_divisor(input, other)
    if s is not None:   # in float32, rounded once
        return _div_rounding(input.to(_dt.float32), s, rounding_mode).to(input.dtype)
    if rounding_mode == "floor":
        return _floor_divide(input, other)
    if rounding_mode == "trunc":
        dt = _dt.result_type((input, other), _dt.default)
        if not dt.is_floating_point and dt is not _bool:
            # integer arithmetic, exact at any magnitude (a float quotient loses digits past 2**24): the floor
            # quotient, plus one where the division is inexact and the signs differ.  floor_divide raises
            # PyTorch's "ZeroDivisionError" for a zero divisor (on a device, at the next host read)
            q = floor_divide(input, other)
            inexact_neg = logical_and(ne(remainder(input, other), 0), lt(bitwise_xor(input, other), 0))
            return add(q, inexact_neg)
        if dt is _bool:
            raise NotImplementedError("\"div_trunc_cpu\" not implemented for 'Bool'")
        return trunc(_div(input, other))


divide = true_divide = div


def floor_divide(input, other):
    # recorded as PyTorch does: the result requires grad, its backward raises "not implemented"
    """Division rounded toward negative infinity (``div(input, other, rounding_mode="floor")``).

    Keeps integer dtypes; a zero integer divisor raises ``RuntimeError``.
    """
    s = _opmath_divisor(input, other)
    r = _floor_divide(input, other) if s is None else _floor_divide(input.detach().to(_dt.float32), s).to(input.dtype)
    return _not_implemented_graph(r, (input, other), "floor_divide")


def _opmath_divisor(input, other):
    """A Python number (or a 0-d CPU tensor of another dtype) dividing a float16/bfloat16 tensor, as PyTorch's
    rounding-division kernels take it: in float32 (half(2.5) // 0.001 is 2500, not 2498 from the divisor rounded to
    half first); None for any other operands."""
    if not isinstance(input, Tensor) or input.dtype not in _REDUCED:
        return None
    if other.__class__ is float or other.__class__ is int:
        return other
    if isinstance(other, Tensor) and other._data.ndim == 0 and input._data.ndim and other.dtype is not input.dtype \
            and other.dtype is not _bool and other._be.type == "cpu" and not other._rg:
        return other.item()
    return None


def _fmod_bw(self, g):
    a, b = self.saved()
    na, nb = self.need
    if b is None:
        return self.grads(g, None)
    return self.grads(g if na else None, mul(neg(g), div(a, b, rounding_mode="trunc")) if nb else None)


FmodBackward0 = _binary_node("FmodBackward0", _fmod_bw)
FmodBackward1 = type("FmodBackward1", (FmodBackward0,), {"__slots__": ()})  # tensor divisor, as PyTorch names it


def fmod(input, other):
    """C-style remainder: the result has the sign of the dividend."""
    dt = _dt.result_type((input, other), _dt.default)
    if dt is not _bool:  # in the result dtype first: abs(int8 -128) wraps, and bool has no arithmetic
        input = input.to(dt) if isinstance(input, Tensor) and input.dtype is not dt else input
        other = other.to(dt) if isinstance(other, Tensor) and other.dtype is not dt else other
    bt = isinstance(other, Tensor)
    if dt.is_floating_point and isinstance(input, Tensor) and _gs.enabled and (input._rg or (bt and other._rg)):
        # one node with PyTorch's gradients (g, -g * trunc(a / b)), not the composite's (0 at a NaN dividend)
        _gs.enabled = False
        try:
            r = fmod(input, other)
        finally:
            _gs.enabled = True
        node = FmodBackward1() if bt else FmodBackward0()
        node.need = (input._rg, bt and other._rg)
        node.scalar = None if bt else other
        node.save(input, other if bt else None)
        return _record(node, r._data, dt, r._be, input, other, bt, input._data.shape,
                       other._data.shape if bt else None, r._data.shape)
    if dt.is_floating_point:
        # |a| mod |b| is exact (a - trunc(a / b) * b is not: 1e10 fmod 3 would be 0), and right for an infinite b
        r = remainder(abs(input) if isinstance(input, Tensor) else builtins_abs(input),
                      abs(other) if isinstance(other, Tensor) else builtins_abs(other))
        if not isinstance(input, Tensor):
            return neg(r) if math.copysign(1.0, input) < 0 else r   # fmod(-0., b) is -0.
        from .special import signbit  # special is built on this module: a genuine import cycle
        return where(signbit(input), neg(r), r)
    return sub(input, mul(div(input, other, rounding_mode="trunc"), other))


def rsub(input, other, alpha=1):
    """``other - alpha * input`` (subtraction with the operands reversed)."""
    return sub(other, input, alpha=alpha)


def float_power(input, exponent):
    """``input ** exponent`` computed in float64 (the result is float64)."""
    return pow(input.double() if isinstance(input, Tensor) else input,
               exponent.double() if isinstance(exponent, Tensor) else exponent)


# ---------------------------------------------------------------------------------------------
# unary ops
# ---------------------------------------------------------------------------------------------
class _UnaryNode(Node):
    __slots__ = ("out",)


def _make_unary(name: str, backward, float_only: bool, save: str | None, nodiff: bool = False,
                out_bool: bool = False, node_name: str | None = None) -> Callable[..., Tensor]:
    """``node_name``: the backward node's class name where PyTorch's is not ``<Name>Backward0``."""
    node_cls = None
    if backward is not None:
        node_cls = type(node_name or f"{name[0].upper()}{name[1:]}Backward0", (_UnaryNode,),
                        {"__slots__": (), "backward": backward})

    def fn(input) -> Tensor:
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
        if _ac.on:  # autocast: exp, log, ... are on the float32 list of GPU-like devices (one check when off)
            input = _ac_unary(name, input)
        table = input._be
        dt = input.dtype
        x = input._data
        if dt is _bool and bool_error is not None:
            raise bool_error[0](bool_error[1])
        if float_only and not dt.is_floating_point:
            dt = _dt.default
            x = table.cast(x, dt.np)
        out = getattr(table, name)(x)
        if out_bool:
            return _make(out, _bool, table)
        if node_cls is not None and input._rg and _gs.enabled:
            node = node_cls()
            node.next_functions = (edge(input),)
            r = _make(out, dt, table, node)
            if save == "x":
                node.save(input)
            elif save == "out":
                node.save(r)
            return r
        return _make(out, dt, table)
    bool_error = _UNARY_BOOL_ERRORS.get(name)
    fn.__name__ = name
    fn.__qualname__ = name
    return fn


# PyTorch's errors for a bool input to these unary ops (the others take bool: exp(bool) is float, ...)
_UNARY_BOOL_ERRORS = {
    "neg": (RuntimeError, "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                          "invert a mask, use the `~` or `logical_not()` operator instead."),
    "relu": (RuntimeError, "Boolean inputs not supported for relu"),
    "abs": (NotImplementedError, "\"abs_cpu\" not implemented for 'Bool'"),
    **{n: (NotImplementedError, f"\"{n}_vml_cpu\" not implemented for 'Bool'")
       for n in ("floor", "ceil", "round", "trunc")},
}


def _x(node):
    return node.saved()[0]


neg = _make_unary("neg", lambda n, g: (neg(g),), False, None)
exp = _make_unary("exp", lambda n, g: (mul(g, _x(n)),), True, "out")
log = _make_unary("log", lambda n, g: (div(g, _x(n)),), True, "x")
sqrt = _make_unary("sqrt", lambda n, g: (div(g, mul(_x(n), 2)),), True, "out")
rsqrt = _make_unary("rsqrt", lambda n, g: (mul(g, mul(pow(_x(n), 3), -0.5)),), True, "out")
abs = _make_unary("abs", lambda n, g: (mul(g, sign(_x(n))),), False, "x")
_sign = _make_unary("sign", lambda n, g: _zero_grad(n, g), False, None)


def sign(input):
    """The sign of each element: -1, 0 or 1 (bool inputs are returned as is)."""
    if isinstance(input, Tensor) and input.dtype is _bool:  # sign(bool) is the input (numpy has no bool sign)
        return _make(input._be.cast(input._data, np.bool_), _bool, input._be)
    return _sign(input)


sin = _make_unary("sin", lambda n, g: (mul(g, cos(_x(n))),), True, "x")
cos = _make_unary("cos", lambda n, g: (neg(mul(g, sin(_x(n)))),), True, "x")
tanh = _make_unary("tanh", lambda n, g: (mul(g, _rsub1(mul(_x(n), _x(n)))),), True, "out")
sigmoid = _make_unary("sigmoid", lambda n, g: (mul(g, mul(_x(n), _rsub1(_x(n)))),), True, "out")
def _relu_bw(n, g):
    out = _x(n)
    if not (g._rg and _gs.enabled) and g.dtype is out.dtype:  # plain backward: two kernels, no op layer
        table = g._be
        return (_make(table.where(table.ne(out._data, 0), g._data, 0.0), g.dtype, table),)
    # relu's output is 0, positive or NaN: `out != 0` is PyTorch's `not (out <= 0)`, so a NaN passes the gradient
    return (where(ne(out, 0), g, 0.0),)


relu = _make_unary("relu", _relu_bw, False, "out")
reciprocal = _make_unary("reciprocal", lambda n, g: (neg(mul(g, mul(_x(n), _x(n)))),), True, "out")
expm1 = _make_unary("expm1", lambda n, g: (mul(g, add(_x(n), 1)),), True, "out")
log1p = _make_unary("log1p", lambda n, g: (div(g, add(_x(n), 1)),), True, "x")
def _zero_grad(n, g):
    """Piecewise-constant functions: zeros (PyTorch's zeros_like(grad): a NaN or inf gradient gives 0, not NaN)."""
    return (_creation.zeros_like(g),)



floor = _make_unary("floor", _zero_grad, False, None)
ceil = _make_unary("ceil", _zero_grad, False, None)
trunc = _make_unary("trunc", _zero_grad, False, None)
_round = _make_unary("round", _zero_grad, False, None)
logical_not = _make_unary("logical_not", None, False, None, out_bool=True)
isnan = _make_unary("isnan", None, False, None, out_bool=True)
_bitwise_not = _make_unary("bitwise_not", None, False, None)
negative = neg
fix = trunc


def _rsub1(t):
    return add(neg(t), 1)


def round(input, *, decimals: int = 0):
    """Round to the nearest integer (half to even); with ``decimals``, to that many decimal places."""
    if decimals == 0:
        return _round(input)
    s = 10.0 ** decimals
    return div(_round(mul(input, s)), s)


def bitwise_not(input):
    """The bitwise NOT of an integer or bool tensor (logical NOT for bool).

    Args:
        input (Tensor): an integer or bool tensor.
    """
    if input.dtype.is_floating_point:
        raise NotImplementedError(f"\"bitwise_not_cpu\" not implemented for '{input.dtype._tname[:-6]}'")
    return logical_not(input) if input.dtype is _bool else _bitwise_not(input)


def square(input):
    """Each element squared (``input * input``); integers stay integers, bool becomes int64."""
    if isinstance(input, Tensor) and input.dtype is _bool:  # PyTorch: square(bool) is pow(bool, 2): int64
        input = input.to(_dt.int64)
    return mul(input, input)


# ---------------------------------------------------------------------------------------------
# where, clamp, lerp, masked_fill
# ---------------------------------------------------------------------------------------------
class WhereBackward0(Node):
    __slots__ = ("cond", "sx", "sy", "need", "dts")

    def backward(self, g):
        c = self.cond
        nx, ny = self.need
        gx = sum_to(where(c, g, 0.0), self.sx) if nx else None
        gy = sum_to(where(c, 0.0, g), self.sy) if ny else None
        return (gx, gy) if self.dts is None else _cast_grads((gx, gy), self.dts)


def where(condition, input=None, other=None):
    """``input`` where ``condition`` is True, else ``other``: ``out_i = input_i if condition_i else other_i``.

    The three broadcast; the result dtype is the promotion of ``input`` and ``other`` (tensors or numbers).
    With only ``condition``, returns ``nonzero(condition, as_tuple=True)``.

    Args:
        condition (Tensor): a bool tensor.
        input (Tensor or Number): values where True.
        other (Tensor or Number): values where False.
    """
    if input is None and other is None:
        from .indexing import nonzero
        return nonzero(condition, as_tuple=True)
    if not isinstance(condition, Tensor):
        raise TypeError("where(): argument 'condition' must be Tensor")
    if condition.dtype is not _bool:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{condition.dtype}")
    table = condition._be
    xt, yt = isinstance(input, Tensor), isinstance(other, Tensor)
    ref = input if xt else other if yt else condition
    if xt and input._be is not table:
        condition, input = align_devices("where", condition, input)
        table = condition._be
    if yt and other._be is not table:
        condition, other = align_devices("where", condition, other)
        table = condition._be
        if xt and input._be is not table:  # a 0-d CPU condition and input beside a device other: both follow it
            condition, input = align_devices("where", condition, input)
    if xt and yt:
        dt = _dt.result_type((input, other), _dt.default)
    elif xt or yt:
        dt = _dt.result_type((ref, other if xt else input), _dt.default)
    else:
        dt = _dt.result_type((input, other), _dt.default)
    # Python scalars go to the kernel as scalars (no broadcast buffer), converted to the result's kind; an
    # integer result checks the value as fill_ does (PyTorch: where(c, int8_tensor, 200) raises)
    conv = float if dt.is_floating_point else bool if dt is _bool else \
        (lambda v: _dt.fit_scalar(int(v), dt)) if xt or yt else int
    xs = input._data.shape if xt else ()
    ys = other._data.shape if yt else ()
    shape = broadcast_shape(broadcast_shape(condition._data.shape, xs, "where"), ys, "where")
    xc = (input._data if input.dtype is dt else table.cast(input._data, dt.np)) if xt else conv(input)
    yc = (other._data if other.dtype is dt else table.cast(other._data, dt.np)) if yt else conv(other)
    cd = condition._data
    if cd.shape != shape:
        cd = table.expand(cd, shape)
    if xt and xs != shape:
        xc = table.expand(xc, shape)
    if yt and ys != shape:
        yc = table.expand(yc, shape)
    out = table.where(cd, xc, yc)
    if not xt and not yt:  # two Python scalars: the kernel picks its own (64-bit) type
        out = table.cast(out, dt.np)
    xg, yg = xt and input._rg, yt and other._rg
    if _gs.enabled and (xg or yg):
        node = WhereBackward0()
        node.cond = condition
        node.need = (xg, yg)
        node.dts = _mixed(dt, input, other)
        node.sx, node.sy = xs, ys
        node.next_functions = (edge(input) if xt else (None, 0), edge(other) if yt else (None, 0))
        return _make(out, dt, table, node)
    return _make(out, dt, table)


class ClampBackward1(Node):
    __slots__ = ("lo", "hi")

    def backward(self, g):
        (x,) = self.saved()
        m = None
        if self.lo is not None:
            m = ge(x, self.lo)
        if self.hi is not None:
            m2 = le(x, self.hi)
            m = m2 if m is None else logical_and(m, m2)
        return (where(m, g, 0.0),)


def clamp(input, min=None, max=None):
    """Clamp every element into ``[min, max]``: ``min(max(input, min), max)``.

    Args:
        input (Tensor): the input tensor.
        min (Number or Tensor, optional): the lower bound.
        max (Number or Tensor, optional): the upper bound (wins when ``min > max``).

    The gradient is 1 where the element lies inside the bounds, 0 where it was clamped.
    """
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        return _clamp_tensor(input, min, max)
    table = input._be
    dt = input.dtype
    x = input._data
    if not dt.is_floating_point:
        # PyTorch's result_type(input, min, max): a float bound gives the default float dtype, an int bound
        # promotes bool to int64; an int bound is converted to the integer type as fill_ converts it (an
        # out-of-range bound raises, a negative one wraps for uint8)
        rdt = _dt.result_type((input,) + tuple(v for v in (min, max) if v is not None), _dt.default)
        if rdt is not dt:
            dt = rdt
            x = table.cast(x, dt.np)
        if dt is _bool:  # PyTorch has no bool clamp kernel (a bool bound keeps the bool dtype)
            kind = "clamp" if min is not None and max is not None else "clamp_min" if min is not None else "clamp_max"
            raise NotImplementedError(f"\"{kind}_scalar_cpu\" not implemented for 'Bool'")
        if not dt.is_floating_point:
            min = None if min is None else _dt.fit_scalar(min if dt is _bool else int(min), dt)
            max = None if max is None else _dt.fit_scalar(max if dt is _bool else int(max), dt)
    out = table.clamp(x, min, max)
    if input._rg and _gs.enabled:
        node = ClampBackward1() if min is not None and max is not None else \
            ClampMinBackward0() if min is not None else ClampMaxBackward0()
        node.lo, node.hi = min, max
        node.save(input)
        node.next_functions = (edge(input),)
        return _make(out, dt, table, node)
    return _make(out, dt, table)


class ClampBackward0(Node):
    """clamp with tensor bounds, as PyTorch: the input gets the gradient where lo <= x <= hi, a bound where
    it is the result (lo where x < lo < hi, hi where x > hi or hi < lo); no splitting at the bounds."""
    __slots__ = ("lo", "hi", "need", "shapes", "dts")

    def backward(self, g):
        x, lo_t, hi_t = self.saved()
        lo = lo_t if lo_t is not None else self.lo
        hi = hi_t if hi_t is not None else self.hi
        nx, nlo, nhi = self.need
        sx, slo, shi = self.shapes
        gx = glo = ghi = None
        if nx:
            m = ge(x, lo) if lo is not None else None
            if hi is not None:
                m = le(x, hi) if m is None else logical_and(m, le(x, hi))
            gx = sum_to(where(m, g, 0.0), sx)
        if nlo:
            m = lt(x, lo) if hi is None else logical_and(lt(x, lo), lt(lo, hi))
            glo = sum_to(where(m, g, 0.0), slo)
        if nhi:
            m = gt(x, hi) if lo is None else logical_or(gt(x, hi), lt(hi, lo))
            ghi = sum_to(where(m, g, 0.0), shi)
        gs = (gx, glo, ghi) if self.dts is None else _cast_grads((gx, glo, ghi), self.dts)
        return tuple(r for r, t in zip(gs, (x, lo_t, hi_t)) if t is not None)


def _clamp_tensor(input, min, max):
    prev = _gs.enabled
    _gs.enabled = False
    try:
        out = input
        if min is not None:
            out = maximum(out, min)
        if max is not None:
            out = minimum(out, max)
    finally:
        _gs.enabled = prev
    ts = [t if isinstance(t, Tensor) else None for t in (input, min, max)]
    if not (_gs.enabled and any(t is not None and t._rg for t in ts)):
        return out
    node = ClampBackward0()
    node.lo = None if isinstance(min, Tensor) else min
    node.hi = None if isinstance(max, Tensor) else max
    node.need = tuple(t is not None and t._rg for t in ts)
    node.shapes = tuple(None if t is None else t._data.shape for t in ts)
    node.dts = _mixed(out.dtype, *ts)
    node.save(*ts)
    node.next_functions = tuple(edge(t) for t in ts if t is not None)
    return _make(out._data, out.dtype, out._be, node)


clip = clamp


def clamp_min(input, min):
    """Clamp every element to at least ``min`` (``clamp(input, min=min)``)."""
    return clamp(input, min=min)


def clamp_max(input, max):
    """Clamp every element to at most ``max`` (``clamp(input, max=max)``)."""
    return clamp(input, max=max)


ClampMinBackward0 = type("ClampMinBackward0", (ClampBackward1,), {"__slots__": ()})
ClampMaxBackward0 = type("ClampMaxBackward0", (ClampBackward1,), {"__slots__": ()})

from . import creation as _creation  # noqa: E402  (late, module level: an import per call costs ~10k instructions)
from ._pointwise_fill import lerp, masked_fill  # noqa: E402, F401  (they are built on the ops above)
