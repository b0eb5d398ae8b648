"""DistributedDataParallel on 2 ranks against single-process training, on every available device.

* equivalence: each rank trains on its DistributedSampler shard (half of each global batch); the reference
  model trains on the full batches in this process; parameters and gradients must agree (float32 tolerance)
  after every step, and be bit-identical across ranks;
* no_sync: two accumulating micro-batches then a synchronised one == the reference accumulating all three;
* find_unused_parameters: a parameter used on rank 0 only, one used by no rank;
* an unused parameter without find_unused_parameters: the next forward raises PyTorch's error;
* buffers are broadcast from rank 0 at construction.
"""
from __future__ import annotations

import copy
import sys

import numpy as np
from _checks import Checks
from mpi4py import MPI

import coretorch
import coretorch.distributed as dist
import coretorch.nn as nn
import coretorch.nn.functional as F
from coretorch.nn.parallel import DistributedDataParallel as DDP
from coretorch.testing import available_devices
from coretorch.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("mpi")
rank, world = dist.get_rank(), dist.get_world_size()
comm = MPI.COMM_WORLD
C = Checks(rank)
devices = available_devices() if len(sys.argv) < 2 else sys.argv[1].split(",")


def params_np(m):
    return [p.detach().cpu().numpy().copy() for p in m.parameters()]


def grads_np(m):
    return [None if p.grad is None else p.grad.cpu().numpy().copy() for p in m.parameters()]


def same_on_all_ranks(arrays) -> bool:
    blob = b"".join(a.tobytes() for a in arrays)
    return all(b == blob for b in comm.allgather(blob))


def close_all(name, actual, expected, rtol=2e-5, atol=2e-6):
    ok = len(actual) == len(expected) and all(
        (a is None and e is None) or (a is not None and e is not None and np.allclose(a, e, rtol=rtol, atol=atol))
        for a, e in zip(actual, expected))
    worst = max((float(np.abs(a - e).max()) for a, e in zip(actual, expected) if a is not None and e is not None),
                default=0.0)
    C.check(name, ok, f"max abs diff {worst}")


def mlp(dev):
    return nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 3)).to(dev)


