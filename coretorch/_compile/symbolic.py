"""Symbolic Python numbers: the hyper-parameters (``lr``, betas, ...) and step counts of an optimizer step recorded
for replay (:mod:`.optim`).

A :class:`Sym` is a ``float`` with a name in the replay's source.  During the recording of an optimizer step the
group's float hyper-parameters are replaced by Syms and ``Tensor.item()`` returns one; arithmetic on Syms gives new
Syms whose source line (``s3 = (1 - s1)``) is emitted into the replay, so the replay recomputes every number the
step derives from them with the same Python float operations, in the same order (bitwise the same values as
eager), and a scheduler changing ``lr`` needs no recapture.  A comparison or truth test of a Sym is a branch of the
step: it becomes a check of the replay (another outcome runs the step eagerly).  Kernels get plain floats.

What escapes: a Sym turned into a plain number by C code (``math.exp(lr)``, ``np.float32(lr)``) is a constant of
the recording; the recorder refuses any float constant in an optimizer step's kernels, so such a step stays an
eager segment instead of replaying a stale number.
"""
from __future__ import annotations

import itertools
import math
import os
import operator
import sys
from typing import Any, Callable, cast

import numpy as np

TOKENS = itertools.count(1)  # the Recorders' sym_token
_active: list = [None]  # the recorder of the optimizer step being recorded (None: Syms are plain floats)

_NUMBERS = (int, float)
_NP = (np.generic, np.ndarray)  # numpy's numbers and arrays: their arithmetic with a Sym is numpy's with its number
_PYOPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "//": operator.floordiv,
          "%": operator.mod, "**": operator.pow, "==": operator.eq, "!=": operator.ne, "<": operator.lt,
          "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ours(x: Any, rec: Any) -> bool:
    """Whether ``x`` is a Sym of the recording ``rec`` (one of another capture, left in the user's state by the eager
    side effects of its capture call, ``history.append(lam)``, is a plain number here: its name means another
    replay's argument)."""
    return isinstance(x, Sym) and x.owner == rec.sym_token


def _src(x: Any, rec: Any) -> str:
    if isinstance(x, Sym):
        if ours(x, rec):
            return x.name
        x = _num(x)
    if type(x) is float and math.isfinite(x) or type(x) in (int, bool):
        return repr(x)
    return rec.const(x)


def _binary(op: str, fop: Callable, reverse: bool) -> Callable:
    pyop = _PYOPS[op]

    def method(self: "Sym", other: Any):
        if not isinstance(other, _NUMBERS):
            if not isinstance(other, _NP):
                return NotImplemented
            # a numpy scalar or array (``t * np.float32(0.5)``): numpy's arithmetic with the plain number, as eager's
            # (numpy takes a float subclass as a float64, not as a Python float); no longer recorded
            self._escape(f"arithmetic with a numpy {type(other).__name__}")
            return pyop(other, _num(self)) if reverse else pyop(_num(self), other)
        value = fop(self, other)
        rec = _active[0]
        if value is NotImplemented or rec is None or not (ours(self, rec) or ours(other, rec)):
            return value
        if type(value) is not float:  # (a negative number to a fractional power: complex, no Sym)
            rec.sym_escape(f"{op} gave {type(value).__name__}")
            return value
        a, b = _src(self, rec), _src(other, rec)
        src = f"({b} {op} {a})" if reverse else f"({a} {op} {b})"
        out = rec.sym(float(value), src, self.dep or getattr(other, "dep", False))
        if op == "**" and not out.dep:  # (a replay's negative base to a fractional power: complex, eager's call)
            rec.pro.append(f"if {out.name}.__class__ is not float: raise MISMATCH(False)")
        return out
    return method


