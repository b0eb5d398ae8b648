"""``coretorch.utils.data``: PyTorch's ``Dataset``, ``TensorDataset``, ``DataLoader`` and samplers.

    from coretorch.utils.data import TensorDataset, DataLoader
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True, generator=g, drop_last=False)
    for xb, yb in loader: ...

Same names, arguments and batching rules as ``torch.utils.data`` (``default_collate`` stacks tensors,
numpy arrays and numbers, and recurses into tuples, lists and dicts).  ``num_workers > 0`` loads in worker
processes as PyTorch does (``worker_init_fn``, ``persistent_workers``, ``prefetch_factor``, ``timeout``,
``multiprocessing_context``, ``get_worker_info()``; see ``coretorch.utils._data_workers``); batches come back in
sampler order (as they are ready with ``in_order=False``) and ``pin_memory`` has no effect.  ``generator`` may be
a ``coretorch.Generator`` (each use draws from it, so its seed and state decide the order) or a
``numpy.random.Generator``.  Without a generator,
shuffling draws from coretorch's global generator, so ``coretorch.manual_seed`` makes it reproducible.
A ``TensorDataset`` batched with the default collate is gathered with one indexing op per tensor (the
same result as stacking the samples, without a Python loop).
"""
from __future__ import annotations

import bisect
import collections.abc as _abc
import itertools
import math
import os
import sys
import types
import warnings
from typing import Any, Generic, TypeVar

import numpy as np

from .. import accelerator as _accelerator

from . import _collate, _data_workers
from ._collate import default_collate, default_convert
from ._data_workers import (WorkerInfo, _context, _IterableFetcher, _MapFetcher, _MultiProcessingDataLoaderIter,
                            _SingleProcessDataLoaderIter, get_worker_info)
from ._data_workers import _BaseDataLoaderIter  # noqa: F401  (the dataloader submodule's)

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "ChainDataset", "StackDataset", "Subset",
           "random_split",
           "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler", "DataLoader", "default_collate", "default_convert", "get_worker_info", "WorkerInfo",
           "_DatasetKind"]


_T_co = TypeVar("_T_co", covariant=True)


# ---- datasets -------------------------------------------------------------------------------------
class Dataset(Generic[_T_co]):
    """A map-style dataset: ``__getitem__(index)`` and ``__len__``.  Generic, as PyTorch's: scripts subclass
    ``Dataset[Tensor]``."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: "Dataset") -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset(Dataset[_T_co], _abc.Iterable[_T_co]):
    """A dataset that is an iterable of samples (``__iter__``); batched in order, never shuffled. Abstract, as
    PyTorch's (an ``Iterable``): a subclass defines ``__iter__``."""

    def __add__(self, other: "Dataset") -> "ChainDataset":  # type: ignore[override]  # (PyTorch's: a chain)
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are ``tuple(t[index] for t in tensors)``; every tensor has the same size in dimension 0."""

    def __init__(self, *tensors) -> None:
        # (no tensors is accepted, as PyTorch: len() then raises IndexError and every sample is ())
        if any(t.size(0) != tensors[0].size(0) for t in tensors):  # (PyTorch's assert)
            raise AssertionError(f"Size mismatch between tensors: sizes in dimension 0 are "
                                 f"{[t.size(0) for t in tensors]}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class ConcatDataset(Dataset[_T_co]):
    """The concatenation of several map-style datasets."""

    def __init__(self, datasets) -> None:
        self.datasets = list(datasets)
        if not self.datasets:  # (PyTorch's asserts)
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    @staticmethod
    def cumsum(sequence) -> list[int]:
        """The running totals of the datasets' lengths."""
        return list(itertools.accumulate(len(d) for d in sequence))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        i = bisect.bisect_right(self.cumulative_sizes, idx)
        return self.datasets[i][idx - (self.cumulative_sizes[i - 1] if i else 0)]


class ChainDataset(IterableDataset):
    """Iterable datasets chained one after another (lazily)."""

    def __init__(self, datasets) -> None:
        super().__init__()
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)  # type: ignore[arg-type]  # a sized one (else TypeError, as PyTorch)
        return total


