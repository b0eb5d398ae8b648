"""OpCases of the decomp family (coretorch.ops.decomp); part of coretorch.testing.CASES."""
from __future__ import annotations

from coretorch.testing import OpCase

CASES: list[OpCase] = []
