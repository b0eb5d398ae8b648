"""In-place ops.  The value is computed out of place (recorded for autograd when needed), then
written into the tensor's own storage so that views see it; the version counter is bumped."""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..autograd._zero import keep_graph
from ..autograd.grad_mode import state as _gs
from ..autograd.graph import _FREED, Node
from ..autograd.engine import VIEW_REFRESH
from ..tensor import Tensor, _make
from ._overlap import assert_no_partial_overlap
from ._util import edge
from ._pointwise_alpha import _exact_product
from .pointwise import _round_to, _scalar_opmath


def check_inplace(x: Tensor, other, op: str) -> bool:
    """Raise PyTorch's errors; return whether the op must be recorded for autograd."""
    if not _gs.enabled:
        return False
    if x._rg and x.grad_fn is None:
        if x._vbase is not None and not x._det:  # (a leaf that is a view: PyTorch names it so)
            raise RuntimeError(f"a view of a leaf Variable that requires grad is being used in an in-place "
                               f"operation ({op}).")
        raise RuntimeError(f"a leaf Variable that requires grad is being used in an in-place operation "
                           f"({op}). Wrap the update in `with coretorch.no_grad():` or use an out-of-place op.")
    recording = x._rg or (isinstance(other, Tensor) and other._rg)
    if x._ngv and x._gf is None and (recording or x._vbase is not None and x._vbase._rg) and not x._det \
            and x.dtype.is_floating_point:  # (a view made in no_grad mode; split's pieces get their node after)
        raise RuntimeError(_NO_GRAD_VIEW)
    if recording and x._mo is not None:
        raise RuntimeError(multi_output_error(x, False))
    base = x._vbase
    if base is not None and base._rg and base._gf is None and not x._det:
        # a view of a leaf that came to require grad after the view was made (b[:2] before b.requires_grad_()):
        # PyTorch's view requires grad through its base, and its check_inplace refuses it as any view of a leaf
        raise RuntimeError(f"a view of a leaf Variable that requires grad is being used in an in-place operation "
                           f"({op}).")
    if recording and x._vbase is not None and not x._det:
        # (a view of a tensor that does not require grad, written with an operand that does: the base joins the
        # graph through the rebase, as PyTorch's CopySlices; ``x[1:3].copy_(w)`` of ``x = torch.zeros(4)``)
        base = x._vbase
        if x._rg and base.grad_fn is None:  # (PyTorch's test: the view requires grad, its base is a leaf)
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                               f"operation ({op}).")
        if x._rg != base._rg or _view_geometry(x) is None:
            if x._be.has("strides") and any(t == 0 and d > 1 for d, t in zip(x._data.shape, x._be.strides(x._data))):
                raise RuntimeError(_SELF_OVERLAP)  # (an expanded view: PyTorch's error, autograd or not)
            # a view detached from base's graph (detach(), no_grad), or a layout the rebase cannot address
            raise NotImplementedError(f"{op}: in-place modification of this view of a tensor that requires grad "
                                      "is not supported by coretorch yet; use the out-of-place form of the op")
    return recording


_NO_GRAD_VIEW = (
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that this use "
    "case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the "
    "inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if "
    "you want the inplace to be tracked).")


_SELF_OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers to a single memory "
                 "location. Please clone() the tensor before performing the operation.")


def _view_geometry(x: Tensor, unexpanded: bool = False):
    """(shape, element strides, element offset) of the view ``x`` in its base's memory, where the base is
    contiguous and the view lies inside it with non-negative strides (what a CopySlices rebase addresses); else
    None.  ``unexpanded``: of x with its broadcast dims (stride 0) as size 1 (an expanded view's memory)."""
    root, table = x._vbase, x._be
    assert root is not None  # only views are rebased
    if root._be is not table or not (table.has("storage_offset") and table.has("as_strided")):
        return None
    shape = tuple(x._data.shape)
    n = 1
    for d in root._data.shape:
        n *= d
    if 0 in shape:  # no element written: any layout will do
        return shape, (0,) * len(shape), 0, n
    layout = None
    if not table.is_contiguous(root._data):  # a dense root in another order (a transposed clone, channels_last):
        rshape, rst = tuple(root._data.shape), tuple(table.strides(root._data))  # its memory order is mapped
        if not _dense(rshape, rst):
            return None
        layout = (rshape, rst)
    st = tuple(table.strides(x._data))
    if unexpanded:
        shape = tuple([1 if t == 0 else d for d, t in zip(shape, st)])
    off = table.storage_offset(x._data) - table.storage_offset(root._data)
    if off < 0 or min(st, default=0) < 0 or any(t == 0 and d > 1 for d, t in zip(shape, st)) \
            or off + 1 + sum((d - 1) * t for d, t in zip(shape, st)) > n:
        return None
    return (shape, st, off, n) if layout is None else (shape, st, off, n, layout)


