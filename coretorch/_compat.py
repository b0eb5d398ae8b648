"""Top-level names real scripts touch on their first lines: typename, compile, determinism and matmul-precision
switches, thread counts, memory formats, and torch.softmax/log_softmax/dropout in PyTorch's positional form.
"""
from __future__ import annotations

import builtins
import os
import warnings

from . import dtypes as _dt
from ._determinism import state as _det  # (shared with the device backends)
from .autograd.grad_mode import is_inference_mode_enabled
from .nn import functional as _F
from .nn.modules.module import Module as _Module
from .tensor import Tensor
from ._typename import typename  # noqa: F401  (torch.typename, in __all__)

__all__ = ["typename", "compile", "use_deterministic_algorithms",
           "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
           "set_deterministic_debug_mode", "get_deterministic_debug_mode", "set_float32_matmul_precision",
           "get_float32_matmul_precision", "get_num_threads", "set_num_threads", "get_num_interop_threads",
           "set_num_interop_threads", "is_inference_mode_enabled", "softmax", "log_softmax", "dropout",
           "memory_format", "preserve_format", "contiguous_format", "channels_last", "channels_last_3d",
           "layout", "strided", "sparse_coo", "set_default_tensor_type"]

_bool = builtins.bool  # (the names bool and int are torch dtypes here)
_int = builtins.int


# ---- torch.compile: PyTorch's signature over coretorch's capture and replay (coretorch._compile) -------------
def compile(model=None, *, fullgraph: _bool = False, dynamic=None, backend=None, mode=None, options=None,
            name: str | None = None, disable: _bool = False, recompile_limit: int | None = None,
            isolate_recompiles: _bool = False, shapes_spec=None):
    """``torch.compile``: whole-step capture and replay for a function, an ``OptimizedModule`` (forward and backward
    replayed) for a module (:mod:`coretorch._compile`); with no model, a decorator that does the same.

    ``recompile_limit`` caps this call's captures (default ``torch._dynamo.config.recompile_limit``, 8): past it,
    calls run eagerly with one warning, or raise ``FailOnRecompileLimitHit`` under ``fullgraph=True``. Every
    ``compile`` call keeps its own captures (``isolate_recompiles=True`` is what already happens); ``name`` labels
    the compiled function; ``dynamic`` and ``shapes_spec`` are accepted, a capture being specialised to its shapes
    (a new shape captures again, within the limit).  ``backend``: ``"inductor"`` (the default,
    ``torch.compiler.get_default_backend()``), or ``"eager"``, ``"aot_eager"``, ``"cudagraphs"`` (the recorded
    kernels only, bitwise eager's on every device); ``mode``/``options``: PyTorch's names, checked as PyTorch checks
    them (``mode="max-autotune"``: host fusion on cpu)."""
    from ._compile import compile as _compile_fn  # (the capture imports nn and optim)
    return _compile_fn(model, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options,
                       name=name, disable=disable, recompile_limit=recompile_limit,
                       isolate_recompiles=isolate_recompiles, shapes_spec=shapes_spec)


def _module_compile(self, *args, **kwargs) -> None:
    """``Module.compile()``: in place, as PyTorch's; the module's calls are captured and replayed from now on."""
    from ._compile import compile_in_place
    from ._compile.backends import check_dynamic
    from ._compile.optimized import _uncompiled_forward
    # PyTorch's Module.compile passes its arguments to torch.compile: its signature (a misspelt keyword, a second
    # positional argument raise TypeError) and its checks of backend, mode and options (a call that compiles nothing)
    if args:  # (torch.compile takes the model only positionally: its TypeError, word for word)
        compile(self, *args, **kwargs)
    compile(self, **{**kwargs, "disable": True})
    if kwargs.get("disable", False):   # PyTorch: the compiled call is replaced by the plain one
        _uncompiled_forward(self)
    else:
        check_dynamic(kwargs.get("dynamic"))
        compile_in_place(self, fullgraph=bool(kwargs.get("fullgraph", False)),
                         recompile_limit=kwargs.get("recompile_limit"), mode=kwargs.get("mode"),
                         options=kwargs.get("options"), backend=kwargs.get("backend"))


setattr(_Module, "compile", _module_compile)


# ---- determinism and matmul precision (remembered; see use_deterministic_algorithms) ----------------------------


def use_deterministic_algorithms(mode: _bool, *, warn_only: _bool = False) -> None:
    """torch.use_deterministic_algorithms (``torch.backends.cudnn.deterministic`` is a separate flag, as in
    PyTorch).  coretorch's cpu kernels are deterministic.  On opencl, the accumulating index writes
    (``index_put_(..., accumulate=True)``, ``index_add``, ``scatter_add``, ``scatter_reduce`` sum/prod/mean,
    ``put_(accumulate=True)`` and the ops built on them, such as embedding's and gather's backward) add floats with
    atomics in a run-dependent order; while the mode is on they accumulate in index order instead (one ordered
    pass: bitwise reproducible, slower).  Integer sums and max/min are exact in any order and keep their atomics."""
    if not isinstance(mode, _bool) or not isinstance(warn_only, _bool):
        raise TypeError("use_deterministic_algorithms(): argument 'mode' and 'warn_only' must be bool")
    _det["mode"], _det["warn_only"] = mode, warn_only


def are_deterministic_algorithms_enabled() -> _bool:
    """Whether ``use_deterministic_algorithms(True)`` is in effect."""
    return _det["mode"]


