"""torch.profiler: PyTorch's profiler API (``profile`` with ``schedule``/``on_trace_ready``/``step``,
``record_function``, ``tensorboard_trace_handler``, ``ProfilerActivity``) on coretorch's range profiler
(``autograd.profiler``).

What it records: the ``record_function`` ranges a program enters and one ``ProfilerStep#N`` range per step while a
schedule records, as wall-clock host time; not per-op events (PyTorch's ``aten::mm`` rows): coretorch has no op-level
tracer.  A training script that profiles runs unchanged and its tables and Chrome traces hold those ranges."""
from __future__ import annotations

import enum
import os
import socket
import time
import warnings
from typing import Any, Callable, Iterable

from ..autograd import profiler as _legacy
from ..autograd.profiler import record_function

__all__ = ["profile", "schedule", "record_function", "ProfilerActivity", "ProfilerAction", "supported_activities",
           "tensorboard_trace_handler", "itt"]


class ProfilerActivity(enum.Enum):
    """The activities PyTorch's profiler can trace (coretorch traces host ranges: ``CPU``)."""
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    """What a schedule asks of a step."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set:
    """``{ProfilerActivity.CPU}``: the host is what coretorch's profiler times."""
    return {ProfilerActivity.CPU}


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """PyTorch's profiler schedule: after ``skip_first`` steps, cycles of ``wait`` idle, ``warmup`` and ``active``
    recorded steps (the last of each cycle saves: ``on_trace_ready``), ``repeat`` cycles (0: no end)."""
    if not (wait >= 0 and warmup >= 0 and active > 0 and repeat >= 0 and skip_first >= 0):
        raise AssertionError(f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} "
                             f"(need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
                             f"skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        n = wait + warmup + active
        if skip_first_wait:  # (the first cycle's wait skipped: every step shifts by it, so the cycles stay aligned)
            step += wait
        if repeat > 0 and step / n >= repeat:
            return ProfilerAction.NONE
        k = step % n
        if k < wait:
            return ProfilerAction.NONE
        if k < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if k < n - 1 else ProfilerAction.RECORD_AND_SAVE
    return schedule_fn


def _always_record(_step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False) -> Callable[[Any], None]:
    """An ``on_trace_ready`` that writes each trace into ``dir_name`` as ``<worker>.<time>.pt.trace.json[.gz]``."""
    def handler(prof: Any) -> None:
        os.makedirs(dir_name, exist_ok=True)
        name = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        path = os.path.join(dir_name, f"{name}.{time.time_ns() // 1_000_000}.pt.trace.json")
        if use_gzip:
            import gzip
            import shutil
            prof.export_chrome_trace(path)
            with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.remove(path)
        else:
            prof.export_chrome_trace(path)
    return handler


class profile:
    """Profile a block (``with profile(...) as prof:``), or steps of a loop with ``schedule`` and ``prof.step()``.
    Takes PyTorch's arguments; records host ranges (see the module docstring).

    Example:
        >>> with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        ...     with torch.profiler.record_function("forward"):
        ...         y = torch.ones(3) * 2
        >>> prof.key_averages()[0].key
        'forward'
    """

    def __init__(self, *, activities: Iterable[ProfilerActivity] | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[[Any], Any] | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config: Any = None, execution_trace_observer: Any = None,
                 acc_events: bool = False, use_cuda: bool | None = None, custom_trace_id_callback: Any = None) -> None:
        if use_cuda is not None:
            warnings.warn("The use_cuda parameter is deprecated, please use activities argument instead.",
                          FutureWarning, stacklevel=2)
        self.activities = set(activities) if activities is not None else supported_activities()
        self.schedule = schedule or _always_record
        self.on_trace_ready = on_trace_ready
        self.record_steps = schedule is not None
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self._trace: Any = None  # the range profiler recording now
        self._done: Any = None  # the last finished one
        self._step_range: Any = None

    def __enter__(self) -> "profile":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        """Begin: record if the schedule says so at step 0."""
        self._enter(self.current_action)

    def stop(self) -> None:
        """End: a trace being recorded is finished and handed to ``on_trace_ready``."""
        self._close_step()
        if self._trace is not None:
            self._finish()

    def step(self) -> None:
        """Mark the end of a step (of a ``schedule``d loop): the schedule decides what the next step does."""
        prev = self.current_action
        self._close_step()
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        if prev == ProfilerAction.RECORD_AND_SAVE and self._trace is not None:
            self._finish()
        self._enter(self.current_action)

    def _enter(self, action: ProfilerAction) -> None:
        if action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):  # (a warmup's events are dropped)
            if self._trace is None:
                self._trace = _legacy.profile()
                self._trace.__enter__()
            if self.record_steps:
                self._step_range = record_function(f"ProfilerStep#{self.step_num}")
                self._step_range.__enter__()

    def _close_step(self) -> None:
        if self._step_range is not None:
            self._step_range.__exit__(None, None, None)
            self._step_range = None

    def _finish(self) -> None:
        self._trace.__exit__(None, None, None)
        self._done, self._trace = self._trace, None
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _finished(self) -> Any:
        if self._done is None:
            raise RuntimeError("Profiler didn't finish running")
        return self._done

    def events(self) -> Any:
        """The recorded events of the last finished trace."""
        return self._finished().events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> Any:
        """One average per event name (``.table(sort_by=..., row_limit=...)`` prints them)."""
        return self._finished().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str) -> None:
        """Write the last finished trace as a Chrome trace JSON file."""
        self._finished().export_chrome_trace(path)


class _Itt:
    """``torch.profiler.itt``: Intel ITT ranges (none here: accepted, no effect)."""

    @staticmethod
    def is_available() -> bool:
        return False

    @staticmethod
    def range_push(msg: str) -> None:
        return None

    @staticmethod
    def range_pop() -> None:
        return None

    @staticmethod
    def mark(msg: str) -> None:
        return None


itt = _Itt()
