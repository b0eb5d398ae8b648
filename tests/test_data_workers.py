"""DataLoader(num_workers > 0): loading in worker processes as PyTorch does (order, seeding, get_worker_info,
worker_init_fn, persistent_workers, errors, timeout, fork and spawn), and the lazy RandomSampler."""
from __future__ import annotations

import itertools
import os
import random

import numpy as np
import pytest

import coretorch as torch
from coretorch.utils._data_workers import _numpy_seed
from coretorch.utils.data import DataLoader, RandomSampler, TensorDataset, get_worker_info

from _mp_helpers import FailingDataset, FirstIsSlow, SeedDataset, ShardedStream, SlowDataset, set_offset


def _rows(loader):
    return [row for batch in loader for row in batch.tolist()]


def test_batches_come_from_two_worker_processes_in_sampler_order():
    rows = _rows(DataLoader(SeedDataset(8), batch_size=2, num_workers=2))
    assert [r[0] for r in rows] == list(range(8))
    # batches go round robin: batch k is loaded by worker k % 2, in another process
    assert [r[1] for r in rows] == [0, 0, 1, 1, 0, 0, 1, 1]
    pids = {r[3] for r in rows}
    assert len(pids) == 2 and os.getpid() not in pids
    assert get_worker_info() is None  # the main process is no worker


def test_workers_are_seeded_with_base_seed_plus_worker_id():
    rows = _rows(DataLoader(SeedDataset(4), batch_size=1, num_workers=2, generator=torch.Generator().manual_seed(3)))
    seeds = {r[1]: r[2] for r in rows}
    assert seeds[1] == seeds[0] + 1
    for wid in (0, 1):
        first = next(r for r in rows if r[1] == wid)  # each worker's first sample made the first draws
        assert first[4] == random.Random(seeds[wid]).randint(0, 10 ** 6)
        torch.manual_seed(seeds[wid])
        assert first[5] == int(torch.randint(0, 10 ** 6, ()))
        # numpy's global generator: PyTorch's seed for it (numpy's SeedSequence over id and base-seed halves)
        base = seeds[0]
        np_seed = np.random.SeedSequence([wid, base & 0xFFFFFFFF, base >> 32, 0]).generate_state(4)
        assert first[6] == np.random.RandomState(np_seed).randint(0, 10 ** 6)
    # PyTorch's _generate_state(123456789012345, 0), read off PyTorch by hand
    assert _numpy_seed(123456789012345, 0).tolist() == [2559321155, 1715343867, 28660248, 1748417355]
    # the loader's generator decides the base seed: same seed, same draws; another seed, others
    again = _rows(DataLoader(SeedDataset(4), batch_size=1, num_workers=2, generator=torch.Generator().manual_seed(3)))
    other = _rows(DataLoader(SeedDataset(4), batch_size=1, num_workers=2, generator=torch.Generator().manual_seed(4)))
    assert [r[2] for r in again] == [r[2] for r in rows] and [r[4:] for r in again] == [r[4:] for r in rows]
    assert [r[2] for r in other] != [r[2] for r in rows]


def test_worker_init_fn_and_worker_info():
    rows = _rows(DataLoader(SeedDataset(4), batch_size=2, num_workers=2, worker_init_fn=set_offset))
    # each worker's own copy of the dataset got its offset; the main process's copy did not change
    assert [r[0] for r in rows] == [100, 101, 202, 203]
    info = torch.utils.data.WorkerInfo(id=1, num_workers=2, seed=5, dataset=None)
    # (PyTorch 2.13: a frozen dataclass)
    assert repr(info) == ("WorkerInfo(id=1, num_workers=2, seed=5, dataset=None, rng=None, "
                          "worker_method='multiprocessing')")
    with pytest.raises(AttributeError, match="cannot assign to field 'id'"):
        info.id = 3


def test_an_error_in_a_worker_is_raised_in_the_main_process_with_its_traceback():
    it = iter(DataLoader(FailingDataset(), batch_size=2, num_workers=2))
    assert next(it).tolist() == [0.0, 1.0]
    with pytest.raises(ValueError) as e:
        next(it)
    msg = str(e.value)
    assert "Caught ValueError in DataLoader worker process 1." in msg
    assert "Traceback (most recent call last)" in msg and "boom at index 3" in msg and "_mp_helpers.py" in msg
    assert next(it).tolist() == [4.0, 5.0]  # the other batches still come, as in PyTorch


def test_iterable_dataset_split_by_worker_info():
    loader = DataLoader(ShardedStream(9), batch_size=2, num_workers=2)
    batches = [b.tolist() for b in loader]
    # worker 0 yields 0, 2, 4, 6, 8 and worker 1 yields 1, 3, 5, 7, batches alternate between them
    assert batches == [[0, 2], [1, 3], [4, 6], [5, 7], [8]]
    assert [b.tolist() for b in DataLoader(ShardedStream(9), batch_size=2, num_workers=2, drop_last=True)] == \
        [[0, 2], [1, 3], [4, 6], [5, 7]]