def is_deterministic_algorithms_warn_only_enabled() -> _bool:
    """Whether deterministic mode only warns (``use_deterministic_algorithms(True, warn_only=True)``)."""
    return _det["warn_only"]


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode) -> None:
    """Set the deterministic mode: 0/"default" off, 1/"warn", 2/"error"."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    if not isinstance(debug_mode, _int) or isinstance(debug_mode, _bool):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode).__name__}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> _int:
    """0, 1 or 2: the deterministic-algorithms mode (off, warn, error)."""
    if not _det["mode"]:
        return 0
    return 1 if _det["warn_only"] else 2


_precision = ["highest"]
_PRECISIONS = ("highest", "high", "medium")


def set_float32_matmul_precision(precision: str) -> None:
    """'highest', 'high' or 'medium' (in any case), as PyTorch; anything else warns and changes nothing.
    coretorch computes float32 matmuls in float32 whatever the setting."""
    low = str(precision).lower()
    if low in _PRECISIONS:
        _precision[0] = low
        return
    warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                  f"setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)


def get_float32_matmul_precision() -> str:
    """The float32 matmul precision setting (``"highest"``, ``"high"`` or ``"medium"``)."""
    return _precision[0]


# ---- threads: the cpu backend's BLAS thread pool (numpy's), through threadpoolctl ---------------------------------
_threads: dict = {"intra": None, "interop": None, "limiter": None}


def _check_threads(n, name: str) -> _int:
    if not isinstance(n, _int) or isinstance(n, _bool):
        raise TypeError(f"{name}(): argument 'int' must be int, not {type(n).__name__}")
    if n <= 0:
        raise RuntimeError("Expected positive number of threads")
    return n


def set_num_threads(int: _int) -> None:  # noqa: A002  (PyTorch's parameter name)
    """Set the number of threads the cpu backend's BLAS uses (numpy's OpenBLAS/MKL pool)."""
    n = _check_threads(int, "set_num_threads")
    try:
        import threadpoolctl  # imported on first use: it inspects the loaded libraries (a coretorch-cpu dependency)
    except ImportError:  # the core alone: no BLAS pool of ours to size, the number is recorded
        threadpoolctl = None
    if threadpoolctl is not None:
        _threads["limiter"] = threadpoolctl.threadpool_limits(limits=n, user_api="blas")
    _threads["intra"] = n


def get_num_threads() -> _int:
    """The BLAS thread count: what ``set_num_threads`` set, else the pool's own size."""
    if _threads["intra"] is not None:
        return _threads["intra"]
    try:
        import threadpoolctl
    except ImportError:
        return os.cpu_count() or 1
    counts = [i.get("num_threads", 0) for i in threadpoolctl.threadpool_info() if i.get("user_api") == "blas"]
    return max(counts) if counts else (os.cpu_count() or 1)


def set_num_interop_threads(int: _int) -> None:  # noqa: A002
    """Recorded (coretorch runs ops on the calling thread); as PyTorch, it can be set once."""
    n = _check_threads(int, "set_num_interop_threads")
    if _threads["interop"] is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has started or "
                           "set_num_interop_threads called")
    _threads["interop"] = n


def get_num_interop_threads() -> _int:
    """The number of inter-op threads (a setting kept for compatibility)."""
    n = _threads["interop"]
    return n if n is not None else (os.cpu_count() or 1)


# ---- memory formats and layouts (accepted where PyTorch takes them; every coretorch tensor is strided) -----------
class _Named:
    """A named constant printed as PyTorch prints it (``torch.channels_last``), pickled by name."""
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"torch.{self._name}"

    def __reduce__(self):
        return self._name


class memory_format(_Named):
    """A memory format (``contiguous_format``, ``channels_last``, ...): accepted for compatibility."""
    __slots__ = ()


preserve_format = memory_format("preserve_format")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")


class layout(_Named):
    """A tensor layout (``coretorch.strided``, ``coretorch.sparse_coo``)."""
    __slots__ = ()


strided = layout("strided")
sparse_coo = layout("sparse_coo")  # dense-backed sparse tensors: coretorch.sparse


def set_default_tensor_type(t) -> None:
    """Deprecated (PyTorch 2.1): the default dtype from a legacy type (``torch.DoubleTensor`` or its name).  A
    CUDA type raises PyTorch's TypeError for a build without CUDA."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.", UserWarning,
                  stacklevel=2)
    from . import cuda, set_default_dtype  # the package namespace: importing it at module level is a cycle
    name = t if isinstance(t, str) else f"{getattr(t, '__module__', '')}.{getattr(t, '__name__', t)}"
    if isinstance(t, str) and t.startswith("torch.cuda.") or isinstance(t, cuda._LegacyCudaMeta):
        raise TypeError(f"type {name.replace('coretorch', 'torch')} not available. {cuda._NOT_COMPILED}")
    if isinstance(t, str):
        d = next((d for d in vars(_dt).values() if isinstance(d, _dt.dtype) and f"torch.{d._tname}" == t), None)
        if d is None:
            raise TypeError(f"invalid type: '{t}'")
    else:
        d = getattr(t, "_legacy_dtype", None)
        if d is None:
            raise TypeError(f"invalid type: {t!r}")
    set_default_dtype(d)


# ---- PyTorch's positional top-level forms --------------------------------------------------------------------
def softmax(input: Tensor, dim: _int, dtype=None) -> Tensor:
    """``torch.softmax(input, dim, dtype=None)``."""
    return _F.softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: _int, dtype=None) -> Tensor:
    """``torch.log_softmax(input, dim, dtype=None)``."""
    return _F.log_softmax(input, dim, dtype=dtype)


def dropout(input: Tensor, p: float, train: _bool) -> Tensor:
    """``torch.dropout(input, p, train)``: F.dropout with PyTorch's positional ATen signature."""
    return _F.dropout(input, p, train)
