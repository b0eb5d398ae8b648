"""coretorch.ops: every op as a function, plus the ops that plugins register.

Core ops are differentiable nodes built on the backend's primitive kernels (see ``coretorch._backend``);
plugin ops registered through ``coretorch_register_functions`` appear here by name.
"""
from __future__ import annotations

from . import creation, indexing, inplace, linalg, pointwise, reduction, shape  # noqa: F401
# the op families (one module each; each lists its top-level names in __all__ and its Tensor methods in METHODS)
from . import decomp, joining, products, random, scatter, sorting, special, statistics, triangular  # noqa: F401
from . import comparison  # noqa: F401  (the special family's second module)
from . import _renorm  # noqa: F401  (renorm, narrow_copy)
from . import bits, copies, histogram, misc  # noqa: F401  (gcd, shifts, ...; *_copy, trapezoid; histogram; windows)
from .._backend import get_kernel  # noqa: F401  (also coretorch.plugins.get_kernel: a plugin op's kernels)

FAMILIES = (sorting, statistics, special, comparison, triangular, joining, scatter, products, decomp, random,
            _renorm, bits, copies, histogram, misc)

_registered: dict = {}   # plugin ops: name -> (fn, tensor_method, functional)


def registered() -> list[str]:
    return sorted(_registered)


def _export():
    """Flatten the op modules into this namespace (coretorch.ops.add, coretorch.ops.matmul, ...)."""
    g = globals()
    for mod in (pointwise, reduction, shape, indexing, linalg, *FAMILIES):
        for k, v in vars(mod).items():
            if callable(v) and not k.startswith("_") and getattr(v, "__module__", "") == mod.__name__ \
                    and not isinstance(v, type):
                g.setdefault(k, v)
    for k in ("tensor", "zeros", "ones", "full", "empty", "arange", "linspace", "eye", "rand", "randn",
              "randint", "from_numpy"):
        g.setdefault(k, getattr(creation, k))


_export()
