"""The ``compile_out`` hook of the opencl kernel table: out variants of its unary, binary, cast, where and matmul
kernels for coretorch.compile's planned temporaries (coretorch/_compile/plan.py).

An out variant ``fn(out, *args)`` launches the kernel's own elementwise or matmul kernel with ``out`` as the result
instead of a freshly allocated array (the same program, the same arguments: the same bits), holding the device lock
as every table entry does.  It is offered where the kernel's eager path allocates nothing else first: operands of
the result's dtype (no cast of an operand), a contiguous result.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .common import _BINARY, _UNARY
from .device import cla
from .matmul import matmul as _matmul


def kernels(k) -> dict:
    """``{"compile_out": hook}`` for the kernel mixin ``k`` of one device."""
    lock, dev = k.dev.lock, k.dev

    def unary(op):
        name = f"u_{op}"

        def fn(out, x):
            with lock:
                return k._ew(x.dtype, name, out, [x])
        return fn

    def binary(op):
        def fn(out, x, y):
            with lock:
                if x.shape != out.shape:
                    x = k.expand(x, out.shape)
                return k._binary_into(op, out, x, y)
        return fn

    def cast(out, x, dt):
        with lock:
            return k._copy_into(out, x)

    def where(out, c, x, y):
        with lock:
            return k.where(c, x, y, out)

    def matmul(out, a, b):
        with lock:
            return _matmul(k, a, b, out=out)

    variants: dict[str, Any] = {op: unary(op) for op in _UNARY}
    variants.update({op: binary(op) for op in _BINARY})

    def compile_out(name: str, args: tuple, kwargs: dict, result: Any):
        """The out variant of launch ``name(*args)`` whose result was ``result``, or None."""
        if kwargs or not isinstance(result, cla.Array) or not result.flags.c_contiguous or result.offset:
            return None
        arrays = [a for a in args if isinstance(a, cla.Array)]
        if name in _UNARY or name in _BINARY:
            if not arrays or args[0] is not arrays[0] or len(args) != (1 if name in _UNARY else 2):
                return None
            if any(a.dtype != arrays[0].dtype for a in arrays):
                return None  # (an operand cast first: another array allocated before the result)
            return variants[name]
        if name == "cast":
            return cast if len(args) == 2 and arrays and args[0] is arrays[0] else None
        if name == "where":
            c, x, y = args
            if not isinstance(c, cla.Array) or any(isinstance(v, cla.Array) and v.dtype != result.dtype
                                                   for v in (x, y)) or not (isinstance(x, cla.Array) or
                                                                            isinstance(y, cla.Array)):
                return None
            return where
        if name == "matmul":
            return matmul if len(arrays) == 2 and arrays[0].dtype == arrays[1].dtype == result.dtype else None
        return None

    def empty_like(x):
        return dev.array(tuple(x.shape), np.dtype(x.dtype))

    compile_out.empty_like = empty_like  # type: ignore[attr-defined]
    # (eager's elementwise results follow their operands' layouts, ``_out_like``: the replay checks the persistent
    # arrays' layouts, coretorch/_compile/layouts.py)
    compile_out.follows_operands = True  # type: ignore[attr-defined]
    return {"compile_out": compile_out}
