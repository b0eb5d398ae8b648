"""einsum against numpy.einsum(optimize=True) in the same process (the issue's target: within 1.2x on cpu), plus
cdist against the numpy broadcast formula; opencl rows are for information.

    .venv/bin/python benchmarks/products.py [--quick] [--devices cpu,opencl]

Each time is the best of many repetitions, numpy and coretorch interleaved (the machine may be shared: both see the
same load); opencl runs are synchronised by one element read per call.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import coretorch as torch

# (name, equation, shapes): realistic sizes for a CPU framework
CASES = [
    ("batched matmul", "bij,bjk->bik", [(32, 128, 64), (32, 64, 128)]),
    ("attention scores", "bhqd,bhkd->bhqk", [(8, 8, 128, 64), (8, 8, 128, 64)]),
    ("attention output", "bhqk,bhkd->bhqd", [(8, 8, 128, 128), (8, 8, 128, 64)]),
    ("matrix chain", "ij,jk,kl->il", [(256, 512), (512, 64), (64, 512)]),
    ("diagonal", "ii->i", [(1024, 1024)]),
    ("trace", "ii", [(1024, 1024)]),
    ("ellipsis matmul", "...ij,...jk", [(16, 128, 64), (64, 96)]),
    ("bilinear", "bn,anm,bm->ba", [(64, 32), (16, 32, 48), (64, 48)]),
    ("outer", "i,j->ij", [(1024,), (1024,)]),
]
QUICK = [(n, e, [tuple(max(1, s // 4) for s in sh) for sh in shapes]) for n, e, shapes in CASES]


def _pair(f_ref, f_ct, reps: int) -> tuple:
    """Best time of each, the two interleaved (a loaded machine slows both alike)."""
    f_ref()
    f_ct()
    a = b = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        f_ref()
        a = min(a, time.perf_counter() - t)
        t = time.perf_counter()
        f_ct()
        b = min(b, time.perf_counter() - t)
    return b, a


def _sync(t) -> None:
    if t.device.type != "cpu":
        t._be.to_numpy(t._be.basic_index(t._data, (0,) * t.ndim))


def _fmt(s: float) -> str:
    return f"{s * 1e6:.3g} us" if s < 1e-3 else f"{s * 1e3:.3g} ms"


def run(devices, quick: bool = False) -> list:
    rows = []
    rng = np.random.default_rng(0)
    reps = 3 if quick else 25
    for name, eq, shapes in (QUICK if quick else CASES):
        arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        for dev in devices:
            ts = [torch.tensor(a, device=dev) for a in arrays]
            err = float(np.abs(torch.einsum(eq, *ts).cpu().numpy() - np.einsum(eq, *arrays, optimize=True)).max())

            def go():
                _sync(torch.einsum(eq, *ts))
            t, t_np = _pair(lambda: np.einsum(eq, *arrays, optimize=True), go, reps)
            rows.append((f"einsum {name} '{eq}' {' x '.join('x'.join(map(str, s)) for s in shapes)}", dev, t, t_np,
                         err))
    # cdist (p = 2 through the matmul form; p = 1 direct) against numpy's broadcast formula
    n, m, d = (64, 48, 16) if quick else (512, 384, 32)
    a, b = rng.standard_normal((n, d)).astype(np.float32), rng.standard_normal((m, d)).astype(np.float32)
    for p in (2.0, 1.0):
        if p == 2.0:
            def ref():
                return np.sqrt(np.maximum((a * a).sum(1)[:, None] - 2 * a @ b.T + (b * b).sum(1)[None], 0))
        else:
            def ref():
                return np.abs(a[:, None] - b[None]).sum(-1)
        for dev in devices:
            ta, tb = torch.tensor(a, device=dev), torch.tensor(b, device=dev)
            err = float(np.abs(torch.cdist(ta, tb, p=p).cpu().numpy() - ref()).max())

            def go():
                _sync(torch.cdist(ta, tb, p=p))
            t, t_np = _pair(ref, go, reps)
            rows.append((f"cdist p={p:g} {n}x{d} to {m}x{d}", dev, t, t_np, err))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--devices", default=None)
    args = ap.parse_args()
    from coretorch.testing import available_devices
    devices = args.devices.split(",") if args.devices else available_devices()
    rows = run(devices, args.quick)
    print("| benchmark | backend | coretorch | numpy.einsum(optimize=True) / numpy (same run) | ratio | max abs err |")
    print("|---|---|---|---|---|---|")
    for name, dev, t, t_np, err in rows:
        print(f"| {name} | {dev} | {_fmt(t)} | {_fmt(t_np)} | {t / t_np:.2f}x | {err:.2g} |")


if __name__ == "__main__":
    main()
