"""Issue 15: setitem / index_put_ with the value or the index on another device, as PyTorch 2.13 with a CUDA tensor
and a CPU tensor (read from its sources: basic indexing is ``copy_``, which crosses devices; ``index_put_`` moves a
0-d value and its index tensors to the destination's device, dispatches one bool mask on the destination's device
with a one-element CPU value to ``masked_fill_``, and its TensorIterator refuses any other value on another
device).  ``device`` is the accelerator (on the cpu: a second device registered with the CPU kernels), paired with
the cpu."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
from coretorch.testing import cpu_kernels_as


@pytest.fixture
def dev(device):
    if device != "cpu":
        yield device
        return
    with cpu_kernels_as("otherdev") as d:
        yield d


def _pairs(dev):
    return ((dev, "cpu"), ("cpu", dev))  # (destination's device, value's device) both ways


def test_basic_setitem_copies_from_another_device(dev):
    for xd, vd in _pairs(dev):
        x = torch.zeros(3, 4, device=xd)
        v = torch.arange(8.0, device=vd).reshape(2, 4)
        x[0:2] = v
        x[2, 1:3] = torch.tensor([[7.0, 8.0]], device=vd)  # leading 1-dims dropped, as copy_to
        x[..., 3] = torch.tensor(-1.0, device=vd)
        want = np.zeros((3, 4), np.float32)
        want[0:2] = np.arange(8.0).reshape(2, 4)
        want[2, 1:3] = [7.0, 8.0]
        want[:, 3] = -1.0
        assert x.device.type == xd and np.array_equal(x.cpu().numpy(), want)
        x[0] = torch.tensor([1, 2, 3, 4], device=vd)  # with a cast, as copy_
        assert x.cpu().numpy()[0].tolist() == [1.0, 2.0, 3.0, 4.0]


def test_advanced_setitem_value_on_another_device(dev):
    for xd, vd in _pairs(dev):
        x = torch.zeros(3, device=xd)
        x[torch.tensor([0, 2], device=xd)] = torch.tensor(5.0, device=vd)  # a 0-d value is moved
        assert x.cpu().numpy().tolist() == [5.0, 0.0, 5.0]
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            x[[0, 1]] = torch.tensor([1.0, 2.0], device=vd)
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            x[[0, 1]] = torch.tensor([1.0], device=vd)  # one element but not 0-d and no mask
        assert x.cpu().numpy().tolist() == [5.0, 0.0, 5.0]
    x = torch.zeros(3, device=dev)
    x[torch.tensor([True, False, True], device=dev)] = torch.tensor([4], dtype=torch.int64)  # masked_fill_
    assert x.cpu().numpy().tolist() == [4.0, 0.0, 4.0]
    x[[False, True, False]] = torch.tensor([3.0])  # a list of bools is a mask made on x's device
    assert x.cpu().numpy().tolist() == [4.0, 3.0, 4.0]
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        x[torch.tensor([True, False, True])] = torch.tensor([1.0])  # a CPU mask: no masked_fill_ dispatch


def test_setitem_index_on_another_device(dev):
    for xd, idev in _pairs(dev):
        x = torch.zeros(4, device=xd)
        x[torch.tensor([1, 3], device=idev)] = torch.tensor([1.0, 2.0], device=xd)  # the index is moved
        x[torch.tensor([True, False, False, False], device=idev)] = 9.0
        assert x.cpu().numpy().tolist() == [9.0, 1.0, 0.0, 2.0]
    with pytest.raises(RuntimeError, match="indices should be either on cpu or on the same device"):
        torch.zeros(3)[torch.tensor([0], device=dev)]  # a read takes a cpu index or one on x's device


def test_index_put_across_devices(dev):
    for xd, vd in _pairs(dev):
        x = torch.zeros(3, device=xd)
        idx = (torch.tensor([2, 0], device=vd),)
        r = x.index_put(idx, torch.tensor(2.0, device=vd))
        assert r.device.type == xd and r.cpu().numpy().tolist() == [2.0, 0.0, 2.0]
        x.index_put_(idx, torch.tensor(1.0, device=vd), accumulate=True)
        x.index_put_(idx, torch.tensor(1.0, device=vd), accumulate=True)
        assert x.cpu().numpy().tolist() == [2.0, 0.0, 2.0]
        with pytest.raises(RuntimeError, match="same device"):
            x.index_put_(idx, torch.tensor([1.0, 2.0], device=vd))
    x = torch.zeros(3, device=dev)
    x.index_put_((torch.tensor([False, True, False], device=dev),), torch.tensor([7], dtype=torch.int32))
    assert x.cpu().numpy().tolist() == [0.0, 7.0, 0.0]


def test_setitem_across_devices_backward(dev):
    for xd, vd in _pairs(dev):
        v = torch.tensor([[1.0, 2.0]], device=vd, requires_grad=True)
        x = torch.zeros(2, 2, device=xd, requires_grad=True).clone()
        x[1] = v
        (x * torch.tensor([[1.0, 2.0], [3.0, 4.0]], device=xd)).sum().backward()
        assert v.grad.device.type == vd and v.grad.cpu().numpy().tolist() == [[3.0, 4.0]]


def test_as_tensor_shares_numpy_memory_with_default_device_set_back_to_cpu():
    before = torch.get_default_device()
    torch.set_default_device("cpu")  # an explicit cpu default (as code that restores a default leaves it)
    try:
        a = np.arange(3.0)
        t = torch.as_tensor(a)
        a[0] = 9.0
        assert t[0].item() == 9.0  # shared, as PyTorch's
    finally:
        torch.set_default_device(before)
