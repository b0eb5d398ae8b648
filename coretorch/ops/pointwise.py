"""Elementwise ops: unary, binary (with broadcasting and type promotion), where, clamp."""
from __future__ import annotations

import builtins
import math
from typing import Any, Callable

import numpy as np

from .. import dtypes as _dt
from ..amp.autocast_mode import cast_inputs as _ac_cast, state as _ac
from ..autograd._zero import keep_graph as _keep_graph, not_implemented_graph as _not_implemented_graph
from ..autograd.grad_mode import state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make
from ._util import align_devices, bind_late, broadcast_shape, data_read, edge, sum_to

_bool = _dt.bool_
builtins_abs = builtins.abs
_SCALARS = (int, float, bool)


# ---------------------------------------------------------------------------------------------
# binary ops
# ---------------------------------------------------------------------------------------------
class _BinaryNode(Node):
    __slots__ = ("sa", "sb", "scalar", "alpha", "need", "dts")
    # add/sub/mul/div take a Python number as PyTorch's wrapped-number tensor: their node keeps an edge for it,
    # (None, 0), as PyTorch's (``(x + 1).grad_fn.next_functions`` has two entries); set on those classes below
    wraps_scalar = False

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
        if b.__class__ is np.ndarray and isinstance(a, Tensor) and (b.ndim or op in _NUMPY_DTYPE_OPS):
            return _operands(op, *_ndarray_operands(op, a, b))  # (t + array: a tensor, as PyTorch's)
        if isinstance(b, np.generic):  # (a numpy number: the Python number PyTorch's parser makes of it)
            b = _dt.py_scalar(b)
        elif hasattr(b, "__index__") or hasattr(b, "__float__") and not hasattr(b, "__len__"):
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


#: the ops whose Tensor operator leaves an array operand to numpy in PyTorch (its comparisons take a 0-d array as
#: a number, and the dimensioned ones by PyTorch's promotion, here)
_NUMPY_DTYPE_OPS = frozenset(("add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "pow",
                              "bitwise_and", "bitwise_or", "bitwise_xor"))


def _ndarray_operands(op: str, a: Tensor, b: np.ndarray) -> tuple[Tensor, Tensor]:
    """``tensor <op> array`` (0-d arrays too, for the arithmetic ops): PyTorch's Tensor operators leave an array
    operand to numpy, which computes on the tensor's values and hands back a tensor: the result has numpy's dtype
    (float32 tensor + 0-d float64 array: float64; int32 * float32 array: float64; int / int array: float64).
    Both operands in that dtype (bfloat16, which numpy does not know, keeps PyTorch's promotion)."""
    if any(s < 0 or s % b.itemsize for s in b.strides):  # (PyTorch takes any array here: a copy)
        b = np.ascontiguousarray(b)
    if op in _NUMPY_DTYPE_OPS and a.dtype is not _dt.bfloat16 and b.dtype.kind in "biuf":
        nd = np.result_type(a.dtype.np, b.dtype)
        if op in ("div", "true_divide") and nd.kind in "biu":  # (numpy's true_divide of integers: float64)
            nd = np.dtype(np.float64)
        try:
            dt = _dt.from_numpy_dtype(nd)
        except TypeError:  # (int64 with uint64: numpy's float64 has no such array here; PyTorch's promotion)
            dt = None
        if dt is not None:
            if b.dtype != nd:
                b = b.astype(nd)
            if a.dtype is not dt:
                a = a.to(dt)
    return a, _creation.as_tensor(b, device=a.device)


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
    if isinstance(s, np.generic):  # (np.int8(-2) - u8: wraps as the Python int -2 does)
        s = _dt.py_scalar(s)
    dt = _dt.result_type((s, b), _dt.default)
    if type(s) is int and dt.category == 1:  # PyTorch wraps the Python int to the integer type (300 - u8)
        lo, hi = _INT_RANGE[dt]
        if s < lo or s > hi:
            s = (s - lo) % (hi - lo + 1) + lo
    elif dt in _OVERFLOW_AT and type(s) is not bool and builtins_abs(s) > _OVERFLOW_AT[dt][1]:
        # PyTorch converts the wrapped number as c10 does, without full's overflow check: past the dtype's range it
        # rounds to the largest finite value or to inf (2**40 - half: inf; this raised "cannot be converted")
        s = math.copysign(math.inf if builtins_abs(s) >= _OVERFLOW_AT[dt][0] else _OVERFLOW_AT[dt][1], s)
    a = _creation.full((), s, dtype=dt, device=b.device)
    return _operands(op, a, b)


