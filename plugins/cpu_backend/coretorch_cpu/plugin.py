"""Entry point of coretorch-cpu: registers the numpy backend for device type 'cpu'."""
from coretorch.plugins import hookimpl

from .backend import CPUBackend

CORETORCH_PLUGIN_API = 1


@hookimpl
def coretorch_register_backends(register):
    register(CPUBackend())
