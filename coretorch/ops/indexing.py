"""Indexing: __getitem__/__setitem__ (basic and advanced), gather, scatter_add, index_select, narrow."""
from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from .. import dtypes as _dt
from ..autograd.grad_mode import state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make
from ._index_layout import laid as _laid
from ._overlap import assert_no_overlap, assert_no_partial_overlap
from ._util import bind_late, broadcast_shapes, edge, host_all_below, norm_dim, sum_to

_DEVICE_MSG = "indices should be either on cpu or on the same device as the indexed tensor"

_i64, _bool = _dt.int64, _dt.bool_
_INDEX_DTYPES = (_dt.int64, _dt.int32, _dt.uint8, _dt.bool_)  # (PyTorch: "long, int, byte or bool")


def _to_index_tensor(k, ref: Tensor, host: list | None = None, put: bool = False) -> Tensor:
    """k as an index tensor on ref's device.  ``host``: a list that gets the index as it was in host memory (a
    list, a numpy array, a cpu tensor) before it moved to ref's device, so that its range is checked for free.
    ``put``: index_put_ / setitem, which move an index from any device to ref's (PyTorch's AdvancedIndex); a read
    takes only a cpu index or one on ref's device."""
    if isinstance(k, Tensor):
        t = k
    else:
        # lists / numpy arrays: made on the cpu first when ref's device is not host memory (checked there)
        dev = ref.device if ref._be.host_memory else "cpu"
        t = _creation.tensor(k, device=dev)
        if t.dtype not in (_i64, _dt.uint8, _bool):  # (PyTorch's indexing_tensor_from_data: long unless a mask,
            # an empty bool array too; ``x[[1.5, 0]]`` is ``x[[1, 0]]``)
            t = t.to(_i64) if t.numel() == 0 else _creation.tensor(k, dtype=_i64, device=dev)
    if t._be is not ref._be:
        if t._be.type == "cpu" or put:
            if host is not None and t._be.type == "cpu":
                host.append(t)
            t = t.to(ref.device)
        else:
            raise RuntimeError(f"{_DEVICE_MSG} ({ref.device})")
    if t.dtype not in _INDEX_DTYPES:
        raise IndexError(f"tensors used as indices must be long, int, byte or bool tensors (got {t.dtype})")
    return t


class AdvKey:
    """An advanced-indexing key split the way PyTorch applies it: ``pre``, a basic key (ints, slices, None; None when
    there is nothing to apply) taken first as a view, then ``post``, full slices and index arrays only.  On keys
    without ints numpy's rule (index arrays separated by a slice put their dims first) is PyTorch's; numpy would
    count ints as index arrays too (``x[0, :, [0, 1]]`` would put the list's dim first), PyTorch selects them first."""
    __slots__ = ("pre", "post")

    def __init__(self, pre, post):
        self.pre, self.post = pre, post


def _take(table, data, key):
    """data[key] for an advanced key (an ``AdvKey`` or a plain key of index arrays)."""
    if key.__class__ is AdvKey:
        if key.pre is not None:
            data = table.basic_index(data, key.pre)
        key = key.post
    return _laid(table, data, key, table.index(data, key))


def _put(table, data, key, value, accumulate: bool) -> None:
    """data[key] = value (``+=`` with ``accumulate``) in place, for an advanced key: ``pre`` is a view of data."""
    if key.__class__ is AdvKey:
        if key.pre is not None:
            data = table.basic_index(data, key.pre)
        key = key.post
    if accumulate:
        table.index_put_(data, key, value, True)
    else:
        table.setitem_(data, key, value)


_NONE, _ELL, _INT, _SLICE, _BOOL, _MASK, _ADV = range(7)
_FULL = slice(None)


_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _warn_uint8_mask() -> None:
    """PyTorch's deprecation warning for a uint8 mask, attributed to the first frame outside coretorch."""
    level, f = 2, sys._getframe(1)  # type: int, Any
    while f is not None and f.f_code.co_filename.startswith(_PKG):
        f, level = f.f_back, level + 1
    warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead.",
                  UserWarning, stacklevel=level)


