"""Review 15 of coretorch.compile: state that changes between calls, where the replay must do what the eager call
does (every installed device; bitwise on cpu, within float32 rounding on devices whose fused kernels differ)."""
from __future__ import annotations

from random import random as _py_random  # (bound at import, before any capture: see the test)

import numpy as np
import pytest
from numpy.random import rand as _np_rand

import coretorch as torch
from coretorch.testing import available_devices

from _compile_helpers import close as _close, rand as _rand


@pytest.mark.parametrize("op", ["add_ of the same tensor", "add_ of a transpose", "copy_ of a transpose",
                                "axpy of the same tensor"])
def test_in_place_ops_on_persistent_tensors_made_to_share_memory(device, op):
    """``w2.data = w1.data`` after the capture: an in-place op reading ``w2`` while writing ``w1`` (an identical
    operand is allowed and doubles ``w1``; a transposed one raises 'unsupported operation', as PyTorch).  The replay
    checks the pair is still apart and captures again where not, so each call does what eager does."""
    def run(compiled):
        w1, w2 = _rand(device, 6, 6, seed=2), _rand(device, 6, 6, seed=3)

        def fn(x):
            if op == "add_ of the same tensor":
                w1.add_(w2)
            elif op == "add_ of a transpose":
                w1.add_(w2.t())
            elif op == "copy_ of a transpose":
                w1.copy_(w2.t())
            else:
                w1.add_(w2, alpha=0.5)
            return w1 * x
        f = torch.compile(fn) if compiled else fn
        outs = []
        for i in range(6):
            if i == 3:
                w2.data = w1.data
            try:
                outs.append(f(_rand(device, 6, 6, seed=i)))
            except RuntimeError as e:
                assert "unsupported operation" in str(e)
                outs.append(None)
            outs.append(w1.clone())
        return outs
    eager, compiled = run(False), run(True)
    assert (eager[6] is None) == (op in ("add_ of a transpose", "copy_ of a transpose"))
    for e, c in zip(eager, compiled):
        assert (e is None) == (c is None)
        if e is not None:
            _close(device, e, c)


def test_a_list_the_caller_appends_numbers_to_inside_a_dict(device):
    """``cfg["lrs"][-1]`` where the caller appends numbers: the nested list is keyed by all its entries, so each new
    number captures again."""
    cfg = {"lrs": [1.0]}

    def fn(x):
        return x * cfg["lrs"][-1]
    f = torch.compile(fn)
    x = torch.ones(3, device=device)
    for i in range(5):
        cfg["lrs"].append(float(i + 2))
        assert np.array_equal(f(x).cpu().numpy(), np.full(3, float(i + 2), np.float32))


