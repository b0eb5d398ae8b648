"""Tensor: a backend array handle plus dtype/device and autograd fields.  Ops live in ``ops/``."""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from . import dtypes as _dt
from ._backend import get_table
from ._grad_assign import UNSET as _GDT_UNSET, check_assigned_grad as _check_assigned_grad
from ._warn_once import warn_once
from .autograd.engine import VIEW_REFRESH as _VIEW_REFRESH, _grad_edge
from .autograd.engine import run_backward as _run_backward
from .autograd.graph import ACCUMULATE_LOCK as _ACCUMULATE_LOCK, NEW_ACCUM_LOCK as _NEW_ACCUM_LOCK, AccumulateGrad
from .autograd.anomaly_mode import state as _anomaly
from .autograd.grad_mode import state as _gs
from .device import device as Device

if TYPE_CHECKING:  # the methods installed at import time (coretorch/_tensor_methods.py), for type checkers
    from ._tensor_api import TensorAPI as _TensorAPI
else:
    _TensorAPI = object

_TensorT = TypeVar("_TensorT", bound="Tensor")


class Tensor(_TensorAPI):
    __slots__ = ("_data", "_be", "dtype", "_rg", "_gf", "_vc", "__dict__", "__weakref__")
    if TYPE_CHECKING:
        _data: Any  # the backend's native array
        _be: Any  # the backend's kernel table
        dtype: _dt.dtype
        _rg: bool  # requires_grad
        _gf: Any  # the grad_fn as stored (``grad_fn`` refreshes a stale view's first)
        _vc: Any  # the version counter shared by views
    # rarely-set fields: class defaults, stored in the instance __dict__ only when set (cheap creation)
    _grad: Tensor | None = None
    # the tensor a view shares storage with (its root); a detached tensor's (detach(), .data, a Parameter of a view)
    # too, then flagged ``_det``: ``_base``, as PyTorch's, is None for those
    _vbase: Tensor | None = None
    _gfb: Any = None  # a view's base's grad_fn when the view's own grad_fn was made (see _edge)
    # a piece of split/chunk/unbind made in grad mode (or a view of one): the version counter's value when it was
    # made (PyTorch's MULTI_OUTPUT_NODE views: in-place ops on them raise, see ops/inplace.py)
    _mo: Any = None
    _cfv = False  # with _mo: a view a custom autograd.Function returned (or a view of one): PyTorch's other message
    # a view made in no_grad mode (or a view of one): an in-place op on it in grad mode that autograd would record
    # (or whose base requires grad) raises, as PyTorch's NO_GRAD_MODE creation meta (see ops/inplace.py)
    _ngv = False
    # a result of detach()/.data: its ``_vbase`` (the root it shares memory with) is for storage only, not autograd (as
    # PyTorch's, it is no view there: no grad_fn regenerated when the root changes, in-place ops not rebased on it)
    _det: bool = False
    _out_nr = 0
    _accum = None
    _post_accumulate_grad_hooks = None  # register_post_accumulate_grad_hook's (run by AccumulateGrad)
    _retains = False
    _made_by: Any = None  # (node, output_nr) that made it, where an in-place op changed its grad_fn since (inplace.py)
    _gdt: Any = _GDT_UNSET  # grad_dtype, where set (coretorch/_grad_assign.py)

    _is_param = False  # nn.Parameter's isinstance check also accepts tensors flagged this way (as PyTorch)

    # legacy constructors: Tensor(2, 3), Tensor([1., 2.]), FloatTensor(...)
    _legacy_dtype = None

    def __new__(cls, *args, device=None):
        dt = cls._legacy_dtype or _dt.default
        if not args:
            args = (0,)  # torch.Tensor() is an empty 1-D tensor
        if len(args) == 1 and isinstance(args[0], np.integer):  # (a numpy int is a size, as PyTorch's)
            args = (int(args[0]),)
        if len(args) == 1 and (isinstance(args[0], bool) or not isinstance(args[0], (int, Size))):
            arg = args[0]
            if isinstance(arg, (bool, float, complex, np.bool_, np.floating, np.complexfloating)) or arg is None:
                kind = type(arg)
                name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"
                raise TypeError(f"new(): data must be a sequence (got {name})")
            if isinstance(arg, Tensor):  # (PyTorch's alias of it: a view sharing memory and version counter)
                want = cls._legacy_dtype
                if want is not None and arg.dtype is not want:
                    raise TypeError(f"expected TensorOptions(dtype={want._tname[:-6]}) (got TensorOptions(dtype="
                                    f"{arg.dtype._tname[:-6]})): {cls.__name__}(tensor) does not convert")
                return arg[...]
            from .ops.creation import tensor
            t = tensor(arg, dtype=dt, device=device)
        else:
            from .ops.creation import empty
            t = empty(*args, dtype=dt, device=device)
            t._be.assign_(t._data, 0)
        if cls is not Tensor and not getattr(cls, "_legacy_dtype", None):
            out = object.__new__(cls)
            _init(out, t._data, t.dtype, t._be)
            return out
        return t

    # ---- user subclasses ------------------------------------------------------------------------
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        hook = _SUBCLASS_HOOK[0]  # coretorch._subclass: PyTorch's default __torch_function__ for the methods
        if hook is not None:
            hook(cls)

    @staticmethod
    def _make_subclass(cls: type[_TensorT], data: "Tensor", require_grad: bool = False,
                       **_dispatch_options) -> _TensorT:
        """A ``cls`` instance sharing ``data``'s storage and version counter, a leaf with ``requires_grad``
        (what ``Parameter.__new__`` uses in PyTorch; user subclasses of Tensor are built this way)."""
        if not isinstance(cls, type) or not issubclass(cls, Tensor):
            raise TypeError(f"Creating a Tensor subclass from a class that does not inherit from Tensor is not "
                            f"possible. Make sure your class inherits from Tensor (got {cls!r}).")
        if not isinstance(data, Tensor):
            raise TypeError(f"_make_subclass(): argument 'data' must be Tensor, not {type(data).__name__}")
        if type(require_grad) is not bool:  # (PyTorch's argument parser: Parameter(t, requires_grad=0) raises)
            raise TypeError("_make_subclass(): argument 'require_grad' (position 3) must be bool, not "
                            f"{type(require_grad).__name__}")
        if require_grad and not (data.dtype.is_floating_point or data.dtype.is_complex):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t = object.__new__(cls)
        root = data._vbase
        _init(t, data._data, data.dtype, data._be, version=data._vc, base=root)
        if root is not None:  # (data's storage: counted from its root, as a detached view's; no view for autograd)
            t._det = True
        t.requires_grad = require_grad
        return t

    # ---- plain attributes -------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        """The tensor's sizes, a ``coretorch.Size`` (a tuple)."""
        return _tuple_new(Size, self._data.shape)

    def size(self, dim: int | None = None):
        """The tensor's sizes (a ``coretorch.Size``), or the size of dimension ``dim``."""
        s = self._data.shape
        if dim is None:
            return _tuple_new(Size, s)
        if dim.__class__ is int and -len(s) <= dim < len(s):  # the common case: no import, no checks to do
            return s[dim]
        if not s:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        from .ops._util import norm_dim
        return s[norm_dim(dim, len(s), "size")]

    def dim(self) -> int:
        """The number of dimensions (``ndim``)."""
        return len(self._data.shape)

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self._data.shape)

    ndimension = dim

    def numel(self) -> int:
        n = 1
        for s in self._data.shape:
            n *= s
        return n

    nelement = numel

    def element_size(self) -> int:
        """The size of one element in bytes."""
        return self.dtype.itemsize

    @property
    def device(self) -> Device:
        """The device the tensor lives on."""
        return self._be.device

    @property
    def is_cpu(self) -> bool:
        """Whether the tensor is on the cpu device."""
        return self._be.type == "cpu"

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def is_contiguous(self, memory_format=None) -> bool:
        """Whether the tensor is laid out contiguously in row-major order (or in ``memory_format``'s order:
        ``torch.channels_last``/``channels_last_3d``)."""
        if memory_format is None:
            return self._be.is_contiguous(self._data)
        from .ops import _memfmt
        r = _memfmt.rank(memory_format)
        return _memfmt.is_channels_last(tuple(self._data.shape), self.stride(), r) if r else \
            self._be.is_contiguous(self._data)

    def stride(self, dim: int | None = None):
        """The step in elements between neighbours along each dimension (or along ``dim``)."""
        s = tuple(self._be.strides(self._data))
        if dim is None:
            return s
        if not s:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        from .ops._util import norm_dim
        return s[norm_dim(dim, len(s), "stride")]

    def data_ptr(self) -> int:
        """The address of the tensor's first element: views of one storage differ by their byte offsets
        (``x[1:].data_ptr() - x.data_ptr() == x.element_size()``), tensors sharing a start are equal (tied
        weights).  A backend without the ``data_ptr`` kernel gives an identity of the array object instead."""
        t = self._be
        return t.data_ptr(self._data) if t.has("data_ptr") else id(self._data)

    def type(self, dtype=None, non_blocking: bool = False, **kwargs):
        """The legacy type name ('torch.FloatTensor'), or a conversion to a dtype, a legacy name or class."""
        if dtype is None:
            return f"torch.{self.dtype._tname}"
        if isinstance(dtype, str):
            name = dtype
            if name.startswith("torch.cuda."):
                return self.to(Device("cuda"))  # raises the error that names the device types installed
            dtype = next((d for d in vars(_dt).values() if isinstance(d, _dt.dtype) and
                          f"torch.{d._tname}" == name), None)
            if dtype is None:
                raise ValueError(f"invalid type: '{name}'")
        elif isinstance(dtype, type):
            if dtype.__module__ == "coretorch.cuda":  # torch.cuda.FloatTensor & co
                return self.to(Device("cuda"))  # raises the error that names the device types installed
            if not issubclass(dtype, Tensor):
                raise ValueError(f"invalid type: {dtype!r}")
            dtype = dtype._legacy_dtype or self.dtype  # FloatTensor & co (Tensor: unchanged)
        return self.to(dtype)

    # ---- autograd fields --------------------------------------------------------------------
    @property
    def _base(self) -> "Tensor | None":
        """The tensor this view was made from (its root); None for a tensor that is no view, a detached one too."""
        return None if self._det else self._vbase

    @property
    def grad_fn(self) -> Any:
        """The graph node that made this tensor (None for a leaf).  A view whose base was modified in place since
        (directly or through another view) reads its region of the base's new graph: an ``AsStridedBackward0``,
        as PyTorch regenerates a view's grad_fn."""
        b = self._vbase
        if b is not None and (self._rg and b._gf is not self._gfb or self._mo is not None and self._vc[0] != self._mo):
            _VIEW_REFRESH[0](self)
        return self._gf

    @grad_fn.setter
    def grad_fn(self, node: Any) -> None:
        self._gf = node

    @property
    def requires_grad(self) -> bool:
        """Whether operations on this tensor are recorded for autograd (settable on leaves)."""
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if value.__class__ is not bool:  # (PyTorch: 1, None or a numpy bool raise too)
            raise RuntimeError("requires_grad must be a bool")
        if value and self.grad_fn is not None:  # (requires_grad_(True) of a non-leaf is no error: its setter is)
            raise RuntimeError("you can only change requires_grad flags of leaf variables.")
        self._set_rg(value, "floating point and complex")

    def _set_rg(self, value: bool, kinds: str) -> None:
        if self.grad_fn is not None:
            if not value:
                raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want "
                                   "to use a computed variable in a subgraph that doesn't require "
                                   "differentiation use var_no_grad = var.detach().")
            return
        if value and not self.dtype.is_floating_point:
            raise RuntimeError(f"only Tensors of {kinds} dtype can require gradients")
        self._rg = value

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Set ``requires_grad`` in place (default True); returns ``self``."""
        if requires_grad.__class__ is not bool:
            if not isinstance(requires_grad, np.bool_):  # (PyTorch's parser takes a numpy bool as a bool)
                kind = type(requires_grad)
                raise TypeError("requires_grad_(): argument 'requires_grad' (position 1) must be bool, not "
                                + (f"numpy.{kind.__name__}" if kind.__module__ == "numpy" else kind.__name__))
            requires_grad = bool(requires_grad)
        self._set_rg(requires_grad, "floating point")  # (PyTorch's message of the method: no "and complex")
        return self

    @property
    def _version(self) -> int:
        """PyTorch's version counter: bumped by every in-place write (shared with views)."""
        from ._compile.capture import varying_read  # (imported on use: compile imports the core)
        varying_read("x._version reads a counter that changes from call to call")  # (a compiled step: a graph break)
        return self._vc[0]

    @property
    def grad(self) -> Tensor | None:
        """The gradient accumulated by ``backward()`` for this tensor (None until then; only leaves by default)."""
        g = self._grad
        if g is None and self._gf is not None and not self._retains:
            _warn_nonleaf_grad()
        return g

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            _check_assigned_grad(self, value, Tensor)
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None  # (del t.grad: as PyTorch, the same as t.grad = None)

    @property
    def is_leaf(self) -> bool:
        """Whether the tensor is a leaf of the autograd graph: it does not require grad, or it was created by the user
        (not by an op on tensors requiring grad). Only leaves get ``.grad`` by default.
        """
        return self.grad_fn is None

    @property
    def retains_grad(self) -> bool:
        """Whether a non-leaf tensor keeps its ``.grad`` (``retain_grad()`` was called)."""
        return self._retains

    def _get_accum(self) -> AccumulateGrad:
        a = self._accum
        if a is None:
            with _NEW_ACCUM_LOCK:  # two threads' first uses of a leaf at once: one node (else a graph made by one
                a = self._accum    # would reach the leaf through a node autograd.grad(inputs=leaf) does not look at)
                if a is None:
                    a = self._accum = AccumulateGrad(self)
        return a

    def detach(self) -> "Tensor":
        """A new tensor sharing storage and version counter, outside the graph."""
        # (its base is the root a view of a view points to, too: storage_offset and as_strided count from it)
        t = _make(self._data, self.dtype, self._be, base=self._vbase if self._vbase is not None else self,
                  version=self._vc)
        t._det = True
        return t

    def detach_(self) -> "Tensor":
        if self._vbase is not None and not self._det:  # (any view, as PyTorch's is_view(): requiring grad or not)
            raise RuntimeError(_DETACH_VIEW)
        self.grad_fn = None
        self._rg = False
        return self

    @property
    def data(self) -> "Tensor":
        # like torch's .data: shares storage, not the version counter (so in-place edits go unnoticed)
        """The tensor's data as a tensor detached from autograd (assigning to it replaces the data in place)."""
        t = _make(self._data, self.dtype, self._be, base=self._vbase if self._vbase is not None else self)
        t._det = True
        return t

    @data.setter
    def data(self, other: "Tensor") -> None:
        if not isinstance(other, Tensor):
            raise TypeError(f"data must be a Tensor, not {type(other).__name__}")
        if self._rg and not other.dtype.is_floating_point:  # (an integer tensor cannot require grad)
            raise RuntimeError("data set to a tensor that requires gradients must be floating point or complex dtype")
        self._data, self.dtype, self._be = other._data, other.dtype, other._be
        if self._vbase is None or self._det:  # (not a view: its storage is other's now, counted from other's root)
            root = other._vbase
            self._vbase, self._det = root, root is not None

    def retain_grad(self) -> None:
        """Make this non-leaf tensor keep its ``.grad`` after ``backward()``."""
        if self.grad_fn is None:
            if not self._rg:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        if self._retains:
            return
        with _ACCUMULATE_LOCK:  # (two threads' first retain_grad at once: backward(inputs=[h]) in each: one hook,
            if not self._retains:  # installed before either thread's backward runs)
                self._install_retain_hook()

    def _install_retain_hook(self) -> None:
        import weakref
        ref = weakref.ref(self)

        def hook(g):
            t = ref()
            if t is not None:
                # (a copy recorded by autograd under create_graph, as PyTorch's clone: y.grad then has a graph; the
                # lock: several threads' backward passes through this tensor add up, none overwrites another's)
                with _ACCUMULATE_LOCK:
                    t.grad = g.clone() if t._grad is None else t._grad + g
        setattr(hook, "_retains_grad", True)  # (marks the hook retain_grad installed)
        self.grad_fn._register_tensor_hook(self._out_nr, hook)
        self._retains = True  # (after the hook: another thread that sees it set finds the hook there)

    def register_hook(self, hook):
        """Call ``hook(grad)`` when the gradient of this tensor is computed; it may return a new grad."""
        if not self._rg:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            return self.grad_fn._register_tensor_hook(self._out_nr, hook)
        return self._get_accum()._register_tensor_hook(0, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph: bool = False, inputs=None) -> None:
        """Compute the gradient of this tensor with respect to the graph leaves and accumulate it into their ``.grad``.

        Args:
            gradient (Tensor, optional): the gradient of the final result with respect to this tensor; may be omitted
                for a single-element tensor (it is then 1).
            retain_graph (bool, optional): keep the graph for another backward (default ``create_graph``).
            create_graph (bool): record the backward itself, for higher-order derivatives.
            inputs (sequence of Tensors, optional): accumulate only into these.

        Example:
            >>> x = torch.tensor([1.0, 2.0], requires_grad=True)
            >>> (x ** 2).sum().backward()
            >>> x.grad
            tensor([2., 4.])
        """
        if gradient is None and inputs is None and self.grad_fn is not None and self.dtype.is_floating_point \
                and self._data.shape in _SCALAR_SHAPES and not _anomaly.enabled and not create_graph:
            # loss.backward(): the implicit gradient 1, straight to the engine
            g = _make(self._be.full(self._data.shape, 1, self.dtype.np), self.dtype, self._be)
            _run_backward((self,), (g,), create_graph if retain_graph is None else retain_graph, create_graph)
            return
        from .autograd import backward
        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    # ---- conversions ------------------------------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The tensor as a numpy array (sharing memory for a cpu tensor); raises for a tensor that requires grad (use
        ``detach()``) or is on another device (use ``cpu()``).
        """
        if self._rg and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                               "instead.")
        if self._be.type != "cpu" and not force:
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to "
                            "copy the tensor to host memory first.")
        if self.dtype is _dt.bfloat16 and not force:  # numpy has no bfloat16 (PyTorch's error)
            raise TypeError("Got unsupported ScalarType BFloat16")
        return self._be.to_numpy(self._data)

    def _host(self) -> np.ndarray:
        return self._be.to_numpy(self._data)

    def item(self):
        """The value of a one-element tensor as a Python number."""
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return self._host().reshape(()).item()

    def tolist(self):
        """The tensor as (nested) Python lists of numbers (a number for a 0-d tensor)."""
        return self._host().tolist()

    def __len__(self) -> int:
        if not self._data.shape:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if not self._data.shape:
            raise TypeError("iteration over a 0-d tensor")
        # PyTorch's: the pieces of unbind(0) (UnbindBackward0 nodes; an in-place op on one that autograd records
        # raises the multiple-views error); outside autograd the rows themselves, made lazily
        if self._rg and _gs.enabled:
            return iter(self.unbind(0))
        return (self[i] for i in range(self._data.shape[0]))

    def __reversed__(self) -> "Tensor":
        """The tensor flipped along dim 0 (a 0-d tensor itself), as PyTorch."""
        return self if not self._data.shape else self.flip(0)

    def __contains__(self, element) -> bool:
        """Whether any element equals ``element`` (a tensor or a number), as PyTorch."""
        if isinstance(element, (Tensor, numbers.Number)):
            eq: Any = element == self
            return bool(eq.any().item())
        raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                           f"{type(element)}.")

    def __bool__(self) -> bool:
        if self.numel() != 1:
            what = "no values" if self.numel() == 0 else "more than one value"
            raise RuntimeError(f"Boolean value of Tensor with {what} is ambiguous")
        return bool(self.item())

    def __float__(self) -> float:
        if self.numel() != 1:  # (PyTorch: a ValueError here, item()'s RuntimeError elsewhere)
            raise ValueError("only one element tensors can be converted to Python scalars")
        # PyTorch warns (once per process) only while grad mode is on: float(loss) under no_grad (as in
        # LBFGS.step) is silent and does not use up the one warning.
        if self._rg and (_gs.enabled or _gs.inference and _gs.grad):
            warn_once("float.requires_grad", "Converting a tensor with requires_grad=True to a scalar may lead to "
                      "unexpected behavior.\nConsider using tensor.detach() first.", 2)
        return float(self.item())

    def __int__(self) -> int:
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __complex__(self):
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return complex(self.item())

    def __format__(self, spec: str) -> str:
        if self.dim() == 0 and type(self) is Tensor:  # (PyTorch's: a Parameter or subclass formats as an object)
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __repr__(self) -> str:
        from ._tensor_str import tensor_repr
        return tensor_repr(self)

    __str__ = __repr__

    def __hash__(self) -> int:
        return id(self)

    # numpy defers its operators to ours, as to PyTorch's (``np.float32(0.5) * t`` is a Tensor, not an ndarray)
    __array_priority__ = 1000

    def __array__(self, dtype=None, copy=None):
        if self._rg:  # (PyTorch's __array__ is numpy(): a tensor that requires grad raises)
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                               "instead.")
        a = self._host()
        if dtype is not None and np.dtype(dtype) != a.dtype:
            return a.astype(dtype)
        # np.array(t) asks for a copy (numpy 2's copy=True): PyTorch's __array__, which takes no copy argument,
        # gets one from numpy; np.asarray(t) shares the tensor's memory
        return a.copy() if copy else a

    def __copy__(self):
        """``copy.copy``: as PyTorch's (its ``__reduce_ex__`` rebuilds a tensor on the same storage), a new leaf of
        ``self``'s type sharing its memory, sizes, strides and storage offset, with its ``requires_grad`` and the
        attributes a program set on it."""
        new = Tensor._make_subclass(type(self), self.detach(), self._rg)
        new._vc = [0]  # (a tensor of its own: its own version counter)
        new.__dict__.update(_user_state(self))
        return new

    def __array_wrap__(self, array, context=None, return_scalar: bool = False) -> "Tensor":
        """numpy's ufuncs (``np.sin(t)``) give a cpu tensor sharing the result's memory, as PyTorch's (a bool
        result as uint8, PyTorch's workaround; a 0-d result a 0-d tensor)."""
        from .ops.creation import from_numpy
        array = np.asarray(array)
        return from_numpy(array.astype(np.uint8) if array.dtype == np.bool_ else array)

    def __deepcopy__(self, memo):
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the "
                               "deepcopy protocol at the moment.  If you were attempting to deepcopy a module, this "
                               "may be because of a torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        if id(self) in memo:
            return memo[id(self)]
        from .storage import deepcopied_data
        new = object.__new__(type(self))
        data, root = deepcopied_data(self, memo)
        _init(new, data, self.dtype, self._be, base=root)
        if root is not None:  # (a view's copy views the copied memory, no view for autograd, as a detached one)
            new._det = True
        new._rg = self._rg
        if self.grad is not None:
            new.grad = self.grad.__deepcopy__(memo)
        # (the copy owns its memory: a view's bookkeeping, whose base may be a non-leaf, stays behind)
        new.__dict__.update({k: __import__("copy").deepcopy(v, memo) for k, v in self.__dict__.items()
                             if k not in _VIEW_FIELDS})
        memo[id(self)] = new
        return new


