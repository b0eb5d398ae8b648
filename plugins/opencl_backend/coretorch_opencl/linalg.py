"""The linear-algebra decompositions on an OpenCL device: host fallbacks, as issue 13 allows for exactly these
(the matrices are read to the host, factored with numpy.linalg, and the factors written back).  Everything else of
coretorch.linalg (norms, matrix_power, matrix_exp, multi_dot, pinv, ...) is composed of device ops."""
from __future__ import annotations

import numpy as np

from coretorch.plugins import HOST_LINALG_KERNELS as _NUMPY, HOST_SPECIAL_KERNELS as _SPECIAL

# the ops (coretorch.linalg.<name>, and torch.<name> for the top-level aliases) whose decomposition kernel runs on
# the host for this device (what `coretorch info` shows as host fallbacks)
HOST = {"cholesky", "cholesky_ex", "qr", "svd", "svdvals", "eigh", "eigvalsh", "lstsq", "solve", "solve_ex", "inv",
        "inv_ex", "det", "slogdet", "logdet", "inverse"}
# the primitive kernels (coretorch.plugins.KERNELS names) that run on the host: every kernel of this module (and
# torch.special's Bessel J/Y/K, Airy and zeta functions: scipy.special on the host, no device kernels yet)
HOST_KERNELS = set(_NUMPY) | set(_SPECIAL)
# device compositions around one of those host decompositions (their own arithmetic stays on the device)
HOST_COMPOSITES = {"pinv", "pinverse", "matrix_rank", "cond", "solve_triangular", "cholesky_solve",
                   "cholesky_inverse", "tensorinv", "tensorsolve", "matrix_norm (ord 'nuc', 2, -2)",
                   "matrix_power (n < 0)"}


def _host(k, fn):
    def run(*args):
        outs = fn(*[k.to_numpy(a) if hasattr(a, "base_data") else a for a in args])
        return tuple(o if o is None else k.from_numpy(np.asarray(o)) for o in outs) \
            if isinstance(outs, tuple) else k.from_numpy(np.asarray(outs))
    run.__name__ = fn.__name__
    run.host_fallback = True  # (coretorch info: this kernel reads its inputs to the host)
    return run


def kernels(k) -> dict:
    """The primitives of this family for one device; ``k`` is the device's kernel set (backend._Kernels)."""
    return {name: _host(k, fn) for name, fn in (*_NUMPY.items(), *_SPECIAL.items())}
