"""coretorch.autograd.profiler: PyTorch's legacy profiler API (``profile``, ``record_function``, ``emit_nvtx``).

coretorch records no per-op events: a ``profile`` block times the ``record_function`` ranges entered inside it
(wall clock, on the host; a range on the opencl device includes only the enqueue unless the code synchronises),
which is what programs that label their phases read back (``key_averages().table()``, ``export_chrome_trace``).
"""
from __future__ import annotations

import contextlib
import json
import threading
import time
from typing import Any

__all__ = ["profile", "record_function", "emit_nvtx", "emit_itt", "EventList", "FunctionEvent", "FunctionEventAvg",
           "kineto_available"]

_state = threading.local()  # the profile blocks active in this thread, innermost last


def _active() -> list:
    stack = getattr(_state, "stack", None)
    if stack is None:
        stack = _state.stack = []
    return stack


def kineto_available() -> bool:
    """False: coretorch has no Kineto tracer."""
    return False


class FunctionEvent:
    """One timed range: ``name``, ``start_us``/``end_us`` (microseconds since the profile began), its thread."""

    def __init__(self, id: int, name: str, thread: int, start_us: float, end_us: float) -> None:
        self.id, self.name, self.thread = id, name, thread
        self.start_us, self.end_us = start_us, end_us
        self.key = name
        self.count = 1

    @property
    def cpu_time_total(self) -> float:
        """The range's duration in microseconds."""
        return self.end_us - self.start_us

    @property
    def cpu_time(self) -> float:
        """The range's duration in microseconds (one call)."""
        return self.cpu_time_total

    self_cpu_time_total = cpu_time_total
    device_time_total = property(lambda self: 0.0, doc="0: no device timing is recorded.")

    def __repr__(self) -> str:
        return f"<FunctionEvent id={self.id} name={self.name} cpu_time={self.cpu_time_total:.3f}us>"


class FunctionEventAvg:
    """The events of one name added up: ``key``, ``count``, ``cpu_time_total`` and the mean ``cpu_time``."""

    def __init__(self, key: str) -> None:
        self.key, self.count, self.cpu_time_total = key, 0, 0.0

    def add(self, event) -> "FunctionEventAvg":
        """Fold one event (or average) in."""
        self.count += event.count
        self.cpu_time_total += event.cpu_time_total
        return self

    @property
    def cpu_time(self) -> float:
        """The mean duration of one call, in microseconds."""
        return self.cpu_time_total / self.count if self.count else 0.0

    self_cpu_time_total = property(lambda self: self.cpu_time_total, doc="``cpu_time_total``.")
    device_time_total = property(lambda self: 0.0, doc="0: no device timing is recorded.")

    def __repr__(self) -> str:
        return f"<FunctionEventAvg key={self.key} count={self.count} cpu_time_total={self.cpu_time_total:.3f}us>"


class EventList(list):
    """A list of events with PyTorch's summaries (``key_averages``, ``total_average``, ``table``)."""

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> "EventList":
        """One :class:`FunctionEventAvg` per event name, in first-seen order."""
        avgs: dict = {}
        for e in self:
            key = "ProfilerStep*" if e.key.startswith("ProfilerStep#") else e.key  # (PyTorch's steps in one row)
            avgs.setdefault(key, FunctionEventAvg(key)).add(e)
        return EventList(avgs.values())

    def total_average(self) -> FunctionEventAvg:
        """Every event added up (key ``"Total"``)."""
        total = FunctionEventAvg("Total")
        for e in self:
            total.add(e)
        return total

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        """A text table of the events: name, calls, total and mean time (sorted by ``sort_by`` when given)."""
        rows = list(self)
        if sort_by is not None:
            key = sort_by.replace("self_", "").replace("cuda", "device")
            rows.sort(key=lambda e: getattr(e, key, 0.0), reverse=True)
        rows = rows[:row_limit] if row_limit >= 0 else rows
        width = max([len("Name")] + [len(e.key) for e in rows])
        width = min(width, max_name_column_width)
        line = "-" * (width + 44)
        out = [header] if header else []
        out += [line, f"{'Name':<{width}}  {'# of Calls':>12}  {'CPU total':>12}  {'CPU time avg':>12}", line]
        for e in rows:
            out.append(f"{e.key[:width]:<{width}}  {e.count:>12}  {_fmt_us(e.cpu_time_total):>12}  "
                       f"{_fmt_us(e.cpu_time):>12}")
        out += [line, f"Self CPU time total: {_fmt_us(sum(e.cpu_time_total for e in self))}"]
        return "\n".join(out) + "\n"


