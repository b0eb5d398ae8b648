"""OpCases of the scatter family (coretorch.ops.scatter); part of coretorch.testing.CASES."""
from __future__ import annotations

from coretorch.testing import OpCase

CASES: list[OpCase] = []