class StackDataset(Dataset[_T_co]):
    """Samples of several datasets of one length side by side: a tuple (positional datasets) or a dict (keyword
    datasets) per index."""

    def __init__(self, *args, **kwargs) -> None:
        if args:
            if kwargs:
                raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like input/"
                                 "output, but both types are given.")
            self._length = len(args[0])
            if any(self._length != len(d) for d in args):
                raise ValueError("Size mismatch between datasets")
            self.datasets: tuple[Any, ...] | dict[str, Any] = args
        elif kwargs:
            values = list(kwargs.values())
            self._length = len(values[0])
            if any(self._length != len(d) for d in values):
                raise ValueError("Size mismatch between datasets")
            self.datasets = kwargs
        else:
            raise ValueError("At least one dataset should be passed")

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list) -> list:
        """The samples at ``indices`` (a batched fetch: each dataset's own ``__getitems__`` where it has one)."""
        def column(d) -> list:
            if not callable(getattr(d, "__getitems__", None)):
                return [d[i] for i in indices]
            items = d.__getitems__(indices)
            if len(items) != len(indices):
                raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, got {len(items)}")
            return items
        if isinstance(self.datasets, dict):
            cols = {k: column(d) for k, d in self.datasets.items()}
            return [{k: c[j] for k, c in cols.items()} for j in range(len(indices))]
        return list(zip(*(column(d) for d in self.datasets)))

    def __len__(self) -> int:
        return self._length


class Subset(Dataset[_T_co]):
    """The samples of ``dataset`` at ``indices``."""

    def __init__(self, dataset, indices) -> None:
        self.dataset = dataset
        self.indices = indices
        # PyTorch 2.13: the DataLoader fetches a batch through __getitems__, which would bypass an overriding
        # __getitem__
        if type(self).__getitem__ is not Subset.__getitem__ and type(self).__getitems__ is Subset.__getitems__:
            raise NotImplementedError(
                f"{type(self).__name__} overrides __getitem__ but not __getitems__. When subclassing Subset and "
                "overriding __getitem__, you must also override __getitems__ to ensure DataLoader works correctly "
                "with your custom logic. A simple implementation:\n\ndef __getitems__(self, indices):\n"
                "    return [self.__getitem__(idx) for idx in indices]")

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list) -> list:
        """The samples at ``indices`` (a batched fetch: the dataset's own ``__getitems__`` where it has one)."""
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


def _rng(generator) -> np.random.Generator:
    """A numpy stream for ``generator``: None -> seeded from coretorch's global generator (so that
    ``manual_seed`` makes it reproducible); a numpy Generator -> itself; a coretorch Generator -> seeded by one
    draw from it (so that it advances from one use to the next, and its state reproduces the order)."""
    if generator is None:
        from ..ops.creation import randint
        return np.random.default_rng(int(randint(0, 2 ** 62, ()).item()))
    if isinstance(generator, np.random.Generator):
        return generator
    if hasattr(generator, "initial_seed"):  # a coretorch.Generator: one draw from it seeds this use's stream
        from ..ops.random import randint
        return np.random.default_rng(int(randint(0, 2 ** 62, (), generator=generator,
                                                 device=generator.device).item()))
    raise TypeError(f"generator must be a coretorch.Generator or a numpy.random.Generator, not "
                    f"{type(generator).__name__}")


def random_split(dataset, lengths, generator=None) -> list:
    """Split into non-overlapping ``Subset``s of the given lengths (or fractions summing to 1)."""
    n = len(dataset)
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            counts.append(int(math.floor(n * frac)))
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    perm = _rng(generator).permutation(n).tolist()
    out: list = []
    start = 0
    for length in lengths:
        out.append(Subset(dataset, perm[start:start + length]))
        start += length
    return out


