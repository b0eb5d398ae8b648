"""Review 19d on the OpenCL device: threads and concurrency in eager code (here: a DataLoader's forked workers while
another thread holds the device)."""
from __future__ import annotations

import multiprocessing
import threading

import pytest

import coretorch
from coretorch.utils.data import DataLoader

_BE = coretorch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork start method")
def test_a_dataloader_worker_forked_while_another_thread_holds_the_device():
    """PyTorch: DataLoader workers start (and seed themselves with torch.manual_seed) while other threads of the
    main process run device work. Before: a worker forked while another thread held the opencl device's lock (every
    kernel call and blocking read holds it) waited on that lock forever in its seeding manual_seed (the holder does
    not exist in the child): the DataLoader timed out, or hung without a timeout. The lock is held here on purpose
    for the whole fork."""
    coretorch.rand(3, device="opencl").cpu()  # the device and its default generator in use (manual_seed reseeds it)
    lock = _BE.device(0).lock
    held, release = threading.Event(), threading.Event()

    def hold():
        with lock:
            held.set()
            release.wait(60)
    t = threading.Thread(target=hold)
    t.start()
    try:
        assert held.wait(30)
        loader = DataLoader(list(range(6)), batch_size=3, num_workers=1, multiprocessing_context="fork", timeout=20)
        batches = [b.tolist() for b in loader]
    finally:
        release.set()
        t.join(30)
    assert batches == [[0, 1, 2], [3, 4, 5]]