def _classify(x: Tensor, key: tuple, python_key: bool, put: bool = False):
    """-> ([(kind, value)], dims of x consumed).  ``python_key``: PyTorch's ``x[key]`` rules, where a 0-d integer
    tensor is an int (a select: a view) and a 0-d bool tensor a Python bool; ``index_put`` takes them as index
    tensors.  ``put``: a write (index tensors on any device)."""
    items: list[tuple[int, Any]] = []
    consumed = 0
    for k in key:
        if k is None:
            items.append((_NONE, None))
        elif k is Ellipsis:
            items.append((_ELL, None))
        elif isinstance(k, bool):
            items.append((_BOOL, k))
        elif isinstance(k, int) or (hasattr(k, "__index__") and not isinstance(k, (Tensor, list))
                                    and (not hasattr(k, "shape") or isinstance(k, np.generic))):
            items.append((_INT, int(k.__index__() if not isinstance(k, int) else k)))  # (numpy ints too)
            consumed += 1
        elif python_key and not isinstance(k, (Tensor, Sequence, np.ndarray, slice)):
            # PyTorch: a float, a numpy float or bool scalar or any object without __index__ is no index
            tn = type(k).__name__ if type(k).__module__ == "builtins" else f"{type(k).__module__}.{type(k).__name__}"
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                             f"valid indices (got {tn})")
        elif isinstance(k, slice):
            if k.step is not None and int(k.step) <= 0:
                raise ValueError("step must be greater than zero")
            items.append((_SLICE, k))
            consumed += 1
        else:
            moved: list | None = None if x._be.host_memory else []
            t = _to_index_tensor(k, x, moved, put)
            host = moved[0] if moved else t
            if t.dtype is _dt.uint8:
                _warn_uint8_mask()
                t = t.to(_bool)
            if t.ndim == 0 and python_key:  # PyTorch reads the value (a host read on a device)
                if t.dtype is _bool:
                    items.append((_BOOL, bool(host.item())))
                else:
                    items.append((_INT, int(host.item())))
                    consumed += 1
            elif t.dtype is _bool:
                items.append((_MASK, t))
                consumed += t.ndim
            else:
                items.append((_ADV, (t, host)))
                consumed += 1
    return items, consumed


_SEQ_WARNING = ("Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed in "
                "pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted as tensor "
                "index, x[torch.tensor(seq)], which will result either in an error or a different result")


# (a tensor, a slice, or any Python sequence: PySequence_Check holds for numpy arrays, ranges and strings too)
_SEQ_ITEMS = (Tensor, slice, Sequence, np.ndarray)


def _seq_as_tuple(key: list) -> bool:
    """PyTorch's treatSequenceAsTuple: a subscript list shorter than 32 holding a tensor, a sequence, a slice, None
    or Ellipsis is a tuple of indices (``x[[[0, 1]]]`` is ``x[[0, 1]]``), with PyTorch 2.13's deprecation warning
    (attributed to the user's subscript: the caller of getitem/setitem); any other list is one index tensor."""
    if len(key) < 32 and any(isinstance(k, _SEQ_ITEMS) or k is None or k is Ellipsis for k in key):
        warnings.warn(_SEQ_WARNING, UserWarning, stacklevel=4)
        return True
    return False


