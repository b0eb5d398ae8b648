"""Every coretorch benchmark in one run, on every available backend, against raw numpy measured in the same run
(and PyTorch when it happens to be importable; it is never required).  Writes a Markdown table and a PNG bar
chart of the time ratios coretorch / numpy (lower is better, 1.0 = as fast as numpy by hand).

    python benchmarks/all.py                       # or: make bench -> benchmarks/results.md, results.png
    python benchmarks/all.py --quick --out-dir /tmp/b --devices cpu   # seconds: a smoke run (what the test does)

What runs:
- benchmarks/run.py: per-op overhead (a recorded 1-element add; forward+backward per op) and the MLP training
  step 784-256-128-10 (tensor ops, and nn.Sequential + F.cross_entropy + optim.SGD), against numpy by hand;
- benchmarks/lenet.py: the LeNet CNN training step, against a numpy im2col forward/backward/update;
- a 1024x1024 float32 matmul;
- on every other available device (e.g. opencl): the add overhead, matmul, the nn MLP step and the CNN step
  on that device, against the same numpy baselines; with OpenCL, benchmarks/opencl.py's own figures too
  (its matmul, MLP step and, outside --quick, the process start-up time).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import coretorch as ct  # noqa: E402
import lenet  # noqa: E402
import run as run_bench  # noqa: E402

try:  # written alongside the OpenCL backend; optional here
    import opencl as opencl_bench  # noqa: E402
except Exception:  # pragma: no cover - absent or broken: its rows are skipped
    opencl_bench = None


def _torch():
    try:
        import torch
        return torch
    except Exception:
        return None


def _sync(t) -> None:
    """Wait for a device's queue with a one-element read."""
    t.reshape(-1)[0].item()


def _median_ms(fn, n: int, warm: int = 1) -> float:
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)) * 1e3


def _row(name, backend, ours, base, unit="ms", torch_value=None, note=""):
    return {"benchmark": name, "backend": backend, "unit": unit, "coretorch": ours, "numpy": base,
            "ratio": (ours / base) if (ours is not None and base) else None, "pytorch": torch_value, "note": note}


# ---- generic benchmarks, any device --------------------------------------------------------------------
def matmul_rows(device: str, n: int, reps: int) -> list:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
    ta, tb = ct.tensor(a, device=device), ct.tensor(b, device=device)

    def ours():
        _sync(ta @ tb)
    t_ct = _median_ms(ours, reps)
    t_np = _median_ms(lambda: a @ b, reps)
    torch = _torch()
    t_pt = None
    if torch is not None and device == "cpu":
        pa, pb = torch.from_numpy(a), torch.from_numpy(b)
        t_pt = _median_ms(lambda: pa @ pb, reps)
    return [_row(f"matmul {n}x{n} float32", device, t_ct, t_np, torch_value=t_pt)]


def add_overhead_us(device: str, n: int) -> float:
    a = ct.ones(1, device=device, requires_grad=True)
    b = ct.ones(1, device=device, requires_grad=True)

    def run():
        c = a
        for _ in range(n):
            c = c + b
        _sync(c)
    return _median_ms(run, 3) * 1e3 / n


def nn_mlp_ms(device: str, steps: int) -> float:
    ps_np, x_np, y_np = run_bench._init_params()
    model, opt = run_bench.build_nn_mlp(ps_np)
    model.to(device)
    opt = ct.optim.SGD(model.parameters(), lr=run_bench.LR)
    x, y = ct.tensor(x_np, device=device), ct.tensor(y_np, device=device)

    def step():
        opt.zero_grad()
        loss = ct.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        _sync(loss)
    return _median_ms(step, steps)


def numpy_mlp_ms(steps: int) -> float:
    ps, x, y = run_bench._init_params()
    return _median_ms(lambda: run_bench.numpy_mlp_step(ps, x, y), steps)


def cnn_data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((64, 1, 28, 28)).astype(np.float32), rng.integers(0, 10, 64)


def cnn_ms(device: str, n: int) -> float:
    """lenet.py's network and step (conv 1->6->16, pools, 256-120-84-10, SGD momentum) on ``device``."""
    nn, F = ct.nn, ct.nn.functional
    x, y = cnn_data()
    ct.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                        nn.Linear(84, 10)).to(device)
    opt = ct.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    xt, yt = ct.tensor(x, device=device), ct.tensor(y, device=device)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(net(xt), yt)
        loss.backward()
        opt.step()
        _sync(loss)
    return _median_ms(step, n, warm=2)


