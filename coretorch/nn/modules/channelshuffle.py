"""torch.nn.modules.channelshuffle (PyTorch's module path): ChannelShuffle lives in pixelshuffle.py."""
from .pixelshuffle import ChannelShuffle

__all__ = ["ChannelShuffle"]
