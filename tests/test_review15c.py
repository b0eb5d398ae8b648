"""Review 15c of ``coretorch.compile(..., mode="max-autotune")`` on 'cpu' (host fusion: GELU, layer norm, softmax and
the optimizer replay's Adam update as PoCL kernels on numpy's memory, coretorch/_compile/hostfuse.py).  Each test
compares with eager, or checks the provider's own guard; without a PoCL CPU device (no provider) the tests that need
its kernels are skipped, saying so."""
from __future__ import annotations


import numpy as np
import pytest

import coretorch as torch  # noqa: F401 - (registers the backends)
from _compile_helpers import fresh_host_fusion, host_providers as _providers


_fresh = pytest.fixture(autouse=True)(fresh_host_fusion)


def _provider():
    if not _providers():
        pytest.skip("no host-fusion provider: the opencl plugin finds no PoCL CPU device sharing host memory")
    return _providers()[0]


def test_self_check_writes_a_misaligned_array():
    """The provider's one-time check must launch on arrays 4 bytes off any larger alignment, inputs and outputs (what
    the hosted Adam update writes in place: a parameter that is a view at an odd float offset of a flat buffer).  It
    launched on fresh (aligned) arrays only (``x = arange(...)[1:] / 4`` is a new array), so a driver that copies a
    misaligned host pointer instead of using it (writes lost) passed the check and the hosted Adam update of such a
    parameter would have been silently dropped."""
    p = _provider()
    from coretorch_opencl.device import cl   # (the plugin's pyopencl)
    from coretorch_opencl.hostfuse import HostKernels
    hk = HostKernels(p.dev)
    assert hk.works()
    real_out = hk._out

    def copying_out(a):   # a driver that copies host pointers off a 16-byte alignment: the kernel's writes are lost
        if a.__array_interface__["data"][0] % 16:
            return cl.Buffer(hk.dev.ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=a)
        return real_out(a)
    hk._out = copying_out
    assert not hk.works()


def _fork_child(q, f, step, x):
    try:
        g = torch.compile(step, mode="max-autotune")
        ref = [t.detach().numpy().copy() for t in step(x)]
        got = [[t.detach().numpy().copy() for t in fn(x)] for fn in (f, f, g, g, g)]
        q.put(("ok", all(np.array_equal(a, b) for r in got for a, b in zip(r, ref)), g.hosted))
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        q.put(("raised", repr(e), 0))


def test_a_forked_child_runs_max_autotune_steps_on_the_cpu_kernels():
    """fork() after a max-autotune step ran hosted kernels: the child has the parent's OpenCL context and queue but
    not PoCL's worker threads, so a hosted launch there waited forever (the threaded driver: the default without
    POCL_DEVICES=basic) where eager runs.  In a forked child the provider offers nothing and the hosted kernels already
    in a replay run the cpu kernels: eager's results, bit for bit."""
    _provider()
    import multiprocessing as mp
    if "fork" not in mp.get_all_start_methods():
        pytest.skip("no fork() on this platform")
    from coretorch import nn
    import coretorch.nn.functional as F
    torch.manual_seed(0)
    lin = nn.Linear(64, 64)
    x = torch.randn(64, 64)

    def step(x):
        lin.zero_grad()
        loss = F.log_softmax(F.gelu(lin(x)), -1).pow(2).sum()
        loss.backward()
        return loss, lin.weight.grad.clone()
    f = torch.compile(step, mode="max-autotune")
    for _ in range(3):
        f(x)
    assert f.hosted == 4   # gelu, log_softmax and their backward kernels
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    child = ctx.Process(target=_fork_child, args=(q, f, step, x))
    child.start()
    child.join(120)
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail("the forked child's max-autotune step hung")
    how, same, hosted = q.get(timeout=10)
    assert how == "ok" and same is True and hosted == 0, (how, same)
