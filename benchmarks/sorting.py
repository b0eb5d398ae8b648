"""sort / argsort / topk of 1M float32 values: coretorch on every available device against numpy in the same run.

    python benchmarks/sorting.py [--n 1000000] [--k 10] [--repeat 7]

Prints the best of ``--repeat`` runs in ms and the ratio coretorch / numpy (lower is better).  numpy's baselines:
``np.sort`` (values only) and ``np.argsort`` + a gather (values and indices, what ``torch.sort`` returns) for sort,
``np.argsort`` for argsort, ``np.argpartition`` + a sort of the k selected for topk.  A device result is read back
to the host (its time included), so asynchronous devices are timed to completion.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import coretorch as torch
from coretorch.testing import available_devices


def best(fn, repeat: int) -> float:
    fn()  # warm-up (kernel builds, caches)
    t = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return min(t) * 1e3


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
    base = {
        "sort (np.sort, values only)": best(lambda: np.sort(a), args.repeat),
        "sort (np.argsort + gather)": best(lambda: np.take(a, np.argsort(a)), args.repeat),
        "argsort (np.argsort)": best(lambda: np.argsort(a), args.repeat),
        f"topk k={args.k} (np.argpartition + sort)": best(lambda: np_topk(a, args.k), args.repeat),
    }
    for name, ms in base.items():
        print(f"numpy  {name:40s} {ms:9.2f} ms")
    for dev in available_devices():
        x = torch.tensor(a, device=dev)

        def run(f):
            def g():
                r = f()
                for t in (r if isinstance(r, tuple) else (r,)):
                    t.cpu()
            return g
        figs = {
            "sort": (best(run(lambda: torch.sort(x)), args.repeat), ("sort (np.sort, values only)",
                                                                     "sort (np.argsort + gather)")),
            "argsort": (best(run(lambda: torch.argsort(x)), args.repeat), ("argsort (np.argsort)",)),
            f"topk k={args.k}": (best(run(lambda: torch.topk(x, args.k)), args.repeat),
                                 (f"topk k={args.k} (np.argpartition + sort)",)),
        }
        for name, (ms, refs) in figs.items():
            ratios = ", ".join(f"{ms / base[r]:.2f}x {r.split('(')[1][:-1]}" for r in refs)
            print(f"{dev:6s} {name:40s} {ms:9.2f} ms   ratio: {ratios}")


if __name__ == "__main__":
    main()
