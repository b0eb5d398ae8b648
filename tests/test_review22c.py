"""Review 22c: threads, a second pass, eager and compiled. Many threads running backwards with hooks, optimizers,
draws from the shared default generators, global settings changed while other threads run; compiled functions and
modules called from several threads at once (captures, guard misses and replays of the same capture overlapping);
DataLoader workers and torch.multiprocessing with tensors. PyTorch's default generator is one per device, shared
by every thread: each draw is whole (its generator's mutex), so no two threads get the same numbers and no draw is
lost. The compiled calls are compared with eager coretorch."""
import os
import signal
import threading
import time

import pytest

import coretorch as torch
from coretorch._compile import replay as _replay
from coretorch.ops.random import default_for


# ---- a replay that sets the generators back while another thread draws ----------------------------------------
def _gamma(x):
    return torch.distributions.Gamma(x, x).sample()


def test_a_replay_setting_the_generators_back_keeps_another_threads_draw(device, monkeypatch):
    """Eager: a Gamma sample and another thread's torch.rand draw from the shared default generator one after the
    other (either order): the other thread's numbers are its own and the generator ends past both draws.  A
    compiled Gamma sampler's replay checks its rejection rounds; where the check fails it sets the generators back to
    their states at the replay's start and runs the call eagerly (coretorch/_compile/rngundo.py).  Before: another
    thread drawing between the replay's start and that check had its draw undone: its numbers were drawn again by
    the eager run (two threads with the same samples) and the generator ended as if it had never drawn.  Now the
    replay holds the generators' lock over that window, so the other thread draws after it (here: before the
    call's eager run)."""
    torch.compiler.reset()
    gen = default_for(device)
    hits: list = []
    drawn: list = []

    def draw():
        drawn.append(torch.rand(16, device=device).cpu())

    back = _replay._GLOBALS["RNGBACK"]

    def back_after_another_draw(saved):
        if hits:
            return back(saved)
        # the first failed check: another thread draws now (before: at once; now: once the window ends, in back)
        t = threading.Thread(target=draw)
        t.start()
        t.join(timeout=1)
        mismatch = back(saved)
        t.join(timeout=10)  # (its draw done before this call's eager run)
        hits.append(t)
        return mismatch

    monkeypatch.setitem(_replay._GLOBALS, "RNGBACK", back_after_another_draw)
    x = torch.full((64,), 0.7, device=device)
    f = torch.compile(_gamma)
    torch.manual_seed(3)
    f(x)  # the capture
    start = out = None
    for _ in range(40):  # replays until one's check fails (a different number of rejection rounds)
        start = gen.get_state()
        out = f(x).cpu()
        if hits:
            break
    assert hits, "no replay set the generators back"
    end = gen.get_state()
    assert len(drawn) == 1
    gen.set_state(start)  # eager: the other thread's draw, then this call's
    b = torch.rand(16, device=device).cpu()
    a = _gamma(x).cpu()
    assert torch.equal(drawn[0], b) and torch.equal(out, a) and torch.equal(end, gen.get_state())
    torch.compiler.reset()


# ---- a guard miss while another thread's capture lands in the cache --------------------------------------------
def test_a_guard_miss_while_another_thread_adds_a_capture(device):
    """Eager: any number of threads call the function.  A compiled function's guard miss whose float argument
    changed looks through its captures for one to make that float an input of (dynfloat.py) while another thread's
    capture may land in the same cache.  Before: the miss iterated the cache dict itself and raised
    ``RuntimeError: dictionary changed size during iteration`` (seen with 12 threads calling one compiled
    function with new shapes and floats).  Here another thread captures exactly while the miss looks."""
    def f(x, s):
        return x * s + 1

    cf = torch.compile(f)
    cf(torch.ones(2, device=device), 1.0)
    fired: list = []

    class _Entry:  # an entry whose reading lets another thread capture (a new shape) and waits for it
        fp = replay = None

        @property
        def mkey(self):
            if not fired:
                fired.append(True)
                t = threading.Thread(target=lambda: fired.append(cf(torch.ones(3, device=device), 1.0)))
                t.start()
                t.join(timeout=30)
            return None

    cf._cache[("another thread's entry",)] = _Entry()
    out = cf(torch.ones(2, device=device), 2.0)
    assert torch.equal(out, f(torch.ones(2, device=device), 2.0))
    assert len(fired) == 2 and torch.equal(fired[1], torch.full((3,), 2.0, device=device))
    torch.compiler.reset()


