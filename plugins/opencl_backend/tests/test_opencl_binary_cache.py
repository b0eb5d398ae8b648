"""Program binaries on disk (coretorch_opencl/binary_cache.py, opt-in): a stored binary is built instead of the
source and its kernels compute the same; a damaged file is built from source again and replaced; without (or with an
empty) CORETORCH_OPENCL_CACHE_DIR the cache is off; an unwritable folder only skips storing."""
from __future__ import annotations

import os
import uuid

import numpy as np
import pytest

import coretorch
from coretorch_opencl import binary_cache as bc
from coretorch_opencl.device import cl

_BE = coretorch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")


def _src() -> str:  # a program no other test builds (its binary is not in PoCL's cache or ours)
    return (f"__kernel void twice(__global float* a, long n) {{ long g = get_global_id(0); "
            f"if (g < n) a[g] = 2.0f * a[g] + 0.0f * {uuid.uuid4().int % 1000003}; }}")


def _run(prog) -> np.ndarray:
    dev = _BE.device(0)
    host = np.arange(8, dtype=np.float32)
    buf = cl.Buffer(dev.ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
    cl.Kernel(prog, "twice")(dev.queue, (8,), None, buf, np.int64(8))
    cl.enqueue_copy(dev.queue, host, buf)
    return host


def _build(src, calls):
    dev = _BE.device(0)

    def from_source():
        calls.append(1)
        return cl.Program(dev.ctx, src).build(options="")
    return bc.build(cl, dev.ctx, dev.cldev, dev._dev_id, src, "", from_source)


def test_a_stored_binary_is_built_instead_of_the_source(tmp_path, monkeypatch):
    monkeypatch.setenv("CORETORCH_OPENCL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(bc, "_STORE_BELOW_S", 1e9)   # store after any build (a cold build stores nothing)
    src, calls = _src(), []
    np.testing.assert_array_equal(_run(_build(src, calls)), 2 * np.arange(8))
    files = [os.path.join(r, f) for r, _, fs in os.walk(tmp_path) for f in fs]
    assert calls == [1] and len(files) == 1 and files[0].endswith(".bin")
    np.testing.assert_array_equal(_run(_build(src, calls)), 2 * np.arange(8))
    assert calls == [1]                                 # the second build came from the binary
    with open(files[0], "wb") as f:                     # damaged: built from source again, and replaced
        f.write(b"not a program binary")
    np.testing.assert_array_equal(_run(_build(src, calls)), 2 * np.arange(8))
    assert calls == [1, 1] and os.path.getsize(files[0]) > 100


def test_cache_off_and_unwritable(tmp_path, monkeypatch):
    monkeypatch.setattr(bc, "_STORE_BELOW_S", 1e9)
    monkeypatch.delenv("CORETORCH_OPENCL_CACHE_DIR", raising=False)
    assert bc.cache_dir() is None          # opt-in: off without the variable
    monkeypatch.setenv("CORETORCH_OPENCL_CACHE_DIR", "")
    assert bc.cache_dir() is None
    calls = []
    _build(_src(), calls)
    assert calls == [1]
    blocked = tmp_path / "file"
    blocked.write_text("a file where the folder would be")
    monkeypatch.setenv("CORETORCH_OPENCL_CACHE_DIR", str(blocked))
    np.testing.assert_array_equal(_run(_build(_src(), calls)), 2 * np.arange(8))
    assert calls == [1, 1]
