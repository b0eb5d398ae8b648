"""torch.onnx: importable; exporting to ONNX is not supported by coretorch."""
from __future__ import annotations

__all__ = ["export", "dynamo_export", "is_in_onnx_export"]


def export(model, args=(), f=None, *pos, **kwargs):
    """Export a model to ONNX: raises ``NotImplementedError`` (coretorch has no graph export); save the
    weights with ``coretorch.save(model.state_dict(), path)`` instead.
    """
    raise NotImplementedError("torch.onnx.export is not supported by coretorch (there is no graph capture to "
                              "export); save the weights with coretorch.save(model.state_dict(), path) instead")


def dynamo_export(model, *args, **kwargs):
    """Export a model to ONNX through TorchDynamo: raises ``NotImplementedError``."""
    raise NotImplementedError("torch.onnx.dynamo_export is not supported by coretorch")


def is_in_onnx_export() -> bool:
    """Whether an ONNX export is running: always False."""
    return False
