"""DataLoader worker processes (``num_workers > 0``), as PyTorch's ``_MultiProcessingDataLoaderIter``.

Each worker gets the dataset (inherited under fork, pickled under spawn), uses one BLAS thread
(``set_num_threads(1)``, as PyTorch's), seeds Python's ``random`` and coretorch
with ``base_seed + worker_id`` and numpy's global generator with PyTorch's ``_generate_state`` (numpy's
``SeedSequence`` over the worker id and the two halves of the base seed), sets
``get_worker_info()``, runs ``worker_init_fn(worker_id)``, then fetches and collates the batches whose indices the
main process sends it (round robin, ``prefetch_factor`` batches ahead per worker) and sends the batches back
(tensors pickled by value).  The main process returns them in sampler order (as they come with
``in_order=False``); an exception in a worker is raised again in the main process with the worker's traceback in
its message.
"""
from __future__ import annotations

import dataclasses
import itertools
import multiprocessing as _mp
import os
import queue
import random
import sys
import traceback
import warnings
from typing import Any

import numpy as np

from ..ops.creation import as_tensor, manual_seed

__all__ = ["WorkerInfo", "get_worker_info"]

#: seconds between the main process's checks that the workers are alive (while it waits for a batch)
MP_STATUS_CHECK_INTERVAL = 5.0
#: seconds between a worker's checks that it should stop: the main process is gone, or it set the done event (the
#: stop message may never come: an iterator collected by the garbage collector with its queues already finalised)
_WORKER_POLL_INTERVAL = 0.25

_worker_info = None


@dataclasses.dataclass(frozen=True, slots=True)
class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker: ``id``, ``num_workers``, ``seed``, ``dataset`` (the
    worker's own copy), ``rng`` and ``worker_method``.  A frozen dataclass, as PyTorch 2.13's (assigning a field
    raises ``dataclasses.FrozenInstanceError``)."""
    id: int
    num_workers: int
    seed: int
    dataset: Any
    rng: Any = None
    worker_method: str | None = "multiprocessing"


def get_worker_info():
    """Inside a DataLoader worker: its ``WorkerInfo``; in the main process: None."""
    return _worker_info


# ---- messages between the processes ------------------------------------------------------------------------
class _IterableDatasetStopIteration:
    """A worker's iterable dataset is exhausted."""

    def __init__(self, worker_id: int) -> None:
        self.worker_id = worker_id


class _ResumeIteration:
    """A new epoch with persistent workers: reset the fetcher (and acknowledge)."""


class _KeyErrorMessage(str):
    """KeyError prints its message with repr(): this keeps the traceback readable, as PyTorch does."""

    def __repr__(self) -> str:
        return self


class ExceptionWrapper:
    """An exception caught in a worker, with its traceback as text (tracebacks do not pickle)."""

    def __init__(self, where: str) -> None:
        exc_type, exc, _ = sys.exc_info()
        assert exc is not None  # made in an except block
        self.exc_type = exc_type
        self.exc_msg = "".join(traceback.format_exception(exc_type, exc, exc.__traceback__))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):  # (PyTorch: an exception type that takes message=)
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:  # an exception type whose constructor wants other arguments
            raise RuntimeError(msg) from None
        raise exception


# ---- fetching (shared by the in-process loader and the workers) -------------------------------------------
class _MapFetcher:
    """Batches of a map-style dataset from lists of indices (or single samples without auto-collation)."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, fast_tensor_dataset: bool) -> None:
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn
        self.fast = fast_tensor_dataset

    def reset(self) -> None:
        pass

    def fetch(self, index):
        ds = self.dataset
        if not self.auto_collation:
            return self.collate_fn(ds[index])
        if self.fast:
            # one gather per tensor: the batch default_collate would stack, without the Python loop
            idx = as_tensor(index, device=ds.tensors[0].device)  # (a list, or a batch sampler's tensor or array)
            return [t[idx] if t.device == idx.device else t[idx.to(t.device)] for t in ds.tensors]  # (collate's list)
        getitems = getattr(ds, "__getitems__", None)
        data = getitems(index) if getitems is not None else [ds[i] for i in index]
        return self.collate_fn(data)


class _IterableFetcher:
    """Batches of an iterable dataset: ``len(index)`` samples (auto-collation) or one sample per fetch."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool) -> None:
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn
        self.drop_last = drop_last
        self._it = None

    def reset(self) -> None:
        self._it = None

    def start(self) -> None:
        """Make the dataset's iterator now (else at the first fetch: a worker's fetcher is pickled first)."""
        self._it = iter(self.dataset)

    def fetch(self, index):
        if self._it is None:
            self._it = iter(self.dataset)
        if not self.auto_collation:
            return self.collate_fn(next(self._it))
        data = list(itertools.islice(self._it, len(index)))
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


