"""torch.types: the aliases PyTorch's annotations use (Number, _int, _float, _bool, Device, _size, ...)."""
from __future__ import annotations

import builtins
import os
from typing import IO, Optional, Sequence, Tuple, Union

from .device import device as _device
from .dtypes import dtype as _dtype
from .tensor import Size as _Size, Tensor

__all__ = ["Number", "Device", "FileLike", "_int", "_float", "_bool", "_complex", "_dtype", "_device", "_size",
           "_TensorOrTensors", "_qscheme", "_layout", "Storage"]

_int = builtins.int
_float = builtins.float
_bool = builtins.bool
_complex = builtins.complex
_TensorOrTensors = Union[Tensor, Sequence[Tensor]]
_size = Union[_Size, list[builtins.int], Tuple[builtins.int, ...]]
_qscheme = None
_layout = object
Number = Union[builtins.int, builtins.float, builtins.bool]
Device = Optional[Union[_device, builtins.str, builtins.int]]
FileLike = Union[builtins.str, os.PathLike, IO[bytes]]
Storage = None  # coretorch has no storage objects
