"""The module the entry point names: registers the op, its Tensor method and its per-device kernels."""
from coretorch.plugins import hookimpl

from . import kernels
from .function import squareplus

CORETORCH_PLUGIN_API = 1


@hookimpl
def coretorch_register_functions(register):
    # coretorch.ops.squareplus, Tensor.squareplus and nn.functional.squareplus; get_kernel("squareplus", x) finds
    # the kernel of x's device type (any other device runs the tensor-op version)
    register("squareplus", squareplus, tensor_method=True, functional=True,
             kernels={"cpu": kernels.squareplus_cpu, "opencl": kernels.squareplus_opencl})
