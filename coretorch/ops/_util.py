"""Shared helpers of the op layer: argument checks, broadcasting, graph edges."""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from .. import dtypes as _dt
from ..autograd.grad_mode import state as _gs
from ..tensor import Tensor, _edge, _make
from .. import ops as _ops  # the package (sum_to's graph path calls reduction/shape, which import this module)

_bcast_cache: dict = {}


def norm_dim(dim, ndim: int, op: str = "") -> int:
    if dim.__class__ is int and 0 <= dim < ndim:  # the common case, kept cheap
        return dim
    n = max(ndim, 1)
    if not isinstance(dim, int):
        try:
            dim = dim.__index__()
        except AttributeError:
            raise TypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}") from None
    if dim < -n or dim >= n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


def norm_dims(dims, ndim: int, op: str = "") -> tuple:
    if isinstance(dims, int) or hasattr(dims, "__index__") and (not hasattr(dims, "__iter__")
                                                                  or getattr(dims, "ndim", None) == 0):
        return (norm_dim(dims, ndim, op),)  # (np.int64(0), a 0-d integer tensor)
    out = tuple([norm_dim(d, ndim, op) for d in dims])
    if len(out) > 1 and len(set(out)) != len(out):  # PyTorch's message names the (wrapped) dim repeated
        raise RuntimeError(f"dim {next(d for i, d in enumerate(out) if d in out[:i])} appears multiple times in "
                           "the list of dims")
    return out


def check_grad_dtype(input: Tensor, dt) -> None:
    """An integer or bool ``dtype=`` on a tensor that requires grad raises, as PyTorch (the result could not
    carry the gradient): "Autograd not support dtype: Long"."""
    if input._rg and _gs.enabled and not dt.is_floating_point:
        raise RuntimeError(f"Autograd not support dtype: {dt._tname[:-6]}")


def broadcast_shape(sa: tuple, sb: tuple, op: str = "") -> tuple:
    key = (sa, sb)
    r = _bcast_cache.get(key)
    if r is not None:
        return r
    n = max(len(sa), len(sb))
    pa = (1,) * (n - len(sa)) + tuple(sa)
    pb = (1,) * (n - len(sb)) + tuple(sb)
    out = []
    for i, (x, y) in enumerate(zip(pa, pb)):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            # PyTorch's infer_size scans from the last dimension: it names the rightmost mismatch
            i = max(k for k, (p, q) in enumerate(zip(pa, pb)) if p != q and p != 1 and q != 1)
            x, y = pa[i], pb[i]
            raise RuntimeError(f"{op}: the size of tensor a ({x}) must match the size of tensor b ({y}) at "
                               f"non-singleton dimension {i} (shapes {list(sa)} and {list(sb)} cannot be "
                               "broadcast together)")
    r = tuple(out)
    if len(_bcast_cache) < 4096:
        _bcast_cache[key] = r
    return r


def broadcast_shapes(*shapes, op: str = "broadcast_shapes") -> tuple:
    out = ()
    for s in shapes:
        out = broadcast_shape(out, tuple(s), op)
    return out


def device_mismatch(op: str, a: Tensor, b: Tensor) -> RuntimeError:
    return RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                        f"{a.device} and {b.device}! (when checking arguments for {op}; move one with "
                        f".to(device))")


def align_devices(op: str, a: Tensor, b: Tensor):
    """Tables differ: allow a 0-d CPU tensor as a scalar operand (as PyTorch does), else raise."""
    if a.device == b.device:
        return a, b
    if b.ndim == 0 and b._be.type == "cpu":
        return a, _scalar_to(b, a)
    if a.ndim == 0 and a._be.type == "cpu":
        return _scalar_to(a, b), b
    raise device_mismatch(op, a, b)


def _scalar_to(t: Tensor, like: Tensor) -> Tensor:
    """The 0-d cpu operand ``t`` on ``like``'s device: a differentiable copy where it requires grad (PyTorch sends
    its gradient back to the cpu scalar, e.g. a learnable cpu temperature), else a plain host copy."""
    if t._rg and _gs.enabled:
        return t.to(like.device)
    return _make(like._be.from_numpy(_host_copy(t)), t.dtype, like._be)


def _host_copy(t: Tensor):
    """A host copy of ``t``'s value to make another device's array of (a compiled step repeats the transfer)."""
    h = t._host()
    c = h.copy()
    from .._compile.capture import host_transfer  # (imported on use: compile imports ops)
    host_transfer(h, c)
    return c


def host_call(fn, *args):
    """``fn(*args)``: numpy code of the core on a cpu (host-memory, ``np.ndarray``) backend's arrays, returning new
    arrays (PyTorch's CPU tie order of ``topk``).  A capture records the call as a kernel launch that its replay
    runs again (coretorch/_compile/capture.py patches this name), where reading the arrays back to the host would
    be a graph break; so ``fn`` must read only its arguments and call no kernel."""
    return fn(*args)


