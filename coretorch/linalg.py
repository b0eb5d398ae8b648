"""coretorch.linalg: PyTorch's torch.linalg (batched over leading dims, float32/float64, differentiable).

The decompositions (cholesky, qr, svd, eigh, lstsq, solve, inv, det/slogdet) are backend primitives (numpy.linalg on
cpu; host fallbacks on opencl); everything else is composed of device tensor ops.
"""
from __future__ import annotations

from .ops._decomp_composite import (cross, diagonal, matrix_exp, matrix_norm, matrix_power, multi_dot, norm, vecdot,
                                    vector_norm)
from .ops._decomp_ops import (LinAlgError, cholesky, cholesky_ex, det, eigh, eigvalsh, inv, inv_ex, lstsq,
                              matrix_rank, pinv, qr, slogdet, solve, solve_ex, svd, svdvals)
from .ops.linalg import matmul

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "inv_ex",
           "lstsq", "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv",
           "qr", "slogdet", "solve", "solve_ex", "svd", "svdvals", "vecdot", "vector_norm"]
