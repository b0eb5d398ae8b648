"""coretorch.distributed benchmarks: all-reduce bandwidth against raw mpi4py, and DDP training throughput.

    python benchmarks/distributed.py            # launches its own `mpiexec` runs; --json for machine-readable

1. gradient all-reduce of a float32 buffer of 1 MB and 100 MB on 2 ranks: ``dist.all_reduce(tensor)`` (SUM, and
   AVG = what DDP does) on a cpu tensor, next to raw ``comm.Allreduce(MPI.IN_PLACE, array)`` on numpy arrays
   in the same run (interleaved, median of repeats).  Target: within 1.1x of raw mpi4py.  With an OpenCL
   device, the same through host staging.
2. MLP training (784-256-128-10, ReLU, cross-entropy, SGD) with DistributedDataParallel: samples/s on 2 ranks
   (each rank half of a global batch of 256) against 1 rank (the whole batch), one BLAS thread per rank.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def _worker_allreduce() -> dict:
    import numpy as np
    from mpi4py import MPI

    import coretorch
    import coretorch.distributed as dist
    from coretorch.testing import available_devices
    dist.init_process_group("mpi")
    comm = MPI.COMM_WORLD
    out = {}
    for mb, reps in ((1, 60), (100, 6)):
        n = mb * 1024 * 1024 // 4
        raw = np.random.default_rng(0).random(n, dtype=np.float32)
        t = coretorch.from_numpy(raw.copy())
        times = {"raw": [], "sum": [], "avg": []}
        for _ in range(reps):
            for name, fn in (("raw", lambda: comm.Allreduce(MPI.IN_PLACE, raw, op=MPI.SUM)),
                             ("sum", lambda: dist.all_reduce(t)),
                             ("avg", lambda: dist.all_reduce(t, op=dist.ReduceOp.AVG))):
                comm.Barrier()
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
        med = {k: statistics.median(v) for k, v in times.items()}
        row = {"raw_ms": med["raw"] * 1e3, "coretorch_sum_ms": med["sum"] * 1e3, "coretorch_avg_ms": med["avg"] * 1e3,
               "raw_GBps": mb / 1024 / med["raw"], "coretorch_sum_GBps": mb / 1024 / med["sum"],
               "ratio_sum": med["sum"] / med["raw"], "ratio_avg": med["avg"] / med["raw"]}
        if "opencl" in available_devices():
            d = coretorch.zeros(n, device="opencl")
            ts = []
            for _ in range(max(2, reps // 3)):
                comm.Barrier()
                t0 = time.perf_counter()
                dist.all_reduce(d)
                ts.append(time.perf_counter() - t0)
            row["opencl_staged_ms"] = statistics.median(ts) * 1e3
            row["ratio_opencl"] = statistics.median(ts) / med["raw"]
        out[f"{mb}MB"] = row
    dist.destroy_process_group()
    return out


def _worker_mlp(global_batch: int = 256, steps: int = 30) -> dict:
    import numpy as np

    import coretorch
    import coretorch.distributed as dist
    import coretorch.nn as nn
    import coretorch.nn.functional as F
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    coretorch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10)))
    opt = coretorch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    per = global_batch // world
    g = np.random.default_rng(rank)
    x = coretorch.tensor(g.normal(size=(per, 784)).astype(np.float32))
    y = coretorch.tensor(g.integers(0, 10, per))

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    for _ in range(3):
        step()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    dist.barrier()
    dt = time.perf_counter() - t0
    dist.destroy_process_group()
    return {"ranks": world, "global_batch": global_batch, "samples_per_s": global_batch * steps / dt,
            "ms_per_step": dt / steps * 1e3}


def _launch(n: int, what: str) -> dict:
    from coretorch_distributed_mpi.launch import find_mpiexec
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.run([find_mpiexec(), "-n", str(n), sys.executable, __file__, "--worker", what],
                          capture_output=True, text=True, timeout=600, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"mpiexec -n {n} {what} failed:\n{proc.stdout}\n{proc.stderr}")
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1]
    return json.loads(line)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", action="store_true")
    p.add_argument("--worker", choices=["allreduce", "mlp"], help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        res = _worker_allreduce() if a.worker == "allreduce" else _worker_mlp()
        import coretorch.distributed as dist  # noqa: F401  (rank 0 reports)
        from mpi4py import MPI
        if MPI.COMM_WORLD.Get_rank() == 0:
            print(json.dumps(res), flush=True)
        return 0
    res = {"allreduce_2_ranks": _launch(2, "allreduce"), "mlp_1_rank": _launch(1, "mlp"),
           "mlp_2_ranks": _launch(2, "mlp")}
    res["mlp_speedup_2_vs_1"] = res["mlp_2_ranks"]["samples_per_s"] / res["mlp_1_rank"]["samples_per_s"]
    if a.json:
        print(json.dumps(res, indent=2))
        return 0
    print("all-reduce on 2 ranks, float32, median (coretorch / raw mpi4py Allreduce on numpy, same run)")
    print(f"{'size':>6} {'raw ms':>9} {'SUM ms':>9} {'ratio':>6} {'AVG ms':>9} {'ratio':>6} {'raw GB/s':>9}"
          f" {'opencl ms':>10}")
    for size, r in res["allreduce_2_ranks"].items():
        ocl = f"{r['opencl_staged_ms']:10.2f}" if "opencl_staged_ms" in r else f"{'-':>10}"
        print(f"{size:>6} {r['raw_ms']:9.3f} {r['coretorch_sum_ms']:9.3f} {r['ratio_sum']:6.2f} "
              f"{r['coretorch_avg_ms']:9.3f} {r['ratio_avg']:6.2f} {r['raw_GBps']:9.2f} {ocl}")
    m1, m2 = res["mlp_1_rank"], res["mlp_2_ranks"]
    print(f"\nMLP 784-256-128-10, DDP, global batch {m1['global_batch']}, 1 BLAS thread per rank")
    print(f"  1 rank : {m1['samples_per_s']:9.0f} samples/s ({m1['ms_per_step']:.2f} ms/step)")
    print(f"  2 ranks: {m2['samples_per_s']:9.0f} samples/s ({m2['ms_per_step']:.2f} ms/step)  "
          f"speed-up {res['mlp_speedup_2_vs_1']:.2f}x on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
