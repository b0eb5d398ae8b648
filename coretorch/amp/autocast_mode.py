"""torch.autocast: regions where matmul-like ops run in a lower precision and precision-sensitive ops in float32.

The state is thread-local, as PyTorch's.  An op with an autocast policy starts with one attribute check,
``if _ac.on:`` (false while no thread is in an autocast region), and only then calls ``cast_inputs``, which
casts its floating point tensor arguments (float64 excepted, as PyTorch) for the op's device type:

* lower precision (``LOWER``): linear, matmul, mm, bmm, addmm, baddbmm, conv1d/2d, einsum, ... run in the region's
  dtype;
* float32 (``FP32``): the losses everywhere; on cpu also quantile, reflection/replication padding and the linalg
  decompositions (PyTorch's CPU list); on GPU-like devices (cuda, opencl), as CUDA's list, also the
  precision-sensitive elementwise ops (exp, log, pow, rsqrt, ...) and reductions (sum, logsumexp, norm, cumsum,
  softmax, ...; those taking ``dtype=`` only when it is not given);
* promote (``PROMOTE``): the floating point arguments go to the widest type among them (cat, stack, index_copy on
  cpu; dot, vdot, cross, index_put, tensordot, ... on GPU-like devices);
* every other op runs in its inputs' dtypes (the usual promotion);
* binary_cross_entropy raises on GPU-like devices, as CUDA's autocast does (unsafe in float16).

An op opts in with two lines at its entry, ``if _ac.on: args = _ac_cast("name", *args)`` (the elementwise ops in
``pointwise._make_unary``: ``fp32_unary``), so the cost while no region is open is that one attribute check.  The
nn.functional ops use the decorators :func:`policy` (cast their tensor arguments) and :func:`below` (a composite that
runs with autocast disabled), whose wrapper adds one call to that check.
"""
from __future__ import annotations

import collections.abc
import functools
import inspect
import os
import threading
import warnings
import typing
from typing import Any, Callable, TypeVar

from .. import dtypes as _dt

__all__ = ["autocast", "is_autocast_available", "custom_fwd", "custom_bwd", "is_autocast_enabled",
           "get_autocast_dtype", "set_autocast_enabled", "set_autocast_dtype"]

# PyTorch's autocast op lists (aten/src/ATen/autocast_mode.{h,cpp}, checked against PyTorch 2.13), restricted to
# what coretorch has.  CPU: einsum, tensordot, inner, chain_matmul and multi_dot are not on PyTorch's CPU list but
# run in the lower precision there all the same (they decompose into bmm/mm, which are), so they are listed to give
# the same dtypes.
_LOWER_COMMON = frozenset({"linear", "matmul", "mm", "bmm", "addmm", "addbmm", "baddbmm", "conv1d", "conv2d",
                           "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "prelu",
                           "scaled_dot_product_attention", "einsum"})
# the recurrent layers (coretorch.nn.modules.rnn names them "<lstm|gru|rnn>[_proj][_packed]" and "<...>_cell"): on cpu
# oneDNN's LSTM without projections is on the list (a packed one whose sequences all have one length too: the
# module runs it as unpacked), and an Elman RNN's state is lower precision through its
# cells' linears (a GRU's and an LSTM's cells mix it with a float32 state); on CUDA cuDNN's RNNs and every cell
_RNN_CPU = frozenset({"lstm", "rnn", "rnn_packed", "rnn_cell"})
_RNN_GPU = frozenset(f"{m}{v}" for m in ("lstm", "gru", "rnn") for v in ("", "_packed", "_cell")) | {
    "lstm_proj", "lstm_proj_packed"}
_LOWER_CPU = _LOWER_COMMON | {"tensordot", "inner", "vecdot", "chain_matmul", "multi_dot"} | _RNN_CPU
_LOWER_GPU = _LOWER_COMMON | {"addmv", "addr", "mv", "chain_matmul", "multi_dot", "vecdot", "inner"} | _RNN_GPU
_FP32_COMMON = frozenset({"mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss", "cross_entropy",
                          "kl_div", "binary_cross_entropy_with_logits", "poisson_nll_loss", "soft_margin_loss",
                          "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss",
                          "multi_margin_loss", "multilabel_margin_loss", "triplet_margin_loss", "cdist", "prod"})
# CUDA's list: the precision-sensitive elementwise ops and reductions too (the "set_opt_dtype" ones, sum, softmax,
# cumsum, ..., only when no dtype= is given: the callers check)
_FP32_GPU = _FP32_COMMON | {"softmax", "log_softmax", "layer_norm", "group_norm", "softplus", "cosine_similarity",
                            "exp", "expm1", "log", "log2", "log10", "log1p", "reciprocal", "rsqrt", "acos", "asin",
                            "cosh", "sinh", "tan", "erfinv", "pow", "logsumexp", "sum", "cumsum", "cumprod", "dist",
                            "norm", "vector_norm", "matrix_norm", "pdist", "renorm", "rms_norm", "interpolate"}
