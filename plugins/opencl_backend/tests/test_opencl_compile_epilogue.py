"""opencl-only checks for issue 17's fusion work: ``torch.accelerator.synchronize`` takes a device string (as
PyTorch does; "opencl" used to be taken as an index and waited for nothing, so the benchmarks' opencl steps were not
synchronised)."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch


X = np.arange(10, dtype=np.float32).reshape(2, 5)


@pytest.mark.parametrize("dev", ["opencl", "opencl:0", coretorch.device("opencl"), 0])
def test_accelerator_synchronize_takes_a_device_string(dev):
    x = coretorch.tensor(X, device="opencl")
    x.gather(1, coretorch.tensor([[0, 7]], device="opencl"))   # a device-side check, reported when waited for
    with pytest.raises(RuntimeError, match=r"^gather\(\): index 7 is out of bounds"):
        coretorch.accelerator.synchronize(dev)
    coretorch.accelerator.synchronize(dev)                     # reported once
