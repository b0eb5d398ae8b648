"""Smaller pieces of the nn surface: CosineAnnealingWarmRestarts and CyclicLR (closed forms), ChainDataset and
StackDataset, Module.bfloat16/to_empty, torch.utils.checkpoint reachable from `import torch`."""
import math
import warnings

import numpy as np
import pytest

import coretorch as torch
from coretorch import nn
from coretorch.optim.lr_scheduler import CosineAnnealingWarmRestarts, CyclicLR
from coretorch.utils.data import ChainDataset, IterableDataset, StackDataset, TensorDataset


def _sgd(lr=0.1, **kw):
    return torch.optim.SGD([nn.Parameter(torch.zeros(2))], lr=lr, **kw)


def test_cosine_annealing_warm_restarts_closed_form():
    opt = _sgd()
    s = CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2, eta_min=0.01)
    got = []
    for _ in range(20):
        opt.step()
        s.step()
        got.append(s.get_last_lr()[0])
    # the cycles last 3, 6, 12 epochs; inside one, lr = eta_min + (lr0 - eta_min) (1 + cos(pi t / T_i)) / 2
    ref, t, T = [], 0, 3
    for _ in range(20):
        t += 1
        if t >= T:
            t, T = t - T, T * 2
        ref.append(0.01 + 0.09 * (1 + math.cos(math.pi * t / T)) / 2)
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    s.step(10.5)  # fractional epochs: 10.5 lies 1.5 epochs into the third cycle (3 + 6 = 9 epochs before it)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.01 + 0.09 * (1 + math.cos(math.pi * 1.5 / 12)) / 2)
    with pytest.raises(ValueError, match="Expected positive integer T_0"):
        CosineAnnealingWarmRestarts(_sgd(), T_0=0)
    with pytest.raises(ValueError, match="Expected integer T_mult >= 1"):
        CosineAnnealingWarmRestarts(_sgd(), T_0=2, T_mult=0)


@pytest.mark.parametrize("mode", ["triangular", "triangular2", "exp_range"])
def test_cyclic_lr_and_momentum(mode):
    opt = _sgd(momentum=0.9)
    s = CyclicLR(opt, 0.01, 0.1, step_size_up=3, step_size_down=2, mode=mode, gamma=0.9)
    assert opt.param_groups[0]["lr"] == 0.01 and opt.param_groups[0]["momentum"] == 0.9
    lrs, moms = [], []
    for _ in range(14):
        opt.step()
        s.step()
        lrs.append(s.get_last_lr()[0])
        moms.append(opt.param_groups[0]["momentum"])
    for it, (lr, mom) in enumerate(zip(lrs, moms), start=1):
        cycle = math.floor(1 + it / 5)
        x = 1 + it / 5 - cycle
        frac = x / 0.6 if x <= 0.6 else (x - 1) / (0.6 - 1)
        scale = {"triangular": 1.0, "triangular2": 1 / 2 ** (cycle - 1), "exp_range": 0.9 ** it}[mode]
        assert lr == pytest.approx(0.01 + 0.09 * frac * scale)
        assert mom == pytest.approx(0.9 - 0.1 * frac * scale)  # momentum cycles the other way
    adam = torch.optim.Adam([nn.Parameter(torch.zeros(1))], lr=0.1)
    CyclicLR(adam, 0.001, 0.01, step_size_up=4)
    assert adam.param_groups[0]["betas"][0] == 0.9  # Adam's beta1 plays momentum
    with pytest.raises(ValueError, match="optimizer must support momentum"):
        CyclicLR(torch.optim.Adagrad([nn.Parameter(torch.zeros(1))]), 0.01, 0.1)
    with pytest.raises(ValueError, match="mode is invalid and scale_fn is None"):
        CyclicLR(_sgd(momentum=0.9), 0.01, 0.1, mode="sawtooth")
    sd = s.state_dict()
    assert sd["_scale_fn_custom"] is None and "optimizer" not in sd
    s2 = CyclicLR(_sgd(momentum=0.9), 0.01, 0.1, step_size_up=3, step_size_down=2, mode=mode, gamma=0.9)
    s2.load_state_dict(sd)
    assert s2.last_epoch == s.last_epoch and s2.get_lr() == pytest.approx(s.get_lr())


def test_chain_and_stack_datasets():
    class Count(IterableDataset):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n))

        def __len__(self):
            return self.n

    chain = ChainDataset([Count(2), Count(3)])
    assert list(chain) == [0, 1, 0, 1, 2] and len(chain) == 5
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(ChainDataset([TensorDataset(torch.arange(2))]))
    s = StackDataset(TensorDataset(torch.arange(3)), torch.arange(3) * 2)
    (a,), b = s[1]
    assert a.item() == 1 and b.item() == 2 and len(s) == 3
    d = StackDataset(x=torch.arange(3), y=torch.arange(3) * 10)
    assert {k: v.item() for k, v in d[2].items()} == {"x": 2, "y": 20}
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(torch.arange(3), torch.arange(4))
    batches = list(torch.utils.data.DataLoader(d, batch_size=2))
    assert batches[0]["y"].tolist() == [0, 10]


def test_module_bfloat16_to_empty_and_checkpoint_namespace():
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    m.bfloat16()
    assert m[0].weight.dtype == torch.bfloat16 and m[1].num_batches_tracked.dtype == torch.int64
    e = nn.Linear(4, 3).to_empty(device="cpu")
    assert e.weight.shape == (3, 4) and isinstance(e.weight, nn.Parameter)
    assert torch.utils.checkpoint.checkpoint is not None
    x = torch.randn(2, 3, requires_grad=True)
    lin = nn.Linear(3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = torch.utils.checkpoint.checkpoint(lin, x, use_reentrant=False)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.broadcast_to(lin.weight.detach().numpy().sum(0), (2, 3)),
                               rtol=1e-6)
