"""OpenCL kernels of the triangular, joining and scatter/index ops primitives (see coretorch.plugins.KERNELS).

Views (as_strided) are (buffer, offset, strides) triples, no launch.  ``index_reduce_`` is the 'put' kernel of
indexing.py with a reduction in place of the write: one work-item per value, combined into its target with an
atomic compare-and-swap loop (4- and 8-byte dtypes; 8-byte ones need 64-bit atomics), or in order by one work-item
for the other dtypes.  max/min are exact in any order; prod's rounding may depend on it (as on CUDA)."""
from __future__ import annotations

import numpy as np

from . import codegen as cg
from .indexing import _atomic_mode, run_put
from .layout import _desc, _is_c

_COMBINE = {  # a: the value held, b: the one combined into it (NaN propagates as in PyTorch's max/min)
    "sum": ("a + b", "a + b"),
    "prod": ("a * b", "a * b"),
    "amax": ("((a != a) || a > b) ? a : b", "(a > b) ? a : b"),
    "amin": ("((a != a) || a < b) ? a : b", "(a < b) ? a : b"),
}
_BITS = {4: ("uint", "atomic_cmpxchg"), 8: ("ulong", "atom_cmpxchg")}


def _reduce_put(kern, x, rshape, off, plain, idxs, value, op: str) -> None:
    mode = _atomic_mode(kern, np.dtype(x.dtype), exact=op in ("amax", "amin"))

    def write(dt, ct):
        comb = _COMBINE[op][0 if cg.is_float(dt) else 1]  # (bfloat16: numpy kind "V", NaN-propagating too)
        if mode == "seq":
            return "", f"{{ {ct} a = {cg.load(dt, 'x', 'src')}; {ct} b = val; {cg.store(dt, 'x', 'src', comb)} }}"
        u, cas = _BITS[dt.itemsize]
        head = (f"inline void ct_combine(volatile __global {ct}* p, {ct} b) {{\n"
                f"  union {{ {u} u; {ct} f; }} o, w;\n"
                f"  do {{ o.f = *p; {ct} a = o.f; w.f = {comb}; }} "
                f"while ({cas}((volatile __global {u}*)p, o.u, w.u) != o.u);\n}}\n")
        return head, "ct_combine(x + src, val);"
    run_put(kern, "index_reduce", ("index_reduce", op), x, rshape, off, plain, idxs, value, mode, write)


def _tri(kern, x, diag: int, lower: bool):
    """tril/triu in one pass: the element (.., i, j) kept where j - i <= diag (lower) or >= diag (upper)."""
    dt = np.dtype(x.dtype)
    _, _, shape, st = _desc(x)
    if not _is_c(shape, st):
        x = kern.contiguous(x)
    out = kern._out(shape, dt)
    n = out.size
    if n == 0:
        return out
    rows, cols = shape[-2], shape[-1]
    cmp = "<=" if lower else ">="
    it = "uint" if n < 2 ** 31 else "ulong"  # 32-bit division where it fits: twice as fast on CPUs

    def src():
        return (f"__kernel void tri(__global {cg.stype(dt)}* o, __global const {cg.stype(dt)}* x, long xo, long n, "
                f"long rows, long cols, long d) {{\n long g = get_global_id(0); if (g >= n) return;\n"
                f" long c = ({it})g % ({it})cols, r = (({it})g / ({it})cols) % ({it})rows;\n"
                f" {cg.ctype(dt)} v = (c - r {cmp} d) ? {cg.load(dt, 'x', 'xo + g')} : ({cg.ctype(dt)})0;\n"
                f" {cg.store(dt, 'o', 'g', 'v')}\n}}\n")
    kk = kern.dev.kernel(("tri", dt.str, lower, it), "tri", src)
    kern.dev.launch(kk, n, [out.base_data, x.base_data, _desc(x)[1], n, rows, cols, int(diag)])
    return out


def kernels(k) -> dict:
    """The primitives of this family for one device; ``k`` is the device's kernel set (backend._Kernels)."""

    def as_strided(x, shape, strides, offset):
        first = _desc(x)[1] + int(offset)
        if 0 not in tuple(shape):  # memory safety: the view stays inside x's buffer (the core checks more)
            lo = first + sum((s - 1) * t for s, t in zip(shape, strides) if t < 0)
            hi = first + 1 + sum((s - 1) * t for s, t in zip(shape, strides) if t > 0)
            if lo < 0 or hi * x.dtype.itemsize > x.base_data.size:
                raise RuntimeError("as_strided: the view would reach outside the tensor's storage")
        return k._view_of(x, tuple(shape), tuple(strides), first)

    def storage_offset(x):
        return _desc(x)[1]

    def view_dtype(x, dt):
        """x's memory read as dt: its byte offset and strides, the last dim rescaled (the core checked it)."""
        dt = k._check_dtype(dt)
        isz, nsz = x.dtype.itemsize, dt.itemsize
        shape, strides = tuple(x.shape), tuple(x.strides)
        if shape and isz != nsz:
            shape, strides = shape[:-1] + (shape[-1] * isz // nsz,), strides[:-1] + (nsz,)
        return k.dev.array(shape, dt, data=x.base_data, offset=x.offset, strides=strides)

    def index_reduce_(x, key, values, op):
        k._check_writable(x)
        _reduce_put(k, x, *k._index_plan(x, key), values, op)

    def tri(x, diag, lower):
        return _tri(k, x, diag, lower)

    def same_storage(x, y):
        bx, by = x.base_data, y.base_data
        return bx is not None and by is not None and (bx is by or bx.int_ptr == by.int_ptr)

    def data_ptr(x):  # no device addresses through OpenCL 1.2: the buffer's handle plus the byte offset
        b = x.base_data
        return (b.int_ptr if b is not None else id(x)) + _desc(x)[1] * x.dtype.itemsize

    return {"as_strided": as_strided, "storage_offset": storage_offset, "view_dtype": view_dtype,
            "same_storage": same_storage,
            "data_ptr": data_ptr,
            "index_reduce_": index_reduce_, "tri": tri}