def _compare(op: str, fop: Callable) -> Callable:
    pyop = _PYOPS[op]

    def method(self: "Sym", other: Any):
        if isinstance(other, _NP):  # (numpy's comparison with the plain number, as _binary's)
            self._escape(f"a comparison with a numpy {type(other).__name__}")
            return pyop(_num(self), other)
        value = fop(self, other)
        rec = _active[0]
        if value is NotImplemented or rec is None or not isinstance(other, _NUMBERS) or \
                not (ours(self, rec) or ours(other, rec)):
            return value
        rec.sym_check(f"({_src(self, rec)} {op} {_src(other, rec)})", value,
                      self.dep or getattr(other, "dep", False))
        return value
    return method


class Sym(float):
    """A float of a recorded optimizer step with its name in the replay source (see the module docstring)."""

    __slots__ = ("name", "dep", "owner")
    name: str
    dep: bool  # computed from a value read during the step (a step count): its line stays in place
    owner: int  # the sym_token of the Recorder recording it (see ours)

    def __new__(cls, value: float, name: str, dep: bool = False, owner: int = 0) -> "Sym":
        s = float.__new__(cls, value)
        s.name, s.dep, s.owner = name, dep, owner
        return s

    __add__ = _binary("+", float.__add__, False)
    __radd__ = _binary("+", float.__radd__, True)
    __sub__ = _binary("-", float.__sub__, False)
    __rsub__ = _binary("-", float.__rsub__, True)
    __mul__ = _binary("*", float.__mul__, False)
    __rmul__ = _binary("*", float.__rmul__, True)
    __truediv__ = _binary("/", float.__truediv__, False)
    __rtruediv__ = _binary("/", float.__rtruediv__, True)
    __floordiv__ = _binary("//", float.__floordiv__, False)
    __rfloordiv__ = _binary("//", float.__rfloordiv__, True)
    __mod__ = _binary("%", float.__mod__, False)
    __rmod__ = _binary("%", float.__rmod__, True)
    __eq__ = _compare("==", float.__eq__)
    __ne__ = _compare("!=", float.__ne__)
    __lt__ = _compare("<", float.__lt__)
    __le__ = _compare("<=", float.__le__)
    __gt__ = _compare(">", float.__gt__)
    __ge__ = _compare(">=", float.__ge__)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """numpy's functions and its scalars' and arrays' arithmetic with a Sym (``np.float32(0.5) * t``,
        ``np.add(a, t)``): computed with the plain numbers, as eager's (numpy takes a float subclass as a float64,
        not as a Python float), and no longer recorded."""
        self._escape(f"numpy's {getattr(ufunc, '__name__', ufunc)}")
        return getattr(ufunc, method)(*map(plain, inputs), **{k: plain(v) for k, v in kwargs.items()})

    def __hash__(self) -> int:  # (a dict or set lookup by the number: ``table.get(t)``, ``t in {1.0, 2.0}``)
        self._dyn_read("hash()")
        return float.__hash__(self)

    def __format__(self, spec: str) -> str:
        self._dyn_read("format()")
        return float.__format__(self, spec)

    def __repr__(self) -> str:
        self._dyn_read("repr()")
        return float.__repr__(self)

    def __str__(self) -> str:
        self._dyn_read("str()")
        return float.__repr__(self)

    def __divmod__(self, other: Any):  # (float's own: the quotient and remainder of // and %, bitwise)
        if isinstance(other, _NP):  # (numpy's, with the plain number, as _binary's)
            self._escape(f"divmod with a numpy {type(other).__name__}")
            return divmod(_num(self), cast(Any, other))
        if not isinstance(other, _NUMBERS) or float.__divmod__(self, other) is NotImplemented:  # (its errors)
            return NotImplemented
        return self // other, self % other

    def __rdivmod__(self, other: Any):
        if isinstance(other, _NP):
            self._escape(f"divmod with a numpy {type(other).__name__}")
            return divmod(cast(Any, other), _num(self))
        if not isinstance(other, _NUMBERS) or float.__rdivmod__(self, other) is NotImplemented:
            return NotImplemented
        return other // self, other % self

    @property
    def real(self) -> "Sym":
        return self

    def _dyn_read(self, how: str) -> None:
        """A whole step's float argument read by ``how`` in the user's code: its uses are no longer recorded
        (dynfloat.py; coretorch's own code hashing or printing a number takes nothing from it)."""
        rec = _active[0]
        if rec is not None and getattr(rec, "dyn", False) and ours(self, rec) and \
                not sys._getframe(2).f_code.co_filename.startswith(_PKG):
            rec.sym_escape(how)

    def __pow__(self, other: Any, mod: Any = None):
        if mod is not None:
            return NotImplemented
        return _POW(self, other)

    def __rpow__(self, other: Any, mod: Any = None):
        if mod is not None:
            return NotImplemented
        return _RPOW(self, other)

    def _unary(self, fmt: str, value: float) -> Any:
        rec = _active[0]
        return value if rec is None or not ours(self, rec) else rec.sym(value, fmt.format(self.name), self.dep)

    def __neg__(self):
        return self._unary("(-{})", -_num(self))

    def __pos__(self):
        return self

    def __abs__(self):
        return self._unary("abs({})", abs(_num(self)))

    def __bool__(self) -> bool:
        value = _num(self) != 0.0
        rec = _active[0]
        if rec is not None and ours(self, rec):
            rec.sym_check(f"bool({self.name})", value, self.dep)
        return value

    def _escape(self, how: str) -> None:
        rec = _active[0]
        if rec is not None and ours(self, rec):
            rec.sym_escape(how)

    def __float__(self) -> float:
        # a whole step's float argument made a plain number (``float(lam)``): its uses are no longer recorded
        # (dynfloat.py); an optimizer step's recording compares its kernels' floats instead (see Recorder.encode)
        rec = _active[0]
        if rec is not None and getattr(rec, "dyn", False) and ours(self, rec):
            rec.sym_escape("float()")
        return _num(self)

    def __int__(self) -> int:
        self._escape("int()")
        return int(_num(self))

    def __round__(self, n: Any = None):
        self._escape("round()")
        return round(_num(self), n)

    def __trunc__(self) -> int:
        self._escape("math.trunc()")
        return math.trunc(_num(self))

    def __floor__(self) -> int:
        self._escape("math.floor()")
        return math.floor(_num(self))

    def __ceil__(self) -> int:
        self._escape("math.ceil()")
        return math.ceil(_num(self))

    def item(self) -> Any:
        """The op layer turns number-like objects into numbers with ``.item()``: symbolic in the recording that made
        it; elsewhere the plain number (numpy takes a float subclass as a float64 operand, not as a Python float:
        ``float32 * Sym`` would round once in float64, where eager's ``float32 * float`` computes in float32; a Sym
        left in an autograd node or in user state by a capture that ran eagerly)."""
        rec = _active[0]
        return self if rec is not None and self.owner == rec.sym_token else _num(self)

    def sqrt(self) -> Any:
        """``math.sqrt`` of the number (what :func:`coretorch.optim.optimizer._dispatch_sqrt` calls)."""
        return self._unary("SQRT({})", math.sqrt(_num(self)))

    def __reduce__(self):  # a Sym stored by a step and pickled later is its number
        self._dyn_read("pickle or copy")  # (in its capture: ``pickle.loads(pickle.dumps(t))`` is a plain number)
        return (float, (_num(self),))


_num = float.__float__  # a Sym's number, recording nothing

_POW = _binary("**", float.__pow__, False)
_RPOW = _binary("**", float.__rpow__, True)


def plain(x: Any) -> Any:
    """``x`` with Syms (also inside a tuple or list) as plain floats: what kernels get."""
    if isinstance(x, Sym):
        return float.__float__(x)
    if isinstance(x, (tuple, list)) and any(isinstance(o, Sym) for o in x):
        return type(x)(plain(o) for o in x) if type(x) in (tuple, list) else x
    return x


def has_sym(x: Any) -> bool:
    return isinstance(x, Sym) or isinstance(x, (tuple, list)) and any(isinstance(o, Sym) for o in x)
