"""Started by `coretorch run -n 2 launcher_worker.py A B`: each rank writes its rank, world size and argv."""
from __future__ import annotations

import json
import os
import sys

import coretorch
import coretorch.distributed as dist

dist.init_process_group()
t = coretorch.tensor([float(dist.get_rank())])
dist.all_reduce(t)
with open(os.path.join(os.environ["CT_OUT"], f"launch{dist.get_rank()}.json"), "w") as f:
    json.dump({"rank": dist.get_rank(), "world": dist.get_world_size(), "argv": sys.argv[1:], "sum": t.item()}, f)
dist.destroy_process_group()
