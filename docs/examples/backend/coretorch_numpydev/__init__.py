"""The coretorch device type 'numpydev' (coretorch-numpydev)."""
import coretorch  # noqa: F401  (first: coretorch loads this plugin through its entry point; see docs/plugins.md)
from .backend import NumpydevBackend

__all__ = ["NumpydevBackend"]
