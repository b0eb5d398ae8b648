"""``DistributedSampler``: each rank iterates over its own shard of the dataset (``torch.utils.data``'s rules).

Every rank draws the same permutation (seeded with ``seed + epoch``) and takes every ``num_replicas``-th index
starting at its rank, so the shards are disjoint and together cover the dataset once per epoch; when the
length is not a multiple of ``num_replicas`` the permutation is padded with its own first indices (or, with
``drop_last``, cut) so that every rank gets the same number of samples.  Call ``set_epoch(epoch)`` at the
start of each epoch for a new order.
"""
from __future__ import annotations

import math
from typing import TypeVar

import numpy as np
from coretorch.utils.data import Sampler

_T_co = TypeVar("_T_co", covariant=True)

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler[_T_co]):  # (generic, as torch's: DistributedSampler[int])
    """A sampler that gives each rank its own shard of ``dataset`` (``torch.utils.data.DistributedSampler``).

    Every rank draws the same permutation (seeded with ``seed + epoch``) and takes every ``num_replicas``-th index
    from its rank on: the shards are disjoint, of equal length, and cover the dataset once per epoch (padded with
    repeated indices, or cut with ``drop_last``).  Call ``set_epoch`` at the start of every epoch.

    Args:
        dataset: a map-style dataset (with ``len``).
        num_replicas (int, optional): the number of shards (default: the default group's world size).
        rank (int, optional): this shard (default: this process's rank).
        shuffle (bool): permute the indices (default True).
        seed (int): the permutation's seed, the same on every rank (default 0).
        drop_last (bool): cut the tail instead of padding it (default False).
    """
    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            from . import api
            if not api.is_initialized():  # (PyTorch's get_world_size()/get_rank() error)
                raise ValueError("Default process group has not been initialized, please make sure to call "
                                 "init_process_group.")
            num_replicas = api.get_world_size() if num_replicas is None else num_replicas
            rank = api.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            indices = np.random.default_rng(self.seed + self.epoch).permutation(n).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad <= len(indices):
                indices += indices[:pad]
            else:
                indices += (indices * math.ceil(pad / len(indices)))[:pad]
        else:
            indices = indices[:self.total_size]
        assert len(indices) == self.total_size
        indices = indices[self.rank:self.total_size:self.num_replicas]
        assert len(indices) == self.num_samples
        return iter(indices)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Shuffle with ``seed + epoch``: call at the start of every epoch, with the same value on every rank."""
        self.epoch = epoch
