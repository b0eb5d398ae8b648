"""Review 16c of coretorch.compile on opencl: the semantics of fused and lowered kernels (fusion, lowering, planned
temporaries) against eager opencl: regressions found."""
from __future__ import annotations

import pytest

import coretorch as torch

_BE = torch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")

_EDGES = [float("nan"), float("inf"), -float("inf"), 1e10, -1e10, 65541.0, -40000.0, 300.0, 2147483653.0, -3.7]


@pytest.mark.parametrize("src", [torch.float32, torch.float64])
@pytest.mark.parametrize("dst", [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64])
def test_float_to_integer_cast_at_the_end_of_a_fused_chain(src, dst):
    """A fused chain ending in a cast of NaN, inf or an out-of-range float to an integer dtype
    (``(x.abs().sqrt() * x.abs().sqrt() * x.sign()).to(int16)``): eager opencl gave float64 -> int16 saturated
    values (-32768 for NaN, 32767 for 65541.0), the compiled step's fused kernel 0 and 5 (a plain C cast of such a
    value is undefined: PoCL compiled it differently in each kernel).  Both now convert as PyTorch's casts (through
    int32, INT_MIN where NaN or out of range; uint8 and int64 through int64)."""
    def f(x):
        r = x.abs().sqrt()
        return (r * r * x.sign()).to(dst) * 1

    cf = torch.compile(f)
    x = torch.tensor(_EDGES, dtype=src, device="opencl")
    want = f(x).tolist()
    for _ in range(3):
        assert cf(x).tolist() == want


def test_eager_float64_to_int16_wraps_as_pytorch():
    """Eager opencl's float64 -> int16 cast saturated (65541.0 -> 32767, NaN -> -32768) where PyTorch (and float32
    -> int16 on opencl) goes through int32 and wraps: 65541.0 -> 5, NaN -> 0; float64 -> uint8 goes through int64
    (2147483653.0 -> 5)."""
    x = torch.tensor([65541.0, -40000.0, float("nan"), 1e10, 2147483653.0], dtype=torch.float64, device="opencl")
    assert x.to(torch.int16).tolist() == [5, 25536, 0, 0, 0]
    assert x.to(torch.uint8).tolist() == [5, 192, 0, 0, 5]


@pytest.mark.parametrize("dt, top", [(torch.int32, 2**31 - 1), (torch.int64, 2**63 - 1)])
@pytest.mark.parametrize("case", ["add", "sub", "axpy", "neg"])
def test_integer_overflow_wraps_inside_a_fused_chain(dt, top, case):
    """``(x + 1) > x`` of int32/int64 at INT_MAX: eager's add kernel wraps (INT_MIN: False, as PyTorch), the compiled
    step's fused kernel said True (a signed overflow is undefined in C: the compiler folded the comparison).  Integer
    add/sub/mul/neg and axpy are now computed unsigned (wrapping) in every kernel."""
    fns = {"add": lambda x: (x + 1) > x, "sub": lambda x: (x - 1) < x,
           "axpy": lambda x: torch.add(x, x, alpha=2) * 1 == x * 3, "neg": lambda x: (-x) < 0}
    f = fns[case]
    x = torch.tensor([top, -top - 1, 0, 5, -5], dtype=dt, device="opencl")
    cf = torch.compile(f)
    want = f(x).tolist()
    for _ in range(3):
        assert cf(x).tolist() == want
    ref = {"add": [False, True, True, True, True], "sub": [True, False, True, True, True],
           "axpy": [True] * 5, "neg": [True, True, False, True, False]}[case]
    assert want == ref


@pytest.mark.parametrize("dt, low", [(torch.int32, -2**31), (torch.int64, -2**63)])
def test_abs_of_the_minimum_integer_inside_a_fused_chain(dt, low):
    """``y.abs() > x`` with ``y`` = INT_MIN (int32 vs an int64 ``x``): eager's abs kernel gives INT_MIN (as PyTorch),
    so ``abs(INT_MIN) > -1`` is False; the compiled step's fused kernel said True (the compiler took the builtin abs
    for non-negative and widened it as such).  Integer abs is now computed unsigned."""
    def f(y, x):
        return y.abs() > x, y.abs() >= 0

    y = torch.tensor([low, 3, -3, 0], dtype=dt, device="opencl")
    x = torch.tensor([-1, 1, 2, 0], device="opencl")
    cf = torch.compile(f)
    want = [t.tolist() for t in f(y, x)]
    assert want == [[False, True, True, False], [False, True, True, True]]
    for _ in range(3):
        assert [t.tolist() for t in cf(y, x)] == want
