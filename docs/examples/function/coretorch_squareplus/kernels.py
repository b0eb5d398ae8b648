"""The kernels: native arrays in, a new native array out (numpy arrays on 'cpu', pyopencl arrays on 'opencl').

The op calls them with a contiguous float32/float64 array ``x`` and a Python float ``b``."""
from __future__ import annotations

import numpy as np


def squareplus_cpu(x: np.ndarray, b: float) -> np.ndarray:
    return np.asarray((x + np.sqrt(x * x + b)) / 2, dtype=x.dtype)


_cl_kernels: dict = {}


def squareplus_opencl(x, b: float):
    """One OpenCL launch (instead of five tensor ops).  pyopencl comes with coretorch-opencl; this module imports
    it only when an opencl tensor gets here, so the plugin also works where pyopencl is not installed."""
    from pyopencl.elementwise import ElementwiseKernel
    key = (x.context, x.dtype)
    if key not in _cl_kernels:
        t = "double" if x.dtype == np.float64 else "float"
        _cl_kernels[key] = ElementwiseKernel(x.context, f"{t} *out, const {t} *x, const {t} b",
                                             "out[i] = (x[i] + sqrt(x[i] * x[i] + b)) / 2;", f"squareplus_{t}")
    out = x.__class__(x.queue, x.shape, x.dtype, allocator=x.allocator)
    if x.size:
        _cl_kernels[key](out, x, x.dtype.type(b))
    return out
