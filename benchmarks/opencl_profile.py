"""Where an opencl training step's time goes: per-kernel device time from OpenCL event profiling, grouped by
kernel and (for products) by shape, against the step's wall and process CPU time.

    python benchmarks/opencl_profile.py                # the GPT step of benchmarks/transformer.py
    python benchmarks/opencl_profile.py --model mlp    # the MLP step of benchmarks/compile.py (784-256-128-10, SGD)
    POCL_CPU_MAX_CU_COUNT=1 POCL_MAX_PTHREAD_COUNT=1 python benchmarks/opencl_profile.py   # PoCL on one core

Profiling makes the queue record every command's start and end (a little slower); "host" is the step's wall time
less the kernels' device time (with one PoCL compute unit the two do not overlap much: Python queues the next
kernels while PoCL runs the last).  Products are labelled ``mm_* n x k @ k x m [*batch] layout``.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import os
import statistics
import sys
import time

import pyopencl as cl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

_events: list = []
_tag: list = [None]
_cpu_mode: list = [False]


def _patch() -> None:
    """Profiling queues, and every kernel call recorded with its event and the product shape it serves."""
    queue = cl.CommandQueue

    def profiling_queue(ctx, device=None, properties=None):
        return queue(ctx, device, properties=cl.command_queue_properties.PROFILING_ENABLE)
    cl.CommandQueue = profiling_queue     # (the device's queue is made at its first use)
    from coretorch_opencl import device as cdev
    orig_kernel = cdev.Device.kernel

    class Recorded:
        """A kernel whose every call records its event (pyopencl's Kernel.__call__ is a C++ method)."""

        def __init__(self, k):
            self.k, self.name = k, k.function_name

        def __call__(self, *a, **kw):
            if _cpu_mode[0]:         # process CPU time of the kernel alone (PoCL's threads included)
                a[0].finish()
                c0 = time.process_time()
                ev = self.k(*a, **kw)
                a[0].finish()
                _events.append((self.name, _tag[0], (time.process_time() - c0) * 1e3))
                return ev
            ev = self.k(*a, **kw)
            _events.append((self.name, _tag[0], ev))
            return ev

        def __getattr__(self, n):
            return getattr(self.k, n)

    def kernel(self, key, kname, source_fn, options=""):
        k = orig_kernel(self, key, kname, source_fn, options)
        return k if isinstance(k, Recorded) else Recorded(k)
    cdev.Device.kernel = kernel


def _tag_products() -> None:
    from coretorch_opencl import matmul as mm
    from coretorch_opencl.layout import _desc
    orig = mm.matmul

    def matmul(kern, a, b, *bias, **kw):
        if _tag[0] is not None:       # an inner call (split-k): keep the outer label
            return orig(kern, a, b, *bias, **kw)
        _, _, _, ast = _desc(a)
        _, _, _, bst = _desc(b)
        lay = ("T" if ast[-1] != 1 else "N") + ("T" if bst[-1] != 1 else "N")
        batch = 1
        for s in a.shape[:-2]:
            batch *= s
        _tag[0] = f"{a.shape[-2]}x{a.shape[-1]} @ {b.shape[-2]}x{b.shape[-1]} *{batch} {lay}"
        try:
            return orig(kern, a, b, *bias, **kw)
        finally:
            _tag[0] = None
    mm.matmul = matmul


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--model", choices=("gpt", "mlp"), default="gpt")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--cpu", action="store_true",
                    help="per kernel: process CPU time with the queue drained around it (robust to other load; "
                         "includes the enqueue's Python cost) instead of event (wall) time")
    args = ap.parse_args(argv)
    import coretorch
    _patch()
    _cpu_mode[0] = args.cpu
    _tag_products()
    if args.model == "gpt":
        import transformer
        step = transformer._gpt(coretorch, "opencl")
    else:
        import compile as compile_bench
        mlp_step, mlp_args = compile_bench._mlp(coretorch, "opencl")

        def step():
            mlp_step(*mlp_args)
            coretorch.accelerator.synchronize("opencl")
    from coretorch_opencl.device import STATS
    q = None
    for _ in range(2):
        step()
    per: dict = collections.defaultdict(float)
    count: dict = collections.Counter()
    walls, cpus, devs, launches = [], [], [], []
    for _ in range(args.steps):
        _events.clear()
        l0 = STATS["launches"]
        t0, c0 = time.perf_counter(), time.process_time()
        step()
        walls.append((time.perf_counter() - t0) * 1e3)
        cpus.append((time.process_time() - c0) * 1e3)
        launches.append(STATS["launches"] - l0)
        tot = 0.0
        for name, tag, ev in _events:
            q = ev
            with contextlib.suppress(cl.Error):
                d = ev if args.cpu else (ev.profile.end - ev.profile.start) * 1e-6
                key = f"{name} {tag}" if tag else name
                per[key] += d / args.steps
                count[key] += 1
                tot += d
        devs.append(tot)
    del q
    print(f"step: wall {statistics.median(walls):.1f} ms, process CPU {statistics.median(cpus):.1f} ms, "
          f"kernel device time {statistics.median(devs):.1f} ms, launches {statistics.median(launches):.0f} "
          f"(medians of {args.steps} steps)")
    total = sum(per.values())
    print(f"{'kernel / product':<60} {'ms/step':>8} {'share':>6} {'calls':>6}")
    for key, ms in sorted(per.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"{key:<60} {ms:8.2f} {ms / total:6.1%} {count[key] / args.steps:6.0f}")
    groups: dict = collections.defaultdict(float)
    for key, ms in per.items():
        groups[key.split()[0]] += ms
    print("\nby kernel:")
    for key, ms in sorted(groups.items(), key=lambda kv: -kv[1]):
        print(f"  {key:<40} {ms:8.2f} {ms / total:6.1%}")


if __name__ == "__main__":
    main()
