"""coretorch-adabelief: coretorch.optim.AdaBelief (docs/plugins.md, "An optimizer")."""
import coretorch  # noqa: F401  (first: coretorch loads this plugin through its entry point; see docs/plugins.md)
from .optimizer import AdaBelief

__all__ = ["AdaBelief"]
