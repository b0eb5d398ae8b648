# mypy: disable-error-code="method-assign,assignment,attr-defined"
# (this module attaches methods to Tensor by design; _tensor_api.pyi declares them)
"""Tensor methods PyTorch programs use that had no home yet (bound onto Tensor at import).

Conjugate transposes of real tensors (``H``, ``mH``, ``adjoint``), ``sum_to_size``, ``new_empty_strided``,
``register_post_accumulate_grad_hook``, ``output_nr``, ``const_data_ptr``, ``is_set_to``, ``dim_order``,
``nonzero_static``, the deprecated non-in-place ``resize``/``resize_as``, ``storage``/``untyped_storage``, the
methods of ``hardshrink``/``prelu``, ``triangular_solve`` and the functions PyTorch removed in 1.9 but keeps as
raising methods (``solve``, ``symeig``, ``eig``, ``lstsq``).
"""
from __future__ import annotations

import warnings
from collections import OrderedDict

import numpy as np

from . import _compat, _grad_assign
from . import dtypes as _dt
from ._warn_once import warn_once
from .autograd._node_names import named_node
from .autograd.grad_mode import state as _gs
from .autograd.graph import RemovableHandle
from .ops import _householder as _hh, _lu, creation as _C, indexing as _I, shape as _S
from .ops._util import return_type
from .storage import TypedStorage, UntypedStorage, _warn_typed_storage
from .device import device as Device
from .tensor import Size, Tensor, _edge as _tensor_edge, _make

_triangular_solve_result = return_type("triangular_solve", ("solution", "cloned_coefficient"))


# ---- conjugate transposes (the identity conjugation of real tensors) -------------------------------------------
def _H(self: Tensor) -> Tensor:
    """The conjugate transpose of a matrix (its transpose: coretorch tensors are real); a 0-d tensor is returned
    as is with PyTorch's deprecation warning."""
    if self.ndim == 2:
        return _S.transpose(self, 0, 1)
    if self.ndim == 0:
        warnings.warn("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().", UserWarning, stacklevel=2)
        return _S.transpose(self, 0, 0)
    raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor."
                       + (" For batches of matrices, consider using tensor.mH" if self.ndim > 2 else ""))


def _mH(self: Tensor) -> Tensor:
    """The conjugate transpose of the last two dimensions (``mT`` for real tensors)."""
    if self.ndim == 1:
        raise RuntimeError("tensor.mH is only supported on matrices or batches of matrices. Got 1-D tensor.")
    if self.ndim == 0:
        warnings.warn("Tensor.mH is deprecated on 0-D tensors. Consider using x.conj().", UserWarning, stacklevel=2)
        return _S.transpose(self, 0, 0)
    return _S.transpose(self, -2, -1)


def adjoint(self: Tensor) -> Tensor:
    """The conjugate transpose of the last two dimensions, a view (``x.mH``; ``x.mT`` for real tensors)."""
    if self.ndim == 0:  # PyTorch: deprecated on a 0-d tensor, which it returns (as a view), like mH
        warnings.warn("adjoint() is deprecated on 0-D tensors. Consider using x.conj().", UserWarning, stacklevel=2)
        return _S.transpose(self, 0, 0)
    if self.ndim < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           f"{self.ndim}-D tensor.")
    return _S.transpose(self, -2, -1)


# ---- shapes and layout ---------------------------------------------------------------------------------------
def _size_args(size: tuple) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        size = tuple(size[0])
    return tuple(int(s) for s in size)


def sum_to_size(self: Tensor, *size) -> Tensor:
    """``self`` summed to ``size`` (which must be expandable to ``self``'s shape): the reverse of ``expand``."""
    if not size:  # (PyTorch's parser: the size is required, even for a 0-d tensor)
        raise TypeError('sum_to_size() missing 1 required positional arguments: "size"')
    size = _size_args(size)
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    if lead < 0 or any(s != 1 and s != d for s, d in zip(size, shape[lead:])):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    if size == shape:
        return self
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(size) if s == 1 and shape[i + lead] != 1)
    r = self.sum(axes, keepdim=True) if axes else self
    return _S.view(r, size) if tuple(r.shape) != size else r


