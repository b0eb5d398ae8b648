"""``Tensor.view(dtype)``: the tensor's memory read as another dtype, as PyTorch's ``view_dtype`` (its layout rules
and errors); the backend's optional ``view_dtype`` primitive makes the array."""
from __future__ import annotations

from .. import dtypes as _dt
from ..tensor import Tensor, _make


def view_dtype(input: Tensor, dtype: _dt.dtype) -> Tensor:
    """A tensor sharing ``input``'s memory and version counter, its bytes read as ``dtype``: the same sizes and
    strides for a dtype of the same element size; otherwise the last dim (contiguous) scaled by the size ratio and
    the other strides (and the storage offset) in elements of the new size.  Not differentiable: the result is
    no view for autograd (no ``_base``, no gradient), as PyTorch's."""
    if dtype is input.dtype:
        return input.detach()  # its own dtype: PyTorch's result shares the memory, no view, no gradient
    old, new = input.dtype.itemsize, dtype.itemsize
    if old != new:
        what = f"to view {input.dtype._tname[:-6]} as {dtype._tname[:-6]} (different element sizes)"
        if input.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        st = input.stride()
        if not input.numel():  # (no element to read: PyTorch's checks pass on its row-major strides, not its size's)
            if old < new and input.shape[-1] % (new // old):
                raise RuntimeError(f"self.size(-1) must be divisible by {new // old} {what}, but got "
                                   f"{input.shape[-1]}")
        elif old > new:
            if st[-1] != 1:
                raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {st[-1]}")
        else:
            ratio = new // old
            if input.shape[-1] % ratio:
                raise RuntimeError(f"self.size(-1) must be divisible by {ratio} {what}, but got {input.shape[-1]}")
            off = input.storage_offset()
            if off % ratio:
                raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} {what}, but got {off}")
            if st[-1] != 1:
                raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {st[-1]}")
            for d, s in enumerate(st[:-1]):
                if s % ratio:
                    raise RuntimeError(f"self.stride({d}) must be divisible by {ratio} {what}, but got {s}")
    table = input._be
    if not table.has("view_dtype"):
        raise NotImplementedError(f"view(dtype): device '{input.device}' cannot read a tensor's memory as another "
                                  "dtype (its backend has no 'view_dtype' kernel); use .to(dtype) to convert")
    root = input._vbase if input._vbase is not None else input
    t = _make(table.view_dtype(input._data, dtype.np), dtype, table, base=root, version=input._vc)
    t._det = True  # (its memory and version counter are input's: storage_offset counts from input's root)
    return t
