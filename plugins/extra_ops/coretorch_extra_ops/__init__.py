"""coretorch-extra-ops: extra differentiable ops and optimizers, shipped the way a third-party plugin is.

Nothing here is imported by coretorch: the entry point ``extra_ops = "coretorch_extra_ops.plugin"`` (group
``coretorch``) makes coretorch load :mod:`coretorch_extra_ops.plugin`, whose hooks register everything.
"""
import coretorch  # noqa: F401  (first: coretorch loads this plugin through its entry point; see docs/plugins.md)

__version__ = "0.1.0"
