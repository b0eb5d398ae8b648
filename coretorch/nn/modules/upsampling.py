"""Upsample, UpsamplingNearest2d and UpsamplingBilinear2d (PyTorch's upsampling.py), through F.interpolate."""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


class Upsample(Module):
    """Upsample an input ``(N, C, *spatial)`` to ``size`` or by ``scale_factor`` (see ``nn.functional.interpolate``).

    Args:
        size (int or tuple, optional): the output spatial size.
        scale_factor (float or tuple, optional): the multiplier of the spatial size.
        mode (str): ``"nearest"`` (default), ``"linear"``, ``"bilinear"``, ``"bicubic"``, ``"trilinear"``,
            ``"nearest-exact"``, ``"area"``.
        align_corners (bool, optional): for the linear modes, align the corner pixels' centres.
    """
    __constants__ = ["size", "scale_factor", "mode", "align_corners", "name", "recompute_scale_factor"]

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor: tuple[float, ...] | float | None = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour upsampling (deprecated: use :class:`Upsample`)."""
    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling with ``align_corners=True`` (deprecated: use :class:`Upsample`)."""
    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
