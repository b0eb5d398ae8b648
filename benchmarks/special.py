"""Special functions against tanh in the same run: erf, GELU (the erf form), erfinv, digamma, lgamma on 1M floats,
on every available device.  The issue asks erf/GELU within 2x of tanh's cost; the table prints the ratios.  The GELU
rows: F.gelu, its tanh approximation, and the fused kernels of a training step (forward keeping Phi(x), the backward
from it, the backward without it) where the device has them.

    .venv/bin/python benchmarks/special.py [--n 1000000] [--dtype float32] [--reps 7] [--clock process]

``--clock process`` times by the process's CPU time (on a shared machine another job's load then counts less; on
opencl it sums PoCL's threads).
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


def _time_all(cases: dict, reps: int, inner: int, clock=time.perf_counter) -> dict:
    """{name: best seconds per call} for cases {name: (fn, x)}: each round runs every case in turn (``inner``
    calls), so a load change on a shared machine hits every op alike and the ratios to tanh hold."""
    for fn, x in cases.values():
        _sync(fn(x))  # warm: kernel builds, allocator
    best = dict.fromkeys(cases, float("inf"))
    for _ in range(reps):
        for name, (fn, x) in cases.items():
            t0 = clock()
            for _ in range(inner):
                r = fn(x)
            _sync(r)
            best[name] = min(best[name], (clock() - t0) / inner)
    return best


def _gelu_kernel(x):
    """The optional fused 'gelu' primitive (one pass) that nn.functional.gelu's forward can use."""
    return _make(x._be.gelu(x._data), x.dtype, x._be)


def _gelu_cdf_kernel(x):
    """The optional 'gelu_cdf' kernel: GELU's forward keeping Phi(x) (F.gelu's forward when a graph is recorded)."""
    return _make(x._be.gelu_cdf(x._data)[0], x.dtype, x._be)


def _gelu_backward_kernel(x):
    """The optional 'gelu_backward' kernel without Phi(x) (x as the incoming gradient too)."""
    return _make(x._be.gelu_backward(x._data, x._data), x.dtype, x._be)


def _gelu_backward_cdf_kernel(x, cdf: dict = {}):  # noqa: B006  (a cache of Phi(x) per input array)
    """'gelu_backward' from the Phi(x) that gelu_cdf kept (the backward of a training step)."""
    key = id(x._data)
    if key not in cdf:
        cdf[key] = x._be.gelu_cdf(x._data)[1]
    return _make(x._be.gelu_backward(x._data, x._data, cdf[key]), x.dtype, x._be)


OPS = {
    "tanh": torch.tanh, "erf": torch.erf, "gelu": F.gelu, "gelu kernel": _gelu_kernel, "erfinv": torch.erfinv,
    "digamma": torch.digamma,
    "lgamma": torch.lgamma, "erfc": torch.erfc, "special.i0e": torch.special.i0e, "special.ndtri": torch.special.ndtri,
}


GELU = {"gelu tanh-approx": lambda x: F.gelu(x, approximate="tanh"), "gelu_cdf kernel": _gelu_cdf_kernel,
        "gelu_backward(Phi) kernel": _gelu_backward_cdf_kernel, "gelu_backward kernel": _gelu_backward_kernel}
NEEDS = {"gelu_cdf kernel": "gelu_cdf", "gelu_backward(Phi) kernel": "gelu_cdf",
         "gelu_backward kernel": "gelu_backward", "gelu kernel": "gelu"}
WIDE = ("tanh", "erf", "erfc", "gelu", "gelu kernel", "gelu tanh-approx", "gelu_cdf kernel",
        "gelu_backward(Phi) kernel", "gelu_backward kernel")  # timed again on N(0, 2^2) values (scipy: slow at |x| > 1)


def run(n: int = 1_000_000, dtype: str = "float32", reps: int = 7, inner: int = 5, clock=time.perf_counter) -> dict:
    """{device: {op: seconds per call}} on ``n`` values in (0, 1) (in every op's domain), and the ``WIDE`` ops
    (as "<op> N(0,4)") on normal values of standard deviation 2 (GELU's inputs in a network)."""
    rng = np.random.default_rng(0)
    x_np = rng.uniform(0.01, 0.99, n).astype(dtype)
    w_np = (rng.standard_normal(n) * 2).astype(dtype)
    out = {}
    for dev in available_devices():
        x, w = torch.tensor(x_np, device=dev), torch.tensor(w_np, device=dev)
        ops = {**OPS, **GELU}
        ops = {k: f for k, f in ops.items() if k not in NEEDS or x._be.has(NEEDS[k])}
        cases = {name: (fn, x) for name, fn in ops.items()}
        cases.update({f"{name} N(0,4)": (ops[name], w) for name in WIDE if name in ops})
        out[dev] = _time_all(cases, reps, inner, clock)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--dtype", default="float32")
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--clock", choices=("wall", "process"), default="wall")
    a = p.parse_args()
    res = run(a.n, a.dtype, a.reps, clock=time.process_time if a.clock == "process" else time.perf_counter)
    print(f"{a.n} {a.dtype} values, best of {a.reps} ({a.clock} time); ms per call and ratio to tanh on the same "
          "device")
    print("| op | " + " | ".join(f"{d} ms | {d} / tanh" for d in res) + " |")
    print("|---|" + "---|---|" * len(res))
    for op in dict.fromkeys(k for r in res.values() for k in r):
        base = "tanh N(0,4)" if op.endswith("N(0,4)") else "tanh"
        print(f"| {op} | " + " | ".join(f"{r[op] * 1e3:.2f} | {r[op] / r[base]:.2f}" if op in r else "- | -"
                                        for r in res.values()) + " |")


if __name__ == "__main__":
    main()
