"""DistributedDataParallel.join() on 2 ranks with different numbers of batches, against single-process training.

Rank 0 has 2 batches, rank 1 has 4.  The reference (computed in this process on every rank) steps once per
iteration of the longest rank with the gradient PyTorch's join gives: the sum of the per-rank mean-loss
gradients of the ranks still iterating, divided by the world size (divide_by_initial_world_size=True) or by
their number.  Checked on every device: the gradients of every iteration on the ranks that ran it, the final
parameters (every replica takes those of the last rank to finish), the BatchNorm buffers (broadcast from the
highest rank still iterating, so they follow rank 1's batches alone), throw_on_early_termination, a Joinable
written as in PyTorch's tutorial, and the import path scripts use for torch.
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
from coretorch.nn.parallel import DistributedDataParallel as DDP
from coretorch.testing import available_devices

dist.init_process_group("mpi")
rank, world = dist.get_rank(), dist.get_world_size()
comm = MPI.COMM_WORLD
C = Checks(rank)
devices = available_devices() if len(sys.argv) < 2 else sys.argv[1].split(",")
NBATCH = [2, 4]                                  # batches per rank: uneven


def batches(r, dev):
    g = np.random.default_rng(10 + r)
    return [(coretorch.tensor(g.normal(size=(3, 4)).astype(np.float32), device=dev),
             coretorch.tensor(g.normal(size=(3, 2)).astype(np.float32), device=dev)) for _ in range(NBATCH[r])]


def loss_of(model, xb, yb):
    return ((model(xb) - yb) ** 2).mean()


def params_np(m):
    return [p.detach().cpu().numpy().copy() for p in m.parameters()]


def close_all(name, actual, expected, rtol=2e-5, atol=2e-6):
    ok = len(actual) == len(expected) and all(np.allclose(a, e, rtol=rtol, atol=atol) for a, e in zip(actual, expected))
    worst = max((float(np.abs(a - e).max()) for a, e in zip(actual, expected)), default=0.0)
    C.check(name, ok, f"max abs diff {worst}")


def same_on_all_ranks(arrays) -> bool:
    blob = b"".join(a.tobytes() for a in arrays)
    return all(b == blob for b in comm.allgather(blob))


def run(dev, divide, find_unused):
    tag = f"[{dev}] join divide_by_initial_world_size={divide} find_unused_parameters={find_unused}"
    coretorch.manual_seed(5)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 2)).to(dev)
    ref = copy.deepcopy(model)
    stats = copy.deepcopy(model)                 # the buffers: rank 1's forwards alone, with the trained weights
    ddp = DDP(model, bucket_cap_mb=0.0001, find_unused_parameters=find_unused)   # several buckets
    opt = coretorch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    ref_opt = coretorch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    data = [batches(r, dev) for r in range(world)]
    # the reference: one step per iteration of the longest rank
    ref_grads = []
    for it in range(max(NBATCH)):
        with coretorch.no_grad():
            for ps, pr in zip(stats.parameters(), ref.parameters()):
                ps.copy_(pr)
            stats(data[world - 1][it][0])
        active = [r for r in range(world) if it < NBATCH[r]]
        total = None
        for r in active:
            ref.zero_grad()
            loss_of(ref, *data[r][it]).backward()
            g = [p.grad.cpu().numpy().copy() for p in ref.parameters()]
            total = g if total is None else [a + b for a, b in zip(total, g)]
        avg = [t / (world if divide else len(active)) for t in total]
        ref_grads.append(avg)
        for p, a in zip(ref.parameters(), avg):
            p.grad = coretorch.tensor(a, device=dev)
        ref_opt.step()
    with ddp.join(divide_by_initial_world_size=divide):
        for it, (xb, yb) in enumerate(data[rank]):
            opt.zero_grad()
            loss_of(ddp, xb, yb).backward()
            close_all(f"{tag}: iteration {it} gradients == reference",
                      [p.grad.cpu().numpy() for p in ddp.parameters()], ref_grads[it])
            opt.step()
    close_all(f"{tag}: final parameters == single-process reference", params_np(ddp.module), params_np(ref))
    C.check(f"{tag}: final parameters identical on every rank", same_on_all_ranks(params_np(ddp.module)))
    close_all(f"{tag}: final buffers are the last rank's", [b.cpu().numpy() for b in ddp.module.buffers()],
              [b.cpu().numpy() for b in stats.buffers()])
    # after the block, DDP works as without it
    opt.zero_grad()
    loss_of(ddp, *data[0][0]).backward()
    C.check(f"{tag}: training after the join block", all(p.grad is not None for p in ddp.parameters()))


for dev in devices:
    for divide, find_unused in ((True, False), (False, False), (True, True)):
        C.run(f"[{dev}] join divide_by_initial_world_size={divide} find_unused_parameters={find_unused}",
              lambda: run(dev, divide, find_unused))

    # throw_on_early_termination: every rank raises as soon as one runs out
    coretorch.manual_seed(5)
    ddp = DDP(nn.Linear(4, 2).to(dev))
    data = batches(rank, dev)
    seen = 0
    try:
        with ddp.join(throw_on_early_termination=True):
            for xb, yb in data:
                loss_of(ddp, xb, yb).backward()
                seen += 1
        C.check(f"[{dev}] join throw_on_early_termination raises on every rank", False, "no exception")
    except RuntimeError as e:
        want = "Rank 0 exhausted all inputs." if rank == 0 else "Detected at least one rank that exhausted inputs"
        C.check(f"[{dev}] join throw_on_early_termination raises on every rank", want in str(e) and seen == 2,
                f"{seen} iterations: {e}")
    t = coretorch.ones(2, device=dev)
    dist.all_reduce(t)
    C.check(f"[{dev}] join throw_on_early_termination: collectives still line up", t.tolist() == [2.0, 2.0])

from coretorch.distributed.algorithms.join import Join, JoinHook, Joinable  # noqa: E402  (torch's import path)

C.check("Join importable as in torch", Join is dist.algorithms.Join and issubclass(DDP, Joinable))


class Counter(Joinable):
    """PyTorch's tutorial example: each iteration all-reduces a 1; joined ranks shadow it with a 0."""

    def __init__(self):
        super().__init__()
        self.total = 0.0
        self.last_joiner = None

    def __call__(self):
        Join.notify_join_context(self)
        t = coretorch.ones(1)
        dist.all_reduce(t)
        self.total += t.item()

    def join_hook(self, **kwargs):
        counter = self

        class Hook(JoinHook):
            def main_hook(self):
                dist.all_reduce(coretorch.zeros(1))

            def post_hook(self, is_last_joiner):
                counter.last_joiner = is_last_joiner
        return Hook()

    @property
    def join_device(self):
        return "cpu"

    @property
    def join_process_group(self):
        return dist.group.WORLD


counter = Counter()
with Join([counter]):
    for _ in range(NBATCH[rank]):
        counter()
# rank 0: 2 iterations with both ranks (2 + 2); rank 1: those and 2 alone (2 + 2 + 1 + 1)
C.check("a Joinable written as in PyTorch's tutorial", counter.total == [4.0, 6.0][rank]
        and counter.last_joiner == (rank == 1), (counter.total, counter.last_joiner))
dist.destroy_process_group()
C.dump()