@pytest.mark.parametrize("where", ["dict entry", "object attribute"])
def test_a_nested_list_the_step_appends_to(device, where):
    """A list one level down (``log["calls"]``, ``trainer.calls``) that the step appends to: each call's append
    happens, as in eager (the step's code reads ``log``/``trainer`` itself, so the list is keyed and the call that
    grows it is a graph break), and the results are eager's."""
    class Trainer:
        def __init__(self):
            self.calls = []
    log, trainer = {"calls": []}, Trainer()
    calls = log["calls"] if where == "dict entry" else trainer.calls

    def fn(x):
        (log["calls"] if where == "dict entry" else trainer.calls).append(float(len(calls)))
        return x * 2
    f = torch.compile(fn)
    for i in range(5):
        assert np.array_equal(f(torch.ones(3, device=device)).cpu().numpy(), np.full(3, 2.0, np.float32))
    assert calls == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_a_graph_break_inside_a_plugin_names_the_plugin_frame(tmp_path, monkeypatch):
    """A plugin reading a whole array on the host (DistributedDataParallel's all-reduce hook under MPI) breaks the
    graph; ``explain`` named only the user's line and the innermost core line (``tensor.py``), not the plugin code
    that read: it now names the outermost plugin frame too."""
    pkg = tmp_path / "coretorch_fakeplug"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("def allreduce(t):\n    return t.numpy(force=True).sum()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import coretorch_fakeplug as fp

    def step(x):
        y = x * 2
        fp.allreduce(y)
        return y
    reasons = torch.compiler.explain(step, torch.ones(4)).break_reasons
    assert len(reasons) == 1 and "read a whole array back to the host" in reasons[0]
    assert "in step" in reasons[0] and "coretorch_fakeplug" in reasons[0] and ":2 allreduce" in reasons[0]


@pytest.mark.parametrize("draw", ["python", "numpy"])
def test_a_host_draw_through_a_name_bound_before_the_capture(device, draw):
    """``from random import random`` (or ``from numpy.random import rand``) at import, called in the step: the capture
    patches the modules' functions, which this name bypasses, so every replay returned the capture's number.  The
    capture now also compares the global generators' states: a draw is a graph break."""
    import random
    outs = []
    for compiled in (False, True):
        random.seed(0)
        np.random.seed(0)

        def fn(x):
            return x * (_py_random() if draw == "python" else float(_np_rand()))
        f = torch.compile(fn) if compiled else fn
        outs.append([f(torch.ones(3, device=device)).cpu().numpy() for _ in range(4)])
    for e, c in zip(*outs):
        assert np.array_equal(e, c)
    assert len({float(v[0]) for v in outs[1]}) == 4


def test_a_scheduler_stepped_through_a_method_bound_before_the_capture(device):
    """``then = sched.step`` made before the capture and called in the step: the capture's wrapper of the class's
    ``step`` never saw it, so no replay stepped the scheduler (the lr stayed at the capture's).  A scheduler whose
    count changes in the call without a recorded segment is now a graph break."""
    outs = []
    for compiled in (False, True):
        w = torch.ones(3, device=device, requires_grad=True)
        opt = torch.optim.SGD([w], lr=1.0)
        then = torch.optim.lr_scheduler.StepLR(opt, 1, 0.5).step

        def fn(x):
            opt.zero_grad()
            (w * x).sum().backward()
            opt.step()
            then()
            return w.detach().clone()
        f = torch.compile(fn) if compiled else fn
        outs.append([f(torch.ones(3, device=device)).cpu().numpy() for _ in range(5)])
    for e, c in zip(*outs):
        assert np.array_equal(e, c)


@pytest.mark.parametrize("how", ["__next__", "bound __next__", "for loop", "generator", "data loader"])
def test_an_iterator_advanced_without_next(device, how):
    """An iterator the step reaches, advanced by ``it.__next__()``, a bound ``nb = it.__next__``, a ``for`` loop or
    a generator's ``__next__`` (only ``next(it)`` was seen): every replay used the capture's batch.  The capture now
    compares the iterators' positions after the call: advancing one is a graph break."""
    from coretorch.utils.data import DataLoader, TensorDataset
    outs = []
    for compiled in (False, True):
        data = [torch.full((3,), float(i), device=device) for i in range(8)]
        if how == "generator":
            it = (d for d in data)
        elif how == "data loader":
            it = iter(DataLoader(TensorDataset(torch.arange(8.0).view(8, 1).repeat(1, 3)), batch_size=1))
        else:
            it = iter(data)
        nb = it.__next__

        def fn(w):
            if how == "for loop":
                for x in it:
                    break
            else:
                x = nb() if how == "bound __next__" else it.__next__()
            if how == "data loader":
                x = x[0][0].to(device)
            return w * x
        f = torch.compile(fn) if compiled else fn
        outs.append([f(torch.ones(3, device=device)).cpu().numpy() for _ in range(5)])
    for e, c in zip(*outs):
        assert np.array_equal(e, c)
    assert [float(v[0]) for v in outs[1]] == [0.0, 1.0, 2.0, 3.0, 4.0]


@pytest.mark.parametrize("make", ["from_numpy", "tensor", "tensor on device"])
def test_a_large_numpy_buffer_in_the_closure_refilled_in_place(make):
    """``buf[:] = batch`` by the caller, ``torch.from_numpy(buf)`` in the step, ``buf`` over 1 MiB (keyed by its
    identity only; smaller arrays are keyed by value, arguments of any size by a digest): every cpu replay returned
    the capture's values.  A root array (or a view of one) read by ``from_numpy`` is now read at the replay.
    ``torch.tensor(buf)`` copied ``buf`` on the host before its ``from_numpy`` kernel, so the capture saw a fresh
    array with no link to the buffer (a strict xfail until session 17): an array is now copied by the device's
    kernels (``from_numpy``, and ``contiguous`` on the host), which the replay repeats."""
    outs = []
    dev = "cpu"
    if make == "tensor on device":
        if "opencl" not in available_devices():
            pytest.skip("no OpenCL platform: the device form needs the opencl backend")
        dev = "opencl"
    for compiled in (False, True):
        buf = np.zeros(1 << 19, np.float32)

        def fn(w):
            t = torch.from_numpy(buf) if make == "from_numpy" else torch.tensor(buf, device=dev)
            return (t * w).sum().cpu()
        f = torch.compile(fn) if compiled else fn
        res = []
        for i in range(4):
            buf[:] = i
            res.append(float(f(torch.ones(1 << 19, device=dev))))
        outs.append(res)
    assert outs[0] == outs[1]
