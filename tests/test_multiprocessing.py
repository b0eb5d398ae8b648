"""coretorch.multiprocessing: tensors and modules pickle for inter-process transfer, share_memory_() / is_shared()
and Module.share_memory() (memory really shared with forked and spawned processes), Queue, Pool, and Hogwild-style
training of one shared model by two processes."""
from __future__ import annotations

import pickle
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest

import coretorch as torch
import coretorch.multiprocessing as mp
from coretorch.testing import available_devices

from _mp_helpers import add_rank, fill_from_queue, hogwild_train, square

DEVICES = available_devices()


@pytest.mark.parametrize("device", DEVICES)
def test_tensors_pickle_by_value_on_their_device(device):
    x = torch.arange(12.0, device=device).reshape(3, 4)
    for t in (x, x.t(), x[1], torch.tensor(2.5, device=device), torch.arange(5, device=device),
              torch.zeros(0, 3, device=device), torch.tensor([True, False], device=device)):
        u = pickle.loads(pickle.dumps(t))
        assert u.device == t.device and u.dtype == t.dtype and u.shape == t.shape and not u.requires_grad
        np.testing.assert_array_equal(u.cpu().numpy(), t.cpu().numpy())
    w = torch.ones(2, device=device, dtype=torch.float64, requires_grad=True)
    u = pickle.loads(pickle.dumps(w * 3))  # a result of an op comes back as a leaf (the graph does not travel)
    assert u.requires_grad and u.is_leaf and u.tolist() == [3.0, 3.0] and u.dtype == torch.float64
    p = pickle.loads(pickle.dumps(torch.nn.Parameter(torch.ones(2, device=device))))
    assert isinstance(p, torch.nn.Parameter) and p.requires_grad and p.device.type == device


@pytest.mark.parametrize("device", DEVICES)
def test_modules_pickle(device):
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4)).to(device)
    m2 = pickle.loads(pickle.dumps(m))
    assert repr(m2) == repr(m)
    for (k, a), (k2, b) in zip(m.state_dict().items(), m2.state_dict().items()):
        assert k == k2 and a.device == b.device
        np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())
    x = torch.randn(5, 3, device=device)
    np.testing.assert_allclose(m2(x).detach().cpu().numpy(), m(x).detach().cpu().numpy(), rtol=1e-6)


def test_multiprocessing_pickler_refuses_a_non_leaf_that_requires_grad():
    x = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor which requires_grad"):
        ForkingPickler.dumps(x * 2)
    assert torch.as_tensor(pickle.loads(ForkingPickler.dumps((x * 2).detach()))).tolist() == [2.0, 2.0]


@pytest.mark.parametrize("device", DEVICES)
def test_share_memory_and_is_shared(device):
    t = torch.arange(6.0, device=device).reshape(2, 3)
    assert not t.is_shared()
    assert t.share_memory_() is t
    np.testing.assert_array_equal(t.cpu().numpy(), np.arange(6.0).reshape(2, 3))
    assert t.is_shared() == (device == "cpu")  # on other devices a no-op, as CUDA's in PyTorch
    assert t.share_memory_() is t  # already shared: nothing to do
    m = torch.nn.Linear(2, 2).to(device)
    assert m.share_memory() is m
    assert all(p.is_shared() == (device == "cpu") for p in m.parameters())


def test_forked_processes_write_into_shared_tensors():
    shared = torch.zeros(3).share_memory_()
    private = torch.zeros(3)
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=add_rank, args=(r, shared)) for r in range(2)]
    procs += [ctx.Process(target=add_rank, args=(2, private))]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    assert [p.exitcode for p in procs] == [0, 0, 0]
    assert shared.tolist() == [1.0, 2.0, 0.0] and private.tolist() == [0.0, 0.0, 0.0]


def test_shared_tensors_travel_through_queues_as_shared_memory():
    ctx = mp.get_context("fork")
    base = torch.zeros(4).share_memory_()
    q_in, q_out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=fill_from_queue, args=(q_in, q_out))
    p.start()
    q_in.put(base[1:3])  # a view: its offset into the shared buffer travels with it
    back = q_out.get(timeout=30)
    p.join()
    assert p.exitcode == 0
    assert base.tolist() == [0.0, 7.0, 7.0, 0.0]
    assert back.tolist() == [0.0, 2.0, 4.0] and not back.is_shared()


def test_pool_maps_over_tensors():
    with mp.get_context("fork").Pool(2) as pool:
        out = pool.map(square, [torch.arange(3.0), torch.tensor([2.0])])
    assert [o.tolist() for o in out] == [[0.0, 1.0, 4.0], [4.0]]


def _data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(32, 3, generator=g)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3
    return x, y


def test_hogwild_two_forked_processes_train_one_shared_model():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    model.share_memory()
    x, y = _data()
    before = torch.nn.functional.mse_loss(model(x), y).item()
    w0 = model.weight.detach().clone()
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=hogwild_train, args=(r, model, x, y, 20)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    assert [p.exitcode for p in procs] == [0, 0]
    assert not np.allclose(model.weight.detach().numpy(), w0.numpy())  # the parent's parameters changed
    assert torch.nn.functional.mse_loss(model(x), y).item() < 0.5 * before


def test_hogwild_with_spawn():
    # slower (two spawned processes import coretorch): the shared parameters travel as file descriptors
    torch.manual_seed(1)
    model = torch.nn.Linear(3, 1)
    model.share_memory()
    x, y = _data()
    before = torch.nn.functional.mse_loss(model(x), y).item()
    mp.spawn(hogwild_train, args=(model, x, y, 20), nprocs=2)
    assert torch.nn.functional.mse_loss(model(x), y).item() < 0.5 * before


def test_a_tensor_pickled_on_a_missing_device_loads_on_cpu_with_a_warning():
    # what a process without the opencl plugin sees (simulated with a device index that does not exist)
    from coretorch._shared import _rebuild
    with pytest.warns(UserWarning, match="pickled on device 'opencl:7' is loaded on cpu"):
        t = _rebuild(np.arange(3.0), torch.float64, "opencl:7", True, False)
    assert t.device.type == "cpu" and t.dtype == torch.float64 and t.requires_grad and t.tolist() == [0.0, 1.0, 2.0]
