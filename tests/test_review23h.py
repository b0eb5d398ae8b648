"""Review 23h: torch.utils.data, second pass (PyTorch 2.13 is the spec): generic Dataset/Sampler/DataLoader
classes, the DataLoader's samplers for an IterableDataset, the multiprocessing_context property, worker-count
warnings per iterator, iterator pickling and base class, worker exceptions that take ``message=``, workers' thread
count, single-process iterators that survive an error, the TensorDataset batched gather (chosen per iterator),
sparse tensors refused by default_collate, TensorDataset without tensors."""
from __future__ import annotations

import pickle
import warnings

import pytest

import coretorch as torch
from coretorch.utils import data as D


class _Range(D.Dataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __getitem__(self, i):
        return i

    def __len__(self) -> int:
        return self.n


class _Iter(D.IterableDataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        info = D.get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


def test_dataset_and_sampler_are_generic():
    """PyTorch's Dataset, IterableDataset, Subset, ConcatDataset, StackDataset, Sampler and DataLoader are
    typing.Generic: ``class MySampler(Sampler[int])``, ``class MyData(Dataset[Tensor])`` and annotations such as
    ``loader: DataLoader[Tensor]`` are the documented idiom. Before: TypeError("type 'Sampler' is not subscriptable")
    when the class statement (or the def) ran."""
    class Longest(D.Sampler[int]):
        def __init__(self, data) -> None:
            self.data = data

        def __iter__(self):
            return iter(sorted(range(len(self.data)), key=lambda i: -len(self.data[i])))

        def __len__(self) -> int:
            return len(self.data)

    class Words(D.Dataset[str]):
        def __init__(self) -> None:
            self.words = ["a", "abc", "ab"]

        def __getitem__(self, i):
            return self.words[i]

        def __len__(self) -> int:
            return 3

    class Batches(D.Sampler[list[int]]):
        def __iter__(self):
            return iter([[0, 2], [1]])

    ds = Words()
    assert list(D.DataLoader(ds, sampler=Longest(ds), batch_size=2)) == [["abc", "ab"], ["a"]]
    assert list(D.DataLoader(ds, batch_sampler=Batches())) == [["a", "ab"], ["abc"]]
    for cls in (D.IterableDataset, D.Subset, D.ConcatDataset, D.StackDataset, D.DataLoader):
        assert cls[int].__origin__ is cls
    alias = D.DataLoader[tuple[torch.Tensor, torch.Tensor]]  # (an annotation, as evaluated without __future__)
    assert alias.__origin__ is D.DataLoader and len(alias(ds, batch_size=2)) == 2
    with pytest.raises(TypeError):  # (as PyTorch: a concrete sampler is not generic)
        D.SequentialSampler[int]


def test_sampler_takes_no_constructor_arguments():
    """PyTorch 2.13's Sampler has no __init__: Sampler(data_source) raises TypeError("Sampler() takes no
    arguments"). Before: accepted and ignored."""
    assert isinstance(D.Sampler(), D.Sampler)
    with pytest.raises(TypeError, match="takes no arguments"):
        D.Sampler(_Range(3))


def test_tensor_dataset_without_tensors():
    """PyTorch 2.13 builds TensorDataset() (its size check reads tensors[0] only per tensor): every sample is ()
    and len() raises IndexError. Before: IndexError at construction."""
    ds = D.TensorDataset()
    assert ds.tensors == ()
    assert ds[0] == ()
    with pytest.raises(IndexError):
        len(ds)
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        D.TensorDataset(torch.zeros(2), torch.zeros(3))


def test_iterable_dataset_loader_samplers():
    """With an IterableDataset PyTorch's loader has sampler=_InfiniteConstantSampler() (None forever) and, when
    batching, batch_sampler=BatchSampler(that sampler, batch_size, drop_last); len(iter(loader)) raises TypeError
    naming the sampler. Before: sampler and batch_sampler were None."""
    dl = D.DataLoader(_Iter(5), batch_size=2, drop_last=True)
    assert type(dl.sampler).__name__ == "_InfiniteConstantSampler"
    assert isinstance(dl.sampler, D.Sampler)
    assert isinstance(dl.batch_sampler, D.BatchSampler)
    assert dl.batch_sampler.sampler is dl.sampler
    assert (dl.batch_sampler.batch_size, dl.batch_sampler.drop_last) == (2, True)
    it = iter(dl.sampler)
    assert [next(it) for _ in range(3)] == [None, None, None]
    assert [b.tolist() for b in dl] == [[0, 1], [2, 3]]
    with pytest.raises(TypeError, match="_InfiniteConstantSampler"):
        len(iter(dl))
    unbatched = D.DataLoader(_Iter(3), batch_size=None)
    assert type(unbatched.sampler).__name__ == "_InfiniteConstantSampler"
    assert unbatched.batch_sampler is None
    assert list(unbatched) == [0, 1, 2]


def test_iterable_dataset_workers_through_the_batch_sampler():
    """Workers of an IterableDataset loader are sent the batch sampler's [None] * batch_size (PyTorch's index
    sampler); each worker keeps its last partial batch unless drop_last. Checks the structure after the loader's
    sampler change above."""
    got = [b.tolist() for b in D.DataLoader(_Iter(7), batch_size=2, num_workers=2, timeout=30)]
    assert got == [[0, 2], [1, 3], [4, 6], [5]]
    got = [b.tolist() for b in D.DataLoader(_Iter(7), batch_size=2, num_workers=2, drop_last=True, timeout=30)]
    assert got == [[0, 2], [1, 3], [4, 6]]
    assert list(D.DataLoader(_Iter(5), batch_size=None, num_workers=2, timeout=30)) == [0, 1, 2, 3, 4]


def test_multiprocessing_context_is_checked_on_assignment():
    """PyTorch's multiprocessing_context is a property: assigning a start method's name stores its context, and
    assigning one to a loader without workers raises ValueError. Before: a plain attribute (the string stayed a
    string; the check ran only in __init__)."""
    dl = D.DataLoader(_Range(3), num_workers=1)
    assert dl.multiprocessing_context is None
    dl.multiprocessing_context = "spawn"
    assert dl.multiprocessing_context.get_start_method() == "spawn"
    with pytest.raises(ValueError, match="should specify a valid start method"):
        dl.multiprocessing_context = "nope"
    with pytest.raises(TypeError, match="should be a valid context object"):
        dl.multiprocessing_context = 3
    single = D.DataLoader(_Range(3))
    with pytest.raises(ValueError, match=r"can only be used with multi-process loading \(num_workers > 0\), but got "
                                         r"num_workers=0"):
        single.multiprocessing_context = "fork"
    single.multiprocessing_context = None
    assert single.multiprocessing_context is None


def test_worker_number_warning_for_each_new_set_of_workers(monkeypatch):
    """PyTorch's check_worker_number_rationality() is public and runs in __init__ and again each time an iterator
    starts workers (two warnings for one epoch with too many workers). Before: a private method, run only in
    __init__."""
    import os
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        dl = D.DataLoader(_Range(2), num_workers=2, timeout=30)
        assert len(w) == 1
        assert [x.item() for x in dl] == [0, 1]
    msgs = [str(x.message) for x in w]
    assert len(msgs) == 2 and all("will create 2 worker processes in total" in m for m in msgs)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        dl.check_worker_number_rationality()
    assert len(w) == 1


@pytest.mark.parametrize("num_workers", [0, 1])
def test_loader_iterators_cannot_be_pickled(num_workers):
    """PyTorch's loader iterators raise NotImplementedError('{} cannot be pickled', <class name>) from
    __getstate__. Before: TypeError (cannot pickle 'generator') without workers, RuntimeError (Queue objects ...)
    with them."""
    it = iter(D.DataLoader(_Range(3), num_workers=num_workers, timeout=30 if num_workers else 0))
    with pytest.raises(NotImplementedError, match="cannot be pickled"):
        pickle.dumps(it)
    assert [x.item() for x in it] == [0, 1, 2]


class _MessageError(Exception):
    """An exception type constructed with ``message=`` (as some libraries' are)."""
    message = "default"

    def __init__(self, *, message: str) -> None:
        super().__init__(message)
        self.message = message


class _RaisesMessageError(_Range):
    def __getitem__(self, i):
        raise _MessageError(message="bad sample")


def test_worker_exception_taking_message_keyword_keeps_its_type():
    """PyTorch's ExceptionWrapper.reraise builds an exception type that has a ``message`` attribute with
    ``message=msg`` (its type is kept, with the worker's traceback). Before: the positional call failed and a
    RuntimeError came instead."""
    with pytest.raises(_MessageError) as info:
        list(D.DataLoader(_RaisesMessageError(2), num_workers=1, timeout=30))
    assert "Caught _MessageError in DataLoader worker process 0" in info.value.message
    assert "bad sample" in info.value.message


class _FailsAt1(_Range):
    def __getitem__(self, i):
        if i == 1:
            raise ValueError("bad sample 1")
        return i


@pytest.mark.parametrize("batch_size", [None, 1])
def test_single_process_iterator_continues_after_an_error(batch_size):
    """PyTorch's single-process iterator fetches each batch in __next__: after a batch raises, the next call
    goes on with the following batches (the skip-a-bad-sample idiom). Before: the batches came from a generator,
    which ended at the exception: the rest of the epoch was silently lost (StopIteration)."""
    it = iter(D.DataLoader(_FailsAt1(4), batch_size=batch_size))
    first = next(it)
    with pytest.raises(ValueError, match="bad sample 1"):
        next(it)
    rest = [int(x) for x in it]
    assert (int(first), rest) == (0, [2, 3])


def test_iterable_loader_continues_after_a_collate_error():
    """PyTorch: an exception from collate_fn ends only that batch of an IterableDataset loader; the dataset's
    iterator goes on. Before: the loader's generator ended (the remaining batches silently lost)."""
    def collate(batch):
        if batch == [2, 3]:
            raise RuntimeError("collate failed")
        return batch
    it = iter(D.DataLoader(_Iter(5), batch_size=2, collate_fn=collate))
    assert next(it) == [0, 1]
    with pytest.raises(RuntimeError, match="collate failed"):
        next(it)
    assert list(it) == [[4]]


@pytest.mark.parametrize("num_workers", [0, 1])
def test_tensor_dataset_batch_sampler_yielding_tensors_and_arrays(num_workers):
    """A batch sampler may yield index tensors, tuples or numpy arrays; PyTorch indexes the TensorDataset with
    each element, without a warning. Before: with workers, the batched gather copy-constructed a tensor index with
    tensor() (a UserWarning; an error under -W error)."""
    import numpy as np
    ds = D.TensorDataset(torch.arange(6.0), torch.arange(6))
    batches = [torch.tensor([0, 2]), (1, 3), np.array([4, 5])]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loader = D.DataLoader(ds, batch_sampler=batches, num_workers=num_workers, timeout=30 if num_workers else 0)
        got = [(x.tolist(), y.tolist()) for x, y in loader]
    assert got == [([0.0, 2.0], [0, 2]), ([1.0, 3.0], [1, 3]), ([4.0, 5.0], [4, 5])]


class _Threads(_Range):
    def __getitem__(self, i):
        return torch.get_num_threads()


def test_workers_use_one_thread():
    """PyTorch's worker loop calls torch.set_num_threads(1) first: get_num_threads() is 1 in every worker (N
    workers do not each start a full BLAS pool) and the main process keeps its own setting. Before: the workers
    kept the main process's thread count."""
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert list(D.DataLoader(_Threads(2), batch_size=None, num_workers=2, timeout=30)) == [1, 1]
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_dataloader_module_names_and_iterator_base_class():
    """PyTorch's torch.utils.data.dataloader has the iterator classes (_BaseDataLoaderIter, the base of both),
    _InfiniteConstantSampler, _DatasetKind (also in torch.utils.data.__all__; loader._dataset_kind is one of its
    values) and the dataset/sampler classes it imports: libraries import them from there. Before: ImportError
    for each, and the two iterators had no common base."""
    from coretorch.utils.data.dataloader import (BatchSampler, Dataset, IterableDataset, RandomSampler, Sampler,
                                                 SequentialSampler, _BaseDataLoaderIter, _DatasetKind,
                                                 _InfiniteConstantSampler, _MultiProcessingDataLoaderIter,
                                                 _SingleProcessDataLoaderIter)
    assert (Dataset, IterableDataset, Sampler) == (D.Dataset, D.IterableDataset, D.Sampler)
    assert (SequentialSampler, RandomSampler, BatchSampler) == (D.SequentialSampler, D.RandomSampler, D.BatchSampler)
    assert "_DatasetKind" in D.__all__
    single = iter(D.DataLoader(_Range(2)))
    assert isinstance(single, _SingleProcessDataLoaderIter) and isinstance(single, _BaseDataLoaderIter)
    multi = iter(D.DataLoader(_Range(2), num_workers=1, timeout=30))
    assert isinstance(multi, _MultiProcessingDataLoaderIter) and isinstance(multi, _BaseDataLoaderIter)
    assert [x.item() for x in multi] == [0, 1]
    assert D.DataLoader(_Range(2))._dataset_kind == _DatasetKind.Map == 0
    assert D.DataLoader(_Iter(2))._dataset_kind == _DatasetKind.Iterable == 1
    assert isinstance(D.DataLoader(_Iter(2)).sampler, _InfiniteConstantSampler)
    fetcher = _DatasetKind.create_fetcher(_DatasetKind.Map, _Range(5), True, D.default_collate, False)
    assert fetcher.fetch([3, 1]).tolist() == [3, 1]
    fetcher = _DatasetKind.create_fetcher(_DatasetKind.Iterable, _Iter(3), True, D.default_collate, True)
    assert fetcher.fetch([None, None]).tolist() == [0, 1]
    with pytest.raises(StopIteration):
        fetcher.fetch([None, None])


def test_tensor_dataset_collate_fn_assigned_after_init_is_used():
    """PyTorch reads loader.collate_fn when an iterator starts: a collate_fn assigned after DataLoader(...) (it is
    not a frozen attribute) collates the batches, as does a replaced default_collate_fn_map[Tensor]. Before: for a
    TensorDataset the batched gather that stands for default_collate was chosen in __init__, so both were silently
    ignored (the batches came back stacked)."""
    from coretorch.utils.data._utils.collate import collate_tensor_fn, default_collate_fn_map
    ds = D.TensorDataset(torch.arange(4.0))
    dl = D.DataLoader(ds, batch_size=2)
    dl.collate_fn = lambda batch: [tuple(float(t) for (t,) in batch)]
    assert list(dl) == [[(0.0, 1.0)], [(2.0, 3.0)]]
    dl = D.DataLoader(ds, batch_size=2, collate_fn=lambda batch: "custom")
    dl.collate_fn = D.default_collate
    assert [b[0].tolist() for b in dl] == [[0.0, 1.0], [2.0, 3.0]]
    default_collate_fn_map[torch.Tensor] = lambda batch, *, collate_fn_map=None: len(batch)
    try:
        assert list(D.DataLoader(ds, batch_size=2)) == [[2], [2]]
    finally:
        default_collate_fn_map[torch.Tensor] = collate_tensor_fn
    assert [b[0].tolist() for b in D.DataLoader(ds, batch_size=3)] == [[0.0, 1.0, 2.0], [3.0]]


def test_default_collate_refuses_sparse_tensors():
    """PyTorch's collate_tensor_fn raises RuntimeError("Batches of sparse tensors are not currently supported by
    the default collate_fn; ...") for sparse layouts. Before: the sparse samples were silently densified and
    stacked into a strided batch."""
    s = torch.sparse_coo_tensor([[0]], [1.0], (2,))
    with pytest.raises(RuntimeError, match="Batches of sparse tensors are not currently supported"):
        D.default_collate([s, s])
    with pytest.raises(RuntimeError, match="Batches of sparse tensors"):
        list(D.DataLoader([s, s], batch_size=2))
    assert D.default_collate([torch.ones(2), torch.zeros(2)]).tolist() == [[1.0, 1.0], [0.0, 0.0]]


@pytest.mark.parametrize("make", [lambda: D.SubsetRandomSampler(list(range(20))),
                                  lambda: D.WeightedRandomSampler([1.0] * 20, 20),
                                  lambda: D.RandomSampler(range(20))])
def test_random_samplers_draw_at_the_first_next(make):
    """PyTorch's samplers' __iter__ are generators: iter(sampler) draws nothing, the order comes from the
    generator's state at the first next() (seeding between iter() and the loop decides it). Before:
    SubsetRandomSampler and WeightedRandomSampler drew their order in iter(), before the seed."""
    it = iter(make())
    torch.manual_seed(0)
    first = list(it)
    torch.manual_seed(0)
    assert list(iter(make())) == first


def test_iterable_dataset_iterator_made_by_iter_loader():
    """PyTorch's single-process iterator makes the dataset's iterator when iter(loader) runs (its fetcher calls
    iter(dataset)): an __iter__ that counts epochs or raises does so at iter(loader). Before: only at the first
    next()."""
    class Epochs(D.IterableDataset):
        def __init__(self) -> None:
            self.epochs = 0

        def __iter__(self):
            self.epochs += 1
            return iter(range(3))

    ds = Epochs()
    loader = D.DataLoader(ds, batch_size=2)
    it = iter(loader)
    assert ds.epochs == 1
    assert [b.tolist() for b in it] == [[0, 1], [2]]

    class Broken(D.IterableDataset):
        def __iter__(self):
            raise RuntimeError("no data")

    with pytest.raises(RuntimeError, match="no data"):
        iter(D.DataLoader(Broken()))


def test_utils_worker_module():
    """PyTorch has torch.utils.data._utils.worker (WorkerInfo, get_worker_info, _generate_state: the numpy seed
    of a worker) and _utils.MP_STATUS_CHECK_INTERVAL / ExceptionWrapper; libraries import from there. The
    _generate_state values are PyTorch's (computed with PyTorch 2.13: the spec). Before: ModuleNotFoundError."""
    from coretorch.utils.data._utils import MP_STATUS_CHECK_INTERVAL, ExceptionWrapper  # noqa: F401
    from coretorch.utils.data._utils.worker import WorkerInfo, _generate_state, get_worker_info
    assert WorkerInfo is D.WorkerInfo and get_worker_info is D.get_worker_info
    assert get_worker_info() is None
    assert _generate_state(123456789012345, 2) == [2489945240, 1229698660, 1198667051, 1606050886]
    assert MP_STATUS_CHECK_INTERVAL == 5.0


def test_persistent_workers_warn_about_pin_memory_device_once():
    """PyTorch warns about pin_memory_device when an iterator is made; later epochs of persistent workers reuse
    it and do not warn again. Before: the warning came again every epoch."""
    loader = D.DataLoader(list(range(4)), num_workers=1, persistent_workers=True, pin_memory=True,
                          pin_memory_device="xyz", timeout=30)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(3):
            assert [x.item() for x in loader] == [0, 1, 2, 3]
    assert [str(x.message) for x in w if "pin_memory_device is deprecated" in str(x.message)] == [
        "pin_memory_device is deprecated, the current accelerator will be used as the device,"
        "ignore pin_memory_device='xyz'."]