def new_empty_strided(self: Tensor, size, stride, dtype=None, device=None, requires_grad: bool = False,
                      layout=None, pin_memory: bool = False) -> Tensor:
    """A new tensor with the given sizes and element strides, not initialised (zeros here), with ``self``'s dtype
    and device unless given."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(stride)} strides for {len(size)} sizes")
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(size)}: {list(size)}")
    if any(s < 0 for s in stride):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, got strides: "
                           f"{list(stride)}")
    n = 0 if 0 in size else 1 + sum((s - 1) * t for s, t in zip(size, stride))
    buf = _C.empty(n, dtype=dtype or self.dtype, device=device or self.device)
    table = buf._be
    out = _make(table.as_strided(buf._data, size, stride, 0), buf.dtype, table)  # a fresh tensor, not a view
    if requires_grad:
        out.requires_grad_(True)
    return out


def _format_contiguous(size: tuple, stride: tuple, fmt) -> bool:
    """Whether a tensor of these sizes/strides is contiguous in memory format ``fmt``."""
    if fmt is _compat.channels_last or fmt is _compat.channels_last_3d:
        if len(size) != (4 if fmt is _compat.channels_last else 5):
            return False
        order = (1, *range(len(size) - 1, 1, -1), 0)  # innermost first: C, then W, H(, D), then N
    else:
        order = tuple(range(len(size) - 1, -1, -1))
    expected = 1
    for d in order:
        if size[d] != 1 and stride[d] != expected:
            return False
        expected *= size[d]
    return True


def _dim_order_swap(size: tuple, stride: tuple, a: int, b: int) -> int:
    """PyTorch's comparison of two dims for the physical order (0: ambiguous)."""
    sa, sb = stride[a], stride[b]
    if sa == 0 or sb == 0:
        return 0
    if sa == sb:
        return 0 if size[b] >= size[a] else 1
    return -1 if sb > sa else 1


