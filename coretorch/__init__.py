"""coretorch: a small PyTorch-compatible deep-learning framework with plugin backends.

    import coretorch as torch
"""
from __future__ import annotations

__version__ = "0.1.0"

from . import dtypes as _dtypes
from .dtypes import (dtype, float16, float32, float64, uint8, int8, int16, int32, int64, bool_ as bool,
                     promote_types)
from .device import device
from .tensor import Tensor, Size
from ._errors import OutOfMemoryError
from .autograd.grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from . import _tensor_methods  # noqa: F401  (binds ops onto Tensor)
from . import autograd, ops, plugins, nn, optim, distributed  # distributed: a namespace a plugin fills
from .nn.functional import erf  # lives with its backward in nn.functional (gelu uses it); torch.erf / Tensor.erf
from .ops.creation import (tensor, as_tensor, asarray, from_numpy, zeros, ones, full, empty, zeros_like,
                           ones_like, empty_like, full_like, rand_like, randn_like, randint_like, arange,
                           linspace, logspace, eye, rand, randn, randint, randperm, normal, manual_seed, seed,
                           initial_seed, Generator)
from .ops.pointwise import (add, sub, subtract, mul, multiply, div, divide, true_divide, floor_divide,
                            remainder, pow, float_power, maximum, minimum, eq, ne, lt, le, gt, ge, greater,
                            greater_equal, less, less_equal, not_equal, logical_and, logical_or, logical_xor,
                            logical_not, bitwise_and, bitwise_or, bitwise_xor, bitwise_not, exp, log, sqrt,
                            rsqrt, abs, sign, neg, negative, reciprocal, sin, cos, tanh, sigmoid, relu, floor,
                            ceil, round, trunc, fix, expm1, log1p, isnan, square, where, clamp, clip,
                            clamp_min, clamp_max, lerp, masked_fill, rsub, fmod)
from .ops.pointwise import sign as sgn  # noqa: F401  (real tensors: sgn is sign)
from .ops.reduction import (sum, nansum, mean, prod, amax, amin, max, min, argmax, argmin, var, std,
                            var_mean, std_mean, logsumexp, norm, all, any, cumsum)
from .ops.linalg import matmul, mm, bmm, addmm, dot, mv, outer
from .ops.shape import (reshape, flatten, unflatten, squeeze, unsqueeze, permute, transpose, swapaxes,
                        swapdims, t, movedim, broadcast_to, broadcast_tensors, flip, clone,
                        cat, concat, concatenate, stack, hstack, vstack, split, chunk, unbind)
