"""The coretorch device type 'numpydev' (coretorch-numpydev)."""
from .backend import NumpydevBackend

__all__ = ["NumpydevBackend"]