def _user_state(t: Tensor) -> dict:
    """The attributes a program set on ``t`` (``x.scale = 2.0``), which copies and pickles carry, as PyTorch's
    state: coretorch's own fields are those with a class default on Tensor."""
    return {k: v for k, v in t.__dict__.items() if not hasattr(Tensor, k)}


def _warn_nonleaf_grad() -> None:
    import warnings
    warnings.warn(
        "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be "
        "populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf "
        "Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure "
        "you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more information.",
        UserWarning, stacklevel=3)


_VIEW_FIELDS = frozenset(("_vbase", "_gfb", "_mo", "_cfv", "_det", "_ngv"))


def _disabled_torch_function_impl(func, types, args=(), kwargs=None):
    """PyTorch's marker (``__torch_function__ = _disabled_torch_function_impl``): the subclass's ops give plain
    Tensors, as nn.Parameter's do."""
    return func(*args, **(kwargs or {}))


_SUBCLASS_HOOK: list = [None]  # set by coretorch._subclass


_tuple_getitem = tuple.__getitem__
_tuple_add = tuple.__add__
_tuple_mul = tuple.__mul__
_tuple_new = tuple.__new__   # a Size of sizes known to be ints (a backend array's shape): no check


def _size_item(v: Any, k: int) -> Any:
    """An entry of ``Size(sizes)``: an int (bool as 0/1), a numpy integer (kept, as PyTorch keeps it) or a
    one-element integer tensor (its value), as PyTorch's; anything else (a float, None, a float tensor) raises."""
    if v.__class__ is bool:
        return int(v)
    if isinstance(v, Tensor):
        if not v.dtype.is_floating_point and not v.dtype.is_complex and v.numel() == 1:
            return int(v.item())
    elif hasattr(type(v), "__index__") and not isinstance(v, float):
        return v
    name = type(v).__name__ if type(v).__module__ in ("builtins", "coretorch", "coretorch.tensor") \
        else f"{type(v).__module__.split('.')[0]}.{type(v).__name__}"
    raise TypeError(f"torch.Size() takes an iterable of 'int' (item {k} is '{name}')")


