"""coretorch benchmarks: ratios against a baseline measured in the same run (raw numpy for the CPU backend).

    python benchmarks/run.py            # or: make bench
    python benchmarks/run.py --json     # machine-readable

1. per-op overhead: `c = c + b` on 1-element tensors with requires_grad=True (recorded for autograd), and a
   chain `c = c * b + a` followed by backward(), in microseconds per op, next to numpy's `c = c + b`.
2. an MLP training step (784-256-128-10, ReLU, cross-entropy, SGD, batch 128, float32) written with tensor
   ops, and again with nn.Sequential/nn.Linear/F.cross_entropy/optim.SGD, next to a hand-written numpy
   forward/backward/update of the same network; and the tensor-ops step's kernel calls replayed alone, which
   splits the step's time into kernel work and framework overhead.
If PyTorch happens to be installed its figures are added; it is never required.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

import coretorch as ct


def _best_of(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        times.append(fn())
    return min(times)


def _chain_add(a, b, n: int) -> float:
    """µs per `c = c + b` over a chain of n adds (works for tensors and numpy arrays alike)."""
    def run():
        c = a
        t = time.perf_counter()
        for _ in range(n):
            c = c + b
        return (time.perf_counter() - t) / n * 1e6
    return _best_of(run)


def overhead_add(n: int = 20000) -> float:
    return _chain_add(ct.ones(1, requires_grad=True), ct.ones(1, requires_grad=True), n)


def overhead_numpy_add(n: int = 20000) -> float:
    return _chain_add(np.ones(1, np.float32), np.ones(1, np.float32), n)


def overhead_chain_backward(n: int = 2000, lib=ct) -> float:
    """µs per op for forward + backward of c = c * b + a (2 ops per iteration); ``lib`` is coretorch or torch."""
    a = lib.ones(1, requires_grad=True)
    b = lib.full((1,), 0.999, requires_grad=True)

    def run():
        c = a
        t = time.perf_counter()
        for _ in range(n):
            c = c * b + a
        c.sum().backward()
        return (time.perf_counter() - t) / (2 * n) * 1e6
    return _best_of(run)


# ---- MLP step ----
SIZES = (784, 256, 128, 10)
BATCH, LR = 128, 0.01


def _init_params(seed: int = 0):
    rng = np.random.default_rng(seed)
    ps = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        bound = 1 / np.sqrt(fan_in)
        ps.append(rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32))
        ps.append(rng.uniform(-bound, bound, (fan_out,)).astype(np.float32))
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], BATCH)
    return ps, x, y


def numpy_mlp_step(ps, x, y):
    w1, b1, w2, b2, w3, b3 = ps
    z1 = x @ w1 + b1
    h1 = np.maximum(z1, 0)
    z2 = h1 @ w2 + b2
    h2 = np.maximum(z2, 0)
    logits = h2 @ w3 + b3
    m = logits.max(1, keepdims=True)
    e = np.exp(logits - m)
    s = e.sum(1, keepdims=True)
    logp = logits - m - np.log(s)
    loss = -logp[np.arange(len(y)), y].mean()
    g = e / s
    g[np.arange(len(y)), y] -= 1
    g /= len(y)
    gw3 = h2.T @ g
    gb3 = g.sum(0)
    g2 = (g @ w3.T) * (z2 > 0)
    gw2 = h1.T @ g2
    gb2 = g2.sum(0)
    g1 = (g2 @ w2.T) * (z1 > 0)
    gw1 = x.T @ g1
    gb1 = g1.sum(0)
    for p, gp in zip(ps, (gw1, gb1, gw2, gb2, gw3, gb3)):
        p -= LR * gp
    return float(loss)


def coretorch_mlp_step(ps, x, y):
    w1, b1, w2, b2, w3, b3 = ps
    h = ct.addmm(b1, x, w1).relu()  # what nn.Linear computes: one fused node per layer
    h = ct.addmm(b2, h, w2).relu()
    logits = ct.addmm(b3, h, w3)
    logp = logits - logits.logsumexp(1, keepdim=True)
    loss = -logp.gather(1, y.unsqueeze(1)).mean()
    loss.backward()
    with ct.no_grad():
        for p in ps:
            p.sub_(p.grad, alpha=LR)
            p.grad = None
    return loss.item()


def build_nn_mlp(ps_np):
    """The same network as nn.Sequential of nn.Linear + ReLU, trained with F.cross_entropy and optim.SGD."""
    from coretorch import nn
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    with ct.no_grad():
        for lin, (w, b) in zip([m for m in model if isinstance(m, nn.Linear)], zip(ps_np[::2], ps_np[1::2])):
            lin.weight.copy_(ct.from_numpy(w.T.copy()))  # nn.Linear stores (out, in)
            lin.bias.copy_(ct.from_numpy(b))
    return model, ct.optim.SGD(model.parameters(), lr=LR)


def nn_mlp_step(model, opt, x, y):
    opt.zero_grad()
    loss = ct.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()


def build_torch_mlp(ps_np):
    """PyTorch's nn step on the same network and data, when PyTorch happens to be installed (else None)."""
    try:
        import torch
    except ImportError:
        return None
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128),
                                torch.nn.ReLU(), torch.nn.Linear(128, 10))
    with torch.no_grad():
        for lin, (w, b) in zip([m for m in model if isinstance(m, torch.nn.Linear)], zip(ps_np[::2], ps_np[1::2])):
            lin.weight.copy_(torch.from_numpy(w.T.copy()))
            lin.bias.copy_(torch.from_numpy(b))
    return model, torch.optim.SGD(model.parameters(), lr=LR), torch.nn.functional.cross_entropy, torch.from_numpy