# (where a number rounds to inf, the largest finite value) of the floats narrower than a Python float
_OVERFLOW_AT = {_dt.float16: (65520.0, 65504.0), _dt.bfloat16: (2.0 ** 128 - 2.0 ** 119, 2.0 ** 128 - 2.0 ** 120),
                _dt.float32: (2.0 ** 128 - 2.0 ** 103, 2.0 ** 128 - 2.0 ** 104)}


def _record(node: Node, out, dt, table, a, b, bt: bool, xa_shape, xb_shape, out_shape):
    node.next_functions = (edge(a), edge(b)) if bt else (edge(a), (None, 0)) if node.wraps_scalar else (edge(a),)
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
    """The Python number ``v`` rounded to the float dtype ``dt`` (out of range: inf, silently), through float32 as
    c10 converts a double to half/bfloat16 (1 + 2**-11 + 2**-40 is 1.0 in half: a tie once in float32)."""
    with np.errstate(over="ignore"):
        return float(dt.np.type(np.float32(v) if v.__class__ is float else v))


def _xlogy_reduced(table, name: str, xa, xb, bt: bool, dt):
    """PyTorch's float16/bfloat16 xlogy/xlog1py: its kernels call the half overload of std::log (log1p), so log(y)
    is rounded to the storage type first, then x * it in float32 rounded once (one float32 x * log(y) rounded once
    was an ulp off in ~15% of the elements); 0 where x == 0 unless y is NaN."""
    if bt:
        ly = table.log(xb) if name == "xlogy" else table.log1p(xb)
        keep = table.ne(xb, xb)  # NaN y: NaN even where x == 0
        zero = table.logical_and(table.eq(xa, 0), table.logical_not(keep))
    else:
        with np.errstate(all="ignore"):
            v = np.float32(xb)
            ly = _round_to(float(np.log(v) if name == "xlogy" else np.log1p(v)), dt)
        zero = table.eq(xa, 0) if xb == xb else None
    out = table.mul(xa, ly)
    return out if zero is None else table.where(zero, 0.0, out)


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

    def fn(input, other) -> Tensor:  # (PyTorch's keyword names: x.eq(other=y), torch.mul(input=x, other=y))
        a, b = input, other
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
        if isinstance(b, np.generic):  # a numpy number: the Python number PyTorch's parser makes of it
            b = _dt.py_scalar(b)  # (u8 - np.int8(2) wraps, int8 ** np.uint8(200) raises, as the Python ints)
        elif isinstance(a, np.generic):
            a = _dt.py_scalar(a)
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
            data_read("a 0-d cpu tensor operand of a half-precision op is read on the host")
            b = b.item()  # a 0-d cpu tensor is a scalar to PyTorch's kernels: h * tensor(65536.) is 32768
        a, b, xa, xb, dt, table = _operands(name, a, b)
        bt = isinstance(b, Tensor)
        out = None
        if not bt and not opmath and dt in _REDUCED and xb.__class__ is not bool \
                and (xb.__class__ is float or xb.__class__ is int or _scalar_opmath(table)):
            # PyTorch rounds the scalar to float16/bfloat16 for every op but mul/div (half(1) + 2049.0 is 2048,
            # half(65504) == 65505.0 is True), as the cpu kernels do (opencl's would take it in float; numpy would
            # round a double to half at once, not through float32 as c10 does).  An int too: a ufunc without a half
            # loop (scipy's xlogy) took xlogy(half, 2**40) in float32 (55.4; PyTorch inf)
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
        elif name == "pow" and not bt and isinstance(b, float) and (dt is _dt.float32 or dt is _dt.float64) \
                and (b == 0.5 or b == -0.5):
            # (``b``: the number _operands took, a numpy scalar's ``.item()``; a float subclass too, a compiled
            # step's float argument while captured, whose comparisons the replay checks)
            # PyTorch's scalar-exponent kernel takes sqrt / rsqrt for +-0.5: (-inf) ** 0.5 is nan (C's pow: inf);
            # its float16/bfloat16 kernels keep pow
            out = table.sqrt(xa) if b == 0.5 else table.rsqrt(xa)
        elif name == "pow" and not bt and isinstance(b, (float, int)) and b.__class__ is not bool \
                and (dt is _dt.float32 or dt is _dt.float64 or dt is _dt.bfloat16) and (b == 3 or b == -2):
            # PyTorch's scalar-exponent kernels (CPU's and CUDA's) multiply for 3 and -2: x * x * x and 1 / (x * x),
            # not pow (numpy's pow differs from them in the last bit for about a third of float32 inputs); bfloat16
            # too, each product rounded to bfloat16 (its vectorised operators round every step: PyTorch 2.13's
            # bf16 x ** 3 is (x * x) * x in bfloat16, not float32's rounded once; float16 keeps pow in float32)
            sq = table.mul(xa, xa)
            out = table.mul(sq, xa) if b == 3 else table.reciprocal(sq)
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
        if out is None and (name == "xlogy" or name == "xlog1py") and dt in _REDUCED:
            out = _xlogy_reduced(table, name, xa, xb, bt, dt)
        if out is None:
            out = getattr(table, name)(xa, xb)
        if node_cls is not None and _gs.enabled and (a._rg or (bt and b._rg)):
            if node_cls is PowBackward0 and (a0.__class__ in _SCALARS or isinstance(a0, float)
                                             and not isinstance(a0, np.generic)):
                # (a float subclass too, as PyTorch: a compiled step's float argument is one while captured)
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
    if name == "pow":  # PyTorch names pow's second argument ``exponent`` (x.pow(exponent=2)): the parameter renamed
        # in the code object (no wrapper call on a hot op; the body reads it through ``b``)
        v = fn.__code__.co_varnames
        fn.__code__ = fn.__code__.replace(co_varnames=(v[0], "exponent") + v[2:])
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

