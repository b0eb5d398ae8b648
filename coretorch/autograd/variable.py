"""torch.autograd.variable: where old scripts import Variable from."""
from . import Variable

__all__ = ["Variable"]
