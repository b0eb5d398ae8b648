"""OpCases of the top-level names added for PyTorch parity (coretorch.ops.bits, copies, histogram, misc and
coretorch._aten_nn): gcd/lcm, the bitwise shifts, nextafter, angle, vander, trapezoid, histogram, pdist; part of
coretorch.testing.CASES.  References are numpy, with PyTorch's rules written out where numpy's differ (shift
counts outside [0, bits))."""
from __future__ import annotations

import numpy as np

import coretorch as ct
from coretorch.testing import FLOAT_DTYPES, OpCase
from coretorch.testing import Arg as A

from .names12b import _pdist_ref

F = FLOAT_DTYPES
INTS = ("int64", "int32", "int8", "uint8")


def _shift_ref(left: bool):
    """PyTorch's shifts: a count below 0 or of the width or more gives 0 (left) or the sign fill (right)."""
    def ref(a, b):
        b = np.asarray(b, a.dtype)
        bits = a.dtype.itemsize * 8
        bad = (b < 0) | (b >= bits)
        c = np.where(bad, 0, b).astype(a.dtype)
        if left:
            return np.where(bad, 0, np.left_shift(a, c)).astype(a.dtype)
        fill = np.where(a < 0, -1, 0).astype(a.dtype)
        return np.where(bad, fill, np.right_shift(a, c)).astype(a.dtype)
    return ref


def _angle(a):
    a = a if a.dtype.kind == "f" else a.astype(np.float32)
    return np.where(np.isnan(a), a, np.where(a < 0, np.pi, 0.0)).astype(a.dtype)


def _cumtrapz(y, x=None):
    d = np.diff(x) if x is not None else 1.0
    return np.cumsum((y[..., 1:] + y[..., :-1]) * d / 2, axis=-1).astype(y.dtype)


def _hist(a):
    h, e = np.histogram(a, 5)
    return h.astype(a.dtype), e.astype(a.dtype)


CASES = [
    OpCase("gcd", ct.gcd, np.gcd, (A((3, 4), "sindex:40"), A((3, 4), "sindex:40", layout="t")), INTS[:3],
           grad=False),
    OpCase("gcd.broadcast", lambda x, y: x.gcd(y), np.gcd, (A((3, 1), "index:30"), A((4,), "index:30")), ("uint8",),
           grad=False),
    OpCase("lcm", ct.lcm, np.lcm, (A((3, 4), "sindex:12"), A((3, 4), "sindex:12")), INTS, grad=False),
    OpCase("gcd.float", ct.gcd, None, (A((3,)), A((3,))), F, raises=NotImplementedError),
    OpCase("bitwise_left_shift", ct.bitwise_left_shift, _shift_ref(True),
           (A((3, 5), "sindex:20"), A((3, 5), "sindex:70", layout="s")), INTS, grad=False),
    OpCase("bitwise_right_shift", ct.bitwise_right_shift, _shift_ref(False),
           (A((3, 5), "sindex:100"), A((3, 5), "sindex:70")), INTS, grad=False),
    OpCase("bitwise_left_shift.scalar", lambda x: x << 3, lambda a: _shift_ref(True)(a, 3), (A((4,), "sindex:9"),),
           INTS, grad=False),
    OpCase("bitwise_right_shift.rscalar", lambda x: 100 >> x, lambda a: _shift_ref(False)(np.full_like(a, 100), a),
           (A((4,), "index:7"),), ("int64", "int32"), grad=False),
    OpCase("bitwise_left_shift.float", ct.bitwise_left_shift, None, (A((3,)), A((3,))), F,
           raises=NotImplementedError),
    OpCase("nextafter", ct.nextafter, np.nextafter, (A((3, 4)), A((3, 4), layout="t")), F + ("float16",)),
    OpCase("angle", ct.angle, _angle, (A((3, 4), "nonzero"),), F + ("int64",)),
    OpCase("vander", lambda x: ct.vander(x, 4), lambda a: np.vander(a, 4).astype(a.dtype), (A((5,)),), F,
           gradgrad=True),
    OpCase("vander.increasing", lambda x: ct.vander(x, 3, increasing=True),
           lambda a: np.vander(a, 3, increasing=True).astype(np.int64 if a.dtype.kind != "f" else a.dtype),
           (A((4,)),), ("float64", "int32")),
    OpCase("trapezoid", lambda y, x: ct.trapezoid(y, x), lambda y, x: np.trapezoid(y, x).astype(y.dtype),
           (A((3, 5), layout="t"), A((5,), "distinct"))),
    OpCase("trapezoid.dx", lambda y: ct.trapezoid(y, dx=0.5, dim=0), lambda y: np.trapezoid(y, dx=0.5, axis=0),
           (A((4, 3)),)),
    OpCase("cumulative_trapezoid", lambda y, x: ct.cumulative_trapezoid(y, x), _cumtrapz,
           (A((2, 5)), A((5,), "distinct"))),
    OpCase("histogram", lambda x: tuple(ct.histogram(x, 5)), _hist, (A((4, 6), "distinct"),), grad=False),
    OpCase("histogram.method", lambda x: tuple(x.histogram(ct.tensor([-1.0, 0.0, 0.5, 2.0], dtype=x.dtype,
                                                                           device=x.device))),
           lambda a: tuple(v.astype(a.dtype) for v in np.histogram(a, [-1.0, 0.0, 0.5, 2.0])), (A((3, 5)),),
           grad=False),
    OpCase("pdist.torch", ct.pdist, _pdist_ref(2.0), (A((5, 3), "distinct"),)),
]