def _dense(shape: tuple, strides: tuple) -> bool:
    """Whether the strides lay the elements out without gaps or overlaps (a permutation of a contiguous layout)."""
    acc = 1
    for t, d in sorted((t, d) for d, t in zip(shape, strides) if d != 1):
        if t != acc:
            return False
        acc *= d
    return True


def _positions(table, g: Tensor, geom) -> Tensor:
    """int64 positions (flat, in a contiguous tensor of the base's shape) of the view's elements, in view order."""
    shape, st, off, n = geom[:4]
    ar = table.arange(0, max(n, 1), 1, _dt.int64.np)
    mem = _make(table.contiguous(table.as_strided(ar, shape, st, off)), _dt.int64, table).reshape(-1)
    if len(geom) == 4:  # (a contiguous base: memory offsets are the positions)
        return mem
    from .indexing import index_select
    rshape, rst = geom[4]  # the base's memory order: logical[memory offset] = its element's row-major position
    cst: list[int] = []
    acc = 1
    for d in reversed(rshape):
        cst.insert(0, acc)
        acc *= d
    logical = table.empty((n,), _dt.int64.np)
    table.assign_(table.as_strided(logical, rshape, rst, 0), table.as_strided(ar, rshape, tuple(cst), 0))
    return index_select(_make(logical, _dt.int64, table), 0, mem)


class CopySlices(Node):
    """The base's node after an in-place op on a view of it: the written region's gradient goes to the op's
    result, the rest to the base as it was (PyTorch's CopySlices)."""
    __slots__ = ("geom", "shape")

    def backward(self, g):
        from .indexing import index_select
        from .scatter import index_fill
        pos = _positions(g._be, g, self.geom)
        flat = g.reshape(-1)
        return (index_fill(flat, 0, pos, 0).reshape(self.shape),
                index_select(flat, 0, pos).reshape(self.geom[0]))


class AsStridedBackward0(Node):
    """The view's node after the rebase: its gradient lands in the base's region (a zero elsewhere)."""
    __slots__ = ("geom", "shape")

    def backward(self, g):
        from .indexing import index_add
        from .creation import zeros
        pos = _positions(g._be, g, self.geom)
        z = zeros(self.geom[3], dtype=g.dtype, device=g.device)
        return (index_add(z, 0, pos, g.reshape(-1)).reshape(self.shape),)


def _rebase_view(x: Tensor, r: Tensor) -> None:
    """x, a view of ``base``, took r's values (already written): base's graph gets a CopySlices node joining its
    old graph and r's, and x becomes a view of the new base (as PyTorch's in-place ops on views)."""
    base = x._vbase
    assert base is not None  # x is a view
    geom = _view_geometry(x)
    node = CopySlices()
    node.geom, node.shape = geom, tuple(base._data.shape)
    old_base = edge(base)
    _bypass_hooked_view_node(x, r, geom, node.shape, old_base)
    node.next_functions = (old_base, edge(r))
    old_fn, old_nr = base._gf, base._out_nr
    made_by(base, old_fn, old_nr)
    base.grad_fn, base._out_nr, base._rg = node, 0, True
    if base._retains:  # (the base's retain_grad follows its new node: its .grad is that of its new value, as in torch)
        from ..tensor import _move_retains_hook
        _move_retains_hook(base, old_fn, old_nr)
    x.grad_fn, x._out_nr, x._rg = _region_of(geom, node.shape, (node, 0)), 0, True
    x._gfb = node


def _bypass_hooked_view_node(x: Tensor, r: Tensor, geom, shape: tuple, old_base: tuple) -> None:
    """PyTorch's CopySlices calls the in-place op's node itself and writes the gradient of its first input (the
    view's old value) into the base's region: the view's old node is not on that path, so hooks registered on the
    view before the op (``v.register_hook``, ``v.grad_fn.register_prehook``) do not fire for it (they still fire
    where an op recorded before the in-place one read the old view).  Here the gradient reaches the base through
    the edge of r's node (or of the clone of x it read) to that old node: where that node has hooks, the edge goes
    to a plain node of the view's region of the base's old graph instead (same values; without hooks the old node
    gives the same result and stays: no extra node)."""
    old = x._gf
    if old is None or not old._hooked or geom is None:
        return
    n = r._gf
    for _ in range(2):  # the op's node, or the clone of x it read (apply_inplace's fn(clone(x)))
        if n is None or not n.next_functions:
            return
        first = n.next_functions[0]
        if first[0] is old and first[1] == x._out_nr:
            n.next_functions = ((_region_of(geom, shape, old_base), 0),) + tuple(n.next_functions[1:])
            return
        n = first[0]


