"""OpCases of the joining family (coretorch.ops.joining); part of coretorch.testing.CASES."""
from __future__ import annotations

from coretorch.testing import OpCase

CASES: list[OpCase] = []
