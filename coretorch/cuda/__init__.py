"""torch.cuda as on a machine without CUDA: coretorch's devices are ``cpu`` and ``opencl`` (see torch.accelerator).

What PyTorch answers without CUDA, this answers too: ``is_available()`` False, ``device_count()`` 0, seeding and
``empty_cache`` silently do nothing, memory statistics are 0; what needs a CUDA device (``current_device``,
``get_device_name``, ``synchronize``, ...) raises PyTorch's AssertionError.  ``torch.cuda.amp`` is imported on
first use.
"""
from __future__ import annotations

from typing import NoReturn

import importlib

from .._errors import OutOfMemoryError  # torch.cuda.OutOfMemoryError is torch.OutOfMemoryError

__all__ = ["is_available", "is_initialized", "device_count", "current_device", "get_device_name",
           "get_device_properties", "get_device_capability", "set_device", "synchronize", "empty_cache",
           "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed", "is_bf16_supported",
           "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "reset_peak_memory_stats", "memory_stats", "device", "init", "get_rng_state", "get_rng_state_all",
           "set_rng_state", "set_rng_state_all", "get_arch_list", "OutOfMemoryError"]

_NOT_COMPILED = ("Torch not compiled with CUDA enabled (coretorch has no CUDA backend: its devices are 'cpu' and "
                 "'opencl'; use torch.accelerator.current_accelerator() to pick the OpenCL device)")


def _no_cuda() -> NoReturn:
    raise AssertionError(_NOT_COMPILED)


def is_available() -> bool:
    """Whether CUDA can be used: always False (coretorch has no CUDA backend; see
    ``coretorch.accelerator`` for the OpenCL device).

    Example:
        >>> torch.cuda.is_available()
        False
    """
    return False


def is_initialized() -> bool:
    """Whether CUDA has been initialised: always False."""
    return False


def device_count() -> int:
    """The number of CUDA devices: always 0."""
    return 0


def init() -> None:
    """Initialise CUDA: raises ``AssertionError`` ("Torch not compiled with CUDA enabled"), as PyTorch
    without CUDA.
    """
    _no_cuda()


def current_device() -> int:
    """The index of the current CUDA device: raises ``AssertionError`` (no CUDA device)."""
    _no_cuda()


def set_device(device) -> None:
    """Select a CUDA device: raises ``AssertionError`` (no CUDA device).

    Args:
        device: a device index or ``torch.device``.
    """
    _no_cuda()


def get_device_name(device=None) -> str:
    """The name of a CUDA device: raises ``AssertionError`` (no CUDA device)."""
    _no_cuda()


def get_device_properties(device=None):
    """The properties of a CUDA device: raises ``AssertionError`` (no CUDA device)."""
    _no_cuda()


def get_device_capability(device=None):
    """The compute capability of a CUDA device: raises ``AssertionError`` (no CUDA device)."""
    _no_cuda()


def synchronize(device=None) -> None:
    """Wait for a CUDA device's work: raises ``AssertionError`` (no CUDA device; for the OpenCL device
    use ``coretorch.accelerator.synchronize()``).
    """
    _no_cuda()


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether a CUDA device supports bfloat16: always False (bfloat16 itself works on every
    coretorch device).
    """
    return False


# seeding is queued until CUDA initialises in PyTorch: without CUDA it never does, so these do nothing
def manual_seed(seed: int) -> None:
    """Seed the current CUDA device's generator: does nothing (PyTorch queues it until CUDA
    initialises, which never happens here).  ``seed`` must still be a number.

    Args:
        seed (int): the seed.
    """
    int(seed)


def manual_seed_all(seed: int) -> None:
    """Seed every CUDA device's generator: does nothing, as ``manual_seed``.

    Args:
        seed (int): the seed.
    """
    int(seed)


def seed() -> None:
    """Seed the CUDA generator randomly: does nothing."""
    pass


def seed_all() -> None:
    """Seed every CUDA generator randomly: does nothing."""
    pass


def initial_seed() -> int:
    """The CUDA generator's initial seed: raises ``AssertionError`` (no CUDA device)."""
    _no_cuda()


def empty_cache() -> None:
    """Release cached CUDA memory: does nothing (there is none)."""
    pass


def memory_stats(device=None) -> dict:
    """CUDA memory statistics: an empty dict."""
    return {}


def memory_allocated(device=None) -> int:
    """Bytes of CUDA memory held by tensors: always 0."""
    return 0


def max_memory_allocated(device=None) -> int:
    """Peak bytes of CUDA memory held by tensors: always 0."""
    return 0


def memory_reserved(device=None) -> int:
    """Bytes of CUDA memory held by the caching allocator: always 0."""
    return 0


def max_memory_reserved(device=None) -> int:
    """Peak bytes of CUDA memory held by the caching allocator: always 0."""
    return 0


def reset_peak_memory_stats(device=None) -> None:
    """Reset the peak memory statistics: does nothing."""
    pass


class device:
    """``with torch.cuda.device(i):`` — entering it raises (a negative index or None is a no-op, as PyTorch)."""

    def __init__(self, device) -> None:
        self.idx = getattr(device, "index", device)

    def __enter__(self):
        if self.idx is not None and self.idx >= 0:  # PyTorch's message for a build without CUDA
            raise RuntimeError("PyTorch was compiled without CUDA support (coretorch has no CUDA backend: its "
                               "devices are 'cpu' and 'opencl')")

    def __exit__(self, *exc):
        return False


def get_rng_state(device="cuda"):
    """A CUDA device's generator state: raises ``AssertionError`` (no CUDA device)."""
    _no_cuda()


def get_rng_state_all() -> list:
    """Every CUDA device's generator state: raises ``AssertionError`` (no CUDA device)."""
    _no_cuda()


def set_rng_state(new_state, device="cuda") -> None:
    """Set a CUDA device's generator state: does nothing (queued until CUDA initialises in
    PyTorch).
    """
    pass  # queued until CUDA initialises in PyTorch, so without CUDA: nothing happens


def set_rng_state_all(new_states) -> None:
    """Set every CUDA device's generator state: does nothing."""
    pass


def get_arch_list() -> list:
    """The CUDA architectures this build supports: an empty list."""
    return []


class _LegacyCudaMeta(type):
    """torch.cuda.FloatTensor & co: the names exist (scripts choose between them and the CPU ones); no tensor is
    one of them, and constructing one raises PyTorch's TypeError."""

    def __instancecheck__(cls, obj) -> bool:
        return False

    def __call__(cls, *args, **kwargs):
        raise TypeError(f"type torch.cuda.{cls.__name__} not available. {_NOT_COMPILED}")


for _n in ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor", "ShortTensor",
           "CharTensor", "ByteTensor", "BoolTensor"):
    globals()[_n] = _LegacyCudaMeta(_n, (), {"__module__": __name__})
del _n


def __getattr__(name: str):
    if name == "amp":  # coretorch.cuda.amp (GradScaler, autocast) is imported on first use
        return importlib.import_module(".amp", __name__)
    raise AttributeError(f"module 'coretorch.cuda' has no attribute '{name}' (coretorch has no CUDA backend: its "
                         f"devices are 'cpu' and 'opencl')")
