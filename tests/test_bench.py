"""`make bench`'s entry point, in its --quick smoke mode on the CPU (seconds): every benchmark runs, the
Markdown table has a numpy baseline and a ratio per row, the bar chart is a PNG."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_bench_entry_point_quick(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "all.py"), "--quick", "--devices", "cpu",
                        "--out-dir", str(tmp_path)], capture_output=True, text=True, timeout=180,
                       env=dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1"))  # smoke: 1 BLAS thread
    assert r.returncode == 0, r.stderr
    md = (tmp_path / "results.md").read_text()
    rows = [line for line in md.splitlines() if line.startswith("| ") and "---" not in line][1:]
    names = " ".join(rows)
    for bench in ("recorded add", "MLP step", "LeNet CNN step", "matmul"):
        assert bench in names, bench
    ratios = [float(m) for m in re.findall(r"\| ([\d.]+)x \|", md)]
    assert len(ratios) >= 5 and all(x > 0 for x in ratios)
    png = (tmp_path / "results.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and b"IEND" in png[-12:]
