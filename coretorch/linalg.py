"""coretorch.linalg: PyTorch's torch.linalg (batched over leading dims, float32/float64, differentiable).

The decompositions (cholesky, qr, svd, eigh, lstsq, solve, inv, det/slogdet) are backend primitives (numpy.linalg on
cpu; host fallbacks on opencl); everything else is composed of device tensor ops.  Every function but diagonal and
vander takes PyTorch's ``out=``.
"""
from __future__ import annotations

from .ops import _decomp_composite as _c, _decomp_extra as _e, _decomp_ops as _o
from .ops._decomp_composite import diagonal
from .ops._decomp_extra import vander, with_out as _out
from .ops._decomp_ops import LinAlgError
from .ops._householder import householder_product
from .ops import _lu
from .ops.linalg import matmul

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv",
           "householder_product", "inv_ex", "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve", "matmul",
           "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet",
           "solve", "solve_ex", "solve_triangular", "svd", "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot",
           "vector_norm"]

cholesky = _out(_o.cholesky, "linalg.cholesky")
cholesky_ex = _out(_o.cholesky_ex, "linalg.cholesky_ex")
det = _out(_o.det, "linalg.det")
eigh = _out(_o.eigh, "linalg.eigh")
eigvalsh = _out(_o.eigvalsh, "linalg.eigvalsh")
inv = _out(_o.inv, "linalg.inv")
inv_ex = _out(_o.inv_ex, "linalg.inv_ex")
lstsq = _out(_o.lstsq, "linalg.lstsq")
matrix_rank = _out(_o.matrix_rank, "linalg.matrix_rank")
pinv = _out(_o.pinv, "linalg.pinv")
qr = _out(_o.qr, "linalg.qr")
slogdet = _out(_o.slogdet, "linalg.slogdet")
solve = _out(_o.solve, "linalg.solve")
solve_ex = _out(_o.solve_ex, "linalg.solve_ex")
svd = _out(_o.svd, "linalg.svd")
svdvals = _out(_o.svdvals, "linalg.svdvals")
cross = _out(_c.cross, "linalg.cross")
matrix_exp = _out(_c.matrix_exp, "linalg.matrix_exp", out=False)  # (no out= in PyTorch)
matrix_norm = _out(_c.matrix_norm, "linalg.matrix_norm")
matrix_power = _out(_c.matrix_power, "linalg.matrix_power")
multi_dot = _out(_c.multi_dot, "linalg.multi_dot")
norm = _out(_c.norm, "linalg.norm")
vecdot = _out(_c.vecdot, "linalg.vecdot")
vector_norm = _out(_c.vector_norm, "linalg.vector_norm")
cond = _out(_e.cond, "linalg.cond")
solve_triangular = _out(_e.solve_triangular, "linalg.solve_triangular")
tensorinv = _out(_e.tensorinv, "linalg.tensorinv")
tensorsolve = _out(_e.tensorsolve, "linalg.tensorsolve")
lu = _out(_lu.lu, "linalg.lu")
lu_factor = _out(_lu.lu_factor, "linalg.lu_factor")
lu_factor_ex = _out(_lu.lu_factor_ex, "linalg.lu_factor_ex")
lu_solve = _out(_lu.lu_solve, "linalg.lu_solve")