def torch_mlp_step(built, x, y):
    model, opt, cross_entropy, _ = built
    opt.zero_grad()
    loss = cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()


def mlp(steps: int = 300) -> dict:
    """Median ms per step of: the hand-written numpy step, coretorch with tensor ops, coretorch with nn, the
    minimal autograd of minimal_autograd.py (the floor for any eager Python framework), and PyTorch's nn step
    when PyTorch is installed; all in the same rotating blocks."""
    from minimal_autograd import MinimalMLP
    ps_np, x_np, y_np = _init_params()
    ps_ct = [ct.from_numpy(p.copy()).requires_grad_() for p in ps_np]
    x_ct, y_ct = ct.from_numpy(x_np), ct.from_numpy(y_np)
    model, opt = build_nn_mlp(ps_np)
    floor = MinimalMLP(ps_np, LR)
    pt = build_torch_mlp(ps_np)
    ps_np = [p.copy() for p in ps_np]
    fns = {"numpy": lambda: numpy_mlp_step(ps_np, x_np, y_np), "ops": lambda: coretorch_mlp_step(ps_ct, x_ct, y_ct),
           "nn": lambda: nn_mlp_step(model, opt, x_ct, y_ct), "floor": lambda: floor.step(x_np, y_np)}
    if pt is not None:
        x_pt, y_pt = pt[3](x_np), pt[3](y_np)
        fns["torch"] = lambda: torch_mlp_step(pt, x_pt, y_pt)
    # same math: the losses of the first steps agree
    losses = {k: [fn() for _ in range(3)] for k, fn in fns.items()}
    for k, v in losses.items():
        assert np.allclose(losses["numpy"], v, rtol=1e-4), (k, losses)
    return dict(zip(fns, _blocks(list(fns.values()), steps)))


