"""coretorch.nn.functional: functional ops; plugin ops registered with functional=True appear here."""
from __future__ import annotations

from ..ops.pointwise import relu, sigmoid, tanh  # noqa: F401
