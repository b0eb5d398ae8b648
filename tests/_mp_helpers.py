"""Datasets and process targets for tests/test_data_workers.py and tests/test_multiprocessing.py (module-level, so
that spawned processes can import them)."""
from __future__ import annotations

import os
import random
import time

import numpy as np

import coretorch as torch
from coretorch.utils.data import Dataset, IterableDataset, get_worker_info


class SeedDataset(Dataset):
    """Sample i: (i, worker id, worker seed, pid, then draws from Python's random, coretorch and numpy)."""

    def __init__(self, n: int = 8) -> None:
        self.n = n
        self.offset = 0

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        w = get_worker_info()
        return torch.tensor([i + self.offset, w.id, w.seed, os.getpid(), random.randint(0, 10 ** 6),
                             int(torch.randint(0, 10 ** 6, ())), int(np.random.randint(0, 10 ** 6))])


def set_offset(worker_id: int) -> None:
    """A worker_init_fn: the worker's own dataset copy gets an offset."""
    get_worker_info().dataset.offset = 100 * (worker_id + 1)


class FailingDataset(Dataset):
    def __len__(self) -> int:
        return 6

    def __getitem__(self, i):
        if i == 3:
            raise ValueError("boom at index 3")
        return torch.tensor(float(i))


class ShardedStream(IterableDataset):
    """range(n), split between the workers by get_worker_info()."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        w = get_worker_info()
        return iter(range(w.id, self.n, w.num_workers) if w is not None else range(self.n))


class SlowDataset(Dataset):
    def __len__(self) -> int:
        return 2

    def __getitem__(self, i):
        time.sleep(0.5)
        return i


def add_rank(rank: int, t) -> None:
    t[rank] += rank + 1


def fill_from_queue(q_in, q_out) -> None:
    t = q_in.get()
    t.fill_(7.0)
    q_out.put(torch.arange(3.0) * 2)  # a private tensor goes back by value


def square(t):
    return t * t


def hogwild_train(rank: int, model, x, y, steps: int) -> None:
    """Train the shared ``model`` in this process (SGD on its shared parameters), as PyTorch's Hogwild example."""
    torch.manual_seed(rank)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()


class FirstIsSlow(Dataset):
    """Index 0 takes a while: with in_order=False the batches of the other worker come first."""

    def __len__(self) -> int:
        return 4

    def __getitem__(self, i):
        if i == 0:
            time.sleep(0.5)
        return i
