"""OpCases of the products family (coretorch.ops.products); part of coretorch.testing.CASES."""
from __future__ import annotations

from coretorch.testing import OpCase

CASES: list[OpCase] = []