def rebase_view_onto(x: Tensor, node: Node, nr: int, fn_name: str) -> None:
    """x, a view, was modified in place by a custom Function (``ctx.mark_dirty``) and is its output ``nr``: the
    base's graph gets a CopySlices node joining its old graph and ``node``'s, as for an in-place op on a view."""
    base = x._vbase
    assert base is not None
    if x._rg and base.grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    if x._mo is not None:
        raise RuntimeError(multi_output_error(x, False))
    if _view_geometry(x) is None:
        raise NotImplementedError(f"{fn_name}: ctx.mark_dirty of this view of a tensor that requires grad is not "
                                  "supported by coretorch yet; return a modified clone instead")
    _rebase_view(x, _make(x._data, x.dtype, x._be, node, nr))


class _ExpandedRegion(AsStridedBackward0):
    """The node of an expanded view (``b[0:1].expand(5, 4)``) regenerated after an in-place op on its base: the
    gradient summed over the broadcast dims, then into the region of the base's memory (PyTorch's as_strided
    backward of a stride-0 view; named as PyTorch's regenerated node)."""
    __slots__ = ("in_shape",)

    def backward(self, g):
        from ._util import sum_to
        return AsStridedBackward0.backward(self, sum_to(g, self.in_shape))


_ExpandedRegion.__name__ = _ExpandedRegion.__qualname__ = "AsStridedBackward0"


def _region_of(geom, shape: tuple, base_edge) -> AsStridedBackward0:
    """The node of a view at ``geom`` in a base of ``shape`` whose gradient goes to ``base_edge``."""
    view = AsStridedBackward0()
    view.geom, view.shape = geom, shape
    view.next_functions = (base_edge,)
    return view


def refresh_view(x: Tensor) -> None:
    """``x``, a view, is read by a recorded op after its base's node changed (an in-place op on the base or on
    another view of it): x's node becomes an AsStridedBackward0 of its region of the base's new graph (PyTorch's
    regenerated view grad_fn), so the gradient sees the in-place op.  A layout the rebase cannot address keeps
    the old node (the in-place op on the view itself already raised for such layouts)."""
    base = x._vbase
    assert base is not None
    mo = x._mo
    if mo is not None and x._vc[0] != mo and (x._rg or base._rg):
        raise RuntimeError(multi_output_error(x, True))
    if not x._rg or base._gf is x._gfb:
        return
    x._gfb = base._gf
    if x._det:  # (a detached tensor is no view for autograd: its own node stays)
        return
    if not base._rg:
        return
    geom = _view_geometry(x)
    node: AsStridedBackward0
    if geom is not None:
        node = _region_of(geom, tuple(base._data.shape), edge(base))
    else:
        geom = _view_geometry(x, unexpanded=True)  # (an expanded view: the region of its memory, then a sum)
        if geom is None:
            return
        node = _ExpandedRegion()
        node.geom, node.shape, node.in_shape = geom, tuple(base._data.shape), geom[0]
        node.next_functions = (edge(base),)
    old_fn, old_nr = x._gf, x._out_nr
    x.grad_fn, x._out_nr = node, 0
    if x._retains:  # (its retain_grad follows the view's new node, as in torch)
        from ..tensor import _move_retains_hook
        _move_retains_hook(x, old_fn, old_nr)


VIEW_REFRESH[0] = refresh_view


def multi_output_error(x: Tensor, indirect: bool, view: str | None = None) -> str:
    """PyTorch's message for an in-place op on a piece of split/chunk/unbind (or a view of one) recorded by
    autograd, or (``indirect``) for the use of a piece whose base or another view of it was modified in place;
    ``view``: the name of a view of x the op writes through (x[0] = v: Select)."""
    what = "its base or another view of its base has been" if indirect else "is being"
    fn = x._gf
    if fn is None:
        head = f"A view was created in no_grad mode and {what} modified inplace with grad mode enabled."
    else:
        name, nr = (view, 0) if view else (_forward_name(fn), x._out_nr)
        head = f"Output {nr} of {name} is a view and {what} modified inplace."
    if x._cfv:
        return (head + " This view was created inside a custom Function (or because an input was returned as-is) and "
                "the autograd logic to handle view+inplace would override the custom backward associated with the "
                "custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by "
                "cloning the output of the custom Function.")
    return (head + " This view is the output of a function that returns multiple views. Such functions do not allow "
            "the output views to be modified inplace. You should replace the inplace operation by an out-of-place "
            "one.")


