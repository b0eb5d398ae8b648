"""Special functions against tanh in the same run: erf, GELU (the erf form), erfinv, digamma, lgamma on 1M floats,
on every available device.  The issue asks erf/GELU within 2x of tanh's cost; the table prints the ratios.

    .venv/bin/python benchmarks/special.py [--n 1000000] [--dtype float32] [--reps 7]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import coretorch as torch
import coretorch.nn.functional as F
from coretorch.tensor import _make
from coretorch.testing import available_devices


def _sync(t) -> None:
    t._be.to_numpy(t._be.basic_index(t._data, (0,) * t.ndim))  # a one-element read waits for the queue


def _time_all(cases: dict, reps: int, inner: int) -> dict:
    """{name: best seconds per call} for cases {name: (fn, x)}: each round runs every case in turn (``inner``
    calls), so a load change on a shared machine hits every op alike and the ratios to tanh hold."""
    for fn, x in cases.values():
        _sync(fn(x))  # warm: kernel builds, allocator
    best = dict.fromkeys(cases, float("inf"))
    for _ in range(reps):
        for name, (fn, x) in cases.items():
            t0 = time.perf_counter()
            for _ in range(inner):
                r = fn(x)
            _sync(r)
            best[name] = min(best[name], (time.perf_counter() - t0) / inner)
    return best


def _gelu_kernel(x):
    """The optional fused 'gelu' primitive (one pass) that nn.functional.gelu's forward can use."""
    return _make(x._be.gelu(x._data), x.dtype, x._be)


OPS = {
    "tanh": torch.tanh, "erf": torch.erf, "gelu": F.gelu, "gelu kernel": _gelu_kernel, "erfinv": torch.erfinv,
    "digamma": torch.digamma,
    "lgamma": torch.lgamma, "erfc": torch.erfc, "special.i0e": torch.special.i0e, "special.ndtri": torch.special.ndtri,
}


WIDE = ("tanh", "erf", "erfc", "gelu", "gelu kernel")  # timed again on N(0, 2^2) values (scipy was slow for |x| > 1)


def run(n: int = 1_000_000, dtype: str = "float32", reps: int = 7, inner: int = 5) -> dict:
    """{device: {op: seconds per call}} on ``n`` values in (0, 1) (in every op's domain), and the ``WIDE`` ops
    (as "<op> N(0,4)") on normal values of standard deviation 2 (GELU's inputs in a network)."""
    rng = np.random.default_rng(0)
    x_np = rng.uniform(0.01, 0.99, n).astype(dtype)
    w_np = (rng.standard_normal(n) * 2).astype(dtype)
    out = {}
    for dev in available_devices():
        x, w = torch.tensor(x_np, device=dev), torch.tensor(w_np, device=dev)
        cases = {name: (fn, x) for name, fn in OPS.items()}
        cases.update({f"{name} N(0,4)": (OPS[name], w) for name in WIDE})
        out[dev] = _time_all(cases, reps, inner)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--dtype", default="float32")
    p.add_argument("--reps", type=int, default=7)
    a = p.parse_args()
    res = run(a.n, a.dtype, a.reps)
    print(f"{a.n} {a.dtype} values, best of {a.reps}; ms per call and ratio to tanh on the same device")
    print("| op | " + " | ".join(f"{d} ms | {d} / tanh" for d in res) + " |")
    print("|---|" + "---|---|" * len(res))
    for op in next(iter(res.values())):
        base = "tanh N(0,4)" if op.endswith("N(0,4)") else "tanh"
        print(f"| {op} | " + " | ".join(f"{r[op] * 1e3:.2f} | {r[op] / r[base]:.2f}" for r in res.values()) + " |")


if __name__ == "__main__":
    main()