# CPU's list: losses, prod, trace, quantile, the linalg decompositions, reflection/replication padding
_FP32_CPU = _FP32_COMMON | {"binary_cross_entropy", "trace", "quantile", "nanquantile", "pad_reflect",
                            "pad_replicate", "pinverse", "cholesky_solve", "cholesky_inverse", "linalg_inv",
                            "linalg_inv_ex", "linalg_solve", "linalg_cholesky_ex", "linalg_qr", "linalg_svd",
                            "linalg_svdvals", "linalg_eigh", "linalg_eigvalsh", "linalg_lstsq", "linalg_matrix_rank",
                            "linalg_cond"}
LOWER = {"cpu": _LOWER_CPU, "cuda": _LOWER_GPU, "opencl": _LOWER_GPU}
_BANNED = {"cuda": ("binary_cross_entropy",), "opencl": ("binary_cross_entropy",)}
_BCE_UNSAFE = ("torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
               "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
               "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
               "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
               "safe to autocast.")
FP32 = {"cpu": _FP32_CPU, "cuda": _FP32_GPU, "opencl": _FP32_GPU}
# "promote": the floating point arguments go to the widest floating point type among them
_PROMOTE_GPU = frozenset({"addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot", "index_put",
                          "tensordot", "scatter_add"})
PROMOTE = {"cpu": frozenset({"cat", "stack", "index_copy"}), "cuda": _PROMOTE_GPU, "opencl": _PROMOTE_GPU}

#: device types autocast accepts (PyTorch raises for others); 'cuda' is accepted and disabled with a warning
_AVAILABLE = ("cpu", "cuda", "opencl")
_SUPPORTED = {"cpu": (_dt.bfloat16, _dt.float16), "opencl": (_dt.float16, _dt.bfloat16)}


class _Local(threading.local):
    """Per-thread autocast state (class attributes are every new thread's defaults)."""
    any = False         # whether this thread has autocast enabled for some device type
    nesting = 0
    cache_enabled = True

    def __init__(self) -> None:
        self.enabled: dict = {}
        self.dtype: dict = {"cpu": _dt.bfloat16, "cuda": _dt.float16, "opencl": _dt.float16}


class _Global:
    """``on``: whether some thread has autocast enabled, the ops' one check.  A plain attribute (a thread-local's
    costs ~5x more per op); ``cast_inputs`` then reads the calling thread's own state."""
    on = False
    threads = 0


tls = _Local()
state = _Global()
_lock = threading.Lock()
if hasattr(os, "register_at_fork"):  # unlocked in a forked child: the thread of the parent that held it is not there
    os.register_at_fork(after_in_child=_lock._at_fork_reinit)  # type: ignore[attr-defined]


def _check_device_type(device_type) -> None:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")


# the device types PyTorch's device-string parser knows: autocast's queries raise its error for another name
_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia", "xla",
                 "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")
_DEFAULT_DTYPE = {"cpu": _dt.bfloat16, "xla": _dt.bfloat16, "hpu": _dt.bfloat16}  # PyTorch's; float16 elsewhere


def _known(device_type: str) -> str:
    """``device_type`` when PyTorch parses it as a device type (an index is allowed), else its RuntimeError."""
    if device_type not in _DEVICE_TYPES and device_type.split(":")[0] not in _DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of device string: "
                           f"{device_type}")
    return device_type


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast can be used for ``device_type`` ('cpu', 'opencl'; 'cuda' is accepted, then disabled)."""
    return _known(device_type) in _AVAILABLE


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """torch.is_autocast_enabled: for ``device_type`` ('cuda' when omitted, as PyTorch)."""
    if device_type is None:
        device_type = "cuda"
    if device_type in tls.enabled:
        return bool(tls.enabled[device_type])
    _known(device_type)
    return False


def set_autocast_enabled(device_type, enabled=None) -> None:
    """torch.set_autocast_enabled(device_type, enabled) (or the legacy ``set_autocast_enabled(enabled)``: cuda)."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    tls.enabled[device_type] = bool(enabled)
    now = any(tls.enabled.values())
    if now != tls.any:
        tls.any = now
        with _lock:
            state.threads += 1 if now else -1
            state.on = state.threads > 0


def get_autocast_dtype(device_type: str) -> _dt.dtype:
    """torch.get_autocast_dtype: the dtype autocast uses on ``device_type`` (bfloat16 on cpu, float16 on cuda)."""
    d = tls.dtype.get(device_type)
    return d if d is not None else _DEFAULT_DTYPE.get(_known(device_type), _dt.float16)


