"""``torch.profiler``: the profiler scripts open as ``from torch.profiler import profile, record_function,
ProfilerActivity``.  coretorch records wall-clock host ranges only (:mod:`coretorch.autograd.profiler`): the
:class:`profile` here is that profiler with ``torch.profiler``'s signature (``activities``, ``schedule``,
``on_trace_ready``, ``step()``); no per-op or device events are recorded."""
from __future__ import annotations

import enum
from typing import Any, Callable, Iterable

from .autograd.profiler import EventList, FunctionEvent, record_function
from .autograd.profiler import profile as _autograd_profile

__all__ = ["ProfilerActivity", "ProfilerAction", "profile", "record_function", "schedule", "supported_activities",
           "EventList", "FunctionEvent"]


class ProfilerActivity(enum.Enum):
    """The kinds of activity PyTorch's profiler can trace (coretorch: host ranges whichever is asked for)."""
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    """What a ``schedule`` tells the profiler to do at a step."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set:
    """The activities this build can trace: the CPU (host) only."""
    return {ProfilerActivity.CPU}


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0,
             skip_first: int = 0, skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """PyTorch's step schedule: ``skip_first`` steps, then cycles of ``wait``, ``warmup`` and ``active`` steps
    (``repeat`` cycles, 0: forever); the last active step of a cycle is RECORD_AND_SAVE."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError("Invalid profiler schedule arguments")

    def fn(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        cycle = wait + warmup + active
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        mod = step % cycle
        if mod < wait:
            return ProfilerAction.NONE
        if mod < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod < cycle - 1 else ProfilerAction.RECORD_AND_SAVE
    return fn


class profile(_autograd_profile):
    """``torch.profiler.profile``: times the :func:`record_function` ranges entered in the block; ``step()`` counts
    steps, and ``on_trace_ready(prof)`` runs when the block ends (PyTorch also calls it at each saved schedule
    cycle; coretorch records the whole block as one trace)."""

    def __init__(self, activities: Iterable[ProfilerActivity] | None = None, *, schedule: Callable | None = None,
                 on_trace_ready: Callable | None = None, record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False, with_modules: bool = False,
                 experimental_config: Any = None, execution_trace_observer: Any = None, acc_events: bool = False,
                 use_cuda: bool | None = None, custom_trace_id_callback: Any = None) -> None:
        super().__init__(record_shapes=record_shapes, profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules)
        self.activities = set(activities) if activities is not None else supported_activities()
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.step_num = 0

    def start(self) -> None:
        """Begin recording (as entering the block)."""
        self.__enter__()

    def stop(self) -> None:
        """End recording (as leaving the block)."""
        self.__exit__(None, None, None)

    def step(self) -> None:
        """Mark the end of a training step."""
        self.step_num += 1

    def __exit__(self, *exc) -> None:
        super().__exit__(*exc)
        if self.on_trace_ready is not None and self.enabled:
            self.on_trace_ready(self)
