"""Helpers shared by the kernel families of the opencl device (layout arguments, dtype validity, the
lock around table entries, scalar dtypes): its own module so that backend.py and its kernel mixins import
them without a cycle."""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from . import codegen as cg
from .device import Device, cla
from .layout import _desc, _is_c

_Array = cla.Array if cla is not None else None


class KernelMixin:
    """What the kernel-family mixins (elementwise.py, reductions.py) use of the table they are mixed into
    (backend._Kernels): declared here so a type checker sees it; nothing at run time."""

    dev: Device
    _ck: dict  # (program dtype, kernel name) -> the contiguous elementwise kernel

    if TYPE_CHECKING:  # defined by backend._Kernels and ElementwiseKernels
        def _out(self, shape, dt): ...

        def expand(self, x, shape): ...

        def _check_writable(self, x) -> None: ...
_BOOL = np.dtype(np.bool_)
_I64 = np.dtype(np.int64)
_UNARY = ("neg", "exp", "log", "sqrt", "rsqrt", "abs", "sign", "sin", "cos", "tanh", "sigmoid", "relu",
          "reciprocal", "floor", "ceil", "round", "trunc", "expm1", "log1p", "logical_not", "bitwise_not", "isnan",
          # special (the cheap ones: builtins; the costly special functions are kernels of special.py)
          "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log2", "log10", "exp2", "erfc",
          "lgamma", "sinc", "ndtr", "entr", "signbit")
_BINARY = ("add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "maximum", "minimum", "eq", "ne", "lt",
           "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
           "atan2", "hypot", "copysign", "logaddexp", "logaddexp2", "xlogy", "xlog1py", "fmax", "fmin",  # special
           "gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift")  # integer only (codegen.integer_binary)
_NOT_WRITABLE = ("unsupported operation: more than one element of the written-to tensor refers to a single memory "
                 "location. Please clone() the tensor before performing the operation.")


# ---------------------------------------------------------------------------------------------
# layout helpers (element units)
# ---------------------------------------------------------------------------------------------
def _transpose8_src(t: str, isz: int, two: bool = False) -> str:
    """8x8 register blocks of a (batched) transpose; ``two``: two batch dims of their own strides (attention's
    (B, H) views: k.T of a head split), the flat batch index split by one division per block."""
    lanes = "s01234567"[1:]
    loads = "\n".join(f"  const v8 r{r} = *(const __global v8*)(x + xb + (long)(j0 + {r}) * sj);" for r in range(8))
    stores = "\n".join(f"  *(__global v8*)(o + ob + (long)(i0 + {a}) * B) = (v8)(" +
                        ", ".join(f"r{r}.s{lanes[a]}" for r in range(8)) + ");" for a in range(8))
    return f"""typedef {t} __attribute__((ext_vector_type(8), aligned({isz}))) v8;
__kernel void transpose8(__global {t}* restrict o, long zo, __global const {t}* restrict x, long xo, long zx, long sj,
                         int A, int B{", int nz1, long zx1" if two else ""}) {{
  const int i0 = get_global_id(0) * 8, j0 = get_global_id(1) * 8, z = get_global_id(2);
  const long xb = xo + {"(z / nz1) * zx + (z % nz1) * zx1" if two else "z * zx"} + i0, ob = z * zo + j0;
  if (i0 + 8 > A || j0 + 8 > B) {{   // an edge block: element by element
    for (int a = 0; a < 8 && i0 + a < A; ++a)
      for (int b = 0; b < 8 && j0 + b < B; ++b) o[ob + (long)(i0 + a) * B + b] = x[xb + a + (long)(j0 + b) * sj];
    return;
  }}
{loads}
{stores}
}}
"""


_TRANSPOSE_MIN = 4096  # elements: below this the one-launch elementwise copy is as fast
_EW2_MIN = 1024        # elements: a strided elementwise op this large with <= 2 collapsed dims runs the "_2" kernel
_BITS = {1: "uchar", 2: "ushort", 4: "uint", 8: "ulong"}


def _strided_args(args: list, operands, descs, sts) -> list:
    """``args`` (the output's) followed by each operand's: a scalar as it is, an array as (buffer, element offset,
    its collapsed strides ``sts[j]``; ``sts[0]`` is the output's)."""
    j = 1
    for o, d in zip(operands, descs):
        if d is None:
            args.append(o)
        else:
            args += [d[0], d[1], *sts[j]]
            j += 1
    return args


def _contiguous_args(out, operands):
    """(buffer, element offset) of ``out`` and each array operand (scalars as they are) when all are C-contiguous,
    else None.  An array contiguous by construction (``Device.array`` tags it) skips the stride analysis: on a
    small tensor that analysis was a third of an elementwise op's Python time."""
    args = []
    for o in (out, *operands):
        if o.__class__ is not _Array:
            args.append(o)
            continue
        if not o.__dict__.get("_ct_c"):
            _, _, shape, st = _desc(o)
            if not _is_c(shape, st):
                return None
        args += [o.base_data, o.offset // o.dtype.itemsize]
    return args


def _dense_args(out, operands):
    """``_contiguous_args`` for ``out`` a permutation of a fresh array (``_ct_p``, dense) whose array operands all
    have its shape and strides: element i of each buffer from its offset is the same element of all (a transposed
    op runs as a flat one), else None."""
    isz = out.dtype.itemsize
    args = [out.base_data, out.offset // isz]
    shape, strides = out.shape, tuple(s // isz for s in out.strides)
    for o in operands:
        if o.__class__ is not _Array:
            args.append(o)
            continue
        i = o.dtype.itemsize
        if o.shape != shape or tuple(s // i for s in o.strides) != strides:
            return None
        args += [o.base_data, o.offset // i]
    return args


_VALID: dict = {}


def _valid(kind: str, op: str, dt) -> bool:
    """Whether an elementwise op exists for a dtype (cached: the expressions are strings)."""
    key = (kind, op, dt)
    v = _VALID.get(key)
    if v is None:
        v = _VALID[key] = (cg.unary_expr(op, dt) if kind == "u" else cg.binary_expr(op, dt)) is not None
    return v


def _locked(fn, lock):
    """``fn`` run holding ``lock`` (a kernel-table entry: set-args + enqueue, caches and the pool stay whole)."""
    if not callable(fn):
        return fn

    @functools.wraps(fn)
    def kernel(*args, **kwargs):
        with lock:
            return fn(*args, **kwargs)
    return kernel


def _scalar_dtype(v):
    return _BOOL if isinstance(v, (bool, np.bool_)) else _I64 if isinstance(v, (int, np.integer)) \
        else np.dtype(np.float64)
