"""Review of the lowered replays (coretorch/_compile/lower.py, coretorch_opencl/lowering.py): regressions found."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import coretorch as torch
from coretorch_opencl import device as cldevice

_BE = torch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")


@pytest.fixture
def nondeterministic():
    torch.use_deterministic_algorithms(False)
    yield
    torch.use_deterministic_algorithms(False)


@pytest.mark.parametrize("op", ["index_add", "setitem"])
def test_deterministic_algorithms_switched_on_after_lowering(op, nondeterministic):
    """A step lowered while accumulating index writes ran atomically (any order) then called under
    ``torch.use_deterministic_algorithms(True)``: the table call takes the in-order kernel there, so the lowered
    replay must too (it kept the atomic launch: sums that changed from call to call, unlike eager's)."""
    g = np.random.default_rng(0)
    n = 200_000  # many values per slot: atomic float sums round differently from run to run
    v = torch.tensor(g.standard_normal(n).astype(np.float32), device="opencl")
    idx = torch.tensor(g.integers(0, 3, n), device="opencl")

    def f(v, idx):
        if op == "index_add":
            return torch.zeros(3, device="opencl").index_add(0, idx, v * 1.0)
        y = torch.zeros(3, device="opencl")
        y[idx] = v * 1.0
        return y
    fn = torch.compile(f)
    for _ in range(5):
        fn(v, idx)
    assert fn.lowered > 0
    torch.use_deterministic_algorithms(True)
    want = f(v, idx).cpu().numpy()
    for _ in range(3):
        assert np.array_equal(fn(v, idx).cpu().numpy(), want)


def test_observers_of_two_threads_at_once():
    """Two threads observing replays at once (two compiled functions lowering together), the first to start
    finishing first: the second still sees its line's allocations, and the device is left as it was (the first's
    exit used to remove the second's spies, and the second's exit then put the first's back for good)."""
    from coretorch_opencl import lowering
    q = torch.zeros(1, device="opencl")._data.queue
    dev = next(d for d in cldevice._ALL_DEVICES if d.queue is q)
    before = dict(dev.__dict__)
    a_in, b_in, a_out, b_out = (threading.Event() for _ in range(4))
    seen = {}

    def first():
        with lowering.Observer(dev):
            a_in.set()
            b_in.wait(10)
        a_out.set()

    def second():
        a_in.wait(10)
        with lowering.Observer(dev) as o:
            b_in.set()
            a_out.wait(10)
            o.begin()
            dev.alloc(64)
            seen["line"] = o.end()
        b_out.set()
    ts = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(20)
    assert b_out.is_set()
    assert [e[:2] for e in seen["line"].events] == [("alloc", 64)]
    assert dev.__dict__.keys() == before.keys() and all(dev.__dict__[k] is v for k, v in before.items())
