"""The erf/exp-family elementwise kernels on one device: ms per call on 524288 float32 values of N(0, 2^2), best
of ``--reps`` rounds, wall and process CPU time (PoCL's worker threads run in this process), each round timing every
op in turn (so a load change on a shared machine hits all alike).

    .venv/bin/python benchmarks/erf_speed.py [--device opencl] [--n 524288] [--reps 5]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import coretorch as torch
import coretorch.nn.functional as F
from coretorch.tensor import _make


def _sync(t) -> None:
    t._be.to_numpy(t._be.basic_index(t._data, (0,) * t.ndim))  # a one-element read waits for the queue


def _gelu_bwd(x):
    """The GELU backward kernel alone (what GeluBackward0 calls), upstream gradient 1."""
    return _make(x._be.gelu_backward(torch.ones_like(x)._data, x._data, None), x.dtype, x._be)


OPS = {
    "x*x": lambda x: x * x, "exp": torch.exp, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "erf": torch.erf,
    "erfc": torch.erfc, "erfinv": lambda x: torch.erfinv(x * 0.45), "special.ndtr": torch.special.ndtr,
    "softplus": F.softplus, "silu": F.silu, "mish": F.mish, "gelu": F.gelu,
    "gelu tanh": lambda x: F.gelu(x, approximate="tanh"), "gelu backward kernel": _gelu_bwd,
}


def run(device: str, n: int, reps: int, inner: int = 3) -> dict:
    """{op: (best wall s, best CPU s) per call}."""
    x = torch.tensor((np.random.default_rng(0).standard_normal(n) * 2).astype(np.float32), device=device)
    for fn in OPS.values():
        _sync(fn(x))   # builds, allocator
    best = {k: [float("inf"), float("inf")] for k in OPS}
    for _ in range(reps):
        for name, fn in OPS.items():
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(inner):
                r = fn(x)
            _sync(r)
            b = best[name]
            b[0] = min(b[0], (time.perf_counter() - t0) / inner)
            b[1] = min(b[1], (time.process_time() - c0) / inner)
    return best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="opencl")
    p.add_argument("--n", type=int, default=524288)
    p.add_argument("--reps", type=int, default=5)
    a = p.parse_args()
    res = run(a.device, a.n, a.reps)
    print(f"{a.n} float32 on {a.device}, best of {a.reps}: ms per call")
    print("| op | wall ms | CPU ms |\n|---|---|---|")
    for op, (w, c) in res.items():
        print(f"| {op} | {w * 1e3:.1f} | {c * 1e3:.1f} |")


if __name__ == "__main__":
    main()
