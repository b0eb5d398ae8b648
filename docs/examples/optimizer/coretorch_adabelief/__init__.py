"""coretorch-adabelief: coretorch.optim.AdaBelief (docs/plugins.md, "An optimizer")."""
from .optimizer import AdaBelief

__all__ = ["AdaBelief"]
