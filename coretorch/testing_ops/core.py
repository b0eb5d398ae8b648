"""The core op table: elementwise, reduction, shape, indexing, linear-algebra and nn cases with their NumPy
references (the other families live beside it in coretorch/testing_ops).  The table is built in parts
(``_core_pointwise``, ``_core_reduction``, ``_core_shape``) from the references and builders of ``_core_refs``;
every name stays importable from here."""
from __future__ import annotations

from coretorch.testing import DEFAULT_FLOAT, FLOAT_DTYPES, Arg, OpCase  # noqa: F401

from ._core_refs import _CATEGORY, _promote, _combine, result_type, _cast, _binref, _powi, _uref, _sigmoid  # noqa: F401
from ._core_refs import A, INT_DTYPES, _unary, _PAIRS, _binary, _promotions, _ref0d, _reduction, _RED  # noqa: F401
from ._core_refs import _RED_EMPTY, _npaxis, _np_sum, _np_var, _np_norm, _np_logsumexp, _np_maxdim  # noqa: F401
from ._core_refs import _np_arg, _np_cumsum, _np_prod, _np_scatter_add, _np_gather, _amax_vjp, _is_contig  # noqa: F401
from ._core_refs import _shares_input  # noqa: F401
from ._core_pointwise import pointwise_cases
from ._core_reduction import reduction_cases
from ._core_shape import shape_cases


def _build_cases() -> list[OpCase]:
    return pointwise_cases() + reduction_cases() + shape_cases()


CASES = _build_cases()
