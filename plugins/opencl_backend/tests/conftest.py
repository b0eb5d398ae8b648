"""Shared by the OpenCL tests: no test may leave a failed device-side check behind for the next one to report."""
from __future__ import annotations

import pytest

import coretorch

_BE = coretorch._backend.backends().get("opencl")


@pytest.fixture(autouse=True)
def _no_check_left_pending():
    """A test that leaves a failed device-side check unreported fails itself (instead of the next test's read)."""
    yield
    if _BE is None or not _BE.is_available():
        return
    try:
        _BE.synchronize()
    except (IndexError, RuntimeError) as e:
        pytest.fail(f"a failed device-side check was left pending: {e}")
