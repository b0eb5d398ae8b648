"""OpCases of the sorting family (coretorch.ops.sorting); part of coretorch.testing.CASES."""
from __future__ import annotations

from coretorch.testing import OpCase

CASES: list[OpCase] = []
