"""``torch._dynamo.decorators``: where PyTorch defines ``mark_dynamic`` and its kin (scripts import them from here:
``from torch._dynamo.decorators import mark_dynamic``).  The same functions as ``torch._dynamo``'s, and
``mark_unbacked``, which PyTorch keeps here only; coretorch captures again for new sizes, so each is accepted."""
from __future__ import annotations

from typing import Any

from . import (_check, allow_in_graph, assume_constant_result, disable, graph_break, mark_dynamic, mark_static,
               mark_static_address, maybe_mark_dynamic)

__all__ = ["allow_in_graph", "assume_constant_result", "disable", "graph_break", "mark_dynamic", "mark_static",
           "mark_static_address", "mark_unbacked", "maybe_mark_dynamic"]


def mark_unbacked(t: Any, index: Any, hint_override: Any = None, strict: bool = False,
                  specialize_on: Any = None, shape_id: Any = None) -> None:
    """Accepted: coretorch captures again for new sizes (see ``torch._dynamo``'s docstring)."""
    _check(t, "mark_unbacked")
