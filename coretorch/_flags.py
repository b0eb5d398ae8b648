"""Top-level switches of PyTorch's API that scripts set on their first lines: ``set_warn_always``, anomaly mode's
``set_anomaly_enabled`` (the same state as ``autograd.set_detect_anomaly``), the deprecated CPU autocast accessors
(``get_autocast_cpu_dtype``, ...: coretorch.amp's cpu settings, with PyTorch's DeprecationWarning),
``set_flush_denormal`` and ``init_num_threads``; and ``torch.GradScaler`` (``torch.amp.GradScaler``)."""
from __future__ import annotations

import builtins
import warnings

from . import dtypes as _dt
from .amp import GradScaler
from .amp import autocast_mode as _am
from .autograd import anomaly_mode as _anomaly
from .amp.autocast_mode import autocast_decrement_nesting, autocast_increment_nesting
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled

__all__ = ["GradScaler", "set_warn_always", "is_warn_always_enabled", "is_anomaly_enabled", "set_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "set_flush_denormal", "get_autocast_cpu_dtype", "set_autocast_cpu_dtype",
           "set_autocast_cpu_enabled", "is_autocast_cpu_enabled", "init_num_threads",
           "autocast_increment_nesting", "autocast_decrement_nesting",
           "get_autocast_gpu_dtype", "set_autocast_gpu_dtype", "get_autocast_xla_dtype", "set_autocast_xla_dtype",
           "is_autocast_xla_enabled", "set_autocast_xla_enabled", "get_autocast_ipu_dtype", "set_autocast_ipu_dtype",
           "is_autocast_ipu_enabled", "set_autocast_ipu_enabled"]

_warn_always = [False]


def set_warn_always(b: builtins.bool, /) -> None:
    """Whether warnings that PyTorch issues once per process are issued every time (recorded; coretorch's warnings
    go through Python's ``warnings``, whose filters decide repetition)."""
    if not isinstance(b, builtins.bool):
        raise RuntimeError(f"setWarnOnlyOnce expects a bool, but got {type(b).__name__}")
    _warn_always[0] = b


def is_warn_always_enabled() -> builtins.bool:
    """What ``set_warn_always`` set (False by default)."""
    return _warn_always[0]


def set_anomaly_enabled(enabled: builtins.bool, check_nan: builtins.bool = True) -> None:
    """Switch anomaly detection on or off (``autograd.set_detect_anomaly(enabled, check_nan)``'s state)."""
    _anomaly.state.enabled, _anomaly.state.check_nan = builtins.bool(enabled), builtins.bool(check_nan)


def set_flush_denormal(mode: builtins.bool) -> builtins.bool:
    """Whether flushing denormal floats to zero could be set: False, coretorch's kernels (numpy, OpenCL) keep
    denormals and have no such mode, so nothing changes (PyTorch returns True where its CPU supports it)."""
    return False


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.", DeprecationWarning, stacklevel=3)


def get_autocast_cpu_dtype() -> _dt.dtype:
    """Deprecated: ``get_autocast_dtype('cpu')``."""
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return _am.get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype: _dt.dtype) -> None:
    """Deprecated: ``set_autocast_dtype('cpu', dtype)``."""
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    _am.set_autocast_dtype("cpu", dtype)


def set_autocast_cpu_enabled(enabled: builtins.bool) -> None:
    """Deprecated: ``set_autocast_enabled('cpu', enabled)``."""
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    _am.set_autocast_enabled("cpu", enabled)


def is_autocast_cpu_enabled() -> builtins.bool:
    """Deprecated: ``is_autocast_enabled('cpu')``."""
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return _am.is_autocast_enabled("cpu")


def get_autocast_gpu_dtype() -> _dt.dtype:
    """Deprecated: ``get_autocast_dtype('cuda')``."""
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')")
    return _am.get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype: _dt.dtype) -> None:
    """Deprecated: ``set_autocast_dtype('cuda', dtype)``."""
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    _am.set_autocast_dtype("cuda", dtype)


def get_autocast_xla_dtype() -> _dt.dtype:
    """Deprecated: ``get_autocast_dtype('xla')``."""
    _deprecated("get_autocast_xla_dtype()", "get_autocast_dtype('xla')")
    return _am.get_autocast_dtype("xla")


def set_autocast_xla_dtype(dtype: _dt.dtype) -> None:
    """Deprecated: ``set_autocast_dtype('xla', dtype)``."""
    _deprecated("set_autocast_xla_dtype(dtype)", "set_autocast_dtype('xla', dtype)")
    _am.set_autocast_dtype("xla", dtype)


def is_autocast_xla_enabled() -> builtins.bool:
    """Deprecated: ``is_autocast_enabled('xla')``."""
    _deprecated("is_autocast_xla_enabled()", "is_autocast_enabled('xla')")
    return _am.is_autocast_enabled("xla")


def set_autocast_xla_enabled(enabled: builtins.bool) -> None:
    """Deprecated: ``set_autocast_enabled('xla', enabled)``."""
    _deprecated("set_autocast_xla_enabled(enabled)", "set_autocast_enabled('xla', enabled)")
    _am.set_autocast_enabled("xla", enabled)


def get_autocast_ipu_dtype() -> _dt.dtype:
    """Deprecated: ``get_autocast_dtype('ipu')``."""
    _deprecated("get_autocast_ipu_dtype()", "get_autocast_dtype('ipu')")
    return _am.get_autocast_dtype("ipu")


def set_autocast_ipu_dtype(dtype: _dt.dtype) -> None:
    """Deprecated: ``set_autocast_dtype('ipu', dtype)``."""
    _deprecated("set_autocast_ipu_dtype(dtype)", "set_autocast_dtype('ipu', dtype)")
    _am.set_autocast_dtype("ipu", dtype)


def is_autocast_ipu_enabled() -> builtins.bool:
    """Deprecated: ``is_autocast_enabled('ipu')``."""
    _deprecated("is_autocast_ipu_enabled()", "is_autocast_enabled('ipu')")
    return _am.is_autocast_enabled("ipu")


def set_autocast_ipu_enabled(enabled: builtins.bool) -> None:
    """Deprecated: ``set_autocast_enabled('ipu', enabled)``."""
    _deprecated("set_autocast_ipu_enabled(enabled)", "set_autocast_enabled('ipu', enabled)")
    _am.set_autocast_enabled("ipu", enabled)


def init_num_threads() -> None:
    """Nothing to initialise: coretorch's cpu backend sizes its thread pool through ``set_num_threads``."""
    return None


_ = (is_anomaly_check_nan_enabled, is_anomaly_enabled, GradScaler, autocast_increment_nesting,
     autocast_decrement_nesting)  # re-exported (__all__)