def normalize_key(x: Tensor, key, python_key: bool = True, checks: list | None = None):
    """-> (key of native arrays, advanced?).  A basic key is a tuple of ints, slices and None; an advanced one an
    ``AdvKey``.  Checks ranges and counts like PyTorch: an index range only where the result has elements.
    ``checks``: a list that gets the index tensors' range checks instead, for ``run_checks`` once the caller's own
    checks passed (index_put_ checks the value before the indices, as PyTorch)."""
    bare = key
    if not isinstance(key, tuple):
        key = tuple(key) if python_key and isinstance(key, list) and _seq_as_tuple(key) else (key,)
    shape = x._data.shape
    ndim = len(shape)
    items, consumed = _classify(x, key, python_key, checks is not None)
    if consumed > ndim:
        if ndim == 0 and bare is not key:  # PyTorch's messages for a lone int or slice (a tuple: "too many")
            if isinstance(bare, slice):
                raise IndexError("slice() cannot be applied to a 0-dim tensor.")
            if not isinstance(bare, (Tensor, list)):
                raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                                 "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    if sum(1 for kind, _ in items if kind is _ELL) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    pre: list = []
    post: list = []
    rest = 1        # elements of the result's dims that no index tensor makes
    adv_shapes = []  # the shapes of the integer index tensors (and Python bools) that broadcast together
    to_check = []   # (index tensor, as it was in host memory, dim, size): checked when the result has elements
    masks = []
    advanced = False
    dim = 0
    table = x._be
    for kind, v in items:
        if kind is _ELL:
            n = ndim - consumed
            pre += [_FULL] * n
            post += [_FULL] * n
            for s in shape[dim:dim + n]:
                rest *= s
            dim += n
        elif kind is _NONE:
            pre.append(None)
            post.append(_FULL)
        elif kind is _INT:
            size = shape[dim]
            if v < -size or v >= size:
                raise IndexError(f"index {v} is out of bounds for dimension {dim} with size {size}")
            pre.append(v)
            dim += 1
        elif kind is _SLICE:
            pre.append(v)
            post.append(_FULL)
            rest *= len(range(*v.indices(shape[dim])))
            dim += 1
        elif kind is _BOOL:  # PyTorch: a new dim of size 1 indexed by [0] (True) or [] (False)
            pre.append(None)
            post.append(table.full((int(v),), 0, _i64.np))
            adv_shapes.append((int(v),))
            advanced = True
        elif kind is _MASK:
            for j in range(v.ndim):
                if v.shape[j] != shape[dim + j]:
                    raise IndexError(f"The shape of the mask {list(v.shape)} at index {j} does not match the "
                                     f"shape of the indexed tensor {list(shape)} at index {dim + j}")
            pre += [_FULL] * v.ndim
            post.append(v._data)
            masks.append(v)
            dim += v.ndim
            advanced = True
        else:
            t, host = v
            pre.append(_FULL)
            post.append(t._data)
            adv_shapes.append(tuple(t.shape))
            to_check.append((t, host, dim, shape[dim]))
            dim += 1
            advanced = True
    for s in shape[dim:]:
        rest *= s
    if not advanced:
        return tuple(pre), False
    if masks and to_check:  # a mask's count broadcasts with the index tensors (a read on a device)
        adv_shapes += [(int(m._be.to_numpy(m._be.sum(m._be.cast(m._data, _i64.np), None, False))),) for m in masks]
    try:
        bshape = broadcast_shapes(*adv_shapes, op="index")
    except RuntimeError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                         + ", ".join(str(list(s)) for s in adv_shapes)) from None
    if all(bshape):  # an index into a dim of size 0 is checked even when other dims make the result empty
        for t, _, d, size in to_check:
            if size == 0 and t.numel():
                raise IndexError(f"index is out of bounds for dimension {d} with size 0")
    if rest and all(bshape):  # PyTorch checks the indices it reads: none when the result is empty
        if checks is not None:
            checks += to_check
        else:
            run_checks(to_check)
    else:  # numpy would check them: index 0 reads nothing either
        for i, k in enumerate(post):
            if k.__class__ is not slice and k.dtype.kind in "iu" and k.size:
                post[i] = table.full(k.shape, 0, k.dtype)
    while post and post[-1].__class__ is slice and post[-1] == _FULL:
        post.pop()
    if all(k.__class__ is slice and k == _FULL for k in pre):
        return AdvKey(None, tuple(post)), True
    while pre and pre[-1].__class__ is slice and pre[-1] == _FULL:
        pre.pop()
    return AdvKey(tuple(pre), tuple(post)), True


def run_checks(checks: list) -> None:
    """The range checks ``normalize_key`` left in its ``checks`` list."""
    for t, host, d, size in checks:
        _check_key_range(t, host, d, size)


