"""OpCases of the triangular family (coretorch.ops.triangular); part of coretorch.testing.CASES."""
from __future__ import annotations

from coretorch.testing import OpCase

CASES: list[OpCase] = []
