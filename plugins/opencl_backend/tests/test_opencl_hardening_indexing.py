"""Issue 15: the device-side index checks of an op that raised on the host are forgotten (``check_mark`` /
``discard_checks`` through ``checks_guard``), and a failure of an earlier op stays pending."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch
from coretorch.ops.indexing import checks_guard

_BE = coretorch._backend.backends().get("opencl")
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason="no OpenCL device")


class _HostError(Exception):
    """An op's own host-side failure after it queued its index checks."""


def _failing_op(table, index, message: str, read_first: bool = False):
    x = coretorch.zeros(2, device="opencl")
    with pytest.raises(_HostError):
        with checks_guard(table):
            if read_first:
                x.sum().item()  # a host read inside the op: it starts the tickets afresh
            table.check_index(index, 4, False, message)
            raise _HostError


def test_checks_of_a_failed_op_are_forgotten_and_earlier_failures_stay():
    table = coretorch.ones(1, device="opencl")._be
    assert table.has("check_mark") and table.has("discard_checks")
    bad = coretorch.tensor(np.array([7, 1]), device="opencl")._data
    good = coretorch.tensor(np.array([0, 3]), device="opencl")._data
    y = coretorch.ones(3, device="opencl")
    _failing_op(table, bad, "failed op {}")
    assert y.sum().item() == 3.0                      # nothing fires later
    _failing_op(table, bad, "failed op {}", read_first=True)
    assert y.sum().item() == 3.0
    table.check_index(bad, 4, False, "earlier op {}")  # an earlier op's failure: reported, not forgotten
    _failing_op(table, bad, "failed op {}")
    with pytest.raises(IndexError, match="^earlier op 7$"):
        y.sum().item()
    _failing_op(table, good, "failed op {}")          # passing checks: nothing to forget, nothing pending
    assert y.sum().item() == 3.0 and not _BE.device(0).check_pending