def _check_key_range(t: Tensor, host: Tensor, dim: int, size: int) -> None:
    if not t.numel():
        return
    be = host._be
    if not be.host_memory and be.has("check_index"):  # on the device: reported at the next host read
        be.check_index(host._data, size, True, f"index {{}} is out of bounds for dimension {dim} with size {size}")
        return
    if be.host_memory and host_all_below(be, host._data, size, -size):  # one reduction (a compiled step checks
        return  # its outcome, not the bounds' values: another index in range keeps the replay)
    hi = int(be.to_numpy(be.amax(host._data, None, False)))
    lo = int(be.to_numpy(be.amin(host._data, None, False)))
    bad = hi if hi >= size else lo if lo < -size else None
    if bad is not None:
        raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {size}")


class IndexBackward0(Node):
    """Backward of x[key]: scatter the gradient into zeros of the input's shape.  An advanced key's index tensors
    and masks are saved as PyTorch saves them: one changed in place before the backward raises (the gradient went
    to the changed positions, or a changed mask's count raised numpy's broadcast error)."""
    __slots__ = ("shape", "key", "advanced")

    def backward(self, g):
        if self._saved:
            self.saved()  # (the version check)
        return (_embed(g, self.shape, self.key, self.advanced),)


# PyTorch's names for x[basic key]: the node of the last step it applies (same backward as IndexBackward0)
class SelectBackward0(IndexBackward0):
    __slots__ = ()


class SliceBackward0(IndexBackward0):
    __slots__ = ()


class UnsqueezeBackward0(IndexBackward0):
    __slots__ = ()


class AliasBackward0(IndexBackward0):
    __slots__ = ()


def _basic_node_class(nkey):
    """x[1] -> SelectBackward0, x[:, 1:3] -> SliceBackward0, x[None] -> UnsqueezeBackward0, x[...] -> Alias, as
    PyTorch names the last of the steps it applies (a full ``:`` is no step)."""
    for k in reversed(nkey):
        if k is Ellipsis or k == _FULL:
            continue
        if k is None:
            return UnsqueezeBackward0
        return SliceBackward0 if isinstance(k, slice) else SelectBackward0
    return AliasBackward0


class EmbedBackward0(Node):
    __slots__ = ("key", "advanced")

    def backward(self, g):
        return (_index(g, self.key, self.advanced),)


def _index(x: Tensor, nkey, advanced: bool, index_tensors: tuple = ()) -> Tensor:
    table = x._be
    if advanced:
        out = _take(table, x._data, nkey)
        base = None
    else:
        out = table.basic_index(x._data, nkey)
        base = x._vbase if x._vbase is not None and not x._det else x  # (see shape._wrap_view)
    node = None
    if x._rg and _gs.enabled:
        node = IndexBackward0() if advanced else _basic_node_class(nkey)()
        node.shape, node.key, node.advanced = x._data.shape, nkey, advanced
        if index_tensors:
            node.save(*index_tensors)
        node.next_functions = (edge(x),)
    if base is not None:
        r = _make(out, x.dtype, table, node, base=base, version=x._vc)
        if x._mo is not None:  # a view of a split piece is one too (see ops/shape.py's _multi_output)
            r._mo = x._vc[0]
            if x._cfv:
                r._cfv = True
        if not _gs.enabled or x._ngv:  # (a view made in no_grad mode, see ops/inplace.py's check_inplace)
            r._ngv = True
        return r
    return _make(out, x.dtype, table, node)


def _embed(g: Tensor, shape, nkey, advanced: bool) -> Tensor:
    """zeros(shape) with g added at key (differentiable: its backward is g[key])."""
    table = g._be
    z = table.full(tuple(shape), 0, g.dtype.np)
    if advanced:
        _put(table, z, nkey, g._data, True)
    else:
        table.setitem_(z, nkey, g._data)
    node = None
    if g._rg and _gs.enabled:
        node = EmbedBackward0()
        node.key, node.advanced = nkey, advanced
        node.next_functions = (edge(g),)
    return _make(z, g.dtype, table, node)