def dim_order(self: Tensor, *, ambiguity_check=False) -> tuple:
    """The dims from outermost to innermost in memory (a permutation of ``range(ndim)``).

    ``ambiguity_check=True`` raises RuntimeError when several orders describe the layout (a size-1 dim, equal
    strides); a list of memory formats raises unless exactly one of them describes it.
    """
    if not isinstance(ambiguity_check, bool) and not (
            isinstance(ambiguity_check, list) and all(isinstance(f, _compat.memory_format) for f in ambiguity_check)):
        raise TypeError("The ambiguity_check argument must be a bool or a list of memory formats.")
    size, stride = tuple(self.shape), tuple(self.stride())
    formats = ambiguity_check if isinstance(ambiguity_check, list) else []
    check = ambiguity_check if isinstance(ambiguity_check, bool) else True
    multiple = any(a == b for a, b in zip(stride, stride[1:])) or 1 in size
    if check and multiple and sum(_format_contiguous(size, stride, f) for f in formats) != 1:
        raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact one of the given "
                           "memory formats.")
    n = len(size)
    if n <= 1:
        return tuple(range(n))
    contiguous, last = _format_contiguous(size, stride, None), _format_contiguous(size, stride, _compat.channels_last)
    if contiguous != last:  # PyTorch's short cuts: exactly one of the two formats describes the layout
        return tuple(range(n)) if contiguous else (0, *range(2, n), 1)
    perm = list(range(n - 1, -1, -1))  # sorted back to front, as PyTorch's insertion sort (ties keep their order)
    for i in range(1, n):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = _dim_order_swap(size, stride, perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return tuple(reversed(perm))


def _is_view(self: Tensor) -> bool:
    """Whether the tensor is an autograd view of another (``x[1:]``, ``x.view(...)``), as PyTorch's; a ``detach()``
    or ``.data`` result shares memory without being one."""
    return self._vbase is not None and not self._det


def is_set_to(self: Tensor, tensor: Tensor) -> bool:
    """Whether both tensors view the same storage at the same offset with the same sizes and strides."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"is_set_to(): argument 'tensor' must be Tensor, not {type(tensor).__name__}")
    if self._be is not tensor._be or self.dtype is not tensor.dtype or self.shape != tensor.shape \
            or self.stride() != tensor.stride():
        return False
    if self._data is tensor._data:
        return True
    table = self._be
    if table.has("same_storage") and not table.same_storage(self._data, tensor._data):
        return False
    return self.data_ptr() == tensor.data_ptr()


def output_nr(self: Tensor) -> int:
    """Which output of its ``grad_fn`` this tensor is (0 for a leaf)."""
    return self._out_nr if self.grad_fn is not None else 0


def const_data_ptr(self: Tensor) -> int:
    """``data_ptr()`` (for a read-only use of the address)."""
    return self.data_ptr()


# ---- nonzero_static ------------------------------------------------------------------------------------------
def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """The ``nonzero()`` index rows in a tensor of exactly ``size`` rows: truncated, or padded with
    ``fill_value``."""
    if isinstance(size, bool) or not isinstance(size, int):
        raise TypeError(f"nonzero_static(): argument 'size' must be int, not {type(size).__name__}")
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got size: {size}")
    nz = _I.nonzero(input)
    n = nz.shape[0]
    if n >= size:
        return nz[:size]
    pad = _C.full((size - n, nz.shape[1]), fill_value, dtype=_dt.int64, device=input.device)
    return _S.cat([nz, pad], 0)


# ---- resize / resize_as (deprecated, out of place) ------------------------------------------------------------
def _resize(x: Tensor, sizes: tuple, name: str) -> Tensor:
    n = 1
    for s in sizes:
        n *= s
    if n != x.numel():
        raise RuntimeError(f"requested resize to {'x'.join(map(str, sizes))} ({n} elements in total), but the given "
                           f"tensor has a size of {'x'.join(map(str, x.shape))} ({x.numel()} elements). autograd's "
                           "resize can only change the shape of a given tensor, while preserving the number of "
                           "elements. ")
    return named_node(_S.view(_S.contiguous(x), sizes), "ResizeBackward")


def resize(self: Tensor, *sizes) -> Tensor:
    """Deprecated: ``self`` viewed with ``sizes`` (same number of elements; use ``reshape``)."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    return _resize(self, _size_args(sizes), "resize")


def resize_as(self: Tensor, tensor: Tensor) -> Tensor:
    """Deprecated: ``self`` viewed with ``tensor``'s sizes (same number of elements; use ``reshape_as``)."""
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return _resize(self, tuple(tensor.shape), "resize_as")


# ---- set_ ----------------------------------------------------------------------------------------------------
def set_(self: Tensor, source=None, storage_offset: int = 0, size=None, stride=None) -> Tensor:
    """Make this tensor view other memory: ``source``'s (a tensor: its sizes and strides, or ``size``/``stride``
    from ``storage_offset`` of its storage; a storage: ``size``/``stride`` from ``storage_offset``), or none
    (``set_()``: an empty tensor).  The memory is shared, not copied."""
    if self._rg and self.grad_fn is None and _gs.enabled:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    table = self._be
    old_edge = _tensor_edge(self) if self._rg and _gs.enabled else None  # (for set_'s NotImplemented node, below)
    if source is None:
        self._data = table.empty((0,), self.dtype.np)
    else:
        t = source._t if isinstance(source, (UntypedStorage, TypedStorage)) else source
        if not isinstance(t, Tensor):
            raise TypeError(f"set_(): argument 'source' must be Tensor or Storage, not {type(source).__name__}")
        if t.dtype is not self.dtype:
            src, dst = (_dt.cpp_name(d) for d in (t.dtype, self.dtype))
            raise RuntimeError(f"Could not set tensor of type {src} to a tensor of type {dst}")
        if t._be is not table:
            raise RuntimeError(f"Attempted to set the storage of a tensor on device \"{self.device}\" to a storage "
                               f"on different device \"{t.device}\".  This is no longer allowed; the devices must "
                               "match.")
        if isinstance(source, Tensor) and size is None:
            self._data = t._data
        else:
            size = tuple(t.shape) if size is None else tuple(int(n) for n in size)
            if stride is None:
                stride, acc = [], 1
                for n in reversed(size):
                    stride.insert(0, acc)
                    acc *= max(n, 1)
            flat = UntypedStorage(t)._flat()
            self._data = table.as_strided(flat._data, size, tuple(int(n) for n in stride), int(storage_offset))
        root = t
        while root._vbase is not None:
            root = root._vbase
        if root is not self and (self._vbase is None or self._det):
            # (its storage is the source's now: storage_offset() and untyped_storage() count from its start; no
            # view for autograd, as a detached one)
            self._vbase, self._det = root, True
    self._vc[0] += 1
    from .autograd._zero import not_implemented_inplace
    src_edge = _tensor_edge(source) if isinstance(source, Tensor) and source._rg and _gs.enabled else None
    not_implemented_inplace(self, (old_edge, src_edge), "set_")
    return self


# ---- storages ------------------------------------------------------------------------------------------------
def untyped_storage(self: Tensor) -> UntypedStorage:
    """The memory the tensor views, as a byte storage (``data_ptr()`` is the start of the memory every view of one
    base shares)."""
    return UntypedStorage._of(self)


def storage(self: Tensor) -> TypedStorage:
    """Deprecated (PyTorch's TypedStorage): the memory the tensor views, as elements of its dtype."""
    _warn_typed_storage(2)
    return TypedStorage._of(self)


# ---- activations and linear algebra as methods ----------------------------------------------------------------
def hardshrink(self: Tensor, lambd: float = 0.5) -> Tensor:
    """See :func:`coretorch.nn.functional.hardshrink`."""
    from .nn import functional as F  # nn imports the tensor layer: bound at call time
    return F.hardshrink(self, lambd)


def prelu(self: Tensor, weight: Tensor) -> Tensor:
    """See :func:`coretorch.nn.functional.prelu`."""
    from .nn import functional as F
    return F.prelu(self, weight)


def triangular_solve(input: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False):
    """Deprecated: ``(solution, cloned_coefficient)`` with ``A X = self`` (``A^T X = self`` for ``transpose``)
    for a triangular ``A``; use ``torch.linalg.solve_triangular``."""
    from .linalg import solve_triangular  # linalg imports the ops layer late: bound at call time
    warn_once("triangular_solve", "torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangular "
                  "and will be removed "
                  "in a future PyTorch release.\ntorch.linalg.solve_triangular has its arguments reversed and does "
                  "not return a copy of one of the inputs.\nX = torch.triangular_solve(B, A).solution\nshould be "
                  "replaced with\nX = torch.linalg.solve_triangular(A, B).", stacklevel=2)  # (TORCH_WARN_ONCE)
    M = _S.transpose(A, -2, -1) if transpose else A
    x = solve_triangular(M, input, upper=upper != transpose, unitriangular=unitriangular)
    return _triangular_solve_result(x, _S.clone(A))


_REMOVED = {
    "solve": "`torch.solve` is deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` has its arguments "
             "reversed and does not return the LU factorization.\n\nTo get the LU factorization see `torch.lu`, which "
             "can be used with `torch.lu_solve` or `torch.lu_unpack`.\nX = torch.solve(B, A).solution should be "
             "replaced with:\nX = torch.linalg.solve(A, B)",
    "symeig": "The default behavior has changed from using the upper triangular portion of the matrix by default to "
              "using the lower triangular portion.\n\nL, _ = torch.symeig(A, upper=upper) should be replaced with:\n"
              "L = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\nL, V = torch.symeig(A, "
              "eigenvectors=True) should be replaced with:\nL, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')",
    "eig": "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than real tensors "
           "mimicking complex tensors.\n\nL, _ = torch.eig(A) should be replaced with:\nL_complex = "
           "torch.linalg.eigvals(A)\n\nand\n\nL, V = torch.eig(A, eigenvectors=True) should be replaced with:\n"
           "L_complex, V_complex = torch.linalg.eig(A)",
    "lstsq": "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n`torch.linalg.lstsq` has reversed "
             "arguments and does not return the QR decomposition in the returned tuple (although it returns other "
             "information about the problem).\n\nTo get the QR decomposition consider using `torch.linalg.qr`.\n\n"
             "The returned solution in `torch.lstsq` stored the residuals of the solution in the last m - n columns "
             "of the returned value whenever m > n. In torch.linalg.lstsq, the residuals are in the field "
             "'residuals' of the returned named tuple.\n\nThe unpacking of the solution, as in\nX, _ = "
             "torch.lstsq(B, A).solution[:A.size(1)]\nshould be replaced with:\nX = torch.linalg.lstsq(A, "
             "B).solution",
}


def _removed(name: str):
    def method(self, *args, **kwargs):
        raise RuntimeError("This function was deprecated since version 1.9 and is now removed. " + _REMOVED[name])
    method.__name__ = name
    method.__doc__ = "Removed in PyTorch 1.9 (kept as a method that raises RuntimeError saying what replaces it)."
    return method


_REINFORCE = ("reinforce() was removed.\nUse torch.distributions instead.\nSee "
              "https://pytorch.org/docs/main/distributions.html\n\nInstead of:\n\nprobs = policy_network(state)\n"
              "action = probs.multinomial()\nnext_state, reward = env.step(action)\naction.reinforce(reward)\n"
              "action.backward()\n\nUse:\n\nprobs = policy_network(state)\n# NOTE: categorical is equivalent to "
              "what used to be called multinomial\nm = torch.distributions.Categorical(probs)\naction = m.sample()\n"
              "next_state, reward = env.step(action)\nloss = -m.log_prob(action) * reward\nloss.backward()\n")


def reinforce(self: Tensor, reward) -> None:
    """Removed in PyTorch 0.4: raises RuntimeError saying how to write it with ``torch.distributions``."""
    raise RuntimeError(_REINFORCE)


# ---- small Tensor-only methods -------------------------------------------------------------------------------
def ger(self: Tensor, vec2: Tensor) -> Tensor:
    """The outer product with ``vec2`` (the old name of :meth:`outer`)."""
    return self.outer(vec2)


def is_distributed(self: Tensor) -> bool:
    """False: coretorch tensors are never distributed tensors."""
    return False


def module_load(self: Tensor, other: Tensor, assign: bool = False) -> Tensor:
    """What ``Module.load_state_dict`` loads for this parameter: ``other`` copied into ``self`` (or, with
    ``assign``, ``other`` itself), detached."""
    if assign:
        return other.detach()
    return self.copy_(other).detach()


def map2_(self: Tensor, x: Tensor, y: Tensor, callable) -> Tensor:
    """self[i] = callable(self[i], x[i], y[i]) in place, ``x`` and ``y`` broadcast to self (CPU only)."""
    from .ops.joining import _host_only  # the map_/apply_ family's check
    _host_only(self, "map2_")
    for t in (x, y):
        if t._be.type != "cpu":
            raise TypeError("map2_ is only implemented on CPU tensors")
    a = self._be.to_numpy(self._data)
    b, c = (np.broadcast_to(t._be.to_numpy(t._data), a.shape) for t in (x, y))
    vals = np.array([callable(p, q, r) for p, q, r in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist(),
                                                             c.reshape(-1).tolist())], dtype=a.dtype)
    self._be.assign_(self._data, vals.reshape(a.shape))
    self._vc[0] += 1
    return self


