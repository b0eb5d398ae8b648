"""coretorch-numpydev: a device type 'numpydev' whose arrays are numpy arrays (docs/plugins.md, "A backend")."""
from .backend import NumpyDevBackend

__all__ = ["NumpyDevBackend"]
