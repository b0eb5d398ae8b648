"""The op-description table by family: each module's ``CASES`` joins ``coretorch.testing.CASES``, which runs every
case forward against NumPy and backward with gradcheck on every installed backend (``tests/test_ops.py``)."""
from __future__ import annotations

import importlib

FAMILIES = ("core", "sorting", "special", "triangular", "joining", "scatter", "products", "decomp", "random",
            "names12", "names12b")


def all_cases() -> list:
    out = []
    for fam in FAMILIES:
        out += importlib.import_module(f"{__name__}.{fam}").CASES
    return out
