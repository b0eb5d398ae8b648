"""nn.functional channel/space rearrangements: pixel_shuffle, pixel_unshuffle, channel_shuffle (views and one
copy, so autograd comes from reshape and permute; the result is a new tensor in the input's suggested memory
format, as PyTorch's kernels allocate it, never a view of the input)."""
from __future__ import annotations

from ...ops import shape as _S
from ...ops._own import fresh_like
from ...tensor import Tensor

__all__ = ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle"]


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C*r^2, H, W) -> (*, C, H*r, W*r)."""
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    r = upscale_factor
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *batch, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    nb = len(batch)
    x = input.reshape(tuple(batch) + (c // (r * r), r, r, h, w))
    x = _S.permute(x, tuple(range(nb)) + (nb, nb + 3, nb + 1, nb + 4, nb + 2))
    return fresh_like(x.reshape(tuple(batch) + (c // (r * r), h * r, w * r)), input)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H*r, W*r) -> (*, C*r^2, H, W)."""
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    r = downscale_factor
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *batch, c, h, w = input.shape
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but "
                           f"input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but "
                           f"input.size(-1)={w} is not divisible by {r}")
    nb = len(batch)
    x = input.reshape(tuple(batch) + (c, h // r, r, w // r, r))
    x = _S.permute(x, tuple(range(nb)) + (nb, nb + 2, nb + 4, nb + 1, nb + 3))
    return fresh_like(x.reshape(tuple(batch) + (c * r * r, h // r, w // r)), input)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """(N, C, *) with C = g * k: channel j*k + i moves to i*g + j (ShuffleNet's shuffle)."""
    if input.ndim < 3:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    n, c = input.shape[0], input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    rest = tuple(input.shape[2:])
    x = input.reshape((n, groups, c // groups) + rest)
    return fresh_like(_S.transpose(x, 1, 2).reshape((n, c) + rest), input)


native_channel_shuffle = channel_shuffle