def getitem(x: Tensor, key) -> Tensor:
    try:
        if x._be.host_memory:
            nkey, advanced = normalize_key(x, key)
            return _index(x, nkey, advanced, _index_tensors(key) if advanced and x._rg else ())
        with checks_guard(x._be):
            nkey, advanced = normalize_key(x, key)
            return _index(x, nkey, advanced, _index_tensors(key) if advanced and x._rg else ())
    except RuntimeError as e:
        if str(e).startswith(_DEVICE_MSG):
            _count_first(x, key)  # PyTorch counts the indices before it looks at their devices
        raise


def _index_tensors(key) -> tuple:
    """The index tensors and masks of a key: the backward's saved ones (its key holds their arrays themselves)."""
    items = key if key.__class__ is tuple else (key,)
    return tuple([k for k in items if isinstance(k, Tensor) and k.dtype in _INDEX_SET])


_INDEX_SET = frozenset(_INDEX_DTYPES)


_COUNT_MSGS = ("too many indices", "invalid index of a 0-dim tensor")


def _count_first(x: Tensor, key) -> None:
    """PyTorch's IndexError if ``key`` holds more indices than ``x`` has dims (``cpu_0d[device_index]``: "too many
    indices", whatever the devices), its foreign index tensors read on the cpu: an error path only."""
    items = key if isinstance(key, tuple) else (key,)
    host = tuple(k.cpu() if isinstance(k, Tensor) and k._be is not x._be else k for k in items)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (a subscript list's warning was given by the first attempt)
            normalize_key(x, host if isinstance(key, tuple) else host[0])
    except IndexError as ie:
        if str(ie).startswith(_COUNT_MSGS):
            raise IndexError(str(ie)) from None
    except Exception:  # noqa: BLE001  (any other problem: the device error stands, as PyTorch's CUDA order)
        pass


class IndexPutBackward0(Node):
    """(An advanced key's index tensors and masks saved, version-checked, as PyTorch's.)"""
    __slots__ = ("key", "advanced", "vshape", "need")

    def backward(self, g):
        if self._saved:
            self.saved()  # (the version check)
        nx, nv = self.need
        gx = gv = None
        if nx:
            gx = index_put(g, self.key, 0.0, self.advanced)
        if nv:
            gv = sum_to(_index(g, self.key, self.advanced), self.vshape)
        return gx, gv


def index_put(x: Tensor, nkey, value, advanced: bool, index_tensors: tuple = ()) -> Tensor:
    """Out-of-place x[key] = value (differentiable in x and value); ``index_tensors``: the key's, saved."""
    table = x._be
    out = table.contiguous(x._data)
    vt = isinstance(value, Tensor)
    if vt:
        if value._be is not table:
            value = value.to(x.device)
        vd = value._data if value.dtype is x.dtype else table.cast(value._data, x.dtype.np)
    else:
        vd = value
    if advanced:
        _put(table, out, nkey, vd, False)
    else:
        table.setitem_(out, nkey, vd)
    if _gs.enabled and (x._rg or (vt and value._rg)):
        node = IndexPutBackward0()
        node.key, node.advanced = nkey, advanced
        node.vshape = value._data.shape if vt else None
        node.need = (x._rg, vt and value._rg)
        if index_tensors:
            node.save(*index_tensors)
        node.next_functions = (edge(x), edge(value)) if vt else (edge(x),)
        return _make(out, x.dtype, table, node)
    return _make(out, x.dtype, table)


class _Guard:
    """Device-side index checks queued by an op that then raises on the host are forgotten: they would fire at a
    later, unrelated host read (the backend's ``check_mark`` / ``discard_checks``)."""
    __slots__ = ("table", "mark")

    def __init__(self, table):
        self.table, self.mark = table, table.check_mark()

    def __enter__(self):
        return self

    def __exit__(self, et, e, tb) -> Literal[False]:
        if et is not None:
            self.table.discard_checks(self.mark)
        return False


class _NoGuard:
    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, et, e, tb) -> Literal[False]:
        return False


