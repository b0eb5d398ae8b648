"""coretorch-cpu: the numpy backend for device 'cpu'."""
import coretorch  # noqa: F401  (first: coretorch loads this plugin through its entry point; see docs/plugins.md)

from . import _quiet
from .backend import CPUBackend

__all__ = ["CPUBackend"]

# numpy's floating-point warnings from the kernels are silent (PyTorch's IEEE results come without a word): one
# warnings filter, restored when a catch_warnings() block around the import dropped it (see _quiet)
_quiet.install()
