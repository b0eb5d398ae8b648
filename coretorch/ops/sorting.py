"""Sorting, selection and order statistics: sort, argsort, topk, kthvalue, median, mode, quantile, unique,
searchsorted, bucketize, histc, bincount, cummax/cummin, diff, cov/corrcoef, ...
"""
from __future__ import annotations

__all__: list[str] = []  # the names coretorch.<name> exports from this family
METHODS: dict = {}       # Tensor.<name> -> function(self, ...), bound by coretorch._tensor_methods
