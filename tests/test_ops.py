"""Every op against NumPy (forward) and finite differences (backward), on every available device."""
from __future__ import annotations

import pytest

import coretorch
from coretorch.testing import CASES, REQUIRED_OPS, available_devices, check_backward, check_backward_like, check_forward

DEVICES = available_devices()
FORWARD = [pytest.param(c, d, id=f"{c.name}-{d}") for c in CASES if c.forward for d in DEVICES]
BACKWARD = [pytest.param(c, d, id=f"{c.name}-{d}") for c in CASES if c.grad and c.raises is None
            for d in DEVICES]


@pytest.mark.parametrize("case,device", FORWARD)
def test_forward(case, device):
    for dtype in case.dtypes:
        check_forward(case, device, dtype)


@pytest.mark.parametrize("case,device", BACKWARD)
def test_backward(case, device):
    # gradcheck (finite differences) on the CPU; every other device's backward must give the CPU's values (the
    # same vjp for a random grad_output: equal Jacobians), which that gradcheck proves right, at a fraction of
    # the cost of finite differences through a device
    if device == "cpu":
        check_backward(case, device)
    else:
        check_backward_like(case, device, "cpu")


def test_cpu_is_available():
    assert "cpu" in DEVICES
    assert set(DEVICES) <= set(coretorch._backend.backends())


def test_every_required_op_has_cases():
    ops = {c.op for c in CASES}
    assert not set(REQUIRED_OPS) - ops, sorted(set(REQUIRED_OPS) - ops)
    for op in REQUIRED_OPS:  # each op runs forward, and backward unless it is not differentiable
        assert any(c.op == op and c.forward and c.raises is None for c in CASES), op


def test_variants_are_generated():
    names = {c.name for c in CASES}
    for op in ("exp", "__add__", "maximum"):
        for suffix in (".0d", ".empty", ".t"):
            assert op + suffix in names, op + suffix
    assert "__add__.bcast" in names and "__sub__.rscalar" in names
    assert any(c.gradgrad for c in CASES)
    assert any("int64" in c.dtypes for c in CASES) and any("bool" in c.dtypes for c in CASES)