def _forward_name(node) -> str:
    """The op's name in PyTorch's message: the node's without ``Backward<n>`` (SplitBackward0: Split)."""
    name = type(node).__name__
    i = name.rfind("Backward")
    return name[:i] if i > 0 and (name[i + 8:].isdigit() or not name[i + 8:] and getattr(node, "_user_grads", False)) \
        else name  # (a custom Function's node: FBackward, F)


def rebase(x: Tensor, r: Tensor) -> None:
    """Write the recorded result ``r`` into ``x`` and make ``x`` the output of r's graph node."""
    table = x._be
    if r._data.shape != x._data.shape:
        raise RuntimeError(f"output with shape {list(x.shape)} doesn't match the broadcast shape "
                           f"{list(r.shape)}")
    table.assign_(x._data, r._data if r.dtype is x.dtype else table.cast(r._data, x.dtype.np))
    x._vc[0] += 1
    if r.dtype is not x.dtype:
        r = r.to(x.dtype)
    else:
        _saved_output_is_x(r.grad_fn, r, x)
    old_fn, old_nr = x.grad_fn, x._out_nr
    made_by(x, old_fn, old_nr)
    if x._vbase is not None and r._rg and x._rg == x._vbase._rg and not x._det:
        _rebase_view(x, r)
    else:
        x.grad_fn = r.grad_fn
        x._out_nr = r._out_nr
        x._rg = r._rg
    if x._retains:
        from ..tensor import _move_retains_hook
        _move_retains_hook(x, old_fn, old_nr)


def made_by(x: Tensor, fn, nr: int) -> None:
    """Before an in-place op changes x's grad_fn: remember the node that made x (once), for the "modified by an
    inplace operation" error of a node that saved x as its output (named as that node, as PyTorch's)."""
    if fn is not None and x._made_by is None:
        x._made_by = (fn, nr)


def _saved_output_is_x(node, r, x: Tensor) -> None:
    """A node that saved its output ``r`` (relu_, exp_, sigmoid_...) saves ``x`` instead, at x's new version: as
    in PyTorch, an in-place change of x afterwards makes the backward raise (and r's copy is not kept alive)."""
    if node is None:
        return
    saved = node._saved
    if saved and saved is not _FREED and any(t is r for t in saved):
        node._versions = tuple([x._vc[0] if t is r else v for t, v in zip(saved, node._versions)])
        node._saved = tuple([x if t is r else t for t in saved])
    if getattr(node, "out", None) is r:
        node.out = x


def _castable(src: _dt.dtype, dst: _dt.dtype) -> bool:
    return src.category <= dst.category


def apply_inplace(x: Tensor, op: str, fn, other=None) -> Tensor:
    """fn(src) computes the new value out of place; src is x (or a clone of it when recording)."""
    recording = check_inplace(x, other, op)
    if recording:
        from .shape import clone
        # a copy even when x needs no gradient: the op may save its input (mul_, div_ save x for other's gradient),
        # and x is overwritten below (as PyTorch saves the original self)
        if x._gf is not None and x._vbase is None:
            # the old value in a tensor at x's place in the graph: the op's node edges straight to x's old node, as
            # PyTorch's (``y = x * 2; y += 1``: AddBackward0 -> MulBackward0, no CloneBackward0 in between)
            _gs.enabled = False
            try:
                src = clone(x)
            finally:
                _gs.enabled = True
            src._gf, src._rg, src._out_nr = x._gf, True, x._out_nr
            r = fn(src)
        else:
            r = fn(clone(x))
    else:
        prev = _gs.enabled
        _gs.enabled = False
        try:
            r = fn(x)
        finally:
            _gs.enabled = prev
    if r._be is not x._be:  # a CPU 0-d x with a device operand: the result is on the device (PyTorch's CUDA rule)
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                           f"{r.device} and {x.device}!")
    if not _castable(r.dtype, x.dtype):
        raise RuntimeError(f"result type {r.dtype._tname[:-6]} can't be cast to the desired output type "
                           f"{x.dtype._tname[:-6]} (in {op})")
    if recording:
        rebase(x, r)
        return x
    if r._data.shape != x._data.shape:
        raise RuntimeError(f"output with shape {list(x.shape)} doesn't match the broadcast shape "
                           f"{list(r.shape)} (in {op})")
    table = x._be
    table.assign_(x._data, r._data if r.dtype is x.dtype else table.cast(r._data, x.dtype.np))
    x._vc[0] += 1
    return x