_NO_GUARD = _NoGuard()


def checks_guard(table):
    """``with checks_guard(x._be): ...`` around an op that may queue device-side index checks and raise later."""
    if table.host_memory or not table.has("discard_checks"):
        return _NO_GUARD
    return _Guard(table)


def setitem(x: Tensor, key, value) -> None:
    with checks_guard(x._be):
        _setitem(x, key, value)


def _check_overlap(x: Tensor, key, nkey, advanced: bool, value: Tensor) -> None:
    """PyTorch's overlap errors for a value viewing x's memory: basic indexing copies into the view (a partly
    overlapping value is refused), advanced indexing is index_put_ (any overlap is refused), except one mask with a
    one-element value (masked_fill_).  The value is broadcast to the view first (a stride 0 is too hard to
    check: allowed).  For advanced keys PyTorch checks the view left by the key's ints and slices (``pre``)."""
    table, isz = x._be, x.dtype.itemsize
    if not advanced:
        if value.ndim == 0:  # PyTorch fills from a 0-d value (copy_to): nothing to check
            return
        dst = table.basic_index(x._data, nkey)
        assert_no_partial_overlap(table, dst, value._data, isz, value.dtype.itemsize, tuple(dst.shape))
        return
    if value.numel() == 1 and _single_mask(key):
        return
    dst = x._data
    if nkey.__class__ is AdvKey and nkey.pre is not None:
        dst = table.basic_index(dst, nkey.pre)
    assert_no_overlap(table, dst, value._data, isz, value.dtype.itemsize)


def _setitem_view(key) -> str | None:
    """The name of the last view op PyTorch applies for a basic ``key`` (x[0, 1:3]: Slice), or None when x itself
    is written (a full slice, an Ellipsis)."""
    name = None
    for k in key if key.__class__ is tuple else (key,):
        if k is None:
            name = "Unsqueeze"
        elif k.__class__ is slice:
            if k != _FULL:
                name = "Slice"
        elif k is not Ellipsis:
            name = "Select"
    return name


_FULL = slice(None)


def _setitem(x: Tensor, key, value) -> None:
    if isinstance(key, list) and _seq_as_tuple(key):
        key = tuple(key)
    if key.__class__ is bool:  # PyTorch: x[False] = v does nothing, x[True] = v copies v into x[None]
        if not key:
            return
        key = None
    check_byte_mask_fill(x, key, value)
    checks: list = []
    nkey, advanced = normalize_key(x, key, checks=checks)
    vt = isinstance(value, Tensor)
    if vt and value._be is not x._be:
        value = _value_to(x, key, value, advanced)
    if isinstance(value, np.generic):  # (x[0] = np.int64(300) for int8 raises as 300 does, as PyTorch)
        value = _dt.py_scalar(value)
    if not vt and not isinstance(value, (int, float, bool)):
        value, vt = _creation.tensor(value, dtype=x.dtype, device=x.device), True
    if not vt and x.dtype is not _dt.float16 and x.dtype is not _dt.bfloat16:
        # (PyTorch stores a Python number into float16/bfloat16 unchecked: out of range it is inf, as a cast)
        value = _dt.fit_scalar(value, x.dtype)
    elif not vt and value.__class__ is float:
        with np.errstate(over="ignore"):  # (through float32, as c10 converts a double to half)
            value = float(np.float32(value))
    # PyTorch: basic indexing copies (casting any dtype); advanced indexing is index_put_, which needs equal
    # dtypes unless it dispatches to masked_fill_ (one bool mask and a one-element value; PyTorch on CUDA wants
    # that value on the CPU, coretorch also takes one on the destination's device, as PyTorch's CPU does)
    if vt and advanced and value.dtype is not x.dtype and not (value.numel() == 1 and _single_mask(key, x)):
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{x.dtype._tname[:-6]} for the destination and {value.dtype._tname[:-6]} for the "
                           "source.")
    if vt:
        if value._rg and not (x.dtype.is_floating_point or x.dtype.is_complex):
            value = value.detach()  # the copy into an integer tensor is not differentiable (PyTorch)
        vs = value._data.shape
        if vs and vs[0] == 1:  # PyTorch drops the value's leading 1-dims first (slicePrefix1sSize)
            i = 1
            while i < len(vs) and vs[i] == 1:
                i += 1
            value = value.reshape(vs[i:])
    if vt and value.ndim and not advanced:
        _check_put_shape(x, nkey, advanced, tuple(value.shape))  # a view: cheap
    if vt and value._be is x._be and x._be.has("same_storage") and x._be.same_storage(x._data, value._data):
        _check_overlap(x, key, nkey, advanced, value)
    if x._mo is not None and not advanced and _gs.enabled and (x._rg or vt and value._rg):
        name = _setitem_view(key)  # PyTorch writes into x[key], a view named after the key's last view op
        if name is not None:
            raise RuntimeError(multi_output_error(x, False, name))
    recording = check_inplace(x, value if vt else None, "__setitem__")
    if checks:
        run_checks(checks)
    try:
        if recording:
            r = index_put(x, nkey, value, advanced, _index_tensors(key) if advanced else ())
            rebase(x, r)
            return
        table = x._be
        vd = value if not vt else (value._data if value.dtype is x.dtype else table.cast(value._data, x.dtype.np))
        if advanced:
            _put(table, x._data, nkey, vd, False)
        else:
            table.setitem_(x._data, nkey, vd)
    except (ValueError, TypeError):
        if vt and value.ndim:  # the backend's own error for a value that does not fit: raise PyTorch's
            _check_put_shape(x, nkey, advanced, tuple(value.shape))
        raise
    x._vc[0] += 1