# ---- the benchmark files -------------------------------------------------------------------------------
def cpu_rows(quick: bool) -> list:
    n_add = 2000 if quick else 20000
    add = run_bench.overhead_add(n_add)
    np_add = run_bench.overhead_numpy_add(n_add)
    fwd_bwd = run_bench.overhead_chain_backward(200 if quick else 2000)
    tf = run_bench.torch_figures() if _torch() is not None else None
    rows = [_row("recorded add, 1 element (run.py)", "cpu", add, np_add, "us",
                 torch_value=tf and tf.get("torch_add_us")),
            _row("forward+backward per op, c = c * b + a (run.py)", "cpu", fwd_bwd, None, "us",
                 torch_value=tf and tf.get("torch_fwd_bwd_per_op_us"),
                 note="no numpy equivalent (numpy has no autograd)")]
    m = run_bench.mlp(steps=2 if quick else 200)
    rows += [_row("MLP step 784-256-128-10, batch 128, tensor ops (run.py)", "cpu", m["ops"], m["numpy"]),
             _row("MLP step, nn.Sequential + F.cross_entropy + optim.SGD (run.py)", "cpu", m["nn"], m["numpy"],
                  torch_value=m.get("torch")),
             _row("MLP nn step on a minimal autograd, the floor for eager Python (minimal_autograd.py)", "cpu",
                  m["floor"], m["numpy"])]
    x, y = cnn_data()
    reps = 3 if quick else 20
    ours = lenet._best(lenet.coretorch_step(x, y), n=reps, warm=1 if quick else 3)
    base = lenet._best(lenet.numpy_step(x, y), n=reps, warm=1 if quick else 3)
    ref = None
    if _torch() is not None:
        try:
            ref = lenet._best(lenet.torch_step(x, y), n=reps)
        except Exception:
            ref = None
    rows.append(_row("LeNet CNN step, batch 64, 28x28 (lenet.py)", "cpu", ours, base, torch_value=ref))
    rows += matmul_rows("cpu", 256 if quick else 1024, 3 if quick else 10)
    return rows


def device_rows(device: str, quick: bool, np_add_us: float, np_mlp: float, np_cnn: float) -> list:
    rows = [_row("recorded add, 1 element", device, add_overhead_us(device, 200 if quick else 2000), np_add_us, "us")]
    rows += matmul_rows(device, 256 if quick else 1024, 3 if quick else 10)
    rows.append(_row("MLP step, nn.Sequential + F.cross_entropy + optim.SGD", device,
                     nn_mlp_ms(device, 3 if quick else 20), np_mlp))
    rows.append(_row("LeNet CNN step, batch 64, 28x28", device, cnn_ms(device, 3 if quick else 20), np_cnn))
    return rows


def opencl_file_rows(quick: bool) -> list:
    """benchmarks/opencl.py's figures, as rows."""
    rows = []
    mm = opencl_bench.matmul(512 if quick else 1024)
    n = mm["n"]
    flops = 2 * n ** 3
    rows.append(_row(f"matmul {n}x{n} float32 (opencl.py)", "opencl", flops / mm["opencl_gflops"] / 1e6,
                     flops / mm["numpy_gflops"] / 1e6, note=f"{mm['opencl_gflops']:.1f} vs "
                     f"{mm['numpy_gflops']:.1f} GFLOP/s, max abs err {mm['max_abs_err']:.2g}"))
    mlp = opencl_bench.mlp_step(steps=3 if quick else 10)
    rows.append(_row("MLP step 784-256-128-10, tensor ops (opencl.py)", "opencl", mlp["opencl_ms"], mlp["numpy_ms"],
                     note=f"the same step on cpu: {mlp['cpu_ms']:.2f} ms"))
    if not quick and not os.environ.get("CORETORCH_BENCH_NO_STARTUP"):
        st = opencl_bench.startup()
        rows.append(_row("start-up to first training step (opencl.py)", "opencl", st["first_process_s"] * 1e3,
                         None, note=f"second process (warm kernel cache): {st['second_process_s'] * 1e3:.0f} ms"))
    return rows


