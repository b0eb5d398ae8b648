"""What coretorch loads through the entry point: the plugin API version and one registration hook."""
from coretorch.plugins import hookimpl

CORETORCH_PLUGIN_API = 1


@hookimpl
def coretorch_register_optimizers(register):
    from . import SignSGD
    register("SignSGD", SignSGD)
