"""nn.SyncBatchNorm: in one process it is BatchNorm on every input rank (train and eval, running statistics);
convert_sync_batchnorm swaps the layers keeping parameters and buffers; with a stand-in all_reduce for two ranks
holding the same batch, outputs and gradients equal BatchNorm over the doubled batch. (Two real ranks under
mpiexec: plugins/distributed_mpi/tests/test_distributed_syncbn.py.) Every device."""
import numpy as np
import pytest

import coretorch as torch
from coretorch import nn
from coretorch.nn.modules import batchnorm as _bn
from coretorch.testing import available_devices


@pytest.fixture(params=available_devices())
def device(request):
    return request.param


def N(t):
    return t.detach().cpu().numpy()


def np_bn(x, w, b, eps=1e-5):
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    mean, var = x.mean(axis=axes, keepdims=True), x.var(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w.reshape(shape) + b.reshape(shape)


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 2, 3), (2, 3, 2, 2, 2)])
def test_single_process_is_batchnorm(device, shape):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape) * 3 + 1
    m = nn.SyncBatchNorm(3, momentum=0.2).double().to(device)
    with torch.no_grad():
        m.weight.copy_(torch.tensor([1.0, 2.0, -1.0]))
        m.bias.copy_(torch.tensor([0.5, 0.0, 1.0]))
    y = m(torch.tensor(x, device=device))
    np.testing.assert_allclose(N(y), np_bn(x, np.array([1.0, 2, -1]), np.array([0.5, 0, 1])), rtol=1e-10,
                               atol=1e-12)
    axes = (0,) + tuple(range(2, x.ndim))
    np.testing.assert_allclose(N(m.running_mean), 0.2 * x.mean(axis=axes), rtol=1e-10)
    np.testing.assert_allclose(N(m.running_var), 0.8 + 0.2 * x.var(axis=axes, ddof=1), rtol=1e-10)
    assert m.num_batches_tracked.item() == 1
    m.eval()
    ye = m(torch.tensor(x, device=device))
    shp = (1, -1) + (1,) * (x.ndim - 2)
    ref = (x - N(m.running_mean).reshape(shp)) / np.sqrt(N(m.running_var).reshape(shp) + 1e-5)
    np.testing.assert_allclose(N(ye), ref * np.array([1.0, 2, -1]).reshape(shp) + np.array([0.5, 0, 1]).reshape(shp),
                               rtol=1e-10, atol=1e-12)


def test_repr_errors_and_convert():
    m = nn.SyncBatchNorm(4)
    assert repr(m) == "SyncBatchNorm(4, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"
    assert m.process_group is None and isinstance(m, nn.modules.batchnorm._BatchNorm)
    with pytest.raises(ValueError, match="expected at least 2D input \\(got 1D input\\)"):
        m(torch.zeros(4))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        m(torch.zeros(1, 4))
    with pytest.raises(ValueError, match="number of input channels should be non-zero"):
        nn.SyncBatchNorm(0)(torch.zeros(2, 0))
    net = nn.Sequential(nn.Conv2d(1, 3, 1), nn.BatchNorm2d(3), nn.Sequential(nn.BatchNorm1d(3, affine=False)))
    net[1].running_mean.fill_(2.0)
    net[2][0].eval()
    w, rm = net[1].weight, net[1].running_mean
    s = nn.SyncBatchNorm.convert_sync_batchnorm(net, process_group="pg")
    assert s is net and type(s[1]) is nn.SyncBatchNorm and type(s[2][0]) is nn.SyncBatchNorm
    assert s[1].weight is w and s[1].running_mean is rm and s[1].process_group == "pg"
    assert s[2][0].weight is None and s[2][0].training is False and s[1].training is True
    single = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1d(5, eps=1e-3, momentum=None))
    assert type(single) is nn.SyncBatchNorm and single.eps == 1e-3 and single.momentum is None


def test_two_ranks_with_a_stand_in_all_reduce(device, monkeypatch):
    # two ranks holding the same batch: the all_reduce doubles (sum, sum of squares, count) in forward and the
    # gradient w.r.t. them in backward; the result must be BatchNorm over the batch concatenated with itself
    calls = []

    def fake_all_reduce(t, group):
        calls.append(group)
        t.mul_(2)
    monkeypatch.setattr(_bn, "_all_reduce", fake_all_reduce)
    monkeypatch.setattr(_bn, "_sync_world", lambda group: 2)
    rng = np.random.default_rng(1)
    x = torch.tensor(rng.standard_normal((3, 2, 4)), device=device, requires_grad=True)
    w = torch.tensor(rng.standard_normal((3, 2, 4)), device=device)
    m = nn.SyncBatchNorm(2, process_group="g").double().to(device)
    ref = nn.BatchNorm1d(2).double().to(device)
    with torch.no_grad():
        for mod in (m, ref):
            mod.weight.copy_(torch.tensor([1.5, -0.5]))
            mod.bias.copy_(torch.tensor([0.2, 0.3]))
    y = m(x)
    (y * w).sum().backward()
    assert calls == ["g", "g"]                 # one all_reduce in forward, one in backward
    gx, gw = N(x.grad), N(m.weight.grad)
    x.grad = None
    y2 = ref(torch.cat([x, x]))
    (y2 * torch.cat([w, w])).sum().backward()
    np.testing.assert_allclose(N(y), N(y2[:3]), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gx, N(x.grad) / 2, rtol=1e-10, atol=1e-12)    # x appears twice in the reference
    np.testing.assert_allclose(2 * gw, N(ref.weight.grad), rtol=1e-10)        # each rank's share of the grad
    np.testing.assert_allclose(N(m.running_mean), N(ref.running_mean), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(N(m.running_var), N(ref.running_var), rtol=1e-10)
    m.eval()                                   # eval: running statistics, no collective
    m(x)
    assert len(calls) == 2


def test_trains_in_a_conv_net(device):
    torch.manual_seed(0)
    net = nn.SyncBatchNorm.convert_sync_batchnorm(
        nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                      nn.Linear(64, 2))).to(device)
    x = torch.randn(8, 1, 4, 4, device=device)
    t = torch.tensor([0, 1] * 4, device=device)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    losses = []
    for _ in range(6):
        loss = nn.functional.cross_entropy(net(x), t)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0], losses