def _to_device_type(kind: str):
    def method(self: Tensor, device=None, non_blocking: bool = False, memory_format=None) -> Tensor:
        if isinstance(device, int):
            device = f"{kind}:{device}"
        return self.to(Device(kind if device is None else device))
    method.__name__ = kind
    method.__doc__ = (f"This tensor on the {kind} device (an error naming the installed device types when no plugin "
                      f"provides one).")
    return method


# ---- hooks ---------------------------------------------------------------------------------------------------
def register_post_accumulate_grad_hook(self: Tensor, hook) -> RemovableHandle:
    """Call ``hook(tensor)`` after backward has accumulated this leaf's ``.grad`` (optimizer steps in backward);
    returns a handle whose ``remove()`` unregisters it."""
    if not self._rg:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    hooks = self.__dict__.get("_post_accumulate_grad_hooks")
    if hooks is None:
        hooks = self._post_accumulate_grad_hooks = OrderedDict()
    self._get_accum()._hooked = True  # the engine's leaf fast path skips hooked sinks: the hooks then run
    return RemovableHandle.add(hooks, hook)


Tensor.H = property(_H)
Tensor.mH = property(_mH)
Tensor.output_nr = property(output_nr, doc=output_nr.__doc__)
for _fn in (adjoint, sum_to_size, new_empty_strided, dim_order, _is_view, is_set_to, const_data_ptr, nonzero_static,
            resize, resize_as, untyped_storage, storage, hardshrink, prelu, triangular_solve,
            register_post_accumulate_grad_hook):
    setattr(Tensor, _fn.__name__, _fn)
for _name in _REMOVED:
    setattr(Tensor, _name, _removed(_name))
for _fn in (set_, reinforce, ger, is_distributed, module_load, map2_):
    setattr(Tensor, _fn.__name__, _fn)
for _name in ("is_xla", "is_ipu", "is_maia", "is_mtia", "is_vulkan"):  # devices coretorch has no backend for
    setattr(Tensor, _name, property(lambda self: False, doc=f"False: no tensor lives on a {_name[3:]} device here."))
for _name in ("xpu", "mtia", "ipu"):
    setattr(Tensor, _name, _to_device_type(_name))
Tensor.grad_dtype = property(_grad_assign.get_grad_dtype,
                             lambda self, v: _grad_assign.set_grad_dtype(self, v, _dt.dtype),
                             doc="The dtype a leaf's ``.grad`` is given (its own unless set; None: any dtype).")
for _fn in (_hh.geqrf, _hh.orgqr, _hh.ormqr):
    setattr(Tensor, _fn.__name__, _fn)
Tensor.lu, Tensor.lu_solve = _lu.lu_deprecated, _lu.lu_solve_deprecated
