"""coretorch-cpu: the numpy backend for device 'cpu'."""
from .backend import CPUBackend

__all__ = ["CPUBackend"]