# ---- torch.multiprocessing: the first failure ends the others ----------------------------------------------
def _fails_or_waits(rank: int, how: str) -> None:
    if rank == 1:
        if how == "raise":
            raise ValueError("rank 1 failed")
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(60)  # (a rank waiting for the failed one: a collective, a queue)


@pytest.mark.parametrize("how", ["raise", "signal"])
def test_spawned_processes_end_at_the_first_failure(how):
    """PyTorch: ProcessContext.join waits for any process to exit; the first failure terminates the others and
    raises ProcessRaisedException with its traceback (ProcessExitedException "process 1 terminated with signal
    SIGKILL", signal_name "SIGKILL", for a killed one). Before: join waited for each process in rank order, so a
    rank waiting for the failed one kept spawn() blocked until it ended by itself (here 60 s), and a killed
    process was reported as "terminated with exit code -9" without its signal's name."""
    import coretorch.multiprocessing as mp
    t0 = time.monotonic()
    with pytest.raises(mp.ProcessException) as info:
        mp.start_processes(_fails_or_waits, args=(how,), nprocs=2, start_method="fork")
    assert time.monotonic() - t0 < 30
    e = info.value
    assert e.error_index == 1
    if how == "raise":
        assert isinstance(e, mp.ProcessRaisedException) and "ValueError: rank 1 failed" in str(e)
    else:
        assert isinstance(e, mp.ProcessExitedException)
        assert str(e) == "process 1 terminated with signal SIGKILL"
        assert (e.exit_code, e.signal_name) == (-signal.SIGKILL, "SIGKILL")


# ---- kernels registered by a plugin while a capture runs -------------------------------------------------------
def test_kernels_registered_in_another_thread_during_a_capture(device):
    """Eager: registering a plugin's kernels (here from another thread while a step runs) changes no result: the
    step's in-place update of a weight happens at every call.  A capture records its call through patched
    kernel-table entries; a plugin registering kernels refills every table.  Before: the refill put the plain
    kernels back over the capture's recording ones, so the launches after it were not recorded and every replay
    skipped the weight's update (w stayed at its first value, silently); and the capture's end set the old entries
    back over the refill (a kernel the plugin had just registered for a primitive was lost).  Now such a capture is
    a graph break tried again at a later call, and the tables are refilled after it."""
    from coretorch import _backend
    from coretorch._compile.capture import state
    torch.compiler.reset()
    done = threading.Event()

    def register_during_the_capture():
        deadline = time.monotonic() + 10
        while state["recorder"] is None and time.monotonic() < deadline:
            time.sleep(0.001)
        _backend.register_kernels("review22c_op", {device: lambda a: a})
        done.set()

    def step(x, w):
        y = x * 2
        done.wait(10)
        w.add_(y)
        return y + 1

    try:
        t = threading.Thread(target=register_during_the_capture)
        t.start()
        cf = torch.compile(step)
        w, w_eager = torch.zeros(3, device=device), torch.zeros(3, device=device)
        for i in range(4):
            x = torch.full((3,), float(i + 1), device=device)
            assert torch.equal(cf(x, w), step(x, w_eager))
            assert torch.equal(w, w_eager)
        t.join(timeout=10)
        assert cf.replays >= 1
        assert "review22c_op" in _backend.get_table(torch.device(device)).names
    finally:
        _backend.unregister_kernels("review22c_op")
        torch.compiler.reset()


# ---- retain_grad accumulated by several threads ---------------------------------------------------------------
def test_a_retained_gradient_adds_every_threads_backward(device, monkeypatch):
    """PyTorch: a non-leaf's retained .grad accumulates every backward pass through it (autograd.grad's too), so
    two threads' backward passes of one graph (retain_graph=True) leave twice the gradient, as two passes in turn
    do.  Before: the retain_grad hook read .grad and stored the sum unlocked; two threads storing at once lost one
    contribution (8 threads: 2-7 times the gradient instead of 8).  Here both threads reach the store together."""
    from coretorch.tensor import Tensor
    x = torch.arange(6.0, device=device, requires_grad=True)
    h = x * 2
    local = threading.local()
    h.register_hook(lambda g: setattr(local, "armed", True))  # (runs before the retain_grad hook)
    h.retain_grad()
    y = (h * h).sum()
    meet = threading.Barrier(2, timeout=0.5)
    clone = Tensor.clone

    def clone_together(self, *a, **kw):  # the retain_grad hook's first store: both threads there at once
        if getattr(local, "armed", False):
            local.armed = False
            try:
                meet.wait()
            except threading.BrokenBarrierError:
                pass  # (the other thread waits for this one's store: the lock)
        return clone(self, *a, **kw)

    monkeypatch.setattr(Tensor, "clone", clone_together)
    ts = [threading.Thread(target=y.backward, kwargs={"retain_graph": True}) for _ in range(2)]
    [t.start() for t in ts]
    [t.join(timeout=30) for t in ts]
    monkeypatch.undo()
    assert torch.equal(h.grad, 2 * (2 * h.detach()))
    assert torch.equal(x.grad, 2 * (8 * x.detach()))