class Size(tuple):
    """torch.Size: a tuple with a torch-like repr; slicing, ``+`` (either side of a tuple) and ``*`` give a Size.
    Its entries are ints (``Size([2.5])`` raises TypeError, as PyTorch's)."""
    __slots__ = ()

    def __new__(cls, sizes: Any = ()) -> "Size":
        items = tuple(sizes)
        for v in items:
            if v.__class__ is not int:
                items = tuple([_size_item(v, k) for k, v in enumerate(items)])
                break
        return _tuple_new(cls, items)

    # shape[i] is a hot path: an int index is one tuple lookup (no default arguments: CPython then inlines the call)
    def __getitem__(self, i):
        return _tuple_getitem(self, i) if i.__class__ is not slice else _tuple_new(Size, _tuple_getitem(self, i))

    def __add__(self, other):
        return Size(_tuple_add(self, other))  # a non-tuple raises tuple's TypeError

    def __radd__(self, other):
        return Size(_tuple_add(other, self)) if isinstance(other, tuple) else NotImplemented

    def __mul__(self, n):
        return _tuple_new(Size, _tuple_mul(self, n))

    __rmul__ = __mul__

    def __repr__(self) -> str:
        return f"coretorch.Size([{', '.join(str(s) for s in self)}])"

    def numel(self) -> int:
        """The number of elements a tensor of this shape holds (the product of the sizes; 1 for ``()``)."""
        n = 1
        for s in self:
            n *= s
        return n


