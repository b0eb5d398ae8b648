"""The module the entry point names: registers the optimizer as coretorch.optim.AdaBelief."""
from coretorch.plugins import hookimpl

from .optimizer import AdaBelief

CORETORCH_PLUGIN_API = 1


@hookimpl
def coretorch_register_optimizers(register):
    register("AdaBelief", AdaBelief)  # must subclass coretorch.optim.Optimizer (checked at registration)
