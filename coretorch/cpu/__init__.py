"""torch.cpu: the CPU as a device module, for device-agnostic code (``getattr(torch, device_type)``, PyTorch's
``torch.cpu`` is the same): always available, one device, nothing to wait for.  Streams and events exist so that
stream code runs on the CPU; they order nothing (the cpu backend runs each op when it is called).
``torch.cpu.amp`` (PyTorch's deprecated spellings of ``torch.amp`` for 'cpu') is imported on first use."""
from __future__ import annotations

import contextlib
import importlib
import os
import platform
from typing import Any

__all__ = ["is_available", "is_initialized", "device_count", "current_device", "set_device", "synchronize",
           "Stream", "StreamContext", "stream", "current_stream", "Event", "get_capabilities"]


def is_available() -> bool:
    """Always True."""
    return True


def is_initialized() -> bool:
    """Always True."""
    return True


def device_count() -> int:
    """1: the CPU is one device."""
    return 1


def current_device() -> str:
    """``"cpu"``."""
    return "cpu"


def set_device(device: Any) -> None:
    """Does nothing (there is one CPU device), as PyTorch's."""


def synchronize(device: Any = None) -> None:
    """Waits for nothing: the cpu backend has finished each op when it returns."""


class Stream:
    """``torch.cpu.Stream(priority=-1)``: a stream that orders nothing (CPU ops run when called)."""

    def __init__(self, priority: int = -1) -> None:
        self.priority = priority

    def wait_stream(self, stream: "Stream") -> None:
        """Nothing to wait for."""

    def wait_event(self, event: "Event") -> None:
        """Nothing to wait for."""

    def record_event(self, event: "Event | None" = None) -> "Event":
        """An event recorded on this stream (already complete)."""
        return event if event is not None else Event()

    def __repr__(self) -> str:
        return "<torch.cpu.Stream>"


class Event:
    """``torch.cpu.Event()``: complete as soon as recorded."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def record(self, stream: Stream | None = None) -> None:
        """Records (nothing to wait for afterwards)."""

    def wait(self, stream: Stream | None = None) -> None:
        """Nothing to wait for."""

    def query(self) -> bool:
        """True: complete."""
        return True

    def synchronize(self) -> None:
        """Returns at once."""


_default_stream = Stream()
_current = [_default_stream]


def current_stream(device: Any = None) -> Stream:
    """The current stream (the default one unless ``stream(...)`` set another)."""
    return _current[-1]


class StreamContext(contextlib.AbstractContextManager):
    """``with torch.cpu.StreamContext(s):`` makes ``s`` the current stream inside."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream

    def __enter__(self) -> None:
        _current.append(self.stream if self.stream is not None else _current[-1])

    def __exit__(self, *exc: Any) -> None:
        _current.pop()


def stream(stream: Stream) -> contextlib.AbstractContextManager:
    """``with torch.cpu.stream(s):`` (a :class:`StreamContext`)."""
    return StreamContext(stream)


def get_capabilities() -> dict[str, Any]:
    """What the CPU offers: PyTorch's keys that numpy's CPU dispatch also knows (``avx2``, ``fma3``, ``avx512_f``,
    ...), the architecture and the logical core count (PyTorch's others, cache sizes and sockets, are not read
    here)."""
    import numpy as np
    core = getattr(np, "_core", None) or getattr(np, "core")  # (numpy < 2: np.core)
    feats = getattr(core._multiarray_umath, "__cpu_features__", {})
    names = {"sse": "SSE", "sse2": "SSE2", "sse3": "SSE3", "ssse3": "SSSE3", "sse4_1": "SSE41", "sse4_2": "SSE42",
             "popcnt": "POPCNT", "avx": "AVX", "f16c": "F16C", "fma3": "FMA3", "avx2": "AVX2",
             "avx512_f": "AVX512F", "avx512_cd": "AVX512CD", "avx512_bw": "AVX512BW", "avx512_dq": "AVX512DQ",
             "avx512_vl": "AVX512VL", "avx512_ifma": "AVX512IFMA", "avx512_vbmi": "AVX512VBMI",
             "avx512_vbmi2": "AVX512VBMI2", "avx512_bitalg": "AVX512BITALG", "avx512_vpopcntdq": "AVX512VPOPCNTDQ",
             "avx512_vnni": "AVX512VNNI", "avx512_bf16": "AVX512_BF16", "avx512_fp16": "AVX512FP16"}
    caps: dict[str, Any] = {k: bool(feats.get(v, False)) for k, v in names.items()}
    caps["architecture"] = platform.machine()
    caps["num_logical_cores"] = os.cpu_count()
    return caps


def __getattr__(name: str) -> Any:
    if name == "amp":
        return importlib.import_module(".amp", __name__)
    raise AttributeError(f"module 'coretorch.cpu' has no attribute {name!r}")