AddBackward0 = _binary_node("AddBackward0", _add_bw, save_inputs=False)
SubBackward0 = _binary_node("SubBackward0", _sub_bw, save_inputs=False)


def _add_alpha_bw(self, g):
    na, nb = self.need
    return self.grads(g if na else None, mul(g, self.alpha) if nb else None)


def _sub_alpha_bw(self, g):
    na, nb = self.need
    return self.grads(g if na else None, mul(neg(g), self.alpha) if nb else None)


# add/sub with alpha: PyTorch's same nodes, other's gradient scaled by alpha (a class of its own: the plain nodes
# need no alpha attribute set per op)
_AddAlphaBackward = _binary_node("AddBackward0", _add_alpha_bw, save_inputs=False)
_SubAlphaBackward = _binary_node("SubBackward0", _sub_alpha_bw, save_inputs=False)
MulBackward0 = _binary_node("MulBackward0", _mul_bw, to_save=_save_mul)
DivBackward0 = _binary_node("DivBackward0", _div_bw, to_save=_save_div)
for _c in (AddBackward0, SubBackward0, _AddAlphaBackward, _SubAlphaBackward, MulBackward0, DivBackward0):
    _c.wraps_scalar = True


def _saved_operand(i: int) -> property:
    """PyTorch's ``grad_fn._saved_self`` (0) / ``_saved_other`` (1) of mul and div: the operand the node saved
    (None where no gradient reads it), a Python number operand as the 0-d tensor PyTorch wraps it in."""
    def get(node):
        if i == 1 and node.scalar is not None:
            from .creation import tensor
            v = node.scalar
            return tensor(v, dtype=_dt.float64 if isinstance(v, float) else None)
        return node.saved()[i]
    return property(get)


for _c in (MulBackward0, DivBackward0):
    _c._saved_self, _c._saved_other = _saved_operand(0), _saved_operand(1)
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
mul: Any = _make_binary("mul", MulBackward0, "arith")  # (declared: modules that bind it late are checked first)
_div = _make_binary("div", DivBackward0, "div")
pow: Any = _make_binary("pow", PowBackward0, "arith")
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
    other = _dt.py_scalar(other)  # (half // np.float32(0.1): the divisor in float32, as a Python float's)
    s = _opmath_divisor(input, other)
    r = _floor_divide(input, other) if s is None else _floor_divide(input.detach().to(_dt.float32), s).to(input.dtype)
    return _not_implemented_graph(r, (input, other), "floor_divide")


