"""sort / argsort / topk of 1M float32 values: coretorch on every available device against numpy in the same run.

    python benchmarks/sorting.py [--n 1000000] [--k 10] [--repeat 7]

Prints the best of ``--repeat`` runs in ms (every candidate runs once per round, in turn) and the ratio
coretorch / numpy (lower is better).  numpy's baselines: ``np.sort`` (values only) and ``np.argsort`` + a gather
(values and indices, what ``torch.sort`` returns) for sort, ``np.argsort`` for argsort, ``np.argpartition`` + a
sort of the k selected for topk.  A device result is read back to the host (its time included), so asynchronous
devices are timed to completion.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import coretorch as torch
from coretorch.testing import available_devices


def best(fns: dict, repeat: int) -> dict:
    """{name: best time in ms}: the callables run in turn, ``repeat`` rounds (interleaved, so a load change on a
    shared machine hits every candidate alike and the same-run ratios hold)."""
    for fn in fns.values():
        fn()  # warm-up (kernel builds, caches)
    t: dict = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            t[name].append(time.perf_counter() - t0)
    return {name: min(v) * 1e3 for name, v in t.items()}


def np_topk(a, k):
    part = np.argpartition(a, a.size - k)[a.size - k:]
    order = np.argsort(-a[part])
    return a[part][order], part[order]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    a = rng.random(args.n, dtype=np.float32)
    fns = {
        "sort (np.sort, values only)": lambda: np.sort(a),
        "sort (np.argsort + gather)": lambda: np.take(a, np.argsort(a)),
        "argsort (np.argsort)": lambda: np.argsort(a),
        f"topk k={args.k} (np.argpartition + sort)": lambda: np_topk(a, args.k),
    }
    refs = {"sort": ("sort (np.sort, values only)", "sort (np.argsort + gather)"), "argsort": ("argsort (np.argsort)",),
            f"topk k={args.k}": (f"topk k={args.k} (np.argpartition + sort)",)}

    def run(f):
        def g():
            r = f()
            for t in (r if isinstance(r, tuple) else (r,)):
                t.cpu()
        return g
    devs = available_devices()
    for dev in devs:
        x = torch.tensor(a, device=dev)
        fns[f"{dev} sort"] = run(lambda x=x: torch.sort(x))
        fns[f"{dev} argsort"] = run(lambda x=x: torch.argsort(x))
        fns[f"{dev} topk k={args.k}"] = run(lambda x=x: torch.topk(x, args.k))
    ms = best(fns, args.repeat)
    for name in list(fns)[:4]:
        print(f"numpy  {name:40s} {ms[name]:9.2f} ms")
    for dev in devs:
        for op, rs in refs.items():
            m = ms[f"{dev} {op}"]
            ratios = ", ".join(f"{m / ms[r]:.2f}x {r.split('(')[1][:-1]}" for r in rs)
            print(f"{dev:6s} {op:40s} {m:9.2f} ms   ratio: {ratios}")


if __name__ == "__main__":
    main()
