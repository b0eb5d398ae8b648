"""Rank FAIL (argv[1]) raises; the other rank is blocked in a collective.  Every rank must end within seconds."""
from __future__ import annotations

import sys
import time

import coretorch
import coretorch.distributed as dist

fail = int(sys.argv[1])
dist.init_process_group("mpi")
t = coretorch.ones(4)
dist.all_reduce(t)
if dist.get_rank() == fail:
    time.sleep(0.3)
    print(f"raising at {time.time():.3f}", flush=True)  # the test times the abort from here, not from start-up
    raise ValueError(f"boom on purpose (rank {dist.get_rank()})")
while True:                   # the healthy rank waits for a collective its peer never joins
    dist.all_reduce(t)