_IKERNEL = {"add_": "iadd", "sub_": "isub", "mul_": "imul", "div_": "idiv"}
_AXPY_SIGN = {"add_": 1, "sub_": -1}
_NUMBER = (int, float)


def _symbolic(x) -> bool:
    """A float subclass other than numpy's: coretorch.compile's symbolic numbers (an optimizer step's lr)."""
    return isinstance(x, float) and not isinstance(x, np.generic)


def binary_inplace(x: Tensor, op: str, fn, other, alpha=1) -> Tensor:
    """add_/sub_/mul_/div_: outside autograd, write straight into x's storage (one pass fewer, the way an
    optimizer step wants it); otherwise the general out-of-place-then-copy path."""
    table = x._be
    ot = isinstance(other, Tensor)
    if alpha.__class__ is complex:  # (before a kernel takes it: BLAS would drop the imaginary part)
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a complex number.")
    if ot and other._be is table and other._data is not x._data and table.has("same_storage") \
            and table.same_storage(x._data, other._data):  # x[1:] += x[:-1] raises as in PyTorch
        assert_no_partial_overlap(table, x._data, other._data, x.dtype.itemsize, other.dtype.itemsize)
    if (not _gs.enabled or not (x._rg or (ot and other._rg) or x._ngv or x._vbase is not None and x._vbase._rg)) \
            and x.dtype.is_floating_point \
            and table.has(_IKERNEL[op]):
        if ot:
            if other._be is table and other.dtype is x.dtype:
                y = other._data
                if y.shape != x._data.shape:
                    from ._util import broadcast_shape
                    if broadcast_shape(x._data.shape, y.shape, op) != x._data.shape:
                        raise RuntimeError(f"output with shape {list(x.shape)} doesn't match the broadcast "
                                           f"shape {list(broadcast_shape(x._data.shape, y.shape))} (in {op})")
                    y = table.expand(y, x._data.shape)
                if alpha != 1:
                    if table.has_axpy and op in _AXPY_SIGN and y.shape == x._data.shape:
                        table.axpy_(x._data, alpha * _AXPY_SIGN[op], y)  # one pass, no scaled temporary
                        x._vc[0] += 1
                        return x
                    y = table.mul(y, alpha)
                getattr(table, _IKERNEL[op])(x._data, y)
                x._vc[0] += 1
                return x
        elif (type(other) in (int, float) or _symbolic(other)) \
                and (x.dtype.itemsize > 2 or op in _AXPY_SIGN or _scalar_opmath(table)):
            # (a bool goes the general way: sub_(True) raises as in PyTorch; so do float16/bfloat16 mul_/div_ on a
            # device whose kernels would round the scalar to 16 bits first: h /= 70000. is computed in float32)
            if alpha != 1 and other.__class__ in _NUMBER and alpha.__class__ in _NUMBER:
                # PyTorch's fmadd(other, alpha, x) rounds once: here where the dtype holds other * alpha exactly,
                # else the out-of-place op's one rounding, written back
                p = _exact_product(other, alpha, x.dtype)
                if p is None:
                    return apply_inplace(x, op, lambda s: fn(s, other, alpha=alpha), other)
                table.iadd(x._data, p * _AXPY_SIGN[op])
                x._vc[0] += 1
                return x
            v = (other if other.__class__ is not int else float(other)) * alpha  # (a Sym stays one)
            if x.dtype.itemsize == 2 and op in _AXPY_SIGN and _scalar_opmath(table):
                v = _round_to(v, x.dtype)  # PyTorch's add_/sub_ round the scalar to float16/bfloat16 first
            getattr(table, _IKERNEL[op])(x._data, v)
            x._vc[0] += 1
            return x
    if alpha != 1:
        return apply_inplace(x, op, lambda s: fn(s, other, alpha=alpha), other)
    return apply_inplace(x, op, lambda s: fn(s, other), other)


def fill_(x: Tensor, value) -> Tensor:
    return _fill(x, value, "FillBackward2")