# ---- a compiled backward storing first gradients from two threads ---------------------------------------------
def test_two_threads_replaying_a_backward_into_fresh_gradients_add_both(device, monkeypatch):
    """Eager: two threads' loss.backward() into one model whose .grad are None leave the sum of both gradients
    (the first stores, the second adds: AccumulateGrad under its lock).  A compiled step replays the capture whose
    guards saw .grad None: it stores the new gradient.  Before: two threads past those guards at once both stored,
    the second over the first (one thread's gradient lost, silently; 8 threads x 10 steps: a fraction of the sum).
    Now a replay's first gradient is stored or added holding the accumulation lock."""
    from coretorch._compile.config import config
    monkeypatch.setattr(config, "lower", False)  # (the plain replay function: its MAKE is patched below)
    torch.compiler.reset()
    m = torch.nn.Linear(4, 3).to(device)
    with torch.no_grad():  # (dyadic values: every sum exact)
        m.weight.copy_(torch.arange(12.0).reshape(3, 4) / 8)
        m.bias.copy_(torch.tensor([0.5, -0.25, 1.0]))

    def step(x):
        loss = (m(x) ** 2).sum()
        loss.backward()
        return loss.detach()

    xs = [torch.arange(8.0, device=device).reshape(2, 4) / 4 + i for i in range(2)]
    for x in xs:
        step(x)
    want = [p.grad.clone() for p in m.parameters()]
    cf = torch.compile(step)
    for _ in range(2):
        m.zero_grad()
        cf(xs[0])  # the capture, then a replay (.grad None)
    m.zero_grad()
    meet = threading.Barrier(2, timeout=10)
    local = threading.local()
    make = _replay._GLOBALS["MAKE"]

    def make_together(*a, **kw):  # the first write-back (a .grad) of each thread: both past the guards
        if not getattr(local, "met", True):
            local.met = True
            try:
                meet.wait()
            except threading.BrokenBarrierError:
                pass
        return make(*a, **kw)

    def run(x):
        local.met = False
        cf(x)

    replays = cf.replays
    entry = next(e for e in cf._cache.values() if e.replay is not None)
    monkeypatch.setitem(entry.replay.__globals__, "MAKE", make_together)  # (its own copy of _replay._GLOBALS)
    ts = [threading.Thread(target=run, args=(x,)) for x in xs]
    [t.start() for t in ts]
    [t.join(timeout=30) for t in ts]
    monkeypatch.undo()
    assert cf.replays == replays + 2
    for p, w in zip(m.parameters(), want):
        assert torch.equal(p.grad, w)
    torch.compiler.reset()


# ---- a dict the step reads, changed by another thread while the guards read it --------------------------------
def test_a_dict_the_step_reads_gets_an_entry_from_another_thread_during_the_guards(device):
    """Eager: a step reading cfg["scale"] runs while a monitoring thread adds entries to cfg.  A compiled call keys
    the dicts its function reads by their entries (guards.contents) at every call.  Before: that loop ran Python
    code per entry (a number's comparison), so another thread adding an entry meanwhile raised
    ``RuntimeError: dictionary changed size during iteration`` (1 call in ~2000 with a thread adding and removing
    entries).  Here the other thread adds its entry exactly while the guards compare a number of the dict."""
    added: list = []

    class Scale(float):  # a number whose comparison lets another thread add an entry (once)
        __slots__ = ()

        def __ne__(self, other):
            if added == [False]:
                added[0] = True
                t = threading.Thread(target=cfg.__setitem__, args=("seen_by_a_monitor", 1))
                t.start()
                t.join(timeout=10)
            return float(self) != other

        __hash__ = float.__hash__

    cfg = {"scale": 2.0, "mode": Scale(3)}

    def step(x):
        return x * cfg["scale"] + float(cfg["mode"])

    cf = torch.compile(step)
    x = torch.ones(3, device=device)
    cf(x)
    cf(x)
    added.append(False)  # the next call's guards
    assert torch.equal(cf(x), step(x))
    assert added == [True] and "seen_by_a_monitor" in cfg
    torch.compiler.reset()


