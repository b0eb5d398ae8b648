"""``torch.testing.make_tensor``: a random tensor of a shape and dtype for tests, with PyTorch's value ranges
(floats uniform in [-9, 9), integers in [-9, 10) clamped to the dtype, bools 0/1), ``low``/``high`` checks and
messages, ``noncontiguous`` (every other element of a doubled last dimension), ``exclude_zero`` and
``memory_format``."""
from __future__ import annotations

import collections.abc
import math
import warnings
from typing import Any


def make_tensor(*shape: Any, dtype: Any, device: Any, low: float | None = None, high: float | None = None,
                requires_grad: bool = False, noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format: Any = None) -> Any:
    """A tensor of ``shape`` filled with random values in ``[low, high)`` (PyTorch's ``make_tensor``)."""
    import coretorch as torch
    floating = dtype.is_floating_point
    integral = not floating  # bool and the integer dtypes (coretorch has no complex dtypes)

    def modify_low_high(low, high, *, lowest_inclusive, highest_exclusive, default_low, default_high):
        low = low if low is not None else default_low
        high = high if high is not None else default_high
        if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
            raise ValueError(f"`low` and `high` cannot be NaN, but got {low=} and {high=}")
        elif low == high and floating:
            warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or complex types is "
                          "deprecated since 2.1 and will be removed in 2.3. Use `torch.full(...)` instead.",
                          FutureWarning, stacklevel=3)
        elif low >= high:
            raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
        elif high < lowest_inclusive or low >= highest_exclusive:
            raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), but {dtype} "
                             f"only supports [{lowest_inclusive}, {highest_exclusive})")
        low = min(max(low, lowest_inclusive), highest_exclusive)
        high = min(max(high, lowest_inclusive), highest_exclusive)
        if integral:
            return math.ceil(low), math.ceil(high)
        return low, high

    dims: tuple[int, ...] = tuple(shape[0] if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence)
                                  else shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
                         f"{noncontiguous=} and {memory_format=}")
    if requires_grad and integral:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got {dtype=}")
    noncontiguous = noncontiguous and math.prod(dims) > 1
    if noncontiguous:  # twice the last dimension, so that the strided view holds distinct values
        dims = (*dims[:-1], 2 * dims[-1])
    if dtype is torch.bool:
        lo, hi = modify_low_high(low, high, lowest_inclusive=0, highest_exclusive=2, default_low=0, default_high=2)
        result = torch.randint(lo, hi, dims, device=device, dtype=dtype)
    elif integral:
        info = torch.iinfo(dtype)
        lo, hi = modify_low_high(low, high, lowest_inclusive=info.min,
                                 highest_exclusive=info.max + (1 if dtype is not torch.int64 else 0),
                                 default_low=-9, default_high=10)
        result = torch.randint(lo, hi, dims, device=device, dtype=dtype)
    else:
        finfo = torch.finfo(dtype)
        lo, hi = modify_low_high(low, high, lowest_inclusive=finfo.min, highest_exclusive=finfo.max,
                                 default_low=-9, default_high=9)
        result = torch.empty(dims, device=device, dtype=dtype)
        if hi - lo >= finfo.max:  # uniform_ needs high - low to be finite: sample half the range and double
            result.uniform_(lo / 2, hi / 2).mul_(2)
        else:
            result.uniform_(lo, hi)
    if noncontiguous:
        result = result[..., 1::2]  # offset by one to also catch offset bugs
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if integral else torch.finfo(dtype).tiny
    if floating:
        result.requires_grad = requires_grad
    return result
