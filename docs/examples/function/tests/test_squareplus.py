"""The op on every installed device: values against numpy, gradients by gradcheck, each device's kernel."""
import numpy as np
import pytest

import coretorch
from coretorch.testing import available_devices
from coretorch_squareplus import kernels


@pytest.mark.parametrize("device", available_devices())
def test_values_and_gradients(device):
    x = coretorch.tensor([[-3.0, -0.5, 0.0], [0.5, 2.0, 10.0]], device=device)
    want = (x.cpu().numpy() + np.sqrt(x.cpu().numpy() ** 2 + 1.0)) / 2
    for y in (coretorch.ops.squareplus(x, 1.0), x.squareplus(1.0), coretorch.nn.functional.squareplus(x, 1.0)):
        assert y.device == x.device and y.dtype == x.dtype
        np.testing.assert_allclose(y.cpu().numpy(), want, rtol=1e-6)
    x64 = x.double().requires_grad_()
    assert coretorch.autograd.gradcheck(lambda t: coretorch.ops.squareplus(t, 1.0), (x64,))
    assert coretorch.autograd.gradgradcheck(lambda t: coretorch.ops.squareplus(t, 1.0), (x64,))


def test_each_device_type_finds_its_kernel():
    assert coretorch.plugins.get_kernel("squareplus", "cpu") is kernels.squareplus_cpu
    if "opencl" in available_devices():
        assert coretorch.plugins.get_kernel("squareplus", "opencl") is kernels.squareplus_opencl


def test_bad_arguments():
    with pytest.raises(ValueError, match="b must be positive"):
        coretorch.ops.squareplus(coretorch.ones(2), 0.0)
    with pytest.raises(TypeError, match="must be Tensor"):
        coretorch.ops.squareplus([1.0])