for dev in devices:
    # ---- equivalence ------------------------------------------------------------------------------------
    coretorch.manual_seed(1000 + rank)            # every rank starts from different weights ...
    model = mlp(dev)
    rank0_init = comm.bcast(params_np(model), root=0)
    ddp = DDP(model, bucket_cap_mb=0.0005)        # 512 B buckets: several buckets, filled during backward
    close_all(f"[{dev}] construction broadcasts rank 0's parameters", params_np(ddp.module), rank0_init, 0, 0)
    C.check(f"[{dev}] several buckets", ddp._ddp_stats["buckets"] >= 3, ddp._ddp_stats)
    ref = copy.deepcopy(ddp.module)               # ... the reference starts from the broadcast ones
    opt = coretorch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    ref_opt = coretorch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)

    g = np.random.default_rng(0)
    X = coretorch.tensor(g.normal(size=(40, 6)).astype(np.float32), device=dev)
    Y = coretorch.tensor(g.integers(0, 3, 40), device=dev)
    ds = TensorDataset(X, Y)
    sampler = DistributedSampler(ds, shuffle=True, seed=3)
    shards = [list(DistributedSampler(ds, num_replicas=world, rank=r, shuffle=True, seed=3)) for r in range(world)]
    loader = DataLoader(ds, batch_size=4, sampler=sampler)
    bs = 4
    for step, (xb, yb) in enumerate(loader):
        opt.zero_grad()
        F.cross_entropy(ddp(xb), yb).backward()
        # the reference: the same step on the global batch (both ranks' halves)
        idx = [i for r in range(world) for i in shards[r][step * bs:(step + 1) * bs]]
        ref_opt.zero_grad()
        F.cross_entropy(ref(X[idx]), Y[idx]).backward()
        close_all(f"[{dev}] step {step}: DDP gradients == full-batch gradients", grads_np(ddp.module), grads_np(ref))
        opt.step()
        ref_opt.step()
        close_all(f"[{dev}] step {step}: DDP parameters == full-batch training", params_np(ddp.module),
                  params_np(ref))
        C.check(f"[{dev}] step {step}: parameters identical on every rank", same_on_all_ranks(params_np(ddp.module)))
    C.check(f"[{dev}] all 5 steps ran", step == 4, step)
    st = ddp._ddp_stats
    C.check(f"[{dev}] buckets were all-reduced while backward was still running",
            st["reductions"] == 5 and st["launched_during_backward"] == 5 * (st["buckets"] - 1), st)

    # ---- coretorch.compile ----------------------------------------------------------------------------------
    # a compiled training step around a DDP model (the step form), and a compiled DDP model in an eager loop (the
    # module form): the same parameters as eager DDP, bitwise, on every rank (a replay that skipped the gradient
    # all-reduce would train each rank on its own shard: the ranks' parameters would drift apart)
    def ddp_run(form):
        coretorch.manual_seed(5)
        net = mlp(dev)
        d = DDP(net, bucket_cap_mb=0.0005)
        o = coretorch.optim.Adam(d.parameters(), lr=0.01)
        fwd = coretorch.compile(d) if form == "module" else d

        def train_step(xb, yb):
            o.zero_grad()
            loss = F.cross_entropy(fwd(xb), yb)
            loss.backward()
            o.step()
            return loss
        run_step = coretorch.compile(train_step) if form == "step" else train_step
        gen = np.random.default_rng(50 + rank)
        for _ in range(6):
            xb = coretorch.tensor(gen.normal(size=(4, 6)).astype(np.float32), device=dev)
            yb = coretorch.tensor(gen.integers(0, 3, 4), device=dev)
            run_step(xb, yb)
        return params_np(net)
    eager_params = ddp_run("eager")
    for form in ("step", "module"):
        got = ddp_run(form)
        C.check(f"[{dev}] compile ({form} form): the parameters of eager DDP, bitwise",
                all(np.array_equal(a, b) for a, b in zip(got, eager_params)),
                max(float(np.abs(a - b).max()) for a, b in zip(got, eager_params)))
        C.check(f"[{dev}] compile ({form} form): parameters identical on every rank", same_on_all_ranks(got))

    # ---- no_sync accumulation -------------------------------------------------------------------------------
    opt.zero_grad()
    ref_opt.zero_grad()
    local = copy.deepcopy(ddp.module)
    micro = [np.random.default_rng(100 + k).integers(0, 40, 8) for k in range(3)]
    for k, idx in enumerate(micro):
        half = idx[rank * 4:(rank + 1) * 4].tolist()
        if k < 2:
            with ddp.no_sync():
                F.cross_entropy(ddp(X[half]), Y[half]).backward()
            F.cross_entropy(local(X[half]), Y[half]).backward()
            close_all(f"[{dev}] no_sync micro-batch {k}: gradients stay local", grads_np(ddp.module), grads_np(local))
        else:
            F.cross_entropy(ddp(X[half]), Y[half]).backward()
        F.cross_entropy(ref(X[idx.tolist()]), Y[idx.tolist()]).backward()
    close_all(f"[{dev}] no_sync: accumulated gradients averaged at the synchronised step", grads_np(ddp.module),
              grads_np(ref))
    C.check(f"[{dev}] no_sync: gradients identical on every rank after the sync",
            same_on_all_ranks([a for a in grads_np(ddp.module)]))

    # ---- find_unused_parameters ---------------------------------------------------------------------------
    class Branchy(nn.Module):
        def __init__(self):
            super().__init__()
            self.trunk = nn.Linear(4, 4)
            self.rank0_only = nn.Linear(4, 4)
            self.never = nn.Linear(4, 4)

        def forward(self, x, use_extra):
            h = self.trunk(x)
            if use_extra:
                h = self.rank0_only(h)
            return h.sum()

    coretorch.manual_seed(7)
    net = Branchy().to(dev)
    plain = copy.deepcopy(net)
    dnet = DDP(net, find_unused_parameters=True)
    xs = coretorch.tensor(np.random.default_rng(rank).normal(size=(5, 4)).astype(np.float32), device=dev)
    dnet(xs, rank == 0).backward()
    plain(xs, rank == 0).backward()
    local = grads_np(plain)
    gathered = comm.allgather(local)
    expected = []
    for j in range(len(local)):
        got = [gr[j] for gr in gathered]
        expected.append(None if all(x is None for x in got) else
                        sum(np.zeros_like(local[0]) if x is None else x for x in got) / world)
    expected[-2:] = [None, None]   # "never": no rank used it, its .grad stays None
    close_all(f"[{dev}] find_unused_parameters: average over ranks, zeros where a rank did not use a parameter",
              grads_np(dnet.module), expected)

    coretorch.manual_seed(7)
    strict = DDP(Branchy().to(dev))
    strict(xs, False).backward()
    try:
        strict(xs, False)
        C.check(f"[{dev}] unused parameter without find_unused_parameters raises at the next forward", False)
    except RuntimeError as e:
        C.check(f"[{dev}] unused parameter without find_unused_parameters raises at the next forward",
                "find_unused_parameters=True" in str(e) and "rank0_only.weight" in str(e), e)

    # ---- buffers -----------------------------------------------------------------------------------------
    bn = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).to(dev)
    with coretorch.no_grad():
        bn[1].running_mean.fill_(float(rank + 1))
    DDP(bn)
    C.check(f"[{dev}] buffers broadcast from rank 0", bn[1].running_mean.tolist() == [1.0] * 4,
            bn[1].running_mean.tolist())
    C.check(f"[{dev}] state_dict keys as in torch", list(ddp.state_dict())[0] == "module.0.weight",
            list(ddp.state_dict())[:2])

dist.destroy_process_group()
C.dump()
