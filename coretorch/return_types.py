"""coretorch.return_types: the named tuples of the ops that return several tensors (PyTorch's torch.return_types):
``max``, ``min``, ``sort``, ``topk``, ``kthvalue``, ``median``, ``nanmedian``, ``mode``, ``cummax``, ``cummin``,
``aminmax`` and the linear-algebra results (``qr``, ``svd``, ``slogdet``, ``linalg_qr``, ``linalg_svd``, ...)."""
from __future__ import annotations

from .ops.reduction import _RETURN_TYPES as _REDUCTION
from .ops.sorting import RETURN_TYPES as _SORTING
from .ops.statistics import AMINMAX as aminmax
from .ops._util import return_type as _decomp_type
from .ops.special import frexp_result as frexp

max = _REDUCTION["max"]
min = _REDUCTION["min"]
sort, topk, kthvalue = _SORTING["sort"], _SORTING["topk"], _SORTING["kthvalue"]
median, nanmedian, mode = _SORTING["median"], _SORTING["nanmedian"], _SORTING["mode"]
cummax, cummin = _SORTING["cummax"], _SORTING["cummin"]

# the linear-algebra named tuples (one class per name: the ops build theirs through the same cache)
qr, svd = _decomp_type("qr", ("Q", "R")), _decomp_type("svd", ("U", "S", "V"))
slogdet, linalg_slogdet = (_decomp_type(n, ("sign", "logabsdet")) for n in ("slogdet", "linalg_slogdet"))
linalg_qr, linalg_svd = _decomp_type("linalg_qr", ("Q", "R")), _decomp_type("linalg_svd", ("U", "S", "Vh"))
linalg_eigh = _decomp_type("linalg_eigh", ("eigenvalues", "eigenvectors"))
linalg_inv_ex = _decomp_type("linalg_inv_ex", ("inverse", "info"))
linalg_solve_ex = _decomp_type("linalg_solve_ex", ("result", "info"))
linalg_cholesky_ex = _decomp_type("linalg_cholesky_ex", ("L", "info"))
linalg_lstsq = _decomp_type("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))
geqrf = _decomp_type("geqrf", ("a", "tau"))
triangular_solve = _decomp_type("triangular_solve", ("solution", "cloned_coefficient"))
linalg_lu_factor = _decomp_type("linalg_lu_factor", ("LU", "pivots"))
linalg_lu_factor_ex = _decomp_type("linalg_lu_factor_ex", ("LU", "pivots", "info"))
linalg_lu = _decomp_type("linalg_lu", ("P", "L", "U"))
lu_unpack = _decomp_type("lu_unpack", ("P", "L", "U"))

__all__ = ["frexp", "qr", "svd", "slogdet", "linalg_slogdet", "linalg_qr", "linalg_svd", "linalg_eigh", "linalg_inv_ex",
           "linalg_solve_ex", "linalg_cholesky_ex", "linalg_lstsq", "max", "min", "sort", "topk", "kthvalue", "median",
           "nanmedian", "mode", "cummax", "cummin", "aminmax", "geqrf", "triangular_solve",
           "linalg_lu_factor", "linalg_lu_factor_ex", "linalg_lu", "lu_unpack"]