def set_autocast_dtype(device_type: str, dtype: _dt.dtype) -> None:
    """Set the dtype autocast casts to on ``device_type`` (float16 or bfloat16)."""
    tls.dtype[device_type] = dtype


def is_autocast_cache_enabled() -> bool:
    """Whether autocast caches casted weights (a setting kept for compatibility)."""
    return tls.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Enable or disable autocast's weight cache (a setting kept for compatibility)."""
    tls.cache_enabled = bool(enabled)


def autocast_increment_nesting() -> int:
    """torch.autocast_increment_nesting: one more open autocast region on this thread; the new depth."""
    tls.nesting += 1
    return tls.nesting


def autocast_decrement_nesting() -> int:
    """torch.autocast_decrement_nesting: one autocast region fewer on this thread; the new depth."""
    tls.nesting -= 1
    return tls.nesting


def clear_autocast_cache() -> None:
    """Casts are not cached (each op casts its arguments): nothing to clear."""


def _cuda_available() -> bool:
    return False  # coretorch has no CUDA backend


class autocast:
    """torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None): a context manager and decorator
    under which ops run in an op-specific dtype (see the module docstring)."""

    def __init__(self, device_type: str, dtype: _dt.dtype | None = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        _check_device_type(device_type)
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device = device_type
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = tls.cache_enabled if cache_enabled is None else cache_enabled
        if enabled and device_type == "cuda" and not _cuda_available():
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
            enabled = False
        supported = _SUPPORTED.get(device_type)
        if supported is not None and self.fast_dtype not in supported and enabled:
            what = device_type.upper()  # (PyTorch's message names bfloat16 first)
            warnings.warn(f"In {what} autocast, but the target dtype is not supported. Disabling autocast.\n"
                          f"{what} Autocast only supports dtypes of "
                          + ", ".join(f"torch.{d.name}" for d in sorted(supported, key=lambda d: d.name))
                          + " currently.", stacklevel=2)
            enabled = False
        self._enabled = bool(enabled)

    def __enter__(self) -> autocast:
        self.prev_cache_enabled = tls.cache_enabled
        self.prev = tls.enabled.get(self.device, False)
        self.prev_fastdtype = get_autocast_dtype(self.device)
        set_autocast_enabled(self.device, self._enabled)
        tls.dtype[self.device] = self.fast_dtype
        tls.nesting += 1
        tls.cache_enabled = self._cache_enabled
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        tls.nesting -= 1
        set_autocast_enabled(self.device, self.prev)
        tls.dtype[self.device] = self.prev_fastdtype
        tls.cache_enabled = self.prev_cache_enabled

    def _copy(self) -> autocast:
        """A new instance of the same settings (as resolved here: no second warning, no re-read of defaults)."""
        c = object.__new__(type(self))
        c.__dict__.update(self.__dict__)
        return c

    def __call__(self, func):
        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            # a copy per call: __enter__ keeps the caller's previous state on the instance, so threads running the
            # decorated function at once through one instance restored each other's (a thread left with autocast
            # on after the call). PyTorch enters the shared instance (the same race); no_grad's decorator copies.
            with self._copy():
                return func(*args, **kwargs)
        return decorate_autocast


# ---- the ops' side ------------------------------------------------------------------------------
def _eligible(t, dtype) -> bool:
    d = t.dtype
    return d is not dtype and d.is_floating_point and d is not _dt.float64


def cast_inputs(op: str, *args):
    """The arguments of ``op`` cast by the autocast policy of their device type (called only when ``state.on``):
    floating point tensors other than float64 go to the region's dtype (lower precision ops) or to float32;
    everything else is returned as it is."""
    from ..tensor import Tensor
    dev = next((t._be.type for a in args for t in (a if isinstance(a, (list, tuple)) else (a,))
                if isinstance(t, Tensor)), None)
    if dev is None or not tls.enabled.get(dev):
        return args  # autocast is on in another thread (or for another device type) only
    if op in _BANNED.get(dev, ()):
        raise RuntimeError(_BCE_UNSAFE)
    if op in LOWER.get(dev, ()):
        target = tls.dtype[dev]
    elif op in FP32.get(dev, ()):
        target = _dt.float32
    elif op in PROMOTE.get(dev, ()):
        return _promote(args, dev)
    else:
        return args
    return _cast_args(args, dev, target)


def lower_dtype(op: str, t) -> _dt.dtype | None:
    """The region's lower-precision dtype when autocast is enabled for ``t``'s device type, lists ``op`` there and
    would cast ``t`` (a floating point tensor other than float64); else None (called only when ``state.on``)."""
    dev = t._be.type
    if not tls.enabled.get(dev) or op not in LOWER.get(dev, ()):
        return None
    target = tls.dtype[dev]
    return target if _eligible(t, target) or t.dtype is target else None


def _promote(args: tuple, dev: str) -> tuple:
    """PyTorch's "promote" policy: floating point tensors (float64 excepted) cast to the widest floating point type
    among the arguments (a tensor list counts as its members)."""
    from ..tensor import Tensor
    flat = [t for a in args for t in (a if isinstance(a, (list, tuple)) else (a,))
            if isinstance(t, Tensor) and t.dtype.is_floating_point and t._be.type == dev]
    if not flat:
        return args
    target = flat[0].dtype
    for t in flat[1:]:
        target = _dt.promote_types(target, t.dtype)
    return _cast_args(args, dev, target)


def _cast_args(args: tuple, dev: str, target) -> tuple:
    from ..tensor import Tensor

    def one(a):
        return a.to(target) if isinstance(a, Tensor) and _eligible(a, target) and a._be.type == dev else a
    return tuple(type(a)(one(t) for t in a) if isinstance(a, (list, tuple)) else one(a) for a in args)


def fp32_unary(op: str, t):
    """The one-tensor fast path of ``cast_inputs`` for the elementwise ops of the float32 list (called only when
    ``state.on``): ``t`` in float32 where autocast is enabled for its device type and lists ``op``."""
    dev = t._be.type
    if t.dtype.itemsize < 4 and t.dtype.is_floating_point and tls.enabled.get(dev) and op in FP32.get(dev, ()):
        return t.to(_dt.float32)
    return t


def suspended(t):
    """For a composite op on no list whose inner ops are (``nansum`` through ``sum``, ``F.elu`` through ``expm1``):
    an ``autocast(enabled=False)`` context for ``t``'s device type when autocast is enabled there, else None.  PyTorch
    runs such an op as one kernel, below autocast, so it keeps its input's dtype; the composite re-enters itself
    under the context (called only when ``state.on``)."""
    dev = getattr(getattr(t, "_be", None), "type", None)
    if dev is None or not tls.enabled.get(dev):
        return None
    return autocast(dev, enabled=False)


_Fn = TypeVar("_Fn", bound=Callable[..., Any])


def policy(op: str, nargs: int = 1) -> Callable[[_Fn], _Fn]:
    """Decorator: ``op``'s autocast policy (:func:`cast_inputs`) on the function's first ``nargs`` parameters, given
    by position or by name, while autocast is on; otherwise the one ``state.on`` check."""
    def decorate(fn: _Fn) -> _Fn:
        names = tuple(inspect.signature(fn).parameters)[:nargs]

        @functools.wraps(fn)
        def with_policy(*args, **kwargs):
            if state.on:
                args, kwargs = _cast_call(op, names, args, kwargs)
            return fn(*args, **kwargs)
        return typing.cast(_Fn, with_policy)  # functools.wraps keeps fn's name, doc and signature
    return decorate


def _cast_call(op: str, names: tuple, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    k = min(len(args), len(names))
    named = [n for n in names[k:] if n in kwargs]
    cast = cast_inputs(op, *args[:k], *(kwargs[n] for n in named))
    if named:
        kwargs = {**kwargs, **dict(zip(named, cast[k:]))}
    return (*cast[:k], *args[k:]), kwargs


def below(fn: _Fn) -> _Fn:
    """Decorator for a composite op on no list whose inner ops are (``F.elu`` through ``expm1``): while autocast is
    enabled for its first argument's device type it runs under :func:`suspended`'s context, so it keeps its input's
    dtype as PyTorch's single kernel does; otherwise the one ``state.on`` check."""
    first = next(iter(inspect.signature(fn).parameters))

    @functools.wraps(fn)
    def below_autocast(*args, **kwargs):
        if state.on and (off := suspended(args[0] if args else kwargs.get(first))) is not None:
            with off:
                return fn(*args, **kwargs)
        return fn(*args, **kwargs)
    return typing.cast(_Fn, below_autocast)  # functools.wraps keeps fn's name, doc and signature


def _cast(value, device_type: str, dtype):
    """Tensors and containers of tensors cast for custom_fwd(cast_inputs=...)."""
    from ..tensor import Tensor
    if isinstance(value, Tensor):
        ok = value.is_floating_point() and value.device.type == device_type and value.dtype is not _dt.float64
        return value.to(dtype) if ok else value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    return value


def custom_fwd(fwd=None, *, device_type: str, cast_inputs: _dt.dtype | None = None):
    """Decorator for the ``forward`` of a custom autograd Function: with ``cast_inputs``, inside an autocast region
    the floating point tensor arguments are cast to it and forward runs with autocast disabled."""
    _check_device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        args[0]._fwd_used_autocast = False
        if is_autocast_enabled(device_type):
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorator for the ``backward`` of a custom autograd Function: runs it with forward's autocast state."""
    _check_device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast, dtype=args[0]._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
