"""``torch.utils.benchmark``'s :class:`Timer` (the tutorials time ops with ``Timer(stmt=..., globals=...)
.blocked_autorange().mean``): :mod:`timeit` underneath, PyTorch's block-size estimate and :class:`Measurement`
statistics.  One thread: ``num_threads`` is recorded, not applied."""
from __future__ import annotations

import statistics
import timeit
from typing import Any, Callable

__all__ = ["Timer", "Measurement"]


class Measurement:
    """The per-run times of a :class:`Timer` (seconds): ``raw_times`` are block times over ``number_per_run``."""

    def __init__(self, number_per_run: int, raw_times: list, task_spec: Any = None,
                 metadata: dict | None = None) -> None:
        self.number_per_run = number_per_run
        self.raw_times = list(raw_times)
        self.task_spec = task_spec
        self.metadata = metadata

    @property
    def times(self) -> list:
        """The time of one run of the statement, per measured block."""
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.times)

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def iqr(self) -> float:
        t = sorted(self.times)
        if len(t) < 2:
            return 0.0
        q = statistics.quantiles(t, n=4, method="inclusive")
        return q[2] - q[0]

    def __repr__(self) -> str:
        label = getattr(self.task_spec, "stmt", "")
        m = self.median
        unit, scale = ("s", 1.0) if m >= 1 else ("ms", 1e3) if m >= 1e-3 else ("us", 1e6) if m >= 1e-6 \
            else ("ns", 1e9)
        return (f"<coretorch.utils.benchmark.Measurement object at {hex(id(self))}>\n{label}\n"
                f"  Median: {m * scale:.2f} {unit}\n  IQR:    {self.iqr * scale:.2f} {unit} "
                f"({len(self.times)} measurements, {self.number_per_run} runs per measurement, 1 thread)")


class _TaskSpec:
    def __init__(self, stmt: str, setup: str, label, sub_label, description, num_threads: int) -> None:
        self.stmt, self.setup, self.label, self.sub_label = stmt, setup, label, sub_label
        self.description, self.num_threads = description, num_threads


class Timer:
    """Time ``stmt`` (Python source) run with ``globals`` after ``setup``, as PyTorch's ``Timer``."""

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer: Callable[[], float] = timeit.default_timer, globals: dict | None = None,
                 label: str | None = None, sub_label: str | None = None, description: str | None = None,
                 env: str | None = None, num_threads: int = 1, language: Any = None) -> None:
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        self._task_spec = _TaskSpec(stmt, setup, label, sub_label, description, num_threads)
        self._timer = timeit.Timer(stmt=stmt, setup=(global_setup + "\n" + setup) if global_setup else setup,
                                   timer=timer, globals=dict(globals or {}))

    def _measure(self, number: int) -> float:
        return self._timer.timeit(number=number)

    def timeit(self, number: int = 1000000) -> Measurement:
        """One block of ``number`` runs (after one warm-up run)."""
        self._measure(1)
        return Measurement(number, [self._measure(number)], self._task_spec)

    def _block_size(self, min_run_time: float) -> int:
        # PyTorch's estimate: grow the block tenfold until the timer's overhead is negligible against it
        overhead = statistics.median([self._measure(0) for _ in range(5)])
        number = 1
        while True:
            t = self._measure(number)
            if (overhead / t <= 1e-4 if t > 0 else False) and t >= min_run_time / 1000 or t > min_run_time:
                return number
            number *= 10

    def blocked_autorange(self, callback: Callable[[int, float], None] | None = None,
                          min_run_time: float = 0.2) -> Measurement:
        """Blocks of an estimated size until ``min_run_time`` seconds have been measured."""
        number = self._block_size(min_run_time)
        times: list = []
        total = 0.0
        while total < min_run_time or not times:
            t = self._measure(number)
            if callback is not None:
                callback(number, t)
            times.append(t)
            total += t
        return Measurement(number, times, self._task_spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01, max_run_time: float = 10.0,
                           callback: Callable[[int, float], None] | None = None) -> Measurement:
        """Blocks until the IQR is within ``threshold`` of the median (at least ``min_run_time``, at most
        ``max_run_time`` seconds)."""
        number = self._block_size(min_run_time=0.05)
        times: list = []
        total = 0.0
        while total < max_run_time:
            t = self._measure(number)
            if callback is not None:
                callback(number, t)
            times.append(t)
            total += t
            if total >= min_run_time and len(times) > 3:
                m = Measurement(number, times, self._task_spec)
                if m.iqr / m.median < threshold:
                    return m
        return Measurement(number, times, self._task_spec)
