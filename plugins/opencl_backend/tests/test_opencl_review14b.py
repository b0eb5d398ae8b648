"""Review 14b of coretorch.compile's kernel-level machinery on opencl (fused kernels): regressions found."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch

_BE = torch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")


def _rand(*shape, seed=0):
    torch.manual_seed(seed)
    return torch.randn(*shape).to("opencl")


@pytest.mark.parametrize("layout", ["strided", "offset"])
def test_array_updated_in_place_by_a_group_through_a_reshape_gets_another_layout(layout):
    """A persistent tensor updated in place by a fused group that continues through a reshape (the update is read
    at the linear index: ``w.add_(t)`` then ``t.view(4, 5)``), then ``w.data = other[::2]``: the fused call raised
    RuntimeError ("a fused kernel read through a reshape takes contiguous arrays") where eager runs; it computes
    into a contiguous copy and writes that back into w."""
    res = []
    for compiled in (False, True):
        w = _rand(20, seed=50)

        def fn(x):
            t = x * 2
            w.add_(t)
            return t.view(4, 5) + 1
        f = torch.compile(fn) if compiled else fn
        outs = []
        for i in range(8):
            if i == 4:
                w.data = _rand(40, seed=60)[::2] if layout == "strided" else _rand(40, seed=60)[3:23]
            outs.append(f(_rand(20, seed=i)).cpu().numpy().copy())
            outs.append(w.cpu().numpy().copy())
        if compiled:
            assert f.launches < f.launches_before_fusion  # (the group is fused)
        res.append(outs)
    for e, c in zip(*res):
        np.testing.assert_allclose(c, e, rtol=1e-5, atol=1e-6)
