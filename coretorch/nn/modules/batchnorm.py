"""torch.nn.modules.batchnorm: the batch-norm layers (defined with the other norms in normalization.py)."""
from .normalization import BatchNorm1d, BatchNorm2d, _BatchNorm, _NormBase

__all__ = ["BatchNorm1d", "BatchNorm2d", "_BatchNorm", "_NormBase"]
