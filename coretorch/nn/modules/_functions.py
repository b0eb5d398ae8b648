"""torch.nn.modules._functions (PyTorch's module path): the autograd Function module backward hooks route
tensors through."""
from ...utils.hooks import BackwardHookFunction

__all__ = ["BackwardHookFunction"]