# ---- samplers -------------------------------------------------------------------------------------
class Sampler(Generic[_T_co]):
    """Iterates over dataset indices (or, for a batch sampler, lists of indices).  Generic, as PyTorch's
    (``Sampler[int]``, ``Sampler[list[int]]``); PyTorch 2.13's takes no constructor arguments."""

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """Yields the indices ``0, 1, ..., len(data_source) - 1`` in order (the DataLoader's sampler without
    ``shuffle``).

    Args:
        data_source (Sized): the dataset.
    """
    def __init__(self, data_source) -> None:
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A new random permutation each epoch (or ``num_samples`` draws with replacement)."""

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None,
                 generator=None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples="
                             f"{self.num_samples}")

    @property
    def num_samples(self) -> int:
        """The number of indices one epoch yields (``len(data_source)`` unless ``num_samples`` was given)."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        # lazily, as PyTorch: draws with replacement in chunks of 32, permutations one at a time, so that
        # num_samples=10**10 costs nothing up front
        n = len(self.data_source)
        gen = self.generator
        if isinstance(gen, np.random.Generator):
            draw, perm = (lambda k: gen.integers(0, n, k).tolist()), (lambda: gen.permutation(n).tolist())
        else:
            if gen is None:  # PyTorch: a fresh generator seeded by one draw from the global one
                from ..dtypes import int64
                from ..ops.creation import Generator, empty
                gen = Generator().manual_seed(int(empty((), dtype=int64).random_().item()))
            elif not hasattr(gen, "initial_seed"):
                raise TypeError(f"generator must be a coretorch.Generator or a numpy.random.Generator, not "
                                f"{type(gen).__name__}")
            from ..ops.random import randint, randperm
            dev = gen.device

            def draw(k):
                return randint(0, n, (k,), generator=gen, device=dev).tolist()

            def perm():
                return randperm(n, generator=gen, device=dev).tolist()
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from draw(32)
            yield from draw(self.num_samples % 32)
        else:
            for _ in range(self.num_samples // n):
                yield from perm()
            yield from perm()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """Yields the given indices in a random order, a new permutation each epoch.

    Args:
        indices (sequence of ints): the indices to sample from.
        generator (Generator, optional): the random generator.
    """
    def __init__(self, indices, generator=None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        # a generator, as PyTorch's: the permutation is drawn at the first next(), not by iter()
        for i in _rng(self.generator).permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights`` (torch.multinomial)."""

    def __init__(self, weights, num_samples: int, replacement: bool = True, generator=None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        from ..dtypes import float64
        from ..ops.creation import as_tensor
        w = as_tensor(weights, dtype=float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        self.weights, self.num_samples, self.replacement, self.generator = w, num_samples, replacement, generator

    def __iter__(self):
        # a generator, as PyTorch's: the draw happens at the first next(), not by iter()
        from ..ops.random import multinomial
        yield from multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator).tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size`` (the last one shorter unless
    ``drop_last``)."""

    def __init__(self, sampler, batch_size: int, drop_last: bool) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


# ---- loader ---------------------------------------------------------------------------------------
class _DatasetKind:
    """PyTorch's ``loader._dataset_kind`` values (scripts compare with them) and its fetcher factory."""
    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind: int, dataset, auto_collation: bool, collate_fn, drop_last: bool):
        """The object that turns one index (or list of indices) into a batch."""
        if kind == _DatasetKind.Map:
            return _MapFetcher(dataset, auto_collation, collate_fn, False)
        return _IterableFetcher(dataset, auto_collation, collate_fn, drop_last)


class DataLoader(Generic[_T_co]):
    """Iterates over ``dataset`` in batches, as ``torch.utils.data.DataLoader``.

    ``batch_size=None`` disables batching (each sample goes through ``collate_fn``, by default
    ``default_convert``).  ``shuffle`` and ``sampler`` are mutually exclusive, and ``batch_sampler`` excludes
    ``batch_size``, ``shuffle``, ``sampler`` and ``drop_last``, with PyTorch's error messages."""

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None, sampler=None,
                 batch_sampler=None, num_workers: int = 0, collate_fn=None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn=None, multiprocessing_context=None,
                 generator=None, *, prefetch_factor=None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.prefetch_factor = (2 if prefetch_factor is None else prefetch_factor) if num_workers > 0 else None
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self._iterator = None
        self.dataset = dataset
        self.num_workers = num_workers
        self.multiprocessing_context = multiprocessing_context  # (checked by the property's setter)
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        self._iterable = isinstance(dataset, IterableDataset)
        self._dataset_kind = _DatasetKind.Iterable if self._iterable else _DatasetKind.Map
        if self._iterable:
            if shuffle not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                                 f"but got batch_sampler={batch_sampler}")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")
        if self._iterable:  # (PyTorch's: the index sampler of the workers; its len() raises TypeError)
            sampler = _InfiniteConstantSampler()
        elif sampler is None:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self._auto_collation = batch_sampler is not None
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._len_called: int | None = None  # an iterable dataset's len() read by len(loader): checked when iterating
        self._initialized = True
        if num_workers > 0:
            self.check_worker_number_rationality()

    @property
    def multiprocessing_context(self):
        """The multiprocessing context of the workers (None: the default start method).  Assigning checks it
        as PyTorch does: a start method's name becomes its context, and it needs ``num_workers > 0``."""
        return self._mp_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, multiprocessing_context) -> None:
        if multiprocessing_context is not None:
            if self.num_workers == 0:
                raise ValueError(f"multiprocessing_context can only be used with multi-process loading "
                                 f"(num_workers > 0), but got num_workers={self.num_workers}")
            multiprocessing_context = _context(multiprocessing_context)
        self._mp_context = multiprocessing_context

    @property
    def _index_sampler(self):
        """What the iterators draw indices from: the batch sampler with auto-collation, else the sampler."""
        return self.batch_sampler if self._auto_collation else self.sampler

    def check_worker_number_rationality(self) -> None:
        """PyTorch's warning when more workers are asked for than the CPUs this process may use."""
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        if cpus is None or self.num_workers > cpus:
            suggest = ("DataLoader is not able to compute a suggested max number of worker in current system."
                       if cpus is None else
                       f"Our suggested max number of worker in current system is {cpus}"
                       f"{'' if hasattr(os, 'sched_getaffinity') else ' (`cpuset` is not taken into account)'}, "
                       "which is smaller than what this DataLoader is going to create.")
            warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. {suggest} "
                          "Please be aware that excessive worker creation might get DataLoader running slow or even "
                          "freeze, lower the worker number to avoid potential slowness/freeze if necessary.",
                          stacklevel=3)

    def __setattr__(self, attr: str, val: Any) -> None:
        if attr in _FROZEN and self.__dict__.get("_initialized"):  # (PyTorch: the iterators would not see it)
            raise ValueError(f"{attr} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(attr, val)

    def __len__(self) -> int:
        if self._iterable:
            n = self._len_called = len(self.dataset)  # TypeError without a length, as in PyTorch
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self.batch_sampler) if self.batch_sampler is not None else len(self.sampler)

    def _fetcher(self):
        if self._iterable:
            return _IterableFetcher(self.dataset, self._auto_collation, self.collate_fn, self.drop_last)
        # the batched gather stands for default_collate only: checked when an iterator starts, since collate_fn
        # may be assigned after __init__ and default_collate_fn_map[Tensor] replaced
        fast = (self.collate_fn is default_collate and type(self.dataset) is TensorDataset
                and _collate.default_collate_fn_map.get(_collate.Tensor) is _collate.collate_tensor_fn)
        return _MapFetcher(self.dataset, self._auto_collation, self.collate_fn, fast)

    def __iter__(self):
        if self.num_workers > 0 and self.persistent_workers and self._iterator is not None:
            self._iterator._reset()  # (a new epoch of the same iterator: PyTorch does not warn again)
            return self._iterator
        if self.pin_memory:
            self._pin_memory_warnings()
        if self.num_workers > 0:
            it = self._worker_iter()
            if self.persistent_workers:
                self._iterator = it
            return it
        if self.timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        # PyTorch's iterators all draw the workers' base seed, the single-process one too (and discard it there):
        # so the loader's generator, or the global one, advances alike with and without workers
        self._base_seed()
        sampler_iter, fetcher = iter(self._index_sampler), self._fetcher()
        if self._iterable:  # (PyTorch's fetcher calls iter(dataset) when the loader's iterator is made)
            fetcher.start()
        return _SingleProcessDataLoaderIter(self, sampler_iter, fetcher)

    def _pin_memory_warnings(self) -> None:
        """PyTorch's warnings for pin_memory=True (pinning itself is a no-op here: the opencl backend copies from
        ordinary host memory)."""
        if self.pin_memory_device:
            warnings.warn("pin_memory_device is deprecated, the current accelerator will be used as the device,"
                          f"ignore pin_memory_device='{self.pin_memory_device}'.", UserWarning, stacklevel=3)
        if not _accelerator.is_available():
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", UserWarning, stacklevel=3)

    def _base_seed(self) -> int:
        """One draw from the loader's generator (else the global one), as PyTorch's iterator makes."""
        from ..dtypes import int64
        from ..ops.creation import empty
        if isinstance(self.generator, np.random.Generator):
            return int(self.generator.integers(0, 2 ** 63 - 1))
        return int(empty((), dtype=int64, device=getattr(self.generator, "device", None))
                   .random_(generator=self.generator).item())

    def _worker_iter(self) -> _MultiProcessingDataLoaderIter:
        self.check_worker_number_rationality()  # (PyTorch warns again for each new set of workers)
        return _MultiProcessingDataLoaderIter(self, self._index_sampler, self._fetcher(), self._base_seed())


