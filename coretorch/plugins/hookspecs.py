"""The hooks a coretorch plugin may implement (pluggy project name "coretorch").

Registration hooks receive a ``register`` callback, as in simonw/llm; a plugin calls it once per thing
it provides.  Observation hooks cost nothing when no plugin implements them.
"""
from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("coretorch")
hookimpl = pluggy.HookimplMarker("coretorch")

#: Bumped when a hook's signature or the backend contract changes incompatibly.  A plugin declares the
#: version it was written for as the module attribute ``CORETORCH_PLUGIN_API``.
PLUGIN_API_VERSION = 1


@hookspec
def coretorch_register_backends(register):
    """``register(backend)``: a device backend, a :class:`coretorch.plugins.Backend` (docs/plugins.md)."""


@hookspec
def coretorch_register_functions(register):
    """``register(name, fn, *, tensor_method=False, functional=False, kernels=None)``: a new op,
    exposed as ``coretorch.ops.<name>`` (and as a Tensor method / in ``nn.functional`` when asked);
    ``kernels`` maps a device type to a kernel that ``coretorch.plugins.get_kernel`` returns; ``fn`` must be
    callable."""


@hookspec
def coretorch_register_optimizers(register):
    """``register(name, cls)``: a subclass of ``coretorch.optim.Optimizer``, exposed as ``coretorch.optim.<name>``."""


@hookspec
def coretorch_register_modules(register):
    """``register(name, cls)``: a subclass of ``coretorch.nn.Module``, exposed as ``coretorch.nn.<name>``."""


@hookspec
def coretorch_register_distributed(register):
    """``register(impl)``: a module implementing ``torch.distributed``'s API (``init_process_group``,
    collectives, ``ReduceOp``, ...), exposed as ``coretorch.distributed``; its ``DistributedDataParallel``
    appears as ``coretorch.nn.parallel.DistributedDataParallel``.  One implementation at a time."""


@hookspec
def coretorch_module_forward(module, inputs, output):
    """Observation: a module finished ``forward`` (profilers, loggers)."""


@hookspec
def coretorch_optimizer_step(optimizer):
    """Observation: an optimizer finished ``step``."""