def _fmt_us(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


class profile:
    """Times the :class:`record_function` ranges entered while the block runs (this thread).  Accepts PyTorch's
    options (``record_shapes``, ``profile_memory``, ``use_cuda``, ...); only wall-clock host ranges are recorded."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device: str | None = None,
                 record_shapes: bool = False, with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config=None, acc_events: bool = False,
                 custom_trace_id_callback=None) -> None:
        self.enabled = enabled
        self.function_events: EventList | None = None
        self._events: list = []
        self._t0 = 0.0
        self._entered = False

    def __enter__(self) -> "profile":
        if not self.enabled:
            return self
        if self._entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self._entered = True
        self._events = []
        self._t0 = time.perf_counter_ns()
        _active().append(self)
        return self

    def __exit__(self, *exc) -> None:
        if not self.enabled:
            return
        stack = _active()
        if self in stack:
            stack.remove(self)
        self.function_events = EventList(sorted(self._events, key=lambda e: (e.start_us, e.id)))
        self._entered = False

    def _record(self, name: str, start_ns: int, end_ns: int) -> None:
        self._events.append(FunctionEvent(len(self._events), name, threading.get_ident(),
                                          (start_ns - self._t0) / 1e3, (end_ns - self._t0) / 1e3))

    def _check_finish(self) -> EventList:
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self.function_events

    @property
    def events(self) -> EventList:
        """The recorded events (after the block)."""
        return self._check_finish()

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        """One average per event name."""
        return self._check_finish().key_averages(group_by_input_shape, group_by_stack_n)

    def total_average(self) -> FunctionEventAvg:
        """Every event added up."""
        return self._check_finish().total_average()

    def table(self, sort_by: str | None = None, row_limit: int = 100, **kwargs: Any) -> str:
        """The events as a text table (see :meth:`EventList.table`)."""
        return self._check_finish().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as a Chrome trace (``chrome://tracing``, Perfetto) JSON file."""
        events = [{"name": e.name, "ph": "X", "ts": e.start_us, "dur": e.cpu_time_total, "pid": 0, "tid": e.thread,
                   "cat": "user_annotation"} for e in self._check_finish()]
        with open(path, "w") as f:
            json.dump({"traceEvents": events}, f)

    def __str__(self) -> str:
        return self.table()


class record_function(contextlib.ContextDecorator):
    """Label a block (or, as a decorator, a function) so an active :class:`profile` times it under ``name``."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self.args = args
        self._start = 0
        self._profiles: list = []

    def _recreate_cm(self) -> "record_function":  # a decorated function's calls each time their own range
        return record_function(self.name, self.args)

    def __enter__(self) -> "record_function":
        self._profiles = list(_active())
        self._start = time.perf_counter_ns()
        return self

    def __exit__(self, *exc) -> None:
        end = time.perf_counter_ns()
        for p in self._profiles:
            p._record(self.name, self._start, end)
        self._profiles = []


class emit_nvtx(contextlib.nullcontext):
    """Accepted for PyTorch programs: there are no NVTX ranges to emit (no CUDA)."""

    def __init__(self, enabled: bool = True, record_shapes: bool = False) -> None:
        super().__init__()


class emit_itt(contextlib.nullcontext):
    """Accepted for PyTorch programs: there are no ITT ranges to emit."""

    def __init__(self, enabled: bool = True, record_shapes: bool = False) -> None:
        super().__init__()
