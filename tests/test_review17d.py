"""Review 17d: eager parity with PyTorch 2.13 for items earlier reviews left open: float -> integer casts of
out-of-range values, integer overflow in reductions and scans, storage offsets of detached views, the layout
(strides) of elementwise results.  Each test states what PyTorch gives and what coretorch gave before the fix."""
from __future__ import annotations

import coretorch as torch

_BIG = [2147483653.0, -2147483653.0, 4294967303.0, 1e10 + 3, float("nan"), 300.0, -5.5, 1e19, -1e19, float("inf")]
_BIG_U8 = [5, 251, 7, 3, 0, 44, 251, 0, 0, 0]  # PyTorch 2.13 (x86): through int64, as c10's float -> uint8


def test_float64_to_uint8_goes_through_int64(device):
    """PyTorch casts float64 to uint8 through int64 (2**31 + 5 -> 5, -(2**31 + 5) -> 251); the cpu backend cast
    straight with numpy (through int32 on x86: 0 for every value of 2**31 or more).  The opencl backend agreed
    with PyTorch already.  Every route that casts: ``to``, ``copy_``, slice assignment, ``sum(dtype=)``."""
    x = torch.tensor(_BIG, dtype=torch.float64, device=device)
    assert x.to(torch.uint8).tolist() == _BIG_U8
    assert x.byte().tolist() == _BIG_U8
    assert torch.zeros(10, dtype=torch.uint8, device=device).copy_(x).tolist() == _BIG_U8
    u = torch.zeros(10, dtype=torch.uint8, device=device)
    u[:] = x
    assert u.tolist() == _BIG_U8
    assert x.reshape(2, 5).t().to(torch.uint8).t().reshape(-1).tolist() == _BIG_U8
    assert x[:1].sum(dtype=torch.uint8).item() == 5


def test_float_to_small_int_casts_match_pytorch(device):
    """The other float -> integer pairs of out-of-range values, as PyTorch 2.13 gives them (these agreed already:
    pinned so that a faster cast cannot bring a difference back)."""
    x = torch.tensor(_BIG, dtype=torch.float64, device=device)
    assert x.to(torch.int8).tolist() == [0, 0, 0, 0, 0, 44, -5, 0, 0, 0]
    assert x.to(torch.int16).tolist() == [0, 0, 0, 0, 0, 300, -5, 0, 0, 0]
    m = -2147483648
    assert x.to(torch.int32).tolist() == [m, m, m, m, m, 300, -5, m, m, m]
    L = -9223372036854775808
    assert x.to(torch.int64).tolist() == [2147483653, -2147483653, 4294967303, 10000000003, L, 300, -5, L, L, L]
    f = x.float()
    assert f.to(torch.uint8).tolist() == [0, 0, 0, 0, 0, 44, 251, 0, 0, 0]
    assert f.to(torch.int16).tolist() == [0, 0, 0, 0, 0, 300, -5, 0, 0, 0]


def test_float64_to_uint8_in_a_compiled_replay(device):
    """A compiled replay's planned cast (the cpu backend's ``compile_out`` variant, ``np.copyto``) gave 1, 1, 45
    from the second call where eager gives 6, 252, 45: it cast straight too."""
    x = torch.tensor([2147483653.0, -2147483653.0, 300.0], dtype=torch.float64, device=device)

    def f(x):
        return (x * 1).to(torch.uint8) + 1
    cf = torch.compile(f)
    for _ in range(3):
        assert cf(x).tolist() == [6, 252, 45]