def _init(t, data, dtype, table, grad_fn=None, out_nr=0, base=None, version=None) -> None:
    t._data = data
    t._be = table
    t.dtype = dtype
    t._gf = grad_fn
    t._rg = grad_fn is not None
    t.grad = None
    t._vc = [0] if version is None else version
    t._vbase = base
    if base is not None:
        t._gfb = base._gf
    t._out_nr = out_nr
    t._accum = None
    t._retains = False


_new = object.__new__


_SCALAR_SHAPES = ((), (1,))


def _make(data, dtype, table, grad_fn=None, out_nr=0, base=None, version=None) -> Tensor:
    """Wrap a backend array (the hot path of every op: keep it lean)."""
    t = _new(Tensor)
    t._data = data
    t._be = table
    t.dtype = dtype
    t._gf = grad_fn
    t._rg = grad_fn is not None
    t._vc = [0] if version is None else version
    if base is not None:
        t._vbase = base
        t._gfb = base._gf
    if out_nr:
        t._out_nr = out_nr
    return t


_DETACH_VIEW = (
    "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) for training, "
    "and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and hence detach_() cannot be "
    "called on these gradients. To fix this error, please refer to the Optimizer.zero_grad() function in "
    "torch/optim/optimizer.py as the solution.")


def _move_retains_hook(t: Tensor, old_fn, old_nr: int) -> None:
    """An in-place op gave ``t`` a new grad_fn: its retain_grad hook follows it there (as in torch)."""
    hooks = old_fn._tensor_hooks.get(old_nr) if old_fn is not None and old_fn._tensor_hooks else None
    if not hooks or t.grad_fn is None or t.grad_fn is old_fn:
        return
    for k, fn in list(hooks.items()):
        if getattr(fn, "_retains_grad", False):
            del hooks[k]
            t.grad_fn._register_tensor_hook(t._out_nr, fn)


_edge = _grad_edge  # the (node, output_nr) receiving t's gradient: one implementation with the engine's


def _zeros_on(shape, dtype, table) -> Tensor:
    return _make(table.full(tuple(shape), 0, dtype.np), dtype, table)


def _cpu_table():
    return get_table(Device("cpu"))


__all__ = ["Tensor", "Size"]
_ = _gs  # grad mode state is imported here so ops can share one import path
