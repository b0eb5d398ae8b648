"""Review 18c of coretorch.compile: fusion and lowering against eager (dtypes, layouts, aliasing), the tests that
make sense on every device.  Each test states what eager gives and what a compiled replay gave before the fix."""
from __future__ import annotations

import pytest

import coretorch as torch


def _outcome(fn, *args):
    try:
        r = fn(*args)
    except RuntimeError as e:
        return ("raised", type(e))
    return (r.stride(), r.cpu().numpy().tobytes())


@pytest.mark.parametrize("case", ["plain", "view", "fused_first", "sum"])
def test_a_persistent_tensors_changed_layout_gives_eagers_result_layout(device, case):
    """A closure tensor's data replaced by a transposed view after the capture (``w.data = other.t()``): eager's
    elementwise results follow their operands' layouts (``w * 2 + x`` is transposed, so ``.view(24)`` raises).  On
    opencl the replay kept running the capture's kernels: planned temporaries and fused kernels are row-major, so
    ``w * 2 + x`` came back row-major (strides (6, 1) for eager's (1, 4)) and ``.view(24)`` returned a tensor where
    eager raises.  The replay now checks the layouts of the persistent arrays such launches read (as on cpu) and
    captures again where one changed."""
    w = torch.arange(24., device=device).reshape(4, 6)

    def step(x):
        if case == "plain":
            return w * 2 + x
        if case == "view":
            return (w * 2 + x).view(24)
        if case == "fused_first":
            return ((w + 1) * 2 + x).relu()
        return (w * 2 + x).exp().sum(0)
    compiled = torch.compile(step)
    x = torch.ones(4, 6, device=device)
    for i in range(4):
        if i == 2:
            w.data = torch.arange(24., device=device).reshape(6, 4).t() * 1.5
        assert _outcome(compiled, x) == _outcome(step, x), i
