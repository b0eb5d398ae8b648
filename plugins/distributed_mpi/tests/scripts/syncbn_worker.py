"""SyncBatchNorm on 2 ranks against BatchNorm on the whole global batch in one process, on every available device.

Each rank holds half of a global batch (rank 0 the first rows, rank 1 the rest, of different sizes); the
reference is a BatchNorm with the same parameters over all rows. Outputs, input gradients and running
statistics must match per rank; parameter gradients summed over the ranks must match the reference's.
"""
from __future__ import annotations

import sys

import numpy as np
from _checks import Checks
from mpi4py import MPI

import coretorch
import coretorch.distributed as dist
import coretorch.nn as nn
from coretorch.testing import available_devices

dist.init_process_group("mpi")
rank, world = dist.get_rank(), dist.get_world_size()
comm = MPI.COMM_WORLD
C = Checks(rank)
devices = available_devices() if len(sys.argv) < 2 else sys.argv[1].split(",")
rng = np.random.default_rng(0)
x_all = rng.standard_normal((7, 3, 4, 2)) * 2 + 1
w_all = rng.standard_normal((7, 3, 4, 2))
rows = slice(0, 3) if rank == 0 else slice(3, 7)


def run(dev):
    ref = nn.BatchNorm2d(3).double().to(dev)
    with coretorch.no_grad():
        ref.weight.copy_(coretorch.tensor([1.5, -0.5, 2.0]))
        ref.bias.copy_(coretorch.tensor([0.1, 0.2, -0.3]))
    sync = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.BatchNorm2d(3).double())).to(dev)
    with coretorch.no_grad():
        sync[0].weight.copy_(ref.weight)
        sync[0].bias.copy_(ref.bias)
    xr = coretorch.tensor(x_all, device=dev, requires_grad=True)
    yr = ref(xr)
    (yr * coretorch.tensor(w_all, device=dev)).sum().backward()
    for step in range(2):
        xs = coretorch.tensor(x_all[rows], device=dev, requires_grad=True)
        ys = sync(xs)
        (ys * coretorch.tensor(w_all[rows], device=dev)).sum().backward()
        tag = f"[{dev}] syncbn step {step}"
        C.close(f"{tag}: output == global BatchNorm rows", ys.detach().cpu().numpy(),
                yr.detach().cpu().numpy()[rows], rtol=1e-10, atol=1e-10)
        C.close(f"{tag}: input grad == global BatchNorm rows", xs.grad.cpu().numpy(), xr.grad.cpu().numpy()[rows],
                rtol=1e-10, atol=1e-10)
        keep = 0.9 ** (step + 1)
        C.close(f"{tag}: running_var", sync[0].running_var.cpu().numpy(),
                keep + (1 - keep) * x_all.var(axis=(0, 2, 3), ddof=1), rtol=1e-10)
        C.close(f"{tag}: running_mean", sync[0].running_mean.cpu().numpy(),
                (1 - keep) * x_all.mean(axis=(0, 2, 3)), rtol=1e-10)
        gw = comm.allreduce(sync[0].weight.grad.cpu().numpy() / (step + 1), op=MPI.SUM)
        C.close(f"{tag}: summed weight grads == reference", gw, ref.weight.grad.cpu().numpy(), rtol=1e-10)
    sync.eval()
    C.close(f"[{dev}] syncbn eval uses running statistics", sync(coretorch.tensor(x_all[rows], device=dev)).detach()
            .cpu().numpy(), ((x_all[rows] - sync[0].running_mean.cpu().numpy()[:, None, None])
                             / np.sqrt(sync[0].running_var.cpu().numpy()[:, None, None] + 1e-5)
                             * np.array([1.5, -0.5, 2.0])[:, None, None] + np.array([0.1, 0.2, -0.3])[:, None, None]),
            rtol=1e-10)


for d in devices:
    C.run(f"[{d}] syncbn", lambda: run(d))
C.dump()
