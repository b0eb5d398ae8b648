"""The contract between coretorch and a device backend, and the bridge between Tensors and native arrays.

Everything here is re-exported by :mod:`coretorch.plugins` (``from coretorch.plugins import Backend,
from_array, to_array, get_kernel``); docs/plugins.md walks through a backend written from scratch.

**A backend** is any object with the attributes of :class:`Backend`, registered by a plugin's
``coretorch_register_backends`` hook.  ``kernels(index)`` returns its table of primitive kernels: a dict from
the names of :data:`KERNELS` to callables.  The core does every check (shapes, dtypes, devices), type
promotion (through ``cast``), broadcasting (through ``expand``, unless the backend sets
``native_broadcast``) and autograd before a kernel runs, so a kernel only computes:

* **Arrays**: kernels take and return the backend's *native arrays*, objects of its own type with ``.shape``
  (a tuple of ints), ``.ndim`` and ``.dtype`` (a numpy dtype: ``np.float32``, ``np.int64``, ``np.bool_``...).
  An input may be a strided view (a transpose, a slice, a zero-stride broadcast); an output is a new array
  that does not alias an input (except the view kernels: ``view``, ``permute``, ``expand``, ``basic_index``,
  ``as_strided``), and never a Python or numpy scalar: a 0-d result is a 0-d array.
* **Unary kernels** (:data:`UNARY_KERNELS`): ``(x) -> array`` of x's shape and dtype (``isnan`` and
  ``signbit``: bool).  Float-only ones receive float inputs (the core casts integers first).
* **Binary kernels** (:data:`BINARY_KERNELS`): ``(x, y)`` with both arrays of one dtype and one shape (or
  broadcast-compatible shapes for a ``native_broadcast`` backend), or ``y`` a Python ``int``/``float``/
  ``bool`` already fitted to x's dtype; they return x's dtype (comparisons and ``logical_*``: bool).
* **Shapes, axes, dtypes** are Python tuples/ints and numpy dtypes; *scalars* (``full``'s value, ``clamp``'s
  bounds, ``pow``'s exponent) are Python numbers.  Each entry of :data:`KERNELS` gives the exact signature.
* Three tiers: :data:`REQUIRED_KERNELS` (creation, transfer, layout, elementwise, reductions, matmul) every
  backend implements; :data:`FAMILY_KERNELS` (sorting, special functions, linalg, random...) may be left out,
  and the ops that need one then raise ``NotImplementedError`` naming op and device (with
  ``CORETORCH_FALLBACK=cpu``: run on the CPU backend with a one-time warning); :data:`OPTIONAL_KERNELS` (whose
  description starts with "optional") may be left out at no loss but speed: the core composes other kernels.

Optional attributes a backend may set: ``distribution`` (filled in by the loader), ``array_type`` (the native
array class: lets the CPU fallback and :func:`from_array` recognise its arrays), ``host_memory = True`` (its
arrays live in host memory, so reading one back is free), ``native_broadcast = True`` (binary kernels broadcast
by themselves), ``host_kernels`` (names of kernels that compute on the host, shown by ``coretorch info``),
``synchronize(index)`` (wait for queued work; ``coretorch.accelerator.synchronize``).

The conformance suite :func:`coretorch.testing.run_conformance` (or ``pytest --pyargs
coretorch.testing_conformance``) checks a backend against this contract.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, Protocol, Union, runtime_checkable

from .. import _backend
from .. import dtypes as _dt
from ..dtypes import _FROM_NP
from .._backend import get_kernel
from ..device import device as Device
from ..ops._linalg_host import KERNELS as _HOST_LINALG
from ..ops._special_host import KERNELS as _HOST_SPECIAL
from ..ops._memfmt import iter_order
from ..tensor import Tensor, _make

__all__ = ["Backend", "Kernel", "KERNELS", "REQUIRED_KERNELS", "FAMILY_KERNELS", "OPTIONAL_KERNELS", "UNARY_KERNELS",
           "BINARY_KERNELS", "HOST_LINALG_KERNELS", "HOST_SPECIAL_KERNELS", "get_kernel", "get_backend", "from_array",
           "to_array",
           "increment_version", "validate_backend"]

#: A kernel: a callable on native arrays and Python scalars (see the module docstring).
Kernel = Callable[..., Any]

#: Every kernel name of the contract -> its signature and meaning (one line each).
KERNELS: Mapping[str, str] = MappingProxyType(_backend.PRIMITIVES)
#: Kernels the core can do without (it composes other kernels instead).
OPTIONAL_KERNELS: frozenset[str] = frozenset(n for n, s in _backend.PRIMITIVES.items() if s.startswith("optional"))
#: What every backend implements: creation and transfer, layout and indexing, elementwise math, reductions and
#: matmul (the conformance suite requires them).
REQUIRED_KERNELS: frozenset[str] = _backend.CORE_PRIMITIVES - OPTIONAL_KERNELS
#: The kernels of the op families (sorting, special functions, linalg, random, ...): a backend without one still
#: works, but the ops that use it raise NotImplementedError on its device (or, with CORETORCH_FALLBACK=cpu, run
#: on the CPU backend).
FAMILY_KERNELS: frozenset[str] = frozenset(_backend.PRIMITIVES) - REQUIRED_KERNELS - OPTIONAL_KERNELS
#: Elementwise kernels of one array: ``(x) -> array`` of x's shape.
UNARY_KERNELS: tuple[str, ...] = tuple(_backend.UNARY)
#: Elementwise kernels of two operands: ``(x, y array | Python scalar) -> array``.
BINARY_KERNELS: tuple[str, ...] = tuple(_backend.BINARY)
#: numpy implementations of the ``linalg_*`` kernels (batched over leading dims): a backend without its own
#: decompositions may wrap them to run on the host (read back, compute, upload), as coretorch-opencl does.
HOST_LINALG_KERNELS: Mapping[str, Kernel] = MappingProxyType(dict(_HOST_LINALG))
#: numpy implementations (scipy.special, imported on the first call) of torch.special's Bessel J/Y/K, Airy and zeta
#: kernels: the cpu backend's, and the opencl backend's host fallbacks.
HOST_SPECIAL_KERNELS: Mapping[str, Kernel] = MappingProxyType(dict(_HOST_SPECIAL))

_METHODS = ("is_available", "device_count", "device_name", "kernels", "manual_seed")


@runtime_checkable
class Backend(Protocol):
    """What a device backend provides (a structural type: no need to subclass it).

    Example: ``class MyBackend: name = "mydev"; def kernels(self, index): return {"add": ..., ...}; ...``
    """

    #: the device type, a lowercase identifier (``tensor.to("mydev")``); ``"cpu"`` and ``"opencl"`` are taken
    name: str

    def is_available(self) -> bool:
        """Whether the device can be used on this machine (a driver is present, a device was found)."""
        ...

    def device_count(self) -> int:
        """How many devices of this type there are (indices ``0 .. count - 1``)."""
        ...

    def device_name(self, index: int) -> str:
        """A human-readable name of device ``index`` (``coretorch info`` shows it)."""
        ...

    def kernels(self, index: int) -> Mapping[str, Kernel]:
        """The kernel table of device ``index``: names of :data:`KERNELS` -> callables.  Called once per device
        (the core caches a table with one attribute per kernel)."""
        ...

    def manual_seed(self, seed: int) -> None:
        """Seed the device's default random generator (``coretorch.manual_seed`` calls it on every backend)."""
        ...