def _fill(x: Tensor, value, name: str) -> Tensor:
    """fill_ and zero_; ``name``: the node PyTorch records when x requires grad."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} "
                               "dimensions.")
        if value._rg:
            from .shape import expand
            return apply_inplace(x, "fill_", lambda s: expand(value.to(x.dtype), x.shape), value)
        # (PyTorch copies a tensor value: cast as a copy casts, 300.0 -> 44 in uint8, never the number range check)
        value = (value if value.dtype is x.dtype else value.to(x.dtype)).item()
        name = "FillBackward3" if name == "FillBackward2" else name
        expanded_ok = False  # (PyTorch copies a tensor value: refused on an expanded tensor)
    else:
        expanded_ok = True
    value = _dt.fit_scalar(value, x.dtype)
    if check_inplace(x, None, "fill_"):
        # the result does not depend on x, but stays in the graph with a zero gradient (ZeroBackward0, FillBackward2)
        from .creation import full
        r = full(tuple(x.shape), value, dtype=x.dtype, device=x.device)
        rebase(x, keep_graph(r, (x,), name))
        return x
    try:
        x._be.assign_(x._data, value)
    except RuntimeError:
        d = _unexpanded(x) if expanded_ok else None
        if d is None:
            raise
        x._be.assign_(d, value)
    x._vc[0] += 1
    return x


def _unexpanded(x: Tensor):
    """The memory of an expanded tensor without its broadcast dims (stride 0, size > 1 -> size 1): what fill_ and
    zero_ write, as PyTorch does (every other in-place op refuses such a tensor); None for any other tensor."""
    table = x._be
    shape, st = tuple(x._data.shape), tuple(table.strides(x._data))
    if not any(t == 0 and d > 1 for d, t in zip(shape, st)) or not table.has("as_strided"):
        return None
    return table.as_strided(x._data, tuple(1 if t == 0 else d for d, t in zip(shape, st)), st, 0)


def zero_(x: Tensor) -> Tensor:
    return _fill(x, 0, "ZeroBackward0")


def copy_(x: Tensor, other, non_blocking: bool = False) -> Tensor:
    # PyTorch's binding names the source ``other`` (its docs say ``src``, but ``copy_(src=t)`` is a TypeError there)
    src = other
    if not isinstance(src, Tensor):
        if not isinstance(src, (bool, int, float)):
            raise TypeError(f"copy_(): argument 'other' (position 1) must be Tensor, not {type(src).__name__}")
        from .creation import tensor
        # a Python number is a 0-d tensor (PyTorch's scalar binding); a float goes to a float x unrounded (PyTorch
        # wraps it as a double: copy_(0.001) of a float64 tensor is 0.001, not float32's 0.0010000000474974513)
        fx = isinstance(src, float) and x.dtype.is_floating_point
        src = tensor(src, dtype=x.dtype if fx else None, device=x.device)
    from ._util import broadcast_shape
    if broadcast_shape(tuple(x.shape), tuple(src.shape), "copy_") != tuple(x.shape):
        raise RuntimeError(f"copy_: the source of shape {list(src.shape)} cannot be broadcast to the destination "
                           f"shape {list(x.shape)}")
    if src._be is x._be:  # PyTorch refuses a source that partly overlaps x (x[1:].copy_(x[:-1]))
        assert_no_partial_overlap(x._be, x._data, src._data, x.dtype.itemsize, src.dtype.itemsize)
    from .creation import convert
    from .shape import expand

    def compute(_):
        s = convert(src, x.dtype, x.device)
        return expand(s, x.shape) if s.shape != x.shape else s
    recording = check_inplace(x, src, "copy_")
    if recording:
        # the old value of x gets a zero gradient (CopyBackwards), src its gradient through compute's graph
        rebase(x, keep_graph(compute(None), (x,), "CopyBackwards", always=True))
        return x
    s = compute(None)
    x._be.assign_(x._data, s._data)
    x._vc[0] += 1
    return x


def uniform_(x: Tensor, a: float = 0.0, b: float = 1.0, *, generator=None) -> Tensor:
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"\"check_uniform_bounds\" not implemented for '{x.dtype._tname[:-6]}'")
    check_inplace(x, None, "uniform_")
    x._be.uniform_(x._data, float(a), float(b))
    x._vc[0] += 1
    return x


def normal_(x: Tensor, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"\"normal_kernel_cpu\" not implemented for '{x.dtype._tname[:-6]}'")
    check_inplace(x, None, "normal_")
    x._be.normal_(x._data, float(mean), float(std))
    x._vc[0] += 1
    return x