def _opmath_divisor(input, other):
    """A Python number (or a 0-d CPU tensor of another dtype) dividing a float16/bfloat16 tensor, as PyTorch's
    rounding-division kernels take it: in float32 (half(2.5) // 0.001 is 2500, not 2498 from the divisor rounded to
    half first); None for any other operands."""
    if not isinstance(input, Tensor) or input.dtype not in _REDUCED:
        return None
    if other.__class__ is float or other.__class__ is int or isinstance(other, float) and \
            not isinstance(other, np.generic):  # (a float subclass: a compiled step's float argument while captured)
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
        # (the operands only for other's gradient, -g * trunc(a / b), as PyTorch: input's is g)
        node.save(*((input, other) if bt and other._rg else (None, None)))
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


class RsubBackward1(Node):
    """PyTorch's node of ``number - tensor`` (rsub.Scalar): one edge, to the tensor (sub's would have two)."""
    __slots__ = ("alpha",)

    def backward(self, g):
        return (neg(g) if self.alpha == 1 else mul(g, -self.alpha),)


def rsub(input, other, alpha=1):
    """``other - alpha * input`` (subtraction with the operands reversed)."""
    if isinstance(input, Tensor) and other.__class__ in (int, float) and input._rg and _gs.enabled:
        # a Python number: PyTorch's rsub.Scalar records RsubBackward1 (``1 - x``), not a SubBackward0
        _gs.enabled = False
        try:
            r = sub(other, input, alpha=alpha)
        finally:
            _gs.enabled = True
        node = RsubBackward1()
        node.alpha = alpha
        node.next_functions = (edge(input),)
        return _make(r._data, r.dtype, r._be, node)
    return sub(other, input, alpha=alpha)


def float_power(input, exponent):
    """``input ** exponent`` computed in float64 (the result is float64)."""
    return pow(input.double() if isinstance(input, Tensor) else input,
               exponent.double() if isinstance(exponent, Tensor) else exponent)


_PW = __name__
from . import creation as _creation  # noqa: E402  (late, module level: an import per call costs ~10k instructions)
# the other pointwise families, built on the binary ops above (whose backward formulas call them): every name is
# public here, as before they had modules of their own (each module is under ~700 lines)
from ._pointwise_where import WhereBackward0, where, ClampBackward1, clamp, ClampBackward0  # noqa: E402, F401
from ._pointwise_where import _clamp_tensor, clip, clamp_min, clamp_max, ClampMinBackward0  # noqa: E402, F401
from ._pointwise_where import ClampMaxBackward0  # noqa: E402, F401
from ._pointwise_unary import _UnaryNode, _make_unary, _UNARY_BOOL_ERRORS, _x, neg, exp, log, sqrt  # noqa: E402, F401
from ._pointwise_unary import rsqrt, abs, _sign, sign, sin, cos, tanh, sigmoid, _relu_bw, relu  # noqa: E402, F401
from ._pointwise_unary import reciprocal, expm1, log1p, _zero_grad, floor, ceil, trunc, _round  # noqa: E402, F401
from ._pointwise_unary import logical_not, isnan, _bitwise_not, negative, fix, _rsub1, round  # noqa: E402, F401
from ._pointwise_unary import bitwise_not, square  # noqa: E402, F401
from ._pointwise_fill import lerp, masked_fill  # noqa: E402, F401  (they are built on the ops above)
from ._pointwise_alpha import add, sub, subtract  # noqa: E402, F401
from . import _pointwise_alpha, _pointwise_fill, _pointwise_unary, _pointwise_where  # noqa: E402

for _o in (WhereBackward0, where, ClampBackward1, clamp, ClampBackward0, _clamp_tensor, clamp_min, clamp_max,
           ClampMinBackward0, ClampMaxBackward0, _UnaryNode, _make_unary, _x, sign, _relu_bw, _zero_grad, _rsub1,
           round, bitwise_not, square, add, sub):
    _o.__module__ = __name__  # public here, as before the split (ops._export flattens each module's own functions)
del _o
for _m in (_pointwise_where, _pointwise_unary, _pointwise_fill, _pointwise_alpha):  # (what they call back: _LATE)
    bind_late(_m, globals())
del _m