def _value_to(x: Tensor, key, value: Tensor, advanced: bool) -> Tensor:
    """PyTorch's device rule for a value on another device than x: basic indexing is copy_ (any device, any
    shape); index_put_ moves a 0-d value, and a one-element CPU value with one bool mask on x's device is
    masked_fill_; any other value is refused by its TensorIterator."""
    if not advanced or value.ndim == 0 or (value._be.type == "cpu" and value.numel() == 1 and _single_mask(key, x)):
        return value.to(x.device)
    raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                       f"{x.device} and {value.device}!")


def _single_mask(key, x: Tensor | None = None) -> bool:
    """One bool mask (and no other index tensor) in key; with ``x``: a mask tensor on x's device (PyTorch's
    masked_fill_ dispatch; a list of bools is made on x's device)."""
    ks = key if isinstance(key, tuple) else (key,)
    adv = [k for k in ks if isinstance(k, (list, bool)) or (hasattr(k, "shape") and len(k.shape) > 0) or (
        isinstance(k, Tensor) and k.dtype in (_bool, _dt.uint8))]  # a 0-d integer tensor is a select
    # a 0-d mask is no mask there: PyTorch indexes a new dim by [0] or [] (index_put_, same dtypes only); a list of
    # bools is a mask tensor
    if len(adv) != 1:
        return False
    k = adv[0]
    if isinstance(k, list):
        return bool(k) and _all_bools(k)
    return isinstance(k, Tensor) and k.dtype in (_bool, _dt.uint8) and k.ndim > 0 and (x is None or k._be is x._be)


def check_byte_mask_fill(x: Tensor, key, value) -> None:
    """PyTorch's ``x[mask] = v`` / ``index_put_`` with one mask and a one-element value is ``masked_fill_``, which
    refuses a uint8 mask (a longer value takes the deprecated uint8 indexing, with its warning)."""
    for k in key if key.__class__ is tuple else (key,):  # (cheap first: a uint8 tensor in the key)
        if isinstance(k, Tensor) and k.dtype is _dt.uint8:
            if (not isinstance(value, Tensor) or value.numel() == 1) and _single_mask(key, x):
                raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype unsigned char")
            return


def _all_bools(k: list) -> bool:
    return all(_all_bools(v) if isinstance(v, list) and v else v.__class__ is bool for v in k)


