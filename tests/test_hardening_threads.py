"""Issue 15, threads: grad mode is per thread (as PyTorch's), and every backend runs several threads' models at
once with the results of running them one after another, bit for bit."""
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F
from coretorch import nn


@pytest.fixture
def fast_switching():
    """Threads switch every 10 µs (instead of 5 ms), so that an unsafe interleaving shows up in a short test."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(old)


def _in_threads(fns):
    """Run the callables in as many threads, started together; their results (an exception is re-raised)."""
    barrier = threading.Barrier(len(fns))

    def run(fn):
        barrier.wait(timeout=60)
        return fn()
    with ThreadPoolExecutor(len(fns)) as ex:
        futures = [ex.submit(run, fn) for fn in fns]
        return [f.result(timeout=300) for f in futures]


# ---- grad mode -----------------------------------------------------------------------------------------------
def test_no_grad_in_one_thread_leaves_the_others_recording():
    entered, checked = threading.Event(), threading.Event()
    seen = {}

    def quiet():
        with torch.no_grad():
            entered.set()
            checked.wait(timeout=30)
            seen["quiet"] = torch.is_grad_enabled()

    t = threading.Thread(target=quiet)
    t.start()
    assert entered.wait(timeout=30)
    x = torch.ones(2, requires_grad=True)
    seen["main"] = torch.is_grad_enabled()
    seen["main_records"] = (x * 2).requires_grad
    checked.set()
    t.join(timeout=30)
    assert seen == {"quiet": False, "main": True, "main_records": True}


def test_overlapping_blocks_in_two_threads_restore_each_threads_mode():
    # A enters no_grad, B enters no_grad, A leaves, B leaves (the interleaving that left autograd off for good)
    steps = [threading.Event() for _ in range(4)]
    out = {}

    def a():
        with torch.no_grad():
            steps[0].set()
            steps[1].wait(timeout=30)
        out["a_after"] = torch.is_grad_enabled()
        steps[2].set()

    def b():
        steps[0].wait(timeout=30)
        with torch.set_grad_enabled(False):
            steps[1].set()
            steps[2].wait(timeout=30)
            out["b_inside"] = torch.is_grad_enabled()
        out["b_after"] = torch.is_grad_enabled()
        steps[3].set()

    ts = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=30)
    assert steps[3].is_set()
    assert out == {"a_after": True, "b_inside": False, "b_after": True}
    assert torch.is_grad_enabled()


def test_a_new_thread_starts_with_grad_mode_on_and_outside_inference_mode():
    out = {}

    def probe():
        out["grad"] = torch.is_grad_enabled()
        out["inference"] = torch.is_inference_mode_enabled()
        out["records"] = (torch.ones(1, requires_grad=True) * 2).requires_grad

    with torch.inference_mode():
        t = threading.Thread(target=probe)
        t.start()
        t.join(timeout=30)
        assert not torch.is_grad_enabled() and torch.is_inference_mode_enabled()
    assert out == {"grad": True, "inference": False, "records": True}


def test_optimizer_step_in_one_thread_does_not_stop_recording_in_another():
    p = nn.Parameter(torch.ones(3))
    opt = torch.optim.SGD([p], lr=0.1)
    stop = threading.Event()
    steps = []

    def stepper():
        while not stop.is_set() and len(steps) < 2000:
            p.grad = torch.ones(3)
            opt.step()
            steps.append(1)

    t = threading.Thread(target=stepper)
    t.start()
    try:
        x = torch.ones(3, requires_grad=True)
        recorded = [(x * 2).requires_grad and torch.is_grad_enabled() for _ in range(300)]
    finally:
        stop.set()
        t.join(timeout=30)
    assert all(recorded) and steps


# ---- several models in several threads -----------------------------------------------------------------------
def _model(seed: int, device):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3)).to(device)


def _data(seed: int, device):
    rng = np.random.default_rng(seed)
    return (torch.tensor(rng.standard_normal((32, 6)).astype(np.float32), device=device),
            torch.tensor(rng.standard_normal((32, 3)).astype(np.float32), device=device))


def _train(model, x, y, steps: int = 12):
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for _ in range(steps):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        assert loss.requires_grad  # another thread's no_grad / step must not switch recording off here
        loss.backward()
        opt.step()
    return [p.detach().cpu().numpy() for p in model.parameters()]


def _runs(device, n: int = 4):
    return [(_model(10 + i, device), *_data(100 + i, device)) for i in range(n)]


def test_four_models_in_four_threads_match_running_them_in_turn(device, fast_switching):
    expected = [_train(*r) for r in _runs(device)]
    got = _in_threads([lambda r=r: _train(*r) for r in _runs(device)])
    for e, g in zip(expected, got):
        for pe, pg in zip(e, g):
            np.testing.assert_array_equal(pg, pe)  # bitwise: the same kernels on the same values


def test_training_and_no_grad_evaluation_at_once(device, fast_switching):
    train_run = _runs(device, 1)[0]
    expected = _train(*_runs(device, 1)[0])
    evaluated = _model(99, device)
    xe, _ = _data(7, device)
    with torch.no_grad():
        reference = evaluated(xe).cpu().numpy()

    def evaluate():
        outs = []
        for _ in range(15):
            with torch.no_grad():
                o = evaluated(xe)
                outs.append((o.requires_grad, o.cpu().numpy()))
        return outs

    params, outs = _in_threads([lambda: _train(*train_run), evaluate])
    for pe, pg in zip(expected, params):
        np.testing.assert_array_equal(pg, pe)
    for rg, o in outs:
        assert not rg
        np.testing.assert_array_equal(o, reference)
    assert torch.is_grad_enabled()


def test_many_threads_small_ops_give_exact_values(device, fast_switching):
    # elementwise, reductions, matmul and indexing from 6 threads: each checks its own numbers
    def work(i):
        rng = np.random.default_rng(i)
        a = rng.standard_normal((17, 9)).astype(np.float32)
        b = rng.standard_normal((9, 5)).astype(np.float32)
        idx = rng.integers(0, 17, 11)
        ta, tb, ti = torch.tensor(a, device=device), torch.tensor(b, device=device), torch.tensor(idx, device=device)
        bad = 0
        for _ in range(20):
            r = ((ta * 2 + 1)[ti] @ tb).sum(0)
            expected = ((a * 2 + 1)[idx] @ b).sum(0)
            bad += not np.allclose(r.cpu().numpy(), expected, rtol=1e-5, atol=1e-5)
        return bad
    assert _in_threads([lambda i=i: work(i) for i in range(6)]) == [0] * 6


def test_backward_from_several_threads_into_shared_parameters_adds_every_gradient(device, fast_switching):
    # hogwild-style: every thread's gradient reaches the shared leaf (integer values: exact whatever the order)
    p = nn.Parameter(torch.zeros(64, device=device))
    consts = [torch.full((64,), float(i + 1), device=device) for i in range(4)]

    def work(c):
        for _ in range(25):
            (p * c).sum().backward()
        return True
    assert all(_in_threads([lambda c=c: work(c) for c in consts]))
    np.testing.assert_array_equal(p.grad.cpu().numpy(), np.full(64, 25.0 * (1 + 2 + 3 + 4), np.float32))