def validate_backend(backend: object) -> None:
    """Raise TypeError naming what ``backend`` lacks to be a :class:`Backend` (run at registration)."""
    name = getattr(backend, "name", None)
    if not isinstance(name, str) or not name.isidentifier() or name != name.lower():
        raise TypeError(f"register(backend): the backend needs a 'name', its device type as a lowercase identifier "
                        f"(e.g. 'mydev'), got {name!r}")
    missing = [m for m in _METHODS if not callable(getattr(backend, m, None))]
    if missing:
        raise TypeError(f"register(backend): backend '{name}' ({type(backend).__name__}) lacks the method(s) "
                        f"{', '.join(missing)} of coretorch.plugins.Backend")


def get_backend(device_type: str) -> Backend | None:
    """The registered backend object of ``device_type`` (``"cpu"``, ``"opencl"``...), or None."""
    return _backend.backends().get(device_type)


def _table_of(device: Union[Tensor, Device, str]) -> "_backend.KernelTable":
    if isinstance(device, Tensor):
        return device._be
    return _backend.get_table(device if isinstance(device, Device) else Device(device))


def from_array(array: Any, device: Union[Tensor, Device, str], *, requires_grad: bool = False) -> Tensor:
    """Wrap ``array``, a native array of ``device``'s backend, as a Tensor on that device (no copy).

    ``device`` is a device, a device string or a Tensor (its device).  The dtype is ``array.dtype``'s.  The
    tensor owns ``array`` from now on: do not write into the array behind the tensor's back.  Use it to turn a
    kernel's result into a Tensor::

        k = coretorch.plugins.get_kernel("my_op", x)
        y = coretorch.plugins.from_array(k(coretorch.plugins.to_array(x.contiguous())), x)
    """
    table = device._be if type(device) is Tensor else _table_of(device)
    native = getattr(table.backend, "array_type", None)
    if native is not None and not isinstance(array, native) or not hasattr(array, "shape"):
        if not (hasattr(array, "shape") and hasattr(array, "dtype")):
            raise TypeError(f"from_array(): expected a native array with .shape and .dtype, got "
                            f"{type(array).__name__}")
        raise TypeError(f"from_array(): a {type(array).__module__}.{type(array).__name__} is not a native array of "
                        f"device '{table.device}' (expected {getattr(native, '__name__', native)})")
    dtype = _FROM_NP.get(array.dtype)  # the common case in one lookup; else the checked conversion (or its error)
    t = _make(array, dtype if dtype is not None else _dt.from_numpy_dtype(array.dtype), table)
    if requires_grad:
        t.requires_grad_(True)
    return t


