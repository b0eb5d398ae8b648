"""Device objects: "cpu", "opencl:1", device("opencl", 0)."""
from __future__ import annotations

__all__ = ["device"]

_cache: dict = {}


class device:
    """A device: a type (``"cpu"``, ``"opencl"``, ... any registered backend) and an optional index.

    Args:
        type_or_str (str or device): ``"cpu"``, ``"opencl:1"``, or a device.
        index (int, optional): the device index within the type.

    Example:
        >>> torch.device("cpu")
        device(type='cpu')
    """
    __slots__ = ("type", "index", "_str")
    type: str
    index: int | None
    _str: str

    def __new__(cls, type_or_str, index: int | None = None):
        if isinstance(type_or_str, device):
            return type_or_str
        key = (type_or_str, index)
        d = _cache.get(key)
        if d is not None:
            return d
        if isinstance(type_or_str, int) and not isinstance(type_or_str, bool) and index is None:
            # an ordinal alone: a device of the accelerator's type, as PyTorch 2.x (which raises without one)
            from .accelerator import current_accelerator  # accelerator imports this module: a cycle otherwise
            acc = current_accelerator(check_available=True)
            if acc is None:
                raise RuntimeError("Cannot access accelerator device when none is available.")
            return device(acc.type, type_or_str)
        if not isinstance(type_or_str, str):
            raise TypeError(f"device() expected a string or a device, got {type(type_or_str).__name__}")
        s = type_or_str.strip()
        if not s:
            raise RuntimeError("Device string must not be empty")
        typ, colon, idx = s.partition(":")
        if colon and not idx:
            raise RuntimeError(f"Invalid device string: '{s}'")
        if idx:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was passed "
                                   f"explicitly: {s}")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{s}'")
            index = int(idx)
        if index is not None and index < 0:
            raise RuntimeError(f"Device index must not be negative, got {index}")
        if not typ or not (typ.replace("_", "").isalnum()):
            raise RuntimeError(f"Invalid device string: '{s}'")
        d = object.__new__(cls)
        d.type = typ
        d.index = index
        d._str = typ if index is None else f"{typ}:{index}"
        _cache[key] = d
        return d

    def __repr__(self) -> str:
        return f"device(type='{self.type}')" if self.index is None else \
            f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self._str

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (self._str,))

    def __enter__(self) -> "device":
        """``with torch.device("opencl"):``: factories called without a device in the block (in this thread) make
        their tensors here, as PyTorch's device context; the previous default comes back at the block's end (blocks
        nest)."""
        from .ops import creation  # (creation imports this module)
        creation._push_default_device(self)
        return self

    def __exit__(self, *exc) -> None:
        from .ops import creation
        creation._pop_default_device()
