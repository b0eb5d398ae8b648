"""What the MPI worker scripts share: named checks, written per rank as JSON for the pytest side to assert."""
from __future__ import annotations

import json
import os
import traceback

import numpy as np


class Checks:
    def __init__(self, rank: int):
        self.rank = rank
        self.results: list = []

    def check(self, name: str, ok, detail="") -> None:
        self.results.append([name, bool(ok), str(detail)[:2000]])

    def close(self, name: str, actual, expected, rtol=1e-6, atol=1e-6) -> None:
        a, e = np.asarray(actual), np.asarray(expected)
        ok = a.shape == e.shape and a.dtype == e.dtype and np.allclose(a.astype(np.float64), e.astype(np.float64),
                                                                       rtol=rtol, atol=atol)
        self.check(name, ok, f"actual {a.dtype}{a.shape} {a.ravel()[:6]} expected {e.dtype}{e.shape} {e.ravel()[:6]}")

    def run(self, name: str, fn) -> None:
        """Run fn(); an exception is a failed check named ``name`` (with its traceback)."""
        try:
            fn()
        except Exception:
            self.results.append([name, False, traceback.format_exc()[-2000:]])

    def dump(self) -> None:
        out = os.environ["CT_OUT"]
        with open(os.path.join(out, f"rank{self.rank}.json"), "w") as f:
            json.dump(self.results, f)