# ---- the worker process ------------------------------------------------------------------------------------
def _numpy_seed(base_seed: int, worker_id: int) -> np.ndarray:
    """The seed PyTorch gives numpy's global generator in a worker (its ``_generate_state`` is numpy's SeedSequence
    hash of these four 32-bit words)."""
    return np.random.SeedSequence([worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32, 0]).generate_state(4)


def _generate_state(base_seed: int, worker_id: int) -> list[int]:
    """PyTorch's name for the numpy seed of a worker (``torch.utils.data._utils.worker._generate_state``)."""
    return _numpy_seed(base_seed, worker_id).tolist()


def _seed_worker(seed: int, base_seed: int, worker_id: int) -> None:
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(_numpy_seed(base_seed, worker_id))


def _worker_loop(iterable: bool, fetcher, index_queue, data_queue, done_event, base_seed: int, init_fn,
                 worker_id: int, num_workers: int, parent_pid: int) -> None:
    global _worker_info
    try:
        from .._compat import set_num_threads
        set_num_threads(1)  # (as PyTorch's workers: one BLAS thread each, so that N workers do not oversubscribe)
        seed = base_seed + worker_id
        _seed_worker(seed, base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=fetcher.dataset)
        init_exception = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
        except Exception:
            init_exception = ExceptionWrapper(f"in DataLoader worker process {worker_id}")
        iteration_end = False
        while True:
            try:
                r = index_queue.get(timeout=_WORKER_POLL_INTERVAL)
            except queue.Empty:
                if done_event.is_set() or os.getppid() != parent_pid:
                    break
                continue
            if isinstance(r, _ResumeIteration):
                data_queue.put((r, None))
                iteration_end = False
                fetcher.reset()
                continue
            if r is None:  # the main process asks to stop
                break
            if done_event.is_set() or iteration_end:
                continue
            idx, index = r
            data: Any  # a batch, or what the main process re-raises or counts as the end
            if init_exception is not None:
                data, init_exception = init_exception, None
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as e:
                    if isinstance(e, StopIteration) and iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(f"in DataLoader worker process {worker_id}")
            data_queue.put((idx, data))
            del data, idx, index, r
    except KeyboardInterrupt:
        pass
    if done_event.is_set():
        data_queue.cancel_join_thread()  # results nobody will read must not keep this process alive
        data_queue.close()


# ---- the main process --------------------------------------------------------------------------------------
def warn_past_len(loader, n: int, length: int) -> None:
    """PyTorch's warning once a loader of an IterableDataset yields more batches than the dataset's len() that
    ``len(loader)`` had read when the iterator started (PyTorch compares the batches with the samples)."""
    if n <= length or not loader._iterable:
        return
    msg = (f"Length of IterableDataset {loader.dataset} was reported to be {length}(when accessing len(dataloader)), "
           f"but {n} samples have been fetched. ")
    if loader.num_workers > 0:
        msg += ("For multiprocessing data-loading, this could be caused by not properly configuring the "
                "IterableDataset replica at each worker. Please see "
                "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for examples.")
    warnings.warn(msg, stacklevel=3)


class _BaseDataLoaderIter:
    """What both loader iterators are, as PyTorch's base class (scripts test ``isinstance`` with it): an iterator
    whose len() is the index sampler's (an IterableDataset's has none: TypeError) and that refuses pickling."""
    _loader: Any

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return len(self._loader._index_sampler)

    def __getstate__(self):
        raise NotImplementedError("{} cannot be pickled", type(self).__name__)  # (PyTorch's message, as it is)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """The iterator of a DataLoader without workers, as PyTorch's: ``len()`` is the loader's."""

    def __init__(self, loader, sampler_iter, fetcher) -> None:
        # the batches are fetched in __next__ (not by a generator): an exception from one batch leaves the
        # iterator usable for the next ones, as PyTorch's (a generator would end at the first exception)
        self._loader, self._sampler_iter, self._fetcher, self._num_yielded = loader, sampler_iter, fetcher, 0
        self._len_called = loader._len_called  # (as PyTorch: read when the iterator starts)

    def __next__(self):
        data = self._fetcher.fetch(next(self._sampler_iter))
        self._num_yielded += 1
        if self._len_called is not None:
            warn_past_len(self._loader, self._num_yielded, self._len_called)
        return data