def to_array(tensor: Tensor) -> Any:
    """The native array holding ``tensor``'s values (no copy, so writes reach the tensor: call
    :func:`increment_version` after one).  It may be a strided view; ``to_array(t.contiguous())`` gives a
    contiguous one."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_array(): expected a Tensor, got {type(tensor).__name__}")
    return tensor._data


def increment_version(tensor: Union[Tensor, Iterable[Tensor]]) -> None:
    """Record that ``tensor`` (or each of several) was written in place outside coretorch's ops (a kernel or a
    library writing into its :func:`to_array` buffer), so that autograd detects a tensor saved for backward
    and modified since (``torch.autograd.graph.increment_version``)."""
    for t in (tensor,) if isinstance(tensor, Tensor) else tensor:
        if not isinstance(t, Tensor):
            raise TypeError(f"increment_version(): expected Tensors, got {type(t).__name__}")
        t._vc[0] += 1


def result_order(shape: tuple, stride_lists: list) -> list | None:
    """The dims of an elementwise result of ``shape`` from the slowest to the fastest in memory, as PyTorch's
    TensorIterator orders them from its operands' strides (``stride_lists``, one tuple per operand, in elements or
    bytes alike; a broadcast dim's stride 0): for each pair of dims the first operand whose strides there are both
    nonzero decides (the smaller stride is the faster dim; equal strides: the smaller size).  None where that order is
    the row-major one.  A backend lays out a new result in this order to give PyTorch's strides (``a.t() + b.t()``
    is transposed, ``x[:, idx]`` of a row-major ``x`` row-major)."""
    return iter_order(tuple(shape), list(stride_lists))
