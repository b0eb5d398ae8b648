"""Issue 17's targets on one table: every row a `benchmarks/compile.py --worker` process (one thread also holds PoCL
to one compute unit), the rows alternating over ROUNDS rounds, then each row's median (min-max) over the rounds.

    python benchmarks/compile_targets.py 3                  # one thread and the default threads
    python benchmarks/compile_targets.py 3 --threads 1      # one thread only

PyTorch eager's rows come from ``--torch-python`` or ``$TORCH_PYTHON`` (skipped without one).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

import compile as cb  # this folder is on sys.path when run as a script

ROWS = [("coretorch", "mlp", "cpu", "eager"), ("coretorch", "mlp", "cpu", "compiled"), ("torch", "mlp", "cpu", "eager"),
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


if __name__ == "__main__":
    main()
