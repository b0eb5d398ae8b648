"""OpenCL backend benchmarks (ratios against numpy in the same run): matmul GFLOP/s, per-op overhead,
an MLP training step, and start-up time (first process vs. a second one with warm kernel caches).

    .venv/bin/python benchmarks/opencl.py [--quick]
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np

import coretorch as torch


def _best(fn, reps: int = 5, inner: int = 1) -> float:
    fn()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        best = min(best, (time.perf_counter() - t) / inner)
    return best


def _sync(t):
    t._be.to_numpy(t._be.basic_index(t._data, (0,) * t.ndim))  # a one-element read waits for the queue


def _train(model, opt, x, y, steps: int) -> None:
    """``steps`` training steps (zero_grad, cross-entropy, backward, step), then one wait for the queue."""
    import coretorch.nn.functional as F
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    _sync(loss)


def matmul(n: int = 1024) -> dict:
    a = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((n, n)).astype(np.float32)
    ta, tb = torch.tensor(a, device="opencl"), torch.tensor(b, device="opencl")
    flops = 2 * n ** 3

    def run(reps: int = 3):
        for _ in range(reps):
            c = ta @ tb
        _sync(c)    # the queue is asynchronous: several products, one wait (throughput, as CUDA timings do)
    # each side in its own block, best of six: one product plus a one-element read per timing (as before)
    # added the read's latency to every product
    run()
    t_cl = _best(run, 6) / 3
    t_np = _best(lambda: a @ b, 6)
    err = float(np.abs((ta @ tb).cpu().numpy() - a @ b).max())
    from coretorch_opencl.matmul import blocking, nt_blocking
    rm, vw, ls = blocking(ta._be.backend.device(0))
    ri, rj, kv = nt_blocking(ta._be.backend.device(0))
    return {"n": n, "numpy_gflops": flops / t_np / 1e9, "opencl_gflops": flops / t_cl / 1e9,
            "ratio_to_numpy": t_np / t_cl, "max_abs_err": err,
            "blocking": f"{rm}x{vw}, local {ls}; A@B.T {ri}x{rj}x{kv}"}


def overhead(n_ops: int = 2000) -> dict:
    x = torch.ones(16, device="opencl")
    y = torch.ones(16, device="opencl")
    _sync(x + y)

    def run():
        z = x
        for _ in range(n_ops):
            z = z + y
        _sync(z)
    t = _best(run, 3) / n_ops
    xr = torch.ones(16, device="opencl", requires_grad=True)

    def run_rec():
        z = xr
        for _ in range(n_ops):
            z = z + y
        _sync(z)
    tr = _best(run_rec, 3) / n_ops
    xc, yc = torch.ones(16), torch.ones(16)
    tc = _best(lambda: [xc + yc for _ in range(n_ops)], 3) / n_ops
    raw, pyarr = _pyopencl_baselines(x._data, n_ops)
    return {"opencl_add_us": t * 1e6, "opencl_add_recorded_us": tr * 1e6, "cpu_add_us": tc * 1e6,
            "raw_pyopencl_enqueue_us": raw * 1e6, "pyopencl_array_add_us": pyarr * 1e6}


def _pyopencl_baselines(arr, n_ops: int) -> tuple:
    """The same chain of 16-element adds as one hand-written kernel enqueued from Python, and as
    ``pyopencl.array`` additions, each followed by one wait: the floor and the library figure of the same run
    (PoCL runs the queued kernels on the same two cores, so these include its own per-launch work)."""
    import pyopencl as cl
    import pyopencl.array as cla
    q = arr.queue
    prg = cl.Program(arr.context, "__kernel void add(__global float* o, __global const float* a, "
                                  "__global const float* b) { int i = get_global_id(0); o[i] = a[i] + b[i]; }").build()
    k = prg.add
    a = cla.to_device(q, np.ones(16, np.float32))
    b = cla.to_device(q, np.ones(16, np.float32))
    o = cla.empty_like(a)

    def raw():
        for _ in range(n_ops):
            k(q, (16,), None, o.data, a.data, b.data)
        q.finish()

    def lib():
        z = a
        for _ in range(n_ops):
            z = z + b
        q.finish()
    return _best(raw, 3) / n_ops, _best(lib, 3) / n_ops


def mlp_step(batch: int = 128, steps: int = 10) -> dict:
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((batch, 784)).astype(np.float32)
    ys = rng.integers(0, 10, batch)
    out = {}
    for dev in ("cpu", "opencl"):
        torch.manual_seed(0)
        w1 = (torch.randn(784, 256, device=dev) * 0.05).requires_grad_()
        w2 = (torch.randn(256, 128, device=dev) * 0.05).requires_grad_()
        w3 = (torch.randn(128, 10, device=dev) * 0.05).requires_grad_()
        bs = [torch.zeros(k, device=dev, requires_grad=True) for k in (256, 128, 10)]
        x = torch.tensor(xs, device=dev)
        onehot = torch.tensor(np.eye(10, dtype=np.float32)[ys], device=dev)
        params = [w1, w2, w3] + bs

        def step():
            h = (x @ w1 + bs[0]).relu()
            h = (h @ w2 + bs[1]).relu()
            logits = h @ w3 + bs[2]
            m = logits.amax(1, keepdim=True)
            lse = ((logits - m).exp().sum(1, keepdim=True)).log() + m
            loss = -((logits - lse) * onehot).sum() / batch
            loss.backward()
            with torch.no_grad():
                for p in params:
                    p.sub_(p.grad, alpha=0.1)
                    p.grad = None
            return loss

        def run():
            for _ in range(steps):
                loss = step()
            _sync(loss)
        out[f"{dev}_ms"] = _best(run, 5) / steps * 1e3

    # the same network as nn.Sequential / nn.Linear ((out, in) weights: x @ W.T) / F.cross_entropy / optim.SGD
    import coretorch.nn as nn
    from coretorch.optim import SGD
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                          nn.Linear(128, 10)).to("opencl")
    opt = SGD(model.parameters(), lr=0.1)
    xo, yo = torch.tensor(xs, device="opencl"), torch.tensor(ys, device="opencl")

    out["opencl_nn_ms"] = _best(lambda: _train(model, opt, xo, yo, steps), 5) / steps * 1e3

    w1 = rng.standard_normal((784, 256)).astype(np.float32) * 0.05
    w2 = rng.standard_normal((256, 128)).astype(np.float32) * 0.05
    w3 = rng.standard_normal((128, 10)).astype(np.float32) * 0.05

    def np_step():
        h1 = np.maximum(xs @ w1, 0)
        h2 = np.maximum(h1 @ w2, 0)
        lg = h2 @ w3
        p = np.exp(lg - lg.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        g3 = (p - np.eye(10, dtype=np.float32)[ys]) / batch
        gw3 = h2.T @ g3
        g2 = (g3 @ w3.T) * (h2 > 0)
        gw2 = h1.T @ g2
        g1 = (g2 @ w2.T) * (h1 > 0)
        gw1 = xs.T @ g1
        return gw1, gw2, gw3
    out["numpy_ms"] = _best(np_step, 20) * 1e3     # best of 20 (~1 ms each): a loaded machine's outliers drop out
    out["opencl_over_numpy"] = out["opencl_ms"] / out["numpy_ms"]
    out["opencl_nn_over_numpy"] = out["opencl_nn_ms"] / out["numpy_ms"]
    return out


def cnn_step(batch: int = 64, steps: int = 5) -> dict:
    """A LeNet-style step (conv 6@5x5, pool, conv 16@5x5, pool, 120-84-10) on 28x28 inputs with nn + SGD."""
    import coretorch.nn as nn
    from coretorch.optim import SGD
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((batch, 1, 28, 28)).astype(np.float32)
    ys = rng.integers(0, 10, batch)
    out = {}
    for dev in ("cpu", "opencl"):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                              nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10)).to(dev)
        opt = SGD(model.parameters(), lr=0.01, momentum=0.9)
        x, y = torch.tensor(xs, device=dev), torch.tensor(ys, device=dev)

        out[f"{dev}_ms"] = _best(lambda: _train(model, opt, x, y, steps), 3) / steps * 1e3
    out["opencl_over_cpu"] = out["opencl_ms"] / out["cpu_ms"]
    return out


_STARTUP = r"""
import time; t0 = time.perf_counter()
import coretorch as torch
x = torch.randn(64, 32, device="opencl"); w = torch.randn(32, 8, device="opencl", requires_grad=True)
loss = (x @ w).relu().sum(); loss.backward(); w.grad.cpu()
print(time.perf_counter() - t0)
"""


def startup() -> dict:
    """Time to the first training step of a new process: the first with empty kernel caches (pyopencl's and
    PoCL's both live under XDG_CACHE_HOME, here a fresh directory), the second with the caches it left."""
    import tempfile
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, XDG_CACHE_HOME=cache, POCL_CACHE_DIR=os.path.join(cache, "pocl"))
        runs = [float(subprocess.run([sys.executable, "-c", _STARTUP], capture_output=True, text=True, env=env,
                                     check=True).stdout.strip().splitlines()[-1]) for _ in range(2)]
    return {"first_process_s": runs[0], "second_process_s": runs[1]}


def main() -> None:
    quick = "--quick" in sys.argv
    if "opencl" not in [d["type"] for d in torch.devices() if d["available"]]:
        print("OpenCL device not available:", torch._backend.backends().get("opencl") and
              torch._backend.backends()["opencl"].unavailable_reason())
        return
    print("device:", torch.devices()[[d["type"] for d in torch.devices()].index("opencl")]["names"][0])
    print("matmul:", {k: float(f"{v:.4g}") if isinstance(v, float) else v
                      for k, v in matmul(512 if quick else 1024).items()})
    print("per-op overhead:", {k: round(v, 2) for k, v in overhead().items()})
    print("MLP step (784-256-128-10, batch 128):", {k: round(v, 3) for k, v in mlp_step().items()})
    print("LeNet step (batch 64, 28x28):", {k: round(v, 3) for k, v in cnn_step().items()})
    if not quick and not os.environ.get("CORETORCH_BENCH_NO_STARTUP"):
        print("start-up to first training step:", {k: round(v, 3) for k, v in startup().items()})


if __name__ == "__main__":
    main()
