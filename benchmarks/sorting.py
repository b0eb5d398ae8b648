"""sort / argsort / topk of 1M float32 values: coretorch on every available device against numpy in the same run.

    python benchmarks/sorting.py [--n 1000000] [--k 10] [--repeat 7] [--cases] [--small]

Prints the best of ``--repeat`` runs in ms (every candidate runs once per round, in turn) and the ratio
coretorch / numpy (lower is better).  ``--cases`` adds a cpu table of input kinds (random, sorted, reversed, many
ties, 10% NaN; ascending and descending; 1M and 10k elements; 1000 x 1000 along either dim) against ``np.sort``
of the same values; ``--small`` the per-call CPU time of small ``topk`` / ``kthvalue`` / ``sort`` (4 x 65, in
us).  numpy's baselines: ``np.sort`` (values only) and ``np.argsort`` + a gather (values and indices, what
``torch.sort`` returns) for sort, ``np.argsort`` for argsort, ``np.argpartition`` + a sort of the k selected for
topk.  A device result is read back to the host (its time included), so asynchronous
devices are timed to completion.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import coretorch as torch
from coretorch.testing import available_devices


def best(fns: dict, repeat: int, clock=time.perf_counter) -> dict:
    """{name: best time in ms}: the callables run in turn, ``repeat`` rounds (interleaved, so a load change on a
    shared machine hits every candidate alike and the same-run ratios hold)."""
    for fn in fns.values():
        fn()  # warm-up (kernel builds, caches)
    t: dict = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = clock()
            fn()
            t[name].append(clock() - t0)
    return {name: min(v) * 1e3 for name, v in t.items()}


def np_topk(a, k):
    part = np.argpartition(a, a.size - k)[a.size - k:]
    order = np.argsort(-a[part])
    return a[part][order], part[order]


def inputs(rng, n: int) -> dict:
    """The kinds of input of the ``--cases`` table (float32)."""
    r = rng.random(n, dtype=np.float32)
    s = np.sort(r)
    nan = r.copy()
    nan[rng.random(n) < 0.1] = np.nan
    return {"random": r, "sorted": s, "reversed": s[::-1].copy(), "ties (100 values)":
            rng.integers(0, 100, n).astype(np.float32), "10% NaN": nan, "randn": rng.standard_normal(n, np.float32)}


def cases(rng, repeat: int) -> None:
    """coretorch's cpu sort (values and indices) against np.sort (values only) on each kind of input (the thread's
    CPU time: both are single-threaded host code, and a loaded machine's wall clock mostly measures the scheduler)."""
    rows = []
    for n in (1_000_000, 10_000):
        for kind, a in inputs(rng, n).items():
            x = torch.tensor(a)
            ms = best({"np": lambda a=a: np.sort(a), "asc": lambda x=x: torch.sort(x),
                       "desc": lambda x=x: torch.sort(x, descending=True)}, repeat, time.thread_time)
            rows.append((f"{n:>9,} {kind}", ms))
    a = rng.random((1000, 1000), dtype=np.float32)
    x = torch.tensor(a)
    for d in (1, 0):
        ms = best({"np": lambda d=d: np.sort(a, axis=d), "asc": lambda d=d: torch.sort(x, d),
                   "desc": lambda d=d: torch.sort(x, d, descending=True)}, repeat, time.thread_time)
        rows.append((f"1000x1000 dim={d}", ms))
    print(f"{'cpu sort (values + indices)':34s} {'np.sort':>9s} {'ascending':>16s} {'descending':>16s}")
    for name, ms in rows:
        print(f"{name:34s} {ms['np']:7.2f} ms {ms['asc']:7.2f} ({ms['asc'] / ms['np']:4.2f}x) "
              f"{ms['desc']:7.2f} ({ms['desc'] / ms['np']:4.2f}x)")


def small(repeat: int) -> None:
    """Per-call time of small selections on cpu (the Python overhead a sampling loop pays per token)."""
    a = np.random.default_rng(1).standard_normal((4, 65)).astype(np.float32)
    x = torch.tensor(a)
    fns = {"np.argpartition (4x65, k=10)": lambda: np.argpartition(a, 55, axis=-1),
           "topk(x, 10)": lambda: torch.topk(x, 10), "kthvalue(x, 10)": lambda: torch.kthvalue(x, 10),
           "sort(x)": lambda: torch.sort(x)}
    calls = 200

    def run(f):
        for _ in range(calls):
            f()
    # the thread's CPU time: on a loaded machine a wall-clock run of 200 calls mostly measures the scheduler
    ms = best({k: (lambda f=f: run(f)) for k, f in fns.items()}, repeat, time.thread_time)
    for name, m in ms.items():
        print(f"cpu {name:34s} {m / calls * 1e3:7.1f} us per call")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--cases", action="store_true", help="the cpu table of input kinds, sizes and dims")
    ap.add_argument("--small", action="store_true", help="per-call time of small topk / kthvalue / sort")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    if args.small:
        small(args.repeat)
    if args.cases:
        cases(rng, args.repeat)
    if args.small or args.cases:
        return
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
