"""coretorch.compile against eager (and PyTorch eager/compiled when a PyTorch interpreter is given), each framework
and mode in its own process, with one thread and with the default threads.

    python benchmarks/compile.py                         # the table (PyTorch from --torch-python or $TORCH_PYTHON)
    python benchmarks/compile.py --worker coretorch mlp cpu compiled   # one measurement (used by the table)
    python benchmarks/compile.py --alternate 5 --models gpt   # mode="max-autotune" vs PyTorch eager, alternating

MLP step: 784-256-128-10, batch 128, SGD.  GPT step: the one of benchmarks/transformer.py (2 pre-LN blocks, width
128, 4 heads, batch 16 x 64 tokens, vocabulary 65, AdamW).  Each step does zero_grad, forward, backward and
optimizer.step() and returns the loss tensor.  "first call" is the compiled step's first call (the capture run), in
brackets the eager step's first call in its own process (both load the step's kernels: on PoCL ~50 ms per program
even from its cache, most of either figure);
"launches" the kernel launches one replay runs, in brackets before fusion (opencl fuses elementwise chains; views
count as launches); "CPU ms" the process CPU time per step (all threads, PoCL's included), steadier than wall time
on a shared machine.  ``--devices cpu,opencl`` adds the opencl rows; an opencl step is synchronised before its time
is taken.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import time

from transformer import gpt_model  # the same GPT step as the nn benchmark (this folder is on sys.path)

STEPS = {"mlp": 60, "gpt": 12}


def _mlp(torch, device):
    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(128, 784).to(device), torch.randint(0, 10, (128,)).to(device)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step, (x, y)


def _gpt(torch, device):
    F = torch.nn.functional
    model, opt, x, y = gpt_model(torch, device)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x).view(-1, 65), y.view(-1))
        loss.backward()
        opt.step()
        return loss
    return step, (x, y)


def _numpy_mlp():
    """The MLP step written by hand in numpy (benchmarks/run.py's, the same sizes and batch): the floor of a numpy
    framework on this machine's BLAS."""
    import run as run_bench   # (this folder is on sys.path)
    ps, x, y = run_bench._init_params()
    return (lambda: run_bench.numpy_mlp_step(ps, x, y)), ()


def worker(framework: str, model: str, device: str, mode: str) -> dict:
    """Median ms per step after warm-up, the first call's seconds and launches per replay (framework "numpy": the
    hand-written MLP step on cpu, mode "byhand")."""
    if framework == "numpy":
        torch = None
        step, args = _numpy_mlp()
    else:
        torch = importlib.import_module("torch" if framework == "torch" else "coretorch")
        step, args = {"mlp": _mlp, "gpt": _gpt}[model](torch, device)
    if mode == "unfused":  # compiled without fusion (the "launches before fusion" figure's step)
        torch._compile.config.fusion = False
    if mode == "nopool":  # compiled without planned temporaries (plan.py), for --pool's before/after figures
        torch._compile.config.pool = False
    if mode in ("compiled", "unfused", "nopool"):
        step = torch.compile(step)
    if mode == "autotune":  # host fusion: cpu GELU/layer norm/softmax as PoCL kernels (coretorch/_compile/hostfuse.py)
        step = torch.compile(step, mode="max-autotune")
    # an asynchronous device (opencl) finishes each step's kernels inside the timing (wall time and PoCL's threads)
    sync = (lambda: torch.accelerator.synchronize(device)) if device != "cpu" and framework == "coretorch" \
        else (lambda: None)
    t0 = time.perf_counter()
    step(*args)
    sync()
    first = time.perf_counter() - t0
    for _ in range(3):
        step(*args)
    sync()
    times, cpu = [], []
    for _ in range(STEPS[model]):
        t0, c0 = time.perf_counter(), time.process_time()
        step(*args)
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
        cpu.append((time.process_time() - c0) * 1e3)
    times.sort()
    cpu.sort()
    return {"ms": times[len(times) // 2], "cpu_ms": cpu[len(cpu) // 2], "first_s": first,
            "launches": getattr(step, "launches", None), "unfused": getattr(step, "launches_before_fusion", None),
            "lowered": getattr(step, "lowered", None)}


def _run(python: str, framework: str, model: str, device: str, mode: str, threads: int | None) -> dict | None:
    env = dict(os.environ)
    if threads:
        for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[k] = str(threads)
        if mode == "autotune" or device != "cpu":  # PoCL's compute units too (older PoCL reads the second name)
            env["POCL_CPU_MAX_CU_COUNT"] = env["POCL_MAX_PTHREAD_COUNT"] = str(threads)
            if threads == 1:  # PoCL's single-threaded driver runs each kernel in the calling thread: no hand-off
                env.setdefault("POCL_DEVICES", "basic")
    try:
        out = subprocess.run([python, __file__, "--worker", framework, model, device, mode],
                             capture_output=True, text=True, env=env, timeout=900)
    except subprocess.TimeoutExpired:
        return None
    if out.returncode:
        print(f"{framework} {model} {mode}: {out.stderr.strip().splitlines()[-1:] or '?'}", file=sys.stderr)
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def pool_table(models: list, devices: list, rounds: int) -> None:
    """Planned temporaries (coretorch/_compile/plan.py) against none: interleaved processes, one thread."""
    print("| step | device | CPU ms without pool (min-max) | CPU ms with pool (min-max) | with / without | rounds |")
    print("|---|---|---|---|---|---|")
    for model in models:
        for device in devices:
            res: dict = {"nopool": [], "compiled": []}
            for _ in range(rounds):
                for mode in res:
                    r = _run(sys.executable, "coretorch", model, device, mode, 1)
                    if r:
                        res[mode].append(r["cpu_ms"])
            if not all(res.values()):
                continue
            (a, ra), (b, rb) = ((sorted(v)[len(v) // 2], f"{min(v):.2f}-{max(v):.2f}") for v in res.values())
            print(f"| {model} | {device} | {a:.2f} ({ra}) | {b:.2f} ({rb}) | {b / a:.3f} | {rounds} |", flush=True)


def alternate_table(models: list, tp: str, rounds: int) -> None:
    """The cpu step compiled (default and max-autotune) against PyTorch eager: alternating processes, one thread."""
    print("| step | compiled CPU ms (min-max) | max-autotune CPU ms (min-max) | PyTorch eager CPU ms (min-max) | "
          "max-autotune / PyTorch | rounds |")
    print("|---|---|---|---|---|---|")
    for model in models:
        res: dict = {"compiled": [], "autotune": [], "torch": []}
        for _ in range(rounds):
            for mode in res:
                r = _run(tp, "torch", model, "cpu", "eager", 1) if mode == "torch" else \
                    _run(sys.executable, "coretorch", model, "cpu", mode, 1)
                if r:
                    res[mode].append(r["cpu_ms"])
        if not all(res.values()):
            continue
        med = {k: sorted(v)[len(v) // 2] for k, v in res.items()}
        rng = {k: f"{min(v):.2f}-{max(v):.2f}" for k, v in res.items()}
        print(f"| {model} | {med['compiled']:.2f} ({rng['compiled']}) | {med['autotune']:.2f} ({rng['autotune']}) | "
              f"{med['torch']:.2f} ({rng['torch']}) | {med['autotune'] / med['torch']:.3f} | {rounds} |", flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", nargs=4, metavar=("FRAMEWORK", "MODEL", "DEVICE", "MODE"))
    ap.add_argument("--models", default="mlp,gpt")
    ap.add_argument("--devices", default="cpu")
    ap.add_argument("--torch-python", default=os.environ.get("TORCH_PYTHON", ""),
                    help="an interpreter with PyTorch installed (default: this one when it has torch)")
    ap.add_argument("--torch-compiled", action="store_true", help="also time torch.compile (needs a C++ compiler)")
    ap.add_argument("--pool", type=int, default=0, metavar="ROUNDS",
                    help="planned temporaries on/off instead: ROUNDS interleaved process pairs per step and device, "
                         "one thread, median process CPU ms")
    ap.add_argument("--alternate", type=int, default=0, metavar="ROUNDS",
                    help="the cpu step compiled (default and mode='max-autotune': host fusion, GELU, layer norm and "
                         "softmax as PoCL kernels on numpy's memory) against PyTorch eager instead: ROUNDS alternating "
                         "processes each, one thread (PoCL one compute unit), median process CPU ms")
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(*args.worker)))
        return
    if args.pool:
        pool_table(args.models.split(","), args.devices.split(","), args.pool)
        return
    tp = args.torch_python or (sys.executable if importlib.util.find_spec("torch") else "")
    if tp and not shutil.which(tp) and not os.path.exists(tp):
        tp = ""
    if args.alternate:
        alternate_table(args.models.split(","), tp, args.alternate)
        return
    print("| step | device | threads | eager ms | compiled ms | speed-up | eager CPU ms | compiled CPU ms | "
          "first call s (eager's) | launches (before fusion) | PyTorch eager ms | compiled / PyTorch |"
          + (" PyTorch compiled ms |" if args.torch_compiled else ""))
    print("|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if args.torch_compiled else ""))
    for model in args.models.split(","):
        for threads in (1, None):
            base = _run(tp, "torch", model, "cpu", "eager", threads) if tp else None
            tc = _run(tp, "torch", model, "cpu", "compiled", threads) if tp and args.torch_compiled else None
            for device in args.devices.split(","):
                e = _run(sys.executable, "coretorch", model, device, "eager", threads)
                c = _run(sys.executable, "coretorch", model, device, "compiled", threads)
                if not e or not c:
                    continue
                ours = (f"| {model} | {device} | {threads or 'default'} | {e['ms']:.2f} | {c['ms']:.2f} | "
                        f"{e['ms'] / c['ms']:.2f}x | {e['cpu_ms']:.2f} | {c['cpu_ms']:.2f} | "
                        f"{c['first_s']:.2f} ({e['first_s']:.2f}) | "
                        f"{c['launches']} ({c['unfused']}) |")
                theirs = f" {base['ms']:.2f} | {c['ms'] / base['ms']:.2f}x |" if base else " - | - |"
                if args.torch_compiled:
                    theirs += f" {tc['ms']:.2f} |" if tc else " - |"
                print(ours + theirs, flush=True)


if __name__ == "__main__":
    main()
