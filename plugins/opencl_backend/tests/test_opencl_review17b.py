"""Review 17b (dtypes, Python scalars and type promotion in compiled code): the opencl-only regressions found."""
from __future__ import annotations

import warnings

import pytest

import coretorch as torch

_BE = torch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")


def _huge(x):
    return (x * 1) * 1e300 + 1, torch.where(x > 1, x * 1, 1e300) * 1


@pytest.mark.parametrize("dt", [torch.float32, torch.float16, torch.bfloat16])
def test_a_scalar_out_of_the_dtypes_range_in_a_lowered_replay_warns_nothing(dt):
    """``x * 1e300`` of a float32 (half, bfloat16) ``x`` is inf, silently, eagerly and in PyTorch.  The lowered
    replay converted the scalar argument with numpy (``np.float32(1e300)``) when it built its kernel objects:
    "RuntimeWarning: overflow encountered in cast" at the second replay (an error under ``-W error``)."""
    x = torch.tensor([1.0, -2.0, 3.0], device="opencl").to(dt)
    f = torch.compile(_huge)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(4):
            for e, c in zip(_huge(x), f(x)):
                assert e.dtype == c.dtype and e.float().tolist() == c.float().tolist()
    assert f.replays == 3