from .ops.shape import unsafe_split, unsafe_split_with_sizes, unsafe_chunk
from .ops.foreach import *  # noqa: F401,F403  (torch._foreach_*)
from .ops.indexing import gather, scatter_add, index_select, index_add, narrow, select, nonzero, masked_select
from .ops._util import broadcast_shapes as _broadcast_shapes
from .ops.sorting import *  # noqa: F401,F403  (each family module's __all__)
from .ops.statistics import *  # noqa: F401,F403
from .ops.special import *  # noqa: F401,F403
from .ops.comparison import *  # noqa: F401,F403
from .ops.triangular import *  # noqa: F401,F403
from .ops.joining import *  # noqa: F401,F403
from .ops._renorm import *  # noqa: F401,F403
from .ops.scatter import *  # noqa: F401,F403
from .ops.products import *  # noqa: F401,F403
from .ops.decomp import *  # noqa: F401,F403
from .ops.random import *  # noqa: F401,F403
from .ops.bits import *  # noqa: F401,F403
from .ops.misc import *  # noqa: F401,F403
from .ops.copies import *  # noqa: F401,F403
from .ops.histogram import *  # noqa: F401,F403
from . import random  # noqa: F401  (torch.random: seeds, states, fork_rng; ops.random does not import it)
from .ops._gamma import _sample_dirichlet, _standard_gamma, _standard_gamma_grad  # noqa: F401
from .ops._binomial import binomial  # noqa: F401
# the legacy API and the namespaces scripts touch on their first lines (torch.cuda, backends, compile, ...)
from . import _tensor_legacy  # noqa: F401,E402  (binds Tensor.new, add_(Number, Tensor), volatile, cuda(), ...)
from . import _tensor_names12  # noqa: F401,E402  (binds H, mH, sum_to_size, storage, dim_order, ...)
from ._tensor_names12 import ger, is_distributed, triangular_solve  # noqa: F401,E402  (names PyTorch 2.13 keeps)
from ._sym import *  # noqa: F401,F403,E402  (torch.sym_max & co. on plain numbers)
from .storage import TypedStorage, UntypedStorage  # noqa: F401,E402
from .ops._householder import geqrf, orgqr, ormqr  # noqa: F401,E402
from .ops._lu import lu_deprecated as lu, lu_solve_deprecated as lu_solve, lu_unpack  # noqa: F401,E402
from . import _subclass  # noqa: F401  (as_subclass; user subclasses' methods go through __torch_function__)
from .nn import _grad_fn_names  # noqa: F401  (PyTorch's grad_fn names for nn.functional's composite ops)
from ._compat import *  # noqa: F401,F403
from ._tensor_str import set_printoptions  # noqa: F401
from . import _C, accelerator, compiler, cpu, cuda, jit, mps, multiprocessing, onnx, types, version, xpu  # noqa: F401
from . import __future__  # noqa: F401,E402  (torch.__future__: Module conversion flags)
from . import _dynamo, _inductor, _logging  # noqa: F401  (torch._dynamo.config, torch._inductor.config, set_logs)
from . import func  # noqa: F401,E402  (torch.func: grad, vjp, jacrev, vmap, functional_call...)
from .func import vmap  # noqa: F401,E402  (torch.vmap)
from . import profiler  # noqa: F401,E402  (torch.profiler: profile, schedule, record_function)
from . import sparse  # noqa: F401  (dense-backed sparse COO tensors; binds is_sparse, to_sparse, ...)
from .sparse import sparse_coo_tensor, spmm  # noqa: F401
from . import backends as _backends_pkg  # noqa: F401  (binds coretorch.backends; devices() has a local of that name)
from . import special
from . import linalg
from . import return_types  # noqa: F401  (torch.return_types.sort, ...)
from ._aten_nn import *  # noqa: F401,F403,E402  (constants, torch.relu_ & co., ATen-signature nn functions)
# ---- dtypes and info, autocast (helper "dtypes") ----
from .dtypes import bfloat16, finfo, iinfo, can_cast  # noqa: F401
from .dtypes import is_storage  # noqa: F401
from . import amp
from .amp import autocast, is_autocast_enabled, get_autocast_dtype, set_autocast_enabled  # noqa: F401
from .amp.autocast_mode import (set_autocast_dtype, is_autocast_cache_enabled,  # noqa: F401
                                set_autocast_cache_enabled, clear_autocast_cache)
# ---- end dtypes ----
from .serialization import save, load
from ._flags import *  # noqa: F401,F403,E402  (set_warn_always, set_anomaly_enabled, GradScaler, ...)

setattr(Tensor, "erf", erf)

float = float32
double = float64
half = float16
long = int64
int = int32
short = int16


def broadcast_shapes(*shapes) -> Size:
    """The broadcast of the shapes, as a coretorch.Size (PyTorch's type)."""
    return Size(_broadcast_shapes(*shapes))


def get_default_dtype() -> dtype:
    """The floating-point dtype of new float tensors (float32 unless ``set_default_dtype`` changed it)."""
    return _dtypes.default


def set_default_dtype(d: dtype) -> None:
    """Set the dtype of new floating-point tensors (float32, float64, float16 or bfloat16).

    Also the dtype integer inputs are promoted to by float ops (``exp``, ``mean``, ...).
    """
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _dtypes.default = d