def _check_put_shape(x: Tensor, nkey, advanced: bool, vshape: tuple) -> None:
    """PyTorch's errors for a value that does not broadcast to x[key] (instead of the backend's)."""
    table = x._be
    target = tuple((_take(table, x._data, nkey) if advanced else table.basic_index(x._data, nkey)).shape)
    v = vshape
    while len(v) > len(target) and v[0] == 1:  # leading 1s of the value are dropped (slicePrefix1sSize)
        v = v[1:]
    ok = len(v) <= len(target) and all(a == b or a == 1 for a, b in zip(reversed(v), reversed(target)))
    if ok:
        return
    if advanced:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(vshape)} cannot be broadcast to indexing "
                           f"result of shape {list(target)}")
    if len(v) > len(target):
        raise RuntimeError(f"expand({list(v)}, size={list(target)}): the number of sizes provided ({len(target)}) "
                           f"must be greater or equal to the number of dimensions in the tensor ({len(v)})")
    for i in range(1, len(v) + 1):
        if v[-i] != target[-i] and v[-i] != 1:
            raise RuntimeError(f"The expanded size of the tensor ({target[-i]}) must match the existing size "
                               f"({v[-i]}) at non-singleton dimension {len(target) - i}.  Target sizes: "
                               f"{list(target)}.  Tensor sizes: {list(v)}")


def _int_arg(v, name: str) -> int:
    """An int argument as PyTorch parses it: an int or an object with ``__index__`` (a one-element integer tensor
    too), never a bool or a float."""
    if isinstance(v, Tensor):
        if v.numel() == 1 and not v.dtype.is_floating_point and v.dtype is not _bool:
            return int(v.item())
    elif not isinstance(v, bool) and hasattr(v, "__index__"):
        return int(v.__index__())
    raise TypeError(f"narrow(): argument '{name}' must be int, not {type(v).__name__}")


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """A view of ``input`` restricted to ``start, ..., start + length - 1`` along ``dim``."""
    if isinstance(start, Tensor) and (start.ndim or start.dtype.is_floating_point or start.dtype is _bool):
        raise RuntimeError("start must be an 0-dim integral Tensor.")
    start, length = _int_arg(start, "start"), _int_arg(length, "length")
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    d = norm_dim(dim, input.ndim, "narrow")
    size = input.shape[d]
    if start < -size or start > size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got "
                         f"{start})")
    if start < 0:
        start += size
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    key = (slice(None),) * d + (slice(start, start + length),)
    return _index(input, key, False)


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """The view of ``input`` at position ``index`` of dimension ``dim`` (that dimension removed)."""
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = norm_dim(dim, input.ndim, "select")
    size = input.shape[d]
    if index < -size or index >= size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input.shape)} at "
                         f"dimension {d}")
    return _index(input, (slice(None),) * d + (index,), False)


# late, module level: an import inside a function costs ~10k instructions per call (x[idx], x[i] = v)
from . import creation as _creation  # noqa: E402
from .inplace import check_inplace, multi_output_error, rebase  # noqa: E402

# the index ops along one dim, built on getitem above; every name stays public here
from . import _indexing_dim  # noqa: E402
from ._indexing_dim import _same_device, _check_index, _shape1, _check_range, GatherBackward0  # noqa: E402, F401
from ._indexing_dim import gather, ScatterAddBackward0, scatter_add, _scatter_add, IndexSelectBackward0  # noqa: E402, F401
from ._indexing_dim import index_select, IndexAddBackward0, index_add, _index_add, nonzero  # noqa: E402, F401
from ._indexing_dim import masked_select  # noqa: E402, F401

for _o in list(vars(_indexing_dim).values()):
    if callable(_o) and getattr(_o, "__module__", None) == _indexing_dim.__name__:
        _o.__module__ = __name__  # public here, as before the split (ops._export flattens each module's own functions)
del _o
bind_late(_indexing_dim, globals())  # getitem and _embed, which it calls (see its _LATE)
