"""Review 17e of coretorch.compile on opencl: errors and exceptions from compiled code — where a device-side check
(an index out of range, as CUDA's device-side asserts) reports, and the state a replay leaves when it does."""
from __future__ import annotations

import pytest

import coretorch as torch

_BE = torch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")


def _run(compiled: bool) -> tuple:
    w = torch.zeros(3, device="opencl")

    def step(x, i):
        w.add_(1)
        y = x[i]  # (an index out of range: recorded on the device, reported at the next host read)
        torch.multinomial(x[:3].abs() + 1, 1)  # (its probability check reads on the host: the report's place)
        w.mul_(2)
        return y
    f = torch.compile(step) if compiled else step
    x = torch.arange(5., device="opencl")
    out = []
    for v in ([1, 2], [1, 2], [1, 2], [1, 9], [1, 2]):
        try:
            f(x, torch.tensor(v, device="opencl")).tolist()
            out.append("ok")
        except IndexError as e:
            out.append(str(e))
        out.append(w.tolist())
    return out, w._version


def test_a_device_check_reports_at_eagers_host_read():
    """Eager: the index check of ``x[i]`` fails on the device and the multinomial's host read reports it, so the
    call raises IndexError before ``w.mul_(2)``.  Compiled (with the checks of argument values moved to the
    replay's start): the multinomial's read ran before the index kernel, the replay went on through ``w.mul_(2)``
    and the error surfaced only at the caller's next read, with ``w`` doubled once more than eager's.  Now a check
    is not moved across a launch that records a device-side check."""
    assert _run(True)[0] == _run(False)[0]


def test_version_counters_after_a_device_check_reports_mid_replay():
    """Eager's ``w.add_(1)`` bumped ``w``'s version before the error reported at the multinomial's read.  The
    replay bumped the version counters it writes at its end only, so the error left ``w``'s behind eager's (6 for
    7).  Now the replay bumps them by what the step did so far before each checked host read (versions.py)."""
    assert _run(True)[1] == _run(False)[1]


def test_a_check_pending_before_the_call_reports_after_the_steps_writes():
    """``x[torch.tensor([5])]`` outside the step, its result never read, then a replay of ``w.add_(1);
    torch.multinomial(p, 1)``: eager raises IndexError at the multinomial's read, ``w`` incremented.  With the
    multinomial's check moved to the replay's start (early.py), that read reported it before the write.  Now a replay
    whose checks were moved first asks the device whether a check is pending (the kernel table's
    ``check_pending``), and runs the call eagerly where one is."""
    res = []
    for compiled in (False, True):
        w = torch.zeros(3, device="opencl")

        def step(p):
            w.add_(1)
            return torch.multinomial(p, 1)
        f = torch.compile(step) if compiled else step
        p = torch.tensor([0.2, 0.8], device="opencl")
        for _ in range(3):
            f(p)
        x = torch.arange(3., device="opencl")
        x[torch.tensor([5], device="opencl")]
        with pytest.raises(IndexError):
            f(p)
        res.append(w.tolist())
    assert res[1] == res[0]
