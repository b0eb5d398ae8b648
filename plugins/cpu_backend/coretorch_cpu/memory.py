"""glibc's allocator set up for numpy's short-lived large arrays (issue 14's training-step speed).

By default glibc serves every allocation above 128 KiB with its own mmap and, once such a block is freed, raises
that threshold only up to the freed size while trimming the heap top back to the system beyond twice it.  A
training step allocates and frees megabytes of activations and gradients every step, so the same memory goes back
to the kernel and is faulted in again, zeroed, page by page: 5,500 page faults per step of the GPT benchmark
(benchmarks/transformer.py; 3,800 for the LSTM step), a third of its time on a virtual machine.  With the
thresholds glibc's own dynamic scheme tops out at (mmap above 32 MiB, trim beyond 64 MiB) the freed blocks stay
in the heap: 95 and 4 faults per step.  The cost is at most 64 MiB of freed memory kept by the process.

Applied once when the cpu backend starts, on glibc only; ``CORETORCH_CPU_MALLOC=0`` leaves the allocator alone,
as does any ``MALLOC_*_`` / ``GLIBC_TUNABLES`` setting of the user's own.
"""
from __future__ import annotations

import ctypes
import os

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3     # glibc's mallopt parameter numbers (malloc.h)
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 64 << 20


def _glibc() -> bool:
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")  # None: the name is not set here
    except (ValueError, OSError, AttributeError):   # not a glibc system (musl, macOS, Windows)
        return False


def tune_malloc() -> bool:
    """Set the thresholds above (True when set)."""
    if os.environ.get("CORETORCH_CPU_MALLOC", "1") == "0" or not _glibc():
        return False
    if "GLIBC_TUNABLES" in os.environ or any(k.startswith("MALLOC_") and k.endswith("_") for k in os.environ):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