def host_all_below(table, arr, n: int, low: int = 0) -> bool:
    """Every element of the integer array ``arr`` (on a host-memory backend) lies in [low, n) (by default [0, n)):
    one reduction for both bounds, since read as unsigned a negative value is larger than any n."""
    a = table.to_numpy(arr)
    if low:
        a, n = a.astype(np.int64, copy=False) - low, n - low
    u = _UNSIGNED.get(a.dtype)
    if u is None:
        u = _UNSIGNED[a.dtype] = np.dtype(a.dtype.str.replace("i", "u"))
    return a.size == 0 or int(a.view(u).max()) < n


_UNSIGNED: dict = {}


edge = _edge  # (node, output_nr) receiving the gradient of a tensor


def sum_to(g: Tensor, shape: tuple) -> Tensor:
    """Reduce a broadcast gradient back to ``shape`` (differentiable)."""
    gs = g._data.shape
    if gs == shape:
        return g
    lead = len(gs) - len(shape)
    if lead < 0 or any(s != 1 and s != d for s, d in zip(shape, gs[lead:])):
        raise RuntimeError(f"a gradient of shape {list(gs)} cannot be summed to shape {list(shape)} (the shapes do "
                           "not broadcast)")
    if not (g._rg and _gs.enabled):  # plain backward: straight to the kernels, no graph bookkeeping
        table = g._be
        if gs[lead:] == shape:  # only leading dims were broadcast (a bias): one reduction, no reshape
            return _make(table.sum(g._data, tuple(range(lead)), False), g.dtype, table)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and gs[i + lead] != 1)
    if not (g._rg and _gs.enabled):
        x = table.sum(g._data, axes, True) if axes else g._data
        if x.shape != shape:
            x = table.view(x, shape)
        return _make(x, g.dtype, table)
    r = _ops.reduction.sum(g, axes, keepdim=True) if axes else g
    if r._data.shape != shape:
        r = _ops.shape.reshape(r, shape)
    return r


def as_tensor_like(x, ref: Tensor) -> Tensor:
    """A Python scalar or sequence as a tensor on ``ref``'s device."""
    if isinstance(x, Tensor):
        return x
    from .creation import tensor
    return tensor(x, device=ref.device)


def check_float_grad(op: str, t: Tensor) -> None:
    if t._rg and not t.dtype.is_floating_point:
        raise RuntimeError(f"{op}: only floating point tensors can require gradients, got {t.dtype}")


def float_dtype_for(dt):
    return dt if dt.is_floating_point else _dt.default


def shape_arg(args, op: str) -> tuple:
    """Accept f(2, 3), f((2, 3)), f([2, 3]), f(Size)."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    for a in args:
        if a.__class__ is not int:
            break
    else:
        return args
    out = []
    for a in args:
        if isinstance(a, Tensor):
            a = a.item()
        if not isinstance(a, int) or isinstance(a, bool):
            try:
                a = a.__index__()
            except AttributeError:
                raise TypeError(f"{op}(): argument 'size' must be tuple of ints, but found element of type "
                                f"{type(a).__name__}") from None
        out.append(a)
    return tuple(out)


_RETURN_TYPES: dict = {}


def return_type(name: str, fields: tuple = ("values", "indices")):
    """PyTorch's torch.return_types.<name>: a named tuple printed as PyTorch prints it (one class per name)."""
    cls = _RETURN_TYPES.get(name)
    if cls is None:
        base = namedtuple(name, fields)  # type: ignore[misc]  # one class per return type, named at run time

        def __repr__(self):
            body = ",\n".join(f"{f}={getattr(self, f)!r}" for f in fields)
            return f"coretorch.return_types.{name}(\n{body})"
        op = "linalg." + name[len("linalg_"):] if name.startswith("linalg_") else name
        doc = f"The named tuple ``({', '.join(fields)})`` that ``torch.{op}`` returns (fields by name or by index)."
        cls = _RETURN_TYPES[name] = type(name, (base,), {"__slots__": (), "__repr__": __repr__, "__doc__": doc,
                                                         "__module__": "coretorch.return_types"})
    return cls


def bind_late(module, namespace: dict) -> None:
    """Bind the names of ``module._LATE`` that ``namespace`` holds (the globals of the module that defines them and
    imports ``module``): how an op family calls a family above it (backward formulas, composites) or re-exports its
    names with no module-level import circle; plain globals afterwards, so calls cost what a direct import does."""
    for k in module._LATE:
        if k in namespace:
            setattr(module, k, namespace[k])



def data_read(why: str) -> None:
    """Core code is about to read a tensor's value into a Python number that decides a shape or a constant of the
    computation: under a capture that already wrote state, a graph break (see coretorch._compile.capture.data_read)."""
    from .._compile.capture import data_read as _read  # (imported on use: compile imports the ops)
    _read(why)