def _context(ctx):
    if ctx is None:
        return _mp.get_context()  # the start method PyTorch uses too: the global default (fork on Linux)
    if isinstance(ctx, str):
        if ctx not in _mp.get_all_start_methods():
            raise ValueError(f"multiprocessing_context option should specify a valid start method in "
                             f"{_mp.get_all_start_methods()!r}, but got multiprocessing_context={ctx!r}")
        return _mp.get_context(ctx)
    if not hasattr(ctx, "Process"):
        raise TypeError(f"multiprocessing_context option should be a valid context object or a string specifying "
                        f"the start method, but got multiprocessing_context={ctx}")
    return ctx


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """The iterator of a DataLoader with ``num_workers > 0``."""

    def __init__(self, loader, index_sampler, fetcher, base_seed: int) -> None:
        self._loader = loader
        self._num_workers = nw = loader.num_workers
        self._iterable = loader._iterable
        self._index_sampler = index_sampler
        self._prefetch_factor = loader.prefetch_factor
        if self._prefetch_factor <= 0:  # (DataLoader accepts 0; PyTorch's iterator refuses it: it would fetch nothing)
            raise AssertionError("prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter")
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        self._in_order = loader.in_order
        ctx = _context(loader.multiprocessing_context)
        self._shutdown = False
        self._result_queue = ctx.Queue()
        self._done_event = ctx.Event()
        self._index_queues, self._workers = [], []
        for i in range(nw):
            iq = ctx.Queue()
            iq.cancel_join_thread()
            w = ctx.Process(target=_worker_loop, args=(self._iterable, fetcher, iq, self._result_queue,
                                                       self._done_event, base_seed, loader.worker_init_fn, i, nw,
                                                       os.getpid()), daemon=True)
            w.start()
            self._index_queues.append(iq)
            self._workers.append(w)
        self._reset(first=True)

    def _reset(self, first: bool = False) -> None:
        self._sampler_iter = iter(self._index_sampler)
        self._send_idx = self._rcvd_idx = self._num_yielded = 0
        self._len_called = self._loader._len_called  # (as PyTorch: read when an epoch starts)
        self._task_info: dict = {}
        self._tasks_outstanding = 0
        self._status = [True] * self._num_workers
        self._cycle = itertools.cycle(range(self._num_workers))
        if not first:  # persistent workers: each acknowledges the new epoch after its stale results
            for iq in self._index_queues:
                iq.put(_ResumeIteration())
            pending = self._num_workers
            while pending:
                idx, _ = self._get_data()
                if isinstance(idx, _ResumeIteration):
                    pending -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_put_index(self) -> None:
        if self._tasks_outstanding >= self._prefetch_factor * self._num_workers:
            return
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):
            wid = next(self._cycle)
            if self._status[wid]:
                break
        else:
            return  # every worker is done (iterable dataset)
        self._index_queues[wid].put((self._send_idx, index))
        self._task_info[self._send_idx] = (wid,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _try_get_data(self, timeout: float):
        try:
            return True, self._result_queue.get(timeout=timeout)
        except queue.Empty:
            dead = [w for i, w in enumerate(self._workers) if self._status[i] and not w.is_alive()]
            if dead:
                pids = ", ".join(str(w.pid) for w in dead)
                self._shutdown_workers()
                raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly") from None
            return False, None

    def _get_data(self):
        if self._timeout > 0:
            ok, data = self._try_get_data(self._timeout)
            if not ok:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            return data
        while True:
            ok, data = self._try_get_data(MP_STATUS_CHECK_INTERVAL)
            if ok:
                return data

    def __next__(self):
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._status[info[0]]):
                    break
                self._rcvd_idx += 1
                if self._task_info.pop(self._rcvd_idx - 1, None) is not None:  # its worker's iterable ended
                    self._tasks_outstanding -= 1
                    self._try_put_index()
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                return self._process(info[1])
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(data, _IterableDatasetStopIteration):
                self._status[data.worker_id] = False
                self._task_info.pop(idx, None)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                if not self._in_order:  # in_order=False: whatever is ready first
                    del self._task_info[idx]
                    return self._process(data)
                self._task_info[idx] += (data,)  # early: kept until its turn (batches come back in order)
                continue
            del self._task_info[idx]
            self._rcvd_idx += 1
            return self._process(data)

    def _process(self, data):
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        self._num_yielded += 1
        if self._len_called is not None:
            warn_past_len(self._loader, self._num_yielded, self._len_called)
        return data

    def _shutdown_workers(self) -> None:
        if self._shutdown:
            return
        self._shutdown = True
        self._done_event.set()
        for iq in self._index_queues:
            try:
                iq.put(None)
            except (ValueError, OSError):
                pass
        for w in self._workers:
            w.join(timeout=MP_STATUS_CHECK_INTERVAL)
            if w.is_alive():
                w.terminate()
        for iq in self._index_queues:
            iq.close()
        self._result_queue.cancel_join_thread()
        self._result_queue.close()

    def __del__(self) -> None:
        try:
            self._shutdown_workers()
        except Exception:  # interpreter shutdown: the daemon workers go with the process
            pass
