"""Entry point of coretorch-opencl: registers the OpenCL backend for device type 'opencl'."""
from coretorch.plugins import hookimpl

from .backend import OpenCLBackend

CORETORCH_PLUGIN_API = 1


@hookimpl
def coretorch_register_backends(register):
    register(OpenCLBackend())
