"""Without mpiexec: one process is world size 1; the API and DDP work as in a 1-rank job."""
from __future__ import annotations

import copy
import datetime
import sys

import numpy as np
from _checks import Checks

import coretorch
import coretorch.distributed as dist
import coretorch.nn as nn
import coretorch.nn.functional as F
from coretorch.testing import available_devices

hook = sys.excepthook
C = Checks(0)
for bad, exc in ((5, TypeError), (datetime.timedelta(0), ValueError)):
    try:
        dist.init_process_group(timeout=bad)
        C.check(f"init_process_group(timeout={bad!r}) raises", False)
    except exc as e:
        C.check(f"init_process_group(timeout={bad!r}) raises {exc.__name__}", "timeout" in str(e), e)
dist.init_process_group(backend="mpi", world_size=1, rank=0, timeout=datetime.timedelta(seconds=30))
C.check("world size 1, rank 0", dist.get_world_size() == 1 and dist.get_rank() == 0 and dist.is_initialized())
C.check("no abort hook for a single process", sys.excepthook is hook)
for dev in available_devices():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for op in ("SUM", "AVG", "MAX", "MIN", "PRODUCT"):
        t = coretorch.tensor(x, device=dev)
        dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
        C.close(f"[{dev}] all_reduce {op} is the identity", t.cpu().numpy(), x)
    t = coretorch.tensor(x, device=dev)
    dist.broadcast(t, src=0)
    out = [coretorch.zeros(2, 3, device=dev)]
    dist.all_gather(out, t)
    rs = coretorch.zeros(2, 3, device=dev)
    dist.reduce_scatter(rs, [t]).__class__
    C.close(f"[{dev}] broadcast/all_gather/reduce_scatter", np.stack([t.cpu().numpy(), out[0].cpu().numpy(),
                                                                       rs.cpu().numpy()]), np.stack([x, x, x]))
    coretorch.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).to(dev)
    ref = copy.deepcopy(m)
    ddp = nn.parallel.DistributedDataParallel(m)
    xb = coretorch.tensor(np.random.default_rng(1).normal(size=(5, 3)).astype(np.float32), device=dev)
    F.mse_loss(ddp(xb), coretorch.zeros(5, 2, device=dev)).backward()
    F.mse_loss(ref(xb), coretorch.zeros(5, 2, device=dev)).backward()
    C.close(f"[{dev}] DDP on one rank == the plain module", np.concatenate([p.grad.cpu().numpy().ravel()
                                                                            for p in m.parameters()]),
            np.concatenate([p.grad.cpu().numpy().ravel() for p in ref.parameters()]))
    with ddp.join():
        for _ in range(2):
            F.mse_loss(ddp(xb), coretorch.zeros(5, 2, device=dev)).backward()
    C.close(f"[{dev}] DDP.join() on one rank: gradients accumulate as without it",
            np.concatenate([p.grad.cpu().numpy().ravel() for p in m.parameters()]),
            3 * np.concatenate([p.grad.cpu().numpy().ravel() for p in ref.parameters()]), rtol=1e-5)
dist.barrier()
g = dist.new_group([0])
C.check("new_group([0])", dist.get_world_size(g) == 1)
s = coretorch.utils.data.DistributedSampler(list(range(7)))
C.check("DistributedSampler on one rank is the whole dataset once", sorted(s) == list(range(7)))
dist.destroy_process_group()
try:
    dist.init_process_group(world_size=2)
    C.check("world_size that MPI did not start raises", False)
except ValueError as e:
    C.check("world_size that MPI did not start raises", "mpiexec -n 2" in str(e), e)
C.dump()