def collect(quick: bool, devices: list[str] | None) -> dict:
    available = [d["type"] for d in ct.devices() if d["available"]]
    chosen = [d for d in (devices or available) if d in available]
    rows = []
    errors = {}
    if "cpu" in chosen:
        rows += cpu_rows(quick)
    others = [d for d in chosen if d != "cpu"]
    if others:
        np_add = run_bench.overhead_numpy_add(2000 if quick else 20000)
        np_mlp = numpy_mlp_ms(3 if quick else 20)
        x, y = cnn_data()
        np_cnn = lenet._best(lenet.numpy_step(x, y), n=3 if quick else 20, warm=1)
        for d in others:
            try:
                rows += device_rows(d, quick, np_add, np_mlp, np_cnn)
                if d == "opencl" and opencl_bench is not None:
                    rows += opencl_file_rows(quick)
            except Exception as e:  # a backend that cannot run a benchmark is reported, not fatal
                errors[d] = f"{type(e).__name__}: {e}"
    torch = _torch()
    return {"rows": rows, "errors": errors, "devices": chosen, "quick": quick,
            "machine": {"python": platform.python_version(), "numpy": np.__version__, "coretorch": ct.__version__,
                        "cpus": os.cpu_count(), "platform": platform.platform(),
                        "pytorch": getattr(torch, "__version__", None),
                        "device_names": {d["type"]: d["names"] for d in ct.devices() if d["type"] in chosen}},
            "date": datetime.date.today().isoformat()}


def _fmt(v) -> str:
    if v is None:
        return "-"
    return f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"


def markdown(res: dict) -> str:
    m = res["machine"]
    torch_col = m["pytorch"] is not None
    head = ["benchmark", "backend", "coretorch", "numpy (same run)", "ratio"] + (["PyTorch"] if torch_col else [])
    lines = [f"# coretorch benchmarks ({res['date']}{', --quick' if res['quick'] else ''})", "",
             f"Python {m['python']}, numpy {m['numpy']}, coretorch {m['coretorch']}, {m['cpus']} CPUs, "
             f"{m['platform']}" + (f", PyTorch {m['pytorch']}" if torch_col else "") + ".  "
             + "; ".join(f"{k}: {', '.join(v)}" for k, v in m["device_names"].items()) + ".", "",
             "Times (unit in brackets; the median or best of several runs). ratio = coretorch / numpy: lower is "
             "better, 1.00 = as fast as numpy written by hand. Reproduce with `make bench`.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in res["rows"]:
        name = r["benchmark"] + (f" — {r['note']}" if r["note"] else "")
        cells = [name, r["backend"], f"{_fmt(r['coretorch'])} {r['unit']}",
                 f"{_fmt(r['numpy'])} {r['unit']}" if r["numpy"] is not None else "-",
                 f"{r['ratio']:.2f}x" if r["ratio"] is not None else "-"]
        if torch_col:
            cells.append(f"{_fmt(r['pytorch'])} {r['unit']}" if r["pytorch"] is not None else "-")
        lines.append("| " + " | ".join(cells) + " |")
    for d, e in res["errors"].items():
        lines += ["", f"{d}: not measured ({e})"]
    return "\n".join(lines) + "\n"


def chart(res: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [r for r in res["rows"] if r["ratio"] is not None]
    labels = [f"{r['benchmark'].split(' (')[0]} [{r['backend']}]" for r in rows]
    ratios = [r["ratio"] for r in rows]
    colors = ["tab:blue" if r["backend"] == "cpu" else "tab:orange" for r in rows]
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) + 1.5))
    ax.barh(range(len(rows)), ratios, color=colors)
    ax.axvline(1.0, color="black", linewidth=1, linestyle="--")
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("time ratio coretorch / numpy (log scale; lower is better, 1 = numpy by hand)")
    for i, v in enumerate(ratios):
        ax.text(v, i, f" {v:.2f}x", va="center", fontsize=8)
    ax.set_title(f"coretorch benchmarks ({res['date']})")
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp")
    fig.savefig(tmp, format="png", dpi=100)
    plt.close(fig)
    os.replace(tmp, path)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes and few repetitions (a smoke run, seconds)")
    p.add_argument("--devices", help="comma-separated device types (default: every available one)")
    p.add_argument("--out-dir", default=str(HERE), help="where results.md and results.png go (default benchmarks/)")
    p.add_argument("--json", action="store_true", help="also print the results as JSON")
    args = p.parse_args(argv)
    res = collect(args.quick, args.devices.split(",") if args.devices else None)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md = markdown(res)
    (out / "results.md").write_text(md)
    chart(res, out / "results.png")
    print(md)
    if args.json:
        print(json.dumps(res, indent=2))
    print(f"wrote {out / 'results.md'} and {out / 'results.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
