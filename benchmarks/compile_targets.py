"""Issue 17's targets on one table: every row a `benchmarks/compile.py --worker` process (one thread also holds PoCL
to one compute unit), the rows alternating over ROUNDS rounds, then each row's median (min-max) over the rounds.

    python benchmarks/compile_targets.py 3                  # one thread and the default threads
    python benchmarks/compile_targets.py 3 --threads 1      # one thread only

PyTorch eager's rows come from ``--torch-python`` or ``$TORCH_PYTHON`` (skipped without one).  The "numpy mlp cpu
byhand" row is the MLP step written by hand in numpy (benchmarks/run.py's). A second table gives each target's ratio
with its range over the rounds and whether it is met (every round), missed (every round) or within the spread.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

import compile as cb  # this folder is on sys.path when run as a script

ROWS = [("coretorch", "mlp", "cpu", "eager"), ("coretorch", "mlp", "cpu", "compiled"), ("torch", "mlp", "cpu", "eager"),
        ("numpy", "mlp", "cpu", "byhand"),
        ("coretorch", "mlp", "opencl", "compiled"), ("coretorch", "gpt", "cpu", "compiled"),
        ("coretorch", "gpt", "cpu", "autotune"), ("torch", "gpt", "cpu", "eager"),
        ("coretorch", "gpt", "opencl", "compiled")]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rounds", type=int)
    ap.add_argument("--threads", default="1,0", help="comma-separated thread counts (0: the default threads)")
    ap.add_argument("--torch-python", default=os.environ.get("TORCH_PYTHON", ""))
    args = ap.parse_args(argv)
    threads = [int(t) or None for t in args.threads.split(",")]
    res: dict = {}
    for _ in range(args.rounds):
        for th in threads:
            for fw, model, dev, mode in ROWS:
                if fw == "torch" and not args.torch_python:
                    continue
                out = cb._run(args.torch_python if fw == "torch" else sys.executable, fw, model, dev, mode, th)
                if out:
                    res.setdefault((th or "default", fw, model, dev, mode), []).append(out)
    print("| threads | row | wall ms (min-max) | CPU ms | launches (lowered calls) | first call s |\n"
          "|---|---|---|---|---|---|")
    for (th, *row), v in res.items():
        ms = [x["ms"] for x in v]
        print(f"| {th} | {' '.join(row)} | {statistics.median(ms):.2f} ({min(ms):.2f}-{max(ms):.2f}) | "
              f"{statistics.median([x['cpu_ms'] for x in v]):.2f} | {v[-1]['launches']}"
              f"{'' if not v[-1].get('lowered') else ' (%d)' % v[-1]['lowered']} | "
              f"{statistics.median([x['first_s'] for x in v]):.2f} |")
    print()
    print(targets(res))


# issue 17's targets: (label, numerator row, denominator row, at most)
TARGETS = [("cpu MLP compiled / PyTorch eager", ("coretorch", "mlp", "cpu", "compiled"),
            ("torch", "mlp", "cpu", "eager"), 0.85),
           ("  (the numpy step by hand / PyTorch eager: the floor)", ("numpy", "mlp", "cpu", "byhand"),
            ("torch", "mlp", "cpu", "eager"), None),
           ("cpu GPT compiled / PyTorch eager", ("coretorch", "gpt", "cpu", "compiled"),
            ("torch", "gpt", "cpu", "eager"), 1.0),
           ("cpu GPT max-autotune / PyTorch eager", ("coretorch", "gpt", "cpu", "autotune"),
            ("torch", "gpt", "cpu", "eager"), 1.0),
           ("opencl MLP compiled / cpu eager", ("coretorch", "mlp", "opencl", "compiled"),
            ("coretorch", "mlp", "cpu", "eager"), 1.0),
           ("opencl GPT compiled / cpu compiled", ("coretorch", "gpt", "opencl", "compiled"),
            ("coretorch", "gpt", "cpu", "compiled"), 1.0)]


def targets(res: dict) -> str:
    """The targets' ratios of the rows' medians, per thread setting, with the round-by-round range (each round's
    two processes ran minutes apart at most)."""
    lines = ["| threads | target | ratio of medians (range over rounds) | at most | met |", "|---|---|---|---|---|"]
    for th in dict.fromkeys(k[0] for k in res):
        for label, num, den, limit in TARGETS:
            a, b = res.get((th, *num)), res.get((th, *den))
            if not a or not b:
                continue
            r = statistics.median(x["ms"] for x in a) / statistics.median(x["ms"] for x in b)
            per = [x["ms"] / y["ms"] for x, y in zip(a, b)]
            met = "" if limit is None else \
                "yes" if max(per) <= limit else "no" if min(per) > limit else "within the spread"
            lines.append(f"| {th} | {label} | {r:.2f} ({min(per):.2f}-{max(per):.2f}) | "
                         f"{'' if limit is None else limit} | {met} |")
        gpt = [res.get((th, "coretorch", "gpt", d, "compiled")) for d in ("cpu", "opencl")]
        first = [x["first_s"] for v in gpt if v for x in v]
        if first:
            lines.append(f"| {th} | GPT compiled first call, s (cpu, opencl) | {max(first):.2f} (max) | 2 | "
                         f"{'yes' if max(first) < 2 else 'no'} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
