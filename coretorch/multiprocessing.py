"""torch.multiprocessing: Python's multiprocessing, plus PyTorch's ``spawn`` and sharing-strategy switches.

As in PyTorch, everything of the standard module is here (``Process``, ``Queue``, ``Pool``,
``set_start_method``, ...), and tensors and modules travel between processes: a cpu tensor after
``share_memory_()`` (``Module.share_memory()`` for a model) is passed as its shared memory (Hogwild-style
training: every process updates the same parameters), any other tensor by value (see ``coretorch._shared``).
"""
from __future__ import annotations

import multiprocessing as _mp
import multiprocessing.connection as _connection
import signal
import sys
import time
import traceback
from multiprocessing import *  # noqa: F401,F403

from . import _shared  # noqa: F401  (tensors pickle; share_memory_; multiprocessing's reducers)

__all__ = list(_mp.__all__) + ["spawn", "start_processes", "ProcessContext", "ProcessExitedException",
                               "ProcessRaisedException", "set_sharing_strategy", "get_sharing_strategy",
                               "get_all_sharing_strategies"]

_STRATEGIES = {"file_descriptor", "file_system"}
_strategy = ["file_descriptor"]


def get_all_sharing_strategies() -> set:
    """The sharing strategies that ``set_sharing_strategy`` accepts:
    ``{"file_descriptor", "file_system"}``.
    """
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    """The current sharing strategy (``"file_descriptor"`` unless set; shared tensors travel as
    file descriptors under either).
    """
    return _strategy[0]


def set_sharing_strategy(new_strategy: str) -> None:
    """Recorded: shared tensors travel as file descriptors under either strategy (memfd buffers have no name)."""
    if new_strategy not in _STRATEGIES:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}: one of {sorted(_STRATEGIES)}")
    _strategy[0] = new_strategy


class ProcessException(Exception):
    def __init__(self, msg: str, error_index: int, pid: int) -> None:
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A spawned process raised: the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A spawned process exited with a nonzero code (or a signal)."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int, signal_name: str | None = None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _wrap(fn, i: int, args: tuple, error_queue) -> None:
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        error_queue.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes ``start_processes``/``spawn`` started with ``join=False``: ``join()`` waits for
    them and raises the first failure.
    """
    def __init__(self, processes: list, error_queues: list) -> None:
        self.processes, self.error_queues = processes, error_queues
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list:
        """The process ids of the started processes, in rank order."""
        return [int(p.pid) for p in self.processes]

    def _join_all(self, timeout: float) -> None:
        end = time.monotonic() + timeout
        for p in self.processes:
            p.join(max(0.0, end - time.monotonic()))

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait (at most ``timeout`` seconds) for any process to fail or all to finish, as PyTorch: the first
        failure ends the others (SIGTERM after ``grace_period``, SIGKILL if they outlive another) and raises;
        returns whether every process has finished."""
        if not self.sentinels:
            return True
        error = None
        for sentinel in _connection.wait(list(self.sentinels), timeout=timeout):
            i = self.sentinels.pop(sentinel)
            self.processes[i].join()
            if self.processes[i].exitcode != 0:
                error = i
                break
        if error is None:
            return not self.sentinels
        if grace_period is not None:
            self._join_all(grace_period)
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        self._join_all(30 if grace_period is None else grace_period)
        for p in self.processes:
            if p.is_alive():
                p.kill()
            p.join()
        failed, q = self.processes[error], self.error_queues[error]
        if not q.empty():
            raise ProcessRaisedException(f"\n\n-- Process {error:d} terminated with the following error:\n{q.get()}",
                                         error, failed.pid)
        code = failed.exitcode
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"<Unknown signal {-code}>"
            raise ProcessExitedException(f"process {error:d} terminated with signal {name}", error, failed.pid, code,
                                         name)
        raise ProcessExitedException(f"process {error:d} terminated with exit code {code:d}", error, failed.pid, code)


def start_processes(fn, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
                    start_method: str = "spawn"):
    """Run ``fn(i, *args)`` in ``nprocs`` processes (i = 0 .. nprocs-1)."""
    ctx = _mp.get_context(start_method)
    processes, queues = [], []
    for i in range(nprocs):
        q = ctx.SimpleQueue()
        # typeshed's BaseContext (get_context of a str) lacks Process; every concrete context has it
        p = ctx.Process(target=_wrap, args=(fn, i, tuple(args), q), daemon=daemon)  # type: ignore[attr-defined]
        p.start()
        processes.append(p)
        queues.append(q)
    context = ProcessContext(processes, queues)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
          start_method: str = "spawn"):
    """``torch.multiprocessing.spawn``: ``fn(i, *args)`` in ``nprocs`` fresh processes."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
