"""Issue 15 on the OpenCL device: coretorch's own out-of-memory error before the device's memory is exceeded (a
fake small limit, not gigabytes), and device-side checks raised in the thread that queued them."""
from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import coretorch
from coretorch_opencl import device as cldevice

_BE = coretorch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")

MIB = 1 << 20


def test_out_of_memory_error_class_is_pytorchs():
    assert issubclass(coretorch.OutOfMemoryError, RuntimeError)
    assert coretorch.cuda.OutOfMemoryError is coretorch.OutOfMemoryError


def test_allocations_past_the_limit_raise_before_reaching_the_driver(monkeypatch):
    dev = _BE.device(0)
    dev.pool.free_held()
    base = dev.memory_reserved()  # the live arrays' blocks (other tests' tensors may still be alive)
    monkeypatch.setattr(dev, "memory_limit", base + 4 * MIB)
    calls = []
    real = dev._pool_alloc

    def counted(n):
        calls.append(n)
        return real(n)
    monkeypatch.setattr(dev, "_pool_alloc", counted)
    kept = [coretorch.ones(MIB // 4, device="opencl") for _ in range(3)]  # 3 MiB of float32
    assert dev.memory_allocated() >= 3 * MIB and dev.memory_reserved() - base >= 3 * MIB
    n_calls = len(calls)
    with pytest.raises(coretorch.OutOfMemoryError, match=r"OpenCL out of memory .*Tried to allocate 2\.00 MiB"):
        coretorch.empty(MIB // 2, device="opencl")
    assert len(calls) == n_calls, "refused by coretorch's count, not by the driver"
    assert [float(t.sum().item()) for t in kept] == [MIB // 4] * 3  # the live tensors are untouched
    del kept
    x = coretorch.full((MIB // 2,), 2.0, device="opencl")  # room again: the pool's blocks are given back first
    assert float(x.sum().item()) == MIB
    assert dev.memory_reserved() <= base + 4 * MIB


def test_a_cached_block_is_reused_at_the_limit(monkeypatch):
    dev = _BE.device(0)
    x = coretorch.ones(MIB // 4, device="opencl")
    monkeypatch.setattr(dev, "memory_limit", dev.memory_reserved())
    del x  # back to the pool: the same size fits again without any new device memory
    y = coretorch.zeros(MIB // 4, device="opencl")
    assert float(y.sum().item()) == 0.0


def test_memory_limit_from_the_environment(monkeypatch):
    monkeypatch.setenv("CORETORCH_OPENCL_MEMORY_LIMIT", "512M")
    assert cldevice.memory_limit_from_env(1 << 40) == 512 * MIB
    assert cldevice.memory_limit_from_env(100 * MIB) == 100 * MIB  # never above the device's memory
    monkeypatch.setenv("CORETORCH_OPENCL_MEMORY_LIMIT", "1048576")
    assert cldevice.memory_limit_from_env(1 << 40) == MIB
    monkeypatch.setenv("CORETORCH_OPENCL_MEMORY_LIMIT", "2GiB")
    assert cldevice.memory_limit_from_env(1 << 40) == 2 << 30
    monkeypatch.setenv("CORETORCH_OPENCL_MEMORY_LIMIT", "lots")
    with pytest.raises(ValueError, match="CORETORCH_OPENCL_MEMORY_LIMIT"):
        cldevice.memory_limit_from_env(1 << 40)
    monkeypatch.delenv("CORETORCH_OPENCL_MEMORY_LIMIT")
    assert cldevice.memory_limit_from_env(12345) == 12345
    assert _BE.device(0).memory_limit <= _BE.device(0).global_mem


def test_environment_limit_in_a_fresh_process():
    code = ("import coretorch\n"
            "try:\n"
            "    coretorch.empty(3 << 20, device='opencl')\n"  # 12 MiB of float32 against a limit of 8 MiB
            "except coretorch.OutOfMemoryError as e:\n"
            "    print('OOM', 'limit of 8.00 MiB' in str(e))\n")
    env = dict(os.environ, CORETORCH_OPENCL_MEMORY_LIMIT="8M")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.stdout.strip() == "OOM True", r.stderr


def test_a_failed_check_is_raised_in_the_thread_that_queued_it():
    x = coretorch.tensor(np.arange(10.0, dtype=np.float32).reshape(2, 5), device="opencl")
    good = coretorch.tensor([[0, 1]], device="opencl")
    queued, read = threading.Event(), threading.Event()
    out = {}

    def faulty():
        y = x.gather(1, coretorch.tensor([[0, 7]], device="opencl"))  # fails on the device; reported at a read
        queued.set()
        read.wait(timeout=60)
        try:
            y.sum().item()
            out["faulty"] = None
        except RuntimeError as e:  # gather: PyTorch raises RuntimeError
            out["faulty"] = str(e)

    def clean():
        queued.wait(timeout=60)
        try:
            out["clean"] = [float(x.gather(1, good).sum().item()) for _ in range(3)]
        finally:
            read.set()

    ts = [threading.Thread(target=faulty), threading.Thread(target=clean)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=120)
    assert out["clean"] == [1.0, 1.0, 1.0]
    assert out["faulty"] is not None and "index 7 is out of bounds" in out["faulty"]