class _InfiniteConstantSampler(Sampler):
    """An IterableDataset loader's sampler, as PyTorch's: None forever (each worker iterates its own copy of the
    dataset; the index only asks for one more sample, or a batch of them through the BatchSampler)."""

    def __iter__(self):
        while True:
            yield None


#: DataLoader attributes its iterators are built from: PyTorch refuses to set them after __init__
_FROZEN = frozenset({"batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers"})


# PyTorch's submodule layout, for scripts that import from it (from torch.utils.data.dataloader import
# default_collate): this module stays one file, so its submodules are module objects registered under their dotted
# names, as os.path is
def _submodule(name: str, names: list[str], doc: str) -> None:
    m = types.ModuleType(f"{__name__}.{name}", doc)
    for n in names:
        setattr(m, n, globals()[n])
    m.__all__ = list(names)  # type: ignore[attr-defined]  # typeshed's ModuleType does not declare it
    sys.modules[m.__name__] = m
    globals()[name] = m


_utils = types.ModuleType(f"{__name__}._utils", "torch.utils.data._utils: the collate and worker modules.")
_utils.collate = sys.modules[f"{__name__}._utils.collate"] = _collate  # type: ignore[attr-defined]
_utils.worker = sys.modules[f"{__name__}._utils.worker"] = _data_workers  # type: ignore[attr-defined]
_utils.MP_STATUS_CHECK_INTERVAL = _data_workers.MP_STATUS_CHECK_INTERVAL  # type: ignore[attr-defined]
_utils.ExceptionWrapper = _data_workers.ExceptionWrapper  # type: ignore[attr-defined]
sys.modules[_utils.__name__] = _utils
_submodule("dataloader", ["DataLoader", "default_collate", "default_convert", "get_worker_info", "WorkerInfo",
                         # (what PyTorch's module imports or defines, and libraries import from it)
                         "Dataset", "IterableDataset", "Sampler", "SequentialSampler", "RandomSampler", "BatchSampler",
                         "_DatasetKind", "_InfiniteConstantSampler", "_BaseDataLoaderIter",
                         "_SingleProcessDataLoaderIter", "_MultiProcessingDataLoaderIter"],
           "torch.utils.data.dataloader: DataLoader and the collate functions.")
_submodule("dataset", ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "ChainDataset", "StackDataset",
                      "Subset", "random_split"],
           "torch.utils.data.dataset: the dataset classes and random_split.")
_submodule("sampler", ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
                      "BatchSampler"],
           "torch.utils.data.sampler: the samplers.")