def result_type(tensor, other) -> dtype:  # noqa: F811  (PyTorch's keyword shadows torch.tensor here)
    """The dtype that an arithmetic op on ``tensor`` and ``other`` (tensors or numbers) would return (PyTorch's
    keywords: ``tensor=``, ``other=``)."""
    return _dtypes.result_type((tensor, other), _dtypes.default)


def is_tensor(obj) -> _builtins.bool:
    """Whether ``obj`` is a coretorch Tensor."""
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> _builtins.bool:
    """Whether ``input``'s dtype is a floating-point type."""
    return input.dtype.is_floating_point


def numel(input: Tensor) -> _builtins.int:
    """The number of elements of ``input``."""
    return input.numel()


def detach(input: Tensor) -> Tensor:
    """A tensor sharing ``input``'s data that is cut out of the autograd graph (``input.detach()``)."""
    return input.detach()


import builtins as _builtins  # noqa: E402
import sys as _sys  # noqa: E402

builtins_bool = _builtins.bool
builtins_int = _builtins.int


class _LegacyMeta(type):
    """isinstance(t, FloatTensor) is true for any CPU float32 tensor, as in PyTorch."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype is cls._legacy_dtype


def _legacy(name: str, d: dtype):
    return _LegacyMeta(name, (Tensor,), {"__slots__": (), "_legacy_dtype": d})


FloatTensor = _legacy("FloatTensor", float32)
DoubleTensor = _legacy("DoubleTensor", float64)
HalfTensor = _legacy("HalfTensor", float16)
BFloat16Tensor = _legacy("BFloat16Tensor", bfloat16)
LongTensor = _legacy("LongTensor", int64)
IntTensor = _legacy("IntTensor", int32)
ShortTensor = _legacy("ShortTensor", int16)
CharTensor = _legacy("CharTensor", int8)
ByteTensor = _legacy("ByteTensor", uint8)
BoolTensor = _legacy("BoolTensor", bool)


def devices() -> list[dict]:
    """Every registered device type with availability and device names (what `coretorch info` shows)."""
    from ._backend import backends
    out = []
    for name, be in sorted(backends().items()):
        try:
            avail = be.is_available()
            count = be.device_count() if avail else 0
            names = [be.device_name(i) for i in _builtins.range(count)]  # (torch.range shadows it)
        except Exception as e:  # a backend that cannot even answer is reported, not raised
            avail, count, names = False, 0, [f"error: {e}"]
        entry = {"type": name, "distribution": getattr(be, "distribution", "?"), "available": avail,
                 "count": count, "names": names}
        why = getattr(be, "unavailable_reason", None)
        if not avail and callable(why):  # why the device is missing and what to install (e.g. no OpenCL platform)
            try:
                entry["reason"] = why()
            except Exception as e:
                entry["reason"] = f"error: {e}"
        out.append(entry)
    return out


from .ops._out_functions import install as _install_out  # noqa: E402

_install_out(globals())  # out= on the top-level functions that predate it (torch.add(a, b, out=c))

from .ops._tensor_args import install as _install_tensor_args  # noqa: E402

_install_tensor_args(globals())  # torch.maximum(x, 2) raises PyTorch's TypeError (no Scalar overload)

from .ops._range import range_ as range  # noqa: E402  (PyTorch's deprecated inclusive range; shadows the builtin here)

from .plugins.manager import _CORE_NAMES as _core_names  # noqa: E402

_core_names.update(n for n in dir(ops) if not n.startswith("_"))
plugins.load_entry_points()

from ._docs import apply as _apply_docs  # noqa: E402

_apply_docs(_sys.modules[__name__])  # docstrings of generated ops and of Tensor's bound methods (coretorch/_docs.py)


from . import functional  # noqa: E402,F401  (torch.functional: once every name it re-exports is bound)


def __getattr__(name: str):
    # torch.distributions and torch.testing are imported on first use (large; most programs never touch them)
    if name in ("distributions", "testing"):
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'coretorch' has no attribute '{name}'")
