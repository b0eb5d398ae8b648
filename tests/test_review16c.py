"""Review 16c of coretorch.compile: the semantics of fused and lowered kernels (fusion, lowering, planned
temporaries) against eager; regressions found on every backend (the opencl-only ones are in
plugins/opencl_backend/tests/test_opencl_review16c.py)."""
from __future__ import annotations

import pytest

import coretorch as torch


def test_arguments_on_one_memory_that_overlap_differently(device):
    """``f(x, y)`` doing ``x.add_(y, alpha=2)``, captured with ``x, y = b[:6], b[6:]`` (one memory, apart), then
    called with ``b[:6], b[2:8]``: eager raises ("some elements of the input tensor and the written-to tensor refer
    to a single memory location"), the replay computed silently (the guard keyed that the arguments share memory,
    not where in it they lie).  Their offsets relative to the first are keyed now: the partial overlap captures
    again (and raises as eager); a window sliding over one buffer keeps its replay."""
    def f(x, y):
        x.add_(y, alpha=2)
        return x * 2

    cf = torch.compile(f)
    for i in range(3):  # a window sliding over one buffer: one capture
        b = torch.arange(20, dtype=torch.float32, device=device)
        want = b.clone()
        want[i:i + 6] += 2 * want[i + 6:i + 12]
        assert cf(b[i:i + 6], b[i + 6:i + 12]).tolist() == (want[i:i + 6] * 2).tolist()
        assert b.tolist() == want.tolist()
    assert cf.replays == 2
    b = torch.arange(12, dtype=torch.float32, device=device)
    with pytest.raises(RuntimeError, match="single memory location"):
        f(b[:6], b[2:8])
    with pytest.raises(RuntimeError, match="single memory location"):
        cf(b[:6], b[2:8])
    assert b.tolist() == list(range(12))


def test_argument_overlapping_a_persistent_tensor_it_updates_differently(device):
    """A global ``W = B[:6]`` updated with an argument ``W.add_(x, alpha=2)``, captured with ``x = B[6:12]`` (one
    memory, apart), then called with ``x = B[2:8]``: eager raises the partial-overlap error, the replay computed
    silently (loads on one memory were not checked for where they lie).  The replay now checks their distance and
    captures again (raising as eager)."""
    B = torch.arange(20, dtype=torch.float32, device=device)
    W = B[:6]

    def f(x):
        W.add_(x, alpha=2)
        return W * 2

    cf = torch.compile(f)
    for _ in range(2):
        B.copy_(torch.arange(20, dtype=torch.float32))
        assert cf(B[6:12]).tolist() == [2.0 * (i + 2 * (i + 6)) for i in range(6)]
    B.copy_(torch.arange(20, dtype=torch.float32))
    with pytest.raises(RuntimeError, match="single memory location"):
        f(B[2:8])
    with pytest.raises(RuntimeError, match="single memory location"):
        cf(B[2:8])
    assert B.tolist() == list(range(20))
    other = torch.arange(6, dtype=torch.float32, device=device)  # another memory: the replay, as eager
    B.copy_(torch.arange(20, dtype=torch.float32))
    assert cf(other).tolist() == [2.0 * (i + 2 * i) for i in range(6)]
