"""coretorch.return_types: the named tuples of the ops that return several tensors (PyTorch's torch.return_types):
``max``, ``min``, ``sort``, ``topk``, ``kthvalue``, ``median``, ``nanmedian``, ``mode``, ``cummax``, ``cummin``,
``aminmax``."""
from __future__ import annotations

from .ops.reduction import _RETURN_TYPES as _REDUCTION
from .ops.sorting import RETURN_TYPES as _SORTING
from .ops.statistics import AMINMAX as aminmax

max = _REDUCTION["max"]
min = _REDUCTION["min"]
sort, topk, kthvalue = _SORTING["sort"], _SORTING["topk"], _SORTING["kthvalue"]
median, nanmedian, mode = _SORTING["median"], _SORTING["nanmedian"], _SORTING["mode"]
cummax, cummin = _SORTING["cummax"], _SORTING["cummin"]

__all__ = ["max", "min", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax", "cummin", "aminmax"]
