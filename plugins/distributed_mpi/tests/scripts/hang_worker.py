"""Jobs that used to hang for ever; each must end within seconds.  argv[1] is the scenario:

* ``timeout``: init_process_group(timeout=1.5 s); rank 1 sleeps, rank 0's all_reduce outlives the timeout;
* ``ddp_timeout``: the same in DistributedDataParallel's gradient all-reduce (rank 1 sleeps before backward);
* ``exit``: rank 1 calls sys.exit() while rank 0 goes on to an all_reduce;
* ``clean``: no destroy_process_group, rank 1 ends first after joining (async) the last all_reduce that rank 0
  joins late: the job must end normally, exit status 0.
"""
from __future__ import annotations

import datetime
import sys
import time

import coretorch
import coretorch.distributed as dist

mode = sys.argv[1]
dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=1.5) if "timeout" in mode else None)
rank = dist.get_rank()
t = coretorch.ones(4)
dist.all_reduce(t)                     # a collective that completes: the watchdog lets it through
if mode == "timeout":
    if rank == 1:
        time.sleep(60)
    print(f"waiting at {time.time():.3f}", flush=True)
    dist.all_reduce(t)
elif mode == "ddp_timeout":
    model = coretorch.nn.parallel.DistributedDataParallel(coretorch.nn.Linear(3, 2))
    loss = model(coretorch.ones(2, 3)).sum()
    if rank == 1:
        time.sleep(60)
    print(f"waiting at {time.time():.3f}", flush=True)
    loss.backward()
elif mode == "exit":
    if rank == 1:
        time.sleep(0.3)
        print(f"waiting at {time.time():.3f}", flush=True)
        sys.exit()
    dist.all_reduce(t)
elif mode == "clean":
    if rank == 1:
        dist.all_reduce(t, async_op=True)   # joined, never waited for: rank 0 must still complete it
        sys.exit()
    time.sleep(0.5)
    dist.all_reduce(t)
    print(f"rank 0 result {t.tolist()}", flush=True)
if mode != "clean":
    time.sleep(60)                     # never reached: the job was aborted
