"""The module the entry point names: it declares the plugin API it was written for and registers
the backend."""
from coretorch.plugins import hookimpl

from .backend import NumpydevBackend

CORETORCH_PLUGIN_API = 1


@hookimpl
def coretorch_register_backends(register):
    register(NumpydevBackend())
