"""The plugin module coretorch loads through the entry point ``extra_ops`` (group ``coretorch``).

It declares the plugin API it was written for and implements the registration hooks; each hook calls
``register`` once per thing it provides.  Ops whose plain names coretorch already uses (``nn.functional.gelu``,
``mish``, ``rms_norm``, ``erf``) are registered with an ``ext_`` prefix: a plugin never shadows the core.
"""
from __future__ import annotations

from coretorch.plugins import hookimpl

from . import functions as fn
from . import kernels

CORETORCH_PLUGIN_API = 1


@hookimpl
def coretorch_register_functions(register):
    # ops with a kernel per device type; on devices without one they run as tensor ops
    register("ext_erf", fn.ext_erf, kernels={"cpu": kernels.erf_cpu, "opencl": kernels.erf_opencl})
    # ops written with tensor ops only
    register("ext_gelu", fn.ext_gelu)
    register("ext_mish", fn.ext_mish)
    register("swiglu", fn.swiglu)
    register("ext_rms_norm", fn.ext_rms_norm)
    register("focal_loss", fn.focal_loss)
    register("fused_softmax_cross_entropy", fn.fused_softmax_cross_entropy)


@hookimpl
def coretorch_register_optimizers(register):
    from .lbfgs import LBFGS
    from .optimizers import Adadelta, Adagrad, Adam, Adamax, AdamW, Lion, NAdam, RAdam, RMSprop
    from .optimizers_more import ASGD, Adafactor, Rprop
    from .sparse_adam import SparseAdam
    for cls in (Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam, LBFGS, Lion, Rprop, ASGD, Adafactor,
                SparseAdam):
        register(cls.__name__, cls)


@hookimpl
def coretorch_register_modules(register):
    import coretorch
    from .modules import Mish, RMSNorm
    for cls in (Mish, RMSNorm):
        if not hasattr(coretorch.nn, cls.__name__):  # coretorch's own module of that name wins
            register(cls.__name__, cls)
