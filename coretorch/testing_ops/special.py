"""OpCases of the special family (coretorch.ops.special); part of coretorch.testing.CASES."""
from __future__ import annotations

from coretorch.testing import OpCase

CASES: list[OpCase] = []
