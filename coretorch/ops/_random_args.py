"""PyTorch's argument checks of the samplers (ops/random.py): integer arguments as its parser reads them, the
C++ type names its range errors print, uniform_'s bounds, random_'s float-precision warning and randperm's
dtype limits."""
from __future__ import annotations

import operator
import os
import sys
import warnings
from types import FrameType

import numpy as np

from .. import dtypes as _dt
from ..dtypes import cpp_name
from ..tensor import Tensor

_I64 = 1 << 63

_SCALAR = {"float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double"}
_CTYPE = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t"}


def int_arg(v, op: str, name: str) -> int:
    """An int argument as PyTorch's parser takes it: a Python or numpy integer or a one-element integer tensor
    (a bool, a float or a float tensor is a TypeError), in int64's range (else a ValueError)."""
    if isinstance(v, Tensor):
        if v.dtype.is_floating_point or v.dtype is _dt.bool_ or v.numel() != 1:
            raise TypeError(f"{op}(): argument '{name}' must be int, not Tensor")
        v = int(v.item())
    elif isinstance(v, (bool, np.bool_)) or not hasattr(type(v), "__index__"):
        raise TypeError(f"{op}(): argument '{name}' must be int, not {type(v).__name__}")
    v = operator.index(v)
    if not -_I64 <= v < _I64:
        raise ValueError("Overflow when unpacking long long")
    return v


def check_uniform_bounds(dt, a: float, b: float) -> None:
    """uniform_'s checks (PyTorch's check_uniform_bounds): both bounds finite in the dtype's range, from <= to,
    and to - from representable."""
    fi = float(np.finfo(dt.np).max) if dt is not _dt.bfloat16 else 3.3895313892515355e+38
    for v, name in ((a, "from"), (b, "to")):
        if not -fi <= v <= fi:
            raise RuntimeError(f"{name} is out of bounds for {cpp_name(dt)}")
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={_g(a)} > to={_g(b)}")
    if b - a > fi:
        raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<{_SCALAR[dt.name]}>::max(), but found "
                           f"to={_g(b)} and from={_g(a)} which result in to-from to exceed the limit")


def _g(v: float) -> str:
    """A double as C++'s ostream prints it (6 significant digits)."""
    return f"{v:g}"


def warn_float_range(dt, lo: int, hi_inc: int) -> None:
    """random_/randint into a float dtype: PyTorch's warning for a bound beyond the integers it holds exactly."""
    digits = int(np.finfo(dt.np).nmant) + 1 if dt is not _dt.bfloat16 else 8
    lim = 1 << digits
    for v, name in ((lo, "from"), (hi_inc, "to - 1")):
        if not -lim <= v <= lim:
            warnings.warn(f"{name} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision limitations "
                          f"{cpp_name(dt)} can support discrete uniform distribution only within this range. This "
                          f"warning will become an error in version 1.7 release, please fix the code in advance",
                          UserWarning, stacklevel=_user_level())


_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the coretorch package


def _user_level() -> int:
    """The ``stacklevel`` of the first frame outside coretorch (the user's call), for the caller's warning."""
    f: FrameType | None = sys._getframe(1)
    level = 1
    while f is not None and f.f_code.co_filename.startswith(_ROOT):
        f, level = f.f_back, level + 1
    return level


def check_randperm(n: int, dt) -> None:
    """randperm's dtype checks: no bool, n - 1 representable in an integer dtype, n <= 2**digits + 1 in float16
    and float32 (as PyTorch: bfloat16 and float64 are not checked)."""
    if dt is _dt.bool_:
        raise NotImplementedError("\"randperm\" not implemented for 'Bool'")
    if dt.is_floating_point:
        if dt is _dt.float16 and n > 2049:
            raise RuntimeError("n cannot be greater than 2049 for Half type.")
        if dt is _dt.float32 and n > (1 << 24) + 1:
            raise RuntimeError("n cannot be greater than 2^24+1 for Float type.")
        return
    if n and n - 1 > int(np.iinfo(dt.np).max):
        raise RuntimeError(f"value cannot be converted to type {_CTYPE.get(dt.name, dt.name)} without overflow")


def continuous_only(x: Tensor, law: str, names: str) -> None:
    """exponential_/cauchy_ of an integer tensor: PyTorch's RuntimeError ("... is a continuous probability
    distribution"), naming the dtype as that law's check does (``names``: "scalar" or "cpp")."""
    if x.dtype.is_floating_point:
        return
    dt = x.dtype
    shown = cpp_name(dt) if names == "cpp" else dt._tname[:-6]
    raise RuntimeError(f"{law} distribution is a continuous probability distribution. dtype must be a floating "
                       f"point but you specified {shown}")


__all__ = ["cpp_name", "int_arg", "check_uniform_bounds", "warn_float_range", "check_randperm", "continuous_only"]