def test_persistent_workers_serve_every_epoch():
    ds = TensorDataset(torch.arange(10.0))
    loader = DataLoader(ds, batch_size=4, shuffle=True, num_workers=2, persistent_workers=True, prefetch_factor=1,
                        generator=torch.Generator().manual_seed(0))
    e1 = [v for (b,) in loader for v in b.tolist()]
    it = loader._iterator
    pids = [w.pid for w in it._workers]
    next(iter(loader))  # an epoch left early: the next one starts clean
    e2 = [v for (b,) in loader for v in b.tolist()]
    assert loader._iterator is it and [w.pid for w in it._workers] == pids and all(w.is_alive() for w in it._workers)
    assert sorted(e1) == sorted(e2) == list(range(10)) and e1 != e2
    it._shutdown_workers()
    assert not any(w.is_alive() for w in it._workers)


def test_workers_stop_after_the_epoch():
    loader = DataLoader(TensorDataset(torch.arange(4.0)), batch_size=2, num_workers=2)
    it = iter(loader)
    assert [b.tolist() for (b,) in it] == [[0.0, 1.0], [2.0, 3.0]]
    assert it._shutdown and not any(w.is_alive() for w in it._workers)


def test_in_order_false_returns_batches_as_they_are_ready():
    # worker 0 is busy with index 0 while worker 1 loads indices 1 and 3
    out = [b.tolist() for b in DataLoader(FirstIsSlow(), batch_size=1, num_workers=2, in_order=False)]
    assert sorted(sum(out, [])) == [0, 1, 2, 3] and out[0] == [1]
    assert [b.tolist() for b in DataLoader(FirstIsSlow(), batch_size=1, num_workers=2)] == [[0], [1], [2], [3]]


def test_timeout():
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.1 seconds"):
        next(iter(DataLoader(SlowDataset(), batch_size=1, num_workers=1, timeout=0.1)))


def test_spawned_workers():
    # slower (each spawned worker imports coretorch, about a second): the dataset and tensors travel pickled
    loader = DataLoader(TensorDataset(torch.arange(6.0), torch.arange(6) * 10), batch_size=2, num_workers=2,
                        multiprocessing_context="spawn")
    out = [(x.tolist(), y.tolist()) for x, y in loader]
    assert out == [([0.0, 1.0], [0, 10]), ([2.0, 3.0], [20, 30]), ([4.0, 5.0], [40, 50])]


def test_argument_errors():
    ds = TensorDataset(torch.arange(4.0))
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified in multiprocessing"):
        DataLoader(ds, prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(ds, persistent_workers=True)
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(ds, num_workers=-1)
    with pytest.raises(ValueError, match="multiprocessing_context option should specify a valid start method"):
        iter(DataLoader(ds, num_workers=1, multiprocessing_context="nope"))
    assert DataLoader(ds, num_workers=2).prefetch_factor == 2 and DataLoader(ds).prefetch_factor is None


# ---- RandomSampler: lazy draws ---------------------------------------------------------------------------
def test_random_sampler_with_replacement_is_lazy():
    s = RandomSampler(list(range(7)), replacement=True, num_samples=10 ** 10,
                      generator=torch.Generator().manual_seed(1))
    assert len(s) == 10 ** 10
    first = list(itertools.islice(iter(s), 70))  # nothing is drawn up front: 10**10 int64 would be 74 GiB
    assert all(0 <= v < 7 for v in first)
    # PyTorch's chunks: randint(n, (32,)) at a time from the sampler's generator
    g = torch.Generator().manual_seed(1)
    chunks = [torch.randint(0, 7, (32,), generator=g).tolist() for _ in range(3)]
    assert first == (chunks[0] + chunks[1] + chunks[2])[:70]
    tail = list(RandomSampler(list(range(7)), replacement=True, num_samples=35,
                              generator=torch.Generator().manual_seed(1)))
    g = torch.Generator().manual_seed(1)
    assert tail == torch.randint(0, 7, (32,), generator=g).tolist() + torch.randint(0, 7, (3,), generator=g).tolist()


def test_random_sampler_without_replacement_draws_one_permutation_at_a_time():
    got = list(RandomSampler(list(range(5)), num_samples=12, generator=torch.Generator().manual_seed(2)))
    g = torch.Generator().manual_seed(2)
    perms = [torch.randperm(5, generator=g).tolist() for _ in range(3)]
    assert got == perms[0] + perms[1] + perms[2][:2]
    rng_order = list(RandomSampler(list(range(5)), generator=np.random.default_rng(4)))
    np.testing.assert_array_equal(rng_order, np.random.default_rng(4).permutation(5))


@pytest.mark.parametrize("generator", ["torch", "global"])
def test_epochs_are_the_same_with_and_without_workers(generator):
    """PyTorch's DataLoader iterators (the single-process one too) each draw the workers' base seed from the loader's
    generator (else the global one) when an epoch starts, so switching ``num_workers`` keeps every epoch's order.
    coretorch drew it only for worker iterators: from the second epoch on, ``num_workers=0`` and ``2`` shuffled
    differently (and a loader without workers left the global generator one draw behind PyTorch's)."""
    ds = TensorDataset(torch.arange(40))

    def epochs(workers):
        torch.manual_seed(4)
        g = torch.Generator().manual_seed(1) if generator == "torch" else None
        dl = DataLoader(ds, batch_size=8, shuffle=True, num_workers=workers, generator=g)
        out = [torch.cat([b[0] for b in dl]).tolist() for _ in range(3)]
        return out, torch.randint(0, 2 ** 30, (4,)).tolist()   # (where the global generator stands after)
    (e0, after0), (e2, after2) = epochs(0), epochs(2)
    assert e0 == e2 and after0 == after2
    assert sorted(e0[1]) == list(range(40)) and e0[0] != e0[1] != e0[2]
