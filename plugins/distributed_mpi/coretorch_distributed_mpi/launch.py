"""``coretorch run -n N script.py [args]`` (also ``python -m coretorch_distributed_mpi.launch``): ``mpiexec``.

The MPI launcher is found as ``$CORETORCH_MPIEXEC``, else the ``mpiexec`` installed next to this Python (the
``mpich`` wheel puts it there), else ``mpiexec`` on ``PATH`` (a cluster's MPI).  Each rank runs the script
with this Python.  Extra launcher flags (a host file, ``-ppn``, ...) go after ``--mpi-args``.
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys

__all__ = ["launch", "find_mpiexec", "command"]


def find_mpiexec() -> str:
    env = os.environ.get("CORETORCH_MPIEXEC")
    if env:
        return env
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.exists(here):
        return here
    found = shutil.which("mpiexec") or shutil.which("mpirun")
    if found is None:
        raise FileNotFoundError("no mpiexec found: `pip install mpich` (it installs mpiexec next to python), put "
                                "your MPI's mpiexec on PATH, or set CORETORCH_MPIEXEC")
    return found


def parser(prog: str = "coretorch run") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="run a script on N ranks with mpiexec (each rank calls "
                                "coretorch.distributed.init_process_group())")
    p.add_argument("-n", "--nproc", "--nproc-per-node", type=int, default=1, dest="n",
                   help="number of ranks (processes)")
    p.add_argument("--mpi-args", default="", help="extra mpiexec arguments, one shell-quoted string")
    p.add_argument("-m", dest="module", action="store_true", help="run the target as a module (python -m)")
    p.add_argument("script", help="the Python script (or module with -m)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments of the script")
    return p


def command(n: int, script: str, args=(), module: bool = False, mpi_args: str = "") -> list[str]:
    if n < 1:
        raise ValueError(f"-n must be at least 1, got {n}")
    py = [sys.executable, "-m", script] if module else [sys.executable, script]
    return [find_mpiexec(), "-n", str(n), *shlex.split(mpi_args), *py, *args]


def launch(argv=None) -> int:
    """Parse ``[-n N] [--mpi-args ...] script [args]``, run it under mpiexec, return its exit status."""
    a = parser().parse_args(argv)
    try:
        cmd = command(a.n, a.script, a.args, a.module, a.mpi_args)
    except (FileNotFoundError, ValueError) as e:
        print(f"coretorch run: {e}", file=sys.stderr)
        return 2
    try:
        return subprocess.call(cmd)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(launch())
