"""Program binaries kept on disk, so a later process builds a program from its binary instead of its source.

Why: PoCL keeps its own cache, but a hit still costs ~40 ms per program (it preprocesses the source to find the
entry), and pyopencl leaves its binary cache off for PoCL.  A step's first call loads ~50 programs (the GPT step:
~1.5 s of its first call, eager or compiled, with every cache warm); from a stored binary a program builds in ~2 ms
and its kernels' first launches find PoCL's cached work-group functions (measured on the 2-core PoCL 3.0 device:
40-60 ms -> 2-3 ms per program, where PoCL's cache was warm).

A binary is stored by a process whose source build found PoCL's own cache (asking PoCL for the binary of a program
it has just compiled costs a second compile, ~1.2 s: a fresh machine's first process would pay it for every
program), so the first process on a new machine compiles, the second stores, and later ones load binaries.

The key is a SHA-256 of the device and driver identity (platform, device, driver and OpenCL versions, pyopencl's
version), the build options and the whole source.  Files are written atomically (a temporary file renamed), so
processes sharing the folder never read half a binary; a binary the driver refuses is built from source again
and replaced.

Opt-in (``CORETORCH_OPENCL_CACHE_DIR=folder``): on a machine whose PoCL cache is already warm (a developer's, a
long-lived server) it takes the program loads out of every later process; on a fresh machine it costs more than it
saves: a fresh clone's ``make test`` took 15:18 with it on (other work running for part of it) and 8:30 with it
off, the same day and code.  The likely cause, seen in one measurement: a kernel's first launch from a
program built from a binary compiled its work-group function again (~60 ms) where the source-built program found
it in PoCL's cache, so on a fresh machine, where the second process stores binaries early, later processes
compile most kernel specialisations once more.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import time
from typing import Any, Callable

# a source build faster than this found the driver's own cache: the binary is ready (~4 ms).  After a real compile
# (0.5-1 s) PoCL compiles the program again for its binary (~1.2 s more, measured): not worth it in that process,
# the next one that loads the program stores it
_STORE_BELOW_S = 0.25


def cache_dir() -> str | None:
    """The folder binaries are kept in (``$CORETORCH_OPENCL_CACHE_DIR``), or None: the cache is opt-in."""
    return os.environ.get("CORETORCH_OPENCL_CACHE_DIR") or None


def device_id(cl: Any, cldev: Any) -> str:
    """What a binary depends on besides its source and options: the platform, device and driver."""
    p = cldev.platform
    return "|".join([p.name, p.version, cldev.name, cldev.version, cldev.driver_version, cl.VERSION_TEXT])


def build(cl: Any, ctx: Any, cldev: Any, dev_id: str, src: str, options: str,
          from_source: Callable[[], Any]) -> Any:
    """The built program of ``src``: from a stored binary where one exists and the driver takes it, else
    ``from_source()`` (whose binary is then stored)."""
    folder = cache_dir()
    if folder is None:
        return from_source()
    key = hashlib.sha256(f"{dev_id}\0{options}\0{src}".encode()).hexdigest()
    path = os.path.join(folder, key[:2], key + ".bin")
    try:
        with open(path, "rb") as f:
            binary = f.read()
    except OSError:
        binary = None
    if binary:
        try:
            return cl.Program(ctx, [cldev], [binary]).build(options=options)
        except cl.Error:
            pass  # refused (a driver update the identity did not show, a damaged file): from source, replaced below
    t0 = time.perf_counter()
    prog = from_source()
    if time.perf_counter() - t0 > _STORE_BELOW_S:
        return prog  # compiled now: its binary would cost a second compile (kept once PoCL has it cached)
    try:
        binaries = prog.get_info(cl.program_info.BINARIES)
        if binaries and binaries[0]:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(binaries[0])
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
    except (OSError, cl.Error):
        pass  # a read-only or full disk: the program is built, only not kept
    return prog