def test_two_threads_first_backward_into_a_non_leaf_input_both_count(device, monkeypatch):
    """PyTorch: y.backward(inputs=[h]) with h a non-leaf accumulates into h.grad (h retains its gradient from
    then on); two threads doing it at once leave twice the gradient.  Before: retain_grad marked h as retaining
    before its hook was installed, so the other thread's backward, seeing the mark, ran without the hook and its
    gradient was lost (8 threads: 2-7 times the gradient).  Here the other thread's backward starts exactly while
    the first thread installs the hook."""
    from coretorch.autograd.graph import Node
    x = torch.arange(4.0, device=device, requires_grad=True)
    h = x * 3
    y = (h * h).sum()
    register = Node._register_tensor_hook
    others: list = []

    def register_while_another_thread_runs(self, out_nr, fn):
        if getattr(fn, "_retains_grad", False) and not others:
            t = threading.Thread(target=y.backward, kwargs={"inputs": [h], "retain_graph": True})
            others.append(t)
            t.start()
            t.join(timeout=0.5)  # (before: it ran its backward now; now it waits for the hook)
        return register(self, out_nr, fn)

    monkeypatch.setattr(Node, "_register_tensor_hook", register_while_another_thread_runs)
    y.backward(inputs=[h], retain_graph=True)
    others[0].join(timeout=30)
    monkeypatch.undo()
    assert torch.equal(h.grad, 2 * (2 * h.detach())) and x.grad is None


# ---- manual_seed while another thread first uses a device's generator ----------------------------------------
def test_manual_seed_while_another_thread_makes_a_default_generator(monkeypatch):
    """PyTorch: torch.manual_seed seeds every default generator, whatever other threads do.  It loops over the
    default generators made so far, seeding each (Python code).  Before: another thread making a device's default
    generator then (its first draw there) raised ``RuntimeError: dictionary changed size during iteration`` in
    manual_seed.  Here that happens while the cpu generator is seeded."""
    from coretorch.device import device as Device
    from coretorch.ops import random as rops
    cpu = rops.default_for()
    made: list = []
    seed = type(cpu).manual_seed

    def seed_while_another_thread_makes_one(self, s):
        if not made:
            made.append(True)  # (another device's default generator, as a thread's first draw there makes one)
            t = threading.Thread(target=rops._defaults.__setitem__, args=(Device("cpu", 7), rops.Generator()))
            t.start()
            t.join(timeout=10)
        return seed(self, s)

    monkeypatch.setattr(type(cpu), "manual_seed", seed_while_another_thread_makes_one)
    try:
        assert torch.manual_seed(5) is cpu
    finally:
        rops._defaults.pop(Device("cpu", 7), None)
    assert made and cpu.initial_seed() == 5


# ---- a process forked while another thread captures ----------------------------------------------------------
def _child_after_a_fork_during_a_capture(q) -> None:
    from coretorch import _backend
    from coretorch._compile.capture import state
    a = torch.ones(3)
    for _ in range(10):
        a = a + 1
    f = torch.compile(lambda x: x * 2)
    outs = [f(a) for _ in range(3)]
    table = _backend.get_table(torch.device("cpu"))
    q.put((state["recorder"] is None, getattr(table.add, "__name__", "") != "wrap", f.replays,
           [o.tolist() for o in outs]))


def test_a_process_forked_while_another_thread_captures():
    """Eager: a process forked by one thread (a DataLoader's workers started by a data thread) while another
    thread runs a step works as a fresh process.  Before: forked during a capture, the child kept the capture's
    patches forever (its thread is not in the child): every kernel of the child went through the recorder, which
    kept its last 4096 results alive, and the capture lock stayed taken, so no compiled call of the child ever
    captured (it ran eagerly at every call)."""
    import multiprocessing
    from coretorch._compile.capture import state
    torch.compiler.reset()
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    forked = threading.Event()
    seen: list = []

    def fork_during_the_capture():
        deadline = time.monotonic() + 10
        while state["recorder"] is None and time.monotonic() < deadline:
            time.sleep(0.001)
        p = ctx.Process(target=_child_after_a_fork_during_a_capture, args=(q,))
        p.start()
        seen.append(q.get(timeout=60))
        p.join(timeout=60)
        forked.set()

    def step(x):
        y = x * 2
        forked.wait(60)
        return y + 1

    t = threading.Thread(target=fork_during_the_capture)
    t.start()
    cf = torch.compile(step)
    assert torch.equal(cf(torch.ones(3)), torch.full((3,), 3.0))
    t.join(timeout=60)
    assert seen == [(True, True, 2, [[22.0] * 3] * 3)]
    torch.compiler.reset()