def _blocks(fns, steps: int, block: int = 12, warm: int = 2) -> tuple:
    """Median ms per call of each of ``fns``, run in rotating blocks of ``block`` calls (the first ``warm`` of each
    block not counted): a burst of load on this shared machine hits every function alike, and each is measured in
    the steady state of a training loop that runs only that step.  Interleaving call by call instead changes the
    allocator's state at every step: glibc then returns and re-faults the large buffers (measured: numpy's step
    took 260 page faults per step interleaved, none on its own), which slowed the baseline and flattered the
    ratios."""
    ts = [[] for _ in fns]
    pc = time.perf_counter
    for _ in range(max(1, steps // (block - warm))):
        for fn, out in zip(fns, ts):
            for i in range(block):
                t = pc()
                fn()
                t = pc() - t
                if i >= warm:
                    out.append(t)
    return tuple(statistics.median(t) * 1e3 for t in ts)


def kernel_replay(steps: int = 300):
    """The tensor-ops step's own kernel calls, recorded once and replayed with no framework around them, next to
    the hand-written step: (numpy ms, replay ms).  The difference between the step and its replay is what the
    framework costs (checks, graph, engine); the difference between the replay and numpy is kernel work."""
    from coretorch import _backend
    ps_np, x_np, y_np = _init_params()
    ps_ct = [ct.from_numpy(p.copy()).requires_grad_() for p in ps_np]
    x_ct, y_ct = ct.from_numpy(x_np), ct.from_numpy(y_np)
    table = _backend.get_table(ct.device("cpu"))
    calls, kernels = [], {n: getattr(table, n) for n in table.names}

    def logged(fn):
        def k(*a):
            calls.append((fn, a))
            return fn(*a)
        return k
    coretorch_mlp_step(ps_ct, x_ct, y_ct)
    for n, fn in kernels.items():
        setattr(table, n, logged(fn))
    try:
        coretorch_mlp_step(ps_ct, x_ct, y_ct)
    finally:
        for n, fn in kernels.items():
            setattr(table, n, fn)

    def replay():
        for fn, a in calls:
            fn(*a)
    return _blocks([lambda: numpy_mlp_step(ps_np, x_np, y_np), replay], steps)


def torch_figures():
    """PyTorch's per-op figures in the same run, when it happens to be installed (else None)."""
    try:
        import torch
    except ImportError:
        return None
    return {"torch_version": torch.__version__.split("+")[0],
            "torch_add_us": _chain_add(torch.ones(1, requires_grad=True), torch.ones(1, requires_grad=True), 20000),
            "torch_fwd_bwd_per_op_us": overhead_chain_backward(lib=torch)}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    res = {
        "recorded_add_us": overhead_add(),
        "numpy_add_us": overhead_numpy_add(),
        "fwd_bwd_per_op_us": overhead_chain_backward(),
    }
    m = mlp()
    res["mlp_numpy_ms"], res["mlp_coretorch_ms"], res["mlp_nn_ms"], res["mlp_floor_ms"] = \
        m["numpy"], m["ops"], m["nn"], m["floor"]
    if "torch" in m:
        res["mlp_torch_ms"] = m["torch"]
    res["replay_numpy_ms"], res["replay_kernels_ms"] = kernel_replay()
    res["mlp_ratio"] = res["mlp_coretorch_ms"] / res["mlp_numpy_ms"]
    res["mlp_nn_ratio"] = res["mlp_nn_ms"] / res["mlp_numpy_ms"]
    tf = torch_figures()
    if tf:
        res.update(tf)
    if args.json:
        print(json.dumps(res, indent=2))
        return
    print(f"per-op overhead, recorded add (1 element)  {res['recorded_add_us']:6.2f} us   "
          f"(numpy add {res['numpy_add_us']:.2f} us; target < 5 us)")
    print(f"per-op forward+backward, c = c * b + a      {res['fwd_bwd_per_op_us']:6.2f} us   (target < 15 us)")
    print(f"MLP step 784-256-128-10, batch 128          {res['mlp_coretorch_ms']:6.3f} ms   "
          f"numpy by hand {res['mlp_numpy_ms']:.3f} ms   ratio {res['mlp_ratio']:.2f}x (target <= 1.15x)")
    print(f"  same step with nn.Sequential/F.cross_entropy/optim.SGD  {res['mlp_nn_ms']:6.3f} ms   "
          f"ratio {res['mlp_nn_ratio']:.2f}x")
    print(f"  the nn step on a minimal autograd (minimal_autograd.py: the floor for eager Python)  "
          f"{res['mlp_floor_ms']:6.3f} ms   ratio {res['mlp_floor_ms'] / res['mlp_numpy_ms']:.2f}x")
    if "mlp_torch_ms" in res:
        print(f"  PyTorch {tf['torch_version']}, the same nn step  {res['mlp_torch_ms']:6.3f} ms   "
              f"ratio {res['mlp_torch_ms'] / res['mlp_numpy_ms']:.2f}x")
    print(f"  the tensor-ops step's kernels replayed without the framework  {res['replay_kernels_ms']:6.3f} ms   "
          f"ratio {res['replay_kernels_ms'] / res['replay_numpy_ms']:.2f}x (the rest of the step is framework)")
    if tf:
        print(f"PyTorch {tf['torch_version']}: recorded add {tf['torch_add_us']:.2f} us, forward+backward per op "
              f"{tf['torch_fwd_bwd_per_op_us']:.2f} us")


if __name__ == "__main__":
    main()
