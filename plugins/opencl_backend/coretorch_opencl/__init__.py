"""coretorch-opencl: the OpenCL backend for device 'opencl' (pyopencl; PoCL gives a CPU device anywhere)."""
from .backend import OpenCLBackend
from .device import STATS

__all__ = ["OpenCLBackend", "STATS"]
