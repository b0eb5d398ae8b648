"""Review 17a of coretorch.compile: threads, grad modes, re-entrancy and context managers around compiled code.
Compiled functions and modules called from several threads (shared or per-thread models, captures racing replays,
``compiler.reset()`` from another thread), grad-mode and RNG contexts around and inside compiled calls, compiled
callables calling each other or used as hooks.  Each test runs the same calls eagerly and compiled and compares what
the caller sees: bitwise on cpu, within float32 rounding where a device's fused kernels differ in evaluation order."""
from __future__ import annotations

import threading

import pytest

import coretorch as torch
import coretorch.nn as nn

from _compile_helpers import close as _close, rand as _rand


def test_a_reset_from_another_thread_during_a_capture(device):
    """``torch.compiler.reset()`` called by another thread while a compiled step captures: eager runs the step and
    returns its result.  Compiled before the fix: the reset set the function's global names to None under the running
    capture, whose check of what the call wrote raised ``AssertionError`` after the step had run (its state updated,
    no result); a call racing the reset into ``_lookup`` raised it before running."""
    torch.manual_seed(0)
    m = nn.Linear(4, 3).to(device)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    inside, resumed = threading.Event(), threading.Event()

    def step(x):
        opt.zero_grad()
        loss = m(x).pow(2).mean()
        loss.backward()
        opt.step()
        if not resumed.is_set():  # (the capture call only: wait while the other thread resets)
            inside.set()
            resumed.wait(10)
        return loss.detach()

    ref = [p.detach().clone() for p in m.parameters()]
    got: list = []

    def run():
        try:
            got.append(f(_rand(device, 5, 4)))
        except Exception as e:  # (reported by the main thread)
            got.append(e)
    f = torch.compile(step)
    t = threading.Thread(target=run)
    t.start()
    assert inside.wait(10)
    torch.compiler.reset()
    resumed.set()
    t.join(10)
    assert not isinstance(got[0], Exception), repr(got[0])
    # eagerly, on a copy of the starting state
    torch.manual_seed(0)
    m2 = nn.Linear(4, 3).to(device)
    for p, q in zip(m2.parameters(), ref):
        _close(device, p, q, "the same start")
    opt2 = torch.optim.SGD(m2.parameters(), lr=0.1)
    opt2.zero_grad()
    loss = m2(_rand(device, 5, 4)).pow(2).mean()
    loss.backward()
    opt2.step()
    _close(device, loss, got[0], "loss")
    for p, q in zip(m.parameters(), m2.parameters()):
        _close(device, q, p, "parameter")
    for i in range(1, 4):  # later calls capture and replay as eager steps
        opt2.zero_grad()
        x = _rand(device, 5, 4, seed=i)
        loss = m2(x).pow(2).mean()
        loss.backward()
        opt2.step()
        _close(device, loss, f(x), f"loss {i}")
    for p, q in zip(m.parameters(), m2.parameters()):
        _close(device, q, p, "parameter")


class _Trainer:
    def __init__(self, m, opt):
        self.m, self.opt = m, opt

    def step(self, x):
        self.opt.zero_grad()
        loss = self.m(x).pow(2).mean()
        loss.backward()
        self.opt.step()
        return loss.detach()


def _step_of(m, opt):
    def step(x):
        opt.zero_grad()
        loss = m(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss.detach()
    return step


@pytest.mark.parametrize("how", ["closure_function", "trainer_closure", "trainer_argument", "function_argument"])
def test_a_compiled_wrapper_of_a_training_step_held_elsewhere(device, how):
    """``torch.compile(lambda x: step(x))`` where ``step`` is a local function whose closure holds the model and the
    optimizer (or a trainer object holding them, in the closure or passed as an argument): eager trains.  Compiled
    before the fix: the roots did not show the model, so the capture found its parameters by their arrays only and
    its replay never wrote their ``.grad``: the optimizer stepped with the capture's stale gradient at every call
    (losses and parameters silently diverged from the third call)."""
    runs = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).to(device)
        opt = torch.optim.SGD(m.parameters(), lr=0.05)
        step, trainer = _step_of(m, opt), _Trainer(m, opt)
        if how == "closure_function":
            fn, extra = (lambda x: step(x) * 1), ()
        elif how == "trainer_closure":
            fn, extra = (lambda x: trainer.step(x) * 1), ()
        elif how == "trainer_argument":
            fn, extra = (lambda x, t: t.step(x) * 1), (trainer,)
        else:
            fn, extra = (lambda x, s: s(x) * 1), (step,)
        f = torch.compile(fn) if compiled else fn
        losses = [f(_rand(device, 3, 4, seed=i), *extra) for i in range(5)]
        runs.append((losses, [p.detach().clone() for p in m.parameters()]))
        if compiled:  # (found through the helper: replayed, with the gradients written back)
            assert f.replays >= 2
    (le, pe), (lc, pc) = runs
    for i, (a, b) in enumerate(zip(le, lc)):
        _close(device, a, b, f"loss {i}")
    for a, b in zip(pe, pc):
        _close(device, a, b, "parameter")


class _Holder:
    def __init__(self, inner):
        self.inner = inner


def test_a_model_held_deeper_than_the_guards_look_is_a_graph_break(device):
    """A training step reaching its model through three plain objects (``h.inner.inner.step(x)``), deeper than the
    roots look: eager trains.  Compiled before the fix: its parameters were found by their arrays only and their
    ``.grad`` never written by the replay (the optimizer stepped with the capture's gradient); now the capture sees
    a ``.grad`` the step wrote on such a tensor and breaks the graph (the calls run eagerly)."""
    runs = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).to(device)
        h = _Holder(_Holder(_Holder(_Trainer(m, torch.optim.SGD(m.parameters(), lr=0.05)))))

        def fn(x):
            return h.inner.inner.inner.step(x)
        f = torch.compile(fn) if compiled else fn
        losses = [f(_rand(device, 3, 4, seed=i)) for i in range(4)]
        runs.append((losses, [p.detach().clone() for p in m.parameters()]))
    (le, pe), (lc, pc) = runs
    for i, (a, b) in enumerate(zip(le, lc)):
        _close(device, a, b, f"loss {i}")
    for a, b in zip(pe, pc):
        _close(device, a, b, "parameter")


class _Scaled(_Trainer):
    def __init__(self, m, opt):
        super().__init__(m, opt)
        self.cfg = _Holder(None)
        self.cfg.scale = 1.0

    def step(self, x):
        return super().step(x) * self.cfg.scale


@pytest.mark.parametrize("how", ["closure", "argument"])
def test_a_number_read_by_a_method_of_a_trainer_the_step_calls(device, how):
    """``lambda x: t.step(x)`` (``t`` in the closure, or passed as an argument) whose ``step`` reads
    ``self.cfg.scale``: eager uses the new number after ``t.cfg.scale = 3.0``.  Compiled before the fix: the attribute
    names the guards fingerprint came from the function's own code and its helper functions, not from the methods
    it calls on objects, so the replay kept the capture's 1.0."""
    runs = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = nn.Linear(4, 2).to(device)
        t = _Scaled(m, torch.optim.SGD(m.parameters(), lr=0.05))
        fn = (lambda x: t.step(x)) if how == "closure" else (lambda x, tr: tr.step(x))
        extra = () if how == "closure" else (t,)
        f = torch.compile(fn) if compiled else fn
        out = []
        for i in range(8):
            if i == 4:
                t.cfg.scale = 3.0
            out.append(f(_rand(device, 3, 4, seed=i), *extra))
        runs.append(out)
    for i, (a, b) in enumerate(zip(*runs)):
        _close(device, a, b, f"call {i}")


@pytest.mark.parametrize("what", ["result", "in_place"])
def test_work_the_step_hands_to_another_thread(device, what):
    """A step that runs part of its work in a thread pool (``pool.submit(lambda: x * 2).result()``, or an in-place
    update of a closure tensor there): eager computes it at every call.  Compiled before the fix: the other thread's
    kernels were not recorded (rightly, for an unrelated thread), so the replay read the capture's result as a
    constant (the first call's values at every call) and never updated the closure tensor."""
    from concurrent.futures import ThreadPoolExecutor
    runs = []
    with ThreadPoolExecutor(1) as pool:
        for compiled in (False, True):
            w = torch.ones(4, device=device)

            def fn(x):
                if what == "result":
                    return pool.submit(lambda: x * 2).result() + 1
                pool.submit(lambda: w.add_(x.sum())).result()
                return w * 2
            f = torch.compile(fn) if compiled else fn
            runs.append([f(_rand(device, 3, 4, seed=i)) for i in range(4)] + [w])
    for i, (a, b) in enumerate(zip(*runs)):
        _close(device, a, b, f"result {i}")


@pytest.mark.parametrize("kind", ["function", "module", "fullgraph"])
def test_another_thread_drawing_host_random_numbers_during_the_capture(device, kind):
    """A data-producing thread draws Python random numbers (an augmentation) while the training thread's first call
    captures: eager is unaffected.  Compiled before the fix: the capture saw Python's random state change (which it
    cannot tell from the step's own draw through a name bound before it) and kept a graph break for that guard set:
    every later call ran eagerly (with ``fullgraph=True`` the call raised ``Unsupported``).  Now such a break is tried
    again at a later call."""
    import random
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).to(device)
    inside, drawn = threading.Event(), threading.Event()

    def producer():
        inside.wait(10)
        random.random()
        drawn.set()
    threading.Thread(target=producer).start()

    if kind != "module":
        def fn(x):
            y = m(x)
            if not drawn.is_set():
                inside.set()
                drawn.wait(10)
            return y * 2
        f = torch.compile(fn, fullgraph=kind == "fullgraph")
    else:
        class Wait(nn.Module):
            def forward(self, x):
                if not drawn.is_set():
                    inside.set()
                    drawn.wait(10)
                return x * 2
        seq = nn.Sequential(m, Wait())
        fn = seq
        f = torch.compile(seq)
    with torch.no_grad():
        for i in range(4):
            x = _rand(device, 3, 4, seed=i)
            got = f(x)  # (first: the capture is the call the producer draws in)
            _close(device, fn(x), got, f"call {i}")
    replays = f._capture.replays if kind == "module" else f.replays
    assert replays >= 2


def test_another_thread_during_a_capture_is_not_compiling():
    """While one thread captures, another thread's ``torch.compiler.is_compiling()`` is False and it may use
    ``set_stance`` (PyTorch's compile state is per thread).  Before the fix: the other thread saw True (code that
    takes another path under compile took it there too) and ``set_stance`` raised ``RuntimeError: attempted to
    set_stance in a torch.compile region``."""
    inside, done = threading.Event(), threading.Event()
    seen: dict = {}

    def other():
        inside.wait(10)
        seen["compiling"] = torch.compiler.is_compiling()
        try:
            with torch.compiler.set_stance("eager_on_recompile"):
                seen["stance"] = "set"
        except RuntimeError as e:
            seen["stance"] = str(e)
        done.set()
    t = threading.Thread(target=other)
    t.start()

    def fn(x):
        seen["here"] = torch.compiler.is_compiling()
        inside.set()
        done.wait(10)
        return x * 2
    torch.compile(fn)(torch.ones(2))
    t.join(10)
    assert seen == {"here": True, "compiling": False, "stance": "set"}


class _GradInside(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc, self.head = nn.Linear(4, 8), nn.Linear(8, 2)

    def forward(self, x):
        h = self.enc(x).relu()
        with torch.enable_grad():
            return self.head(h)


def test_a_compiled_module_with_enable_grad_inside_called_under_no_grad(device):
    """A module whose forward runs its head under ``torch.enable_grad()``, called under ``torch.no_grad()``: eager's
    output requires grad (the head's graph) and a backward fills the head's ``.grad``.  Compiled before the fix: the
    capture recorded no backward as grad mode was off after the forward, so the replayed output had no graph
    (``requires_grad`` False, the backward raised)."""
    runs = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = _GradInside().to(device)
        f = torch.compile(m) if compiled else m
        out = []
        for i in range(4):
            m.zero_grad()
            with torch.no_grad():
                y = f(_rand(device, 3, 4, seed=i))
            assert y.requires_grad and y.grad_fn is not None
            y.pow(2).sum().backward()
            out += [y.detach(), m.head.weight.grad.clone(), m.head.bias.grad.clone()]
            assert m.enc.weight.grad is None
        runs.append(out)
    for i, (a, b) in enumerate(zip(*runs)):
        _close(device, a, b, f"result {i}")


def test_a_busy_unrelated_thread_past_the_noted_results_breaks_only_for_a_while(device, monkeypatch):
    """Past the results of other threads a capture notes (``foreign._MAX``), an array the step reads without a known
    source may be another thread's: that capture is a graph break, but only another thread may have caused it, so a
    later call captures again and replays (a busy inference thread must not keep a training step eager)."""
    from coretorch._compile import foreign
    monkeypatch.setattr(foreign, "_MAX", 0)
    t = torch.ones(3, 4, device=device)
    h = _Holder(_Holder(_Holder(_Holder(t))))  # (deeper than the roots look: read by its array)
    inside, done = threading.Event(), threading.Event()

    def other():
        inside.wait(10)
        torch.ones(2, device=device) * 2  # an unrelated kernel during the capture
        done.set()
    threading.Thread(target=other).start()

    def fn(x):
        if not done.is_set():
            inside.set()
            done.wait(10)
        return h.inner.inner.inner.inner + x
    f = torch.compile(fn)
    for i in range(5):
        x = _rand(device, 3, 4, seed=i)
        got = f(x)  # (first: the capture is the call the other thread runs in)
        _close(device, fn(x), got, f"call {i}")
    assert f.replays >= 2


def test_a_gradient_norm_of_a_model_held_deeper_than_the_guards_look(device):
    """A compiled gradient norm of a model reached through three plain objects, called after each eager backward
    (``zero_grad()`` puts new gradient tensors there): eager reads this call's gradients.  Compiled before the fix:
    the capture found the gradients by their arrays only, and its replay read the capture's gradient tensors (the
    first call's norm at every call); now that is a graph break."""
    runs = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = nn.Linear(4, 3).to(device)
        h = _Holder(_Holder(_Holder(m)))

        def norm():
            return torch.stack([p.grad.norm() for p in h.inner.inner.inner.parameters()]).sum()
        f = torch.compile(norm) if compiled else norm
        out = []
        for i in range(4):
            m.zero_grad()
            m(_rand(device, 2, 4, seed=i)).pow(2).sum().backward()
            out.append(f())
        runs.append(out)
    for i, (a, b) in enumerate(zip(*runs)):
        _close(device, a, b, f"call {i}")


def test_a_compiled_training_method_of_a_plain_trainer_class(device):
    """``@torch.compile`` on the ``step`` method of a plain trainer class (not a module) holding ``self.model`` and
    ``self.opt``: eager trains.  Compiled before the fix: the instance is an argument, whose model the roots did not
    show, so the replay never wrote the parameters' ``.grad`` (the optimizer stepped with the capture's gradient)."""
    class Trainer:
        def __init__(self, compiled):
            torch.manual_seed(0)
            self.model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).to(device)
            self.opt = torch.optim.SGD(self.model.parameters(), lr=0.05)

        def step(self, x):
            self.opt.zero_grad()
            loss = self.model(x).pow(2).mean()
            loss.backward()
            self.opt.step()
            return loss.detach()

    class Compiled(Trainer):
        step = torch.compile(Trainer.step)

    runs = []
    for t in (Trainer(False), Compiled(True)):
        losses = [t.step(_rand(device, 3, 4, seed=i)) for i in range(5)]
        runs.append(losses + [p.detach().clone() for p in t.model.parameters()])
    assert Compiled.step.replays >= 2
    for i, (a, b) in enumerate(zip(*runs)):
        _close(device, a, b, f"result {i}")


class _Scale:
    def __init__(self):
        self.scale = 1.0

    def run(self, x):
        return x * self.scale


class _UsesScale:
    def __init__(self):
        self.helper = _Scale()

    def step(self, x):
        return self.helper.run(x) + 1


@pytest.mark.parametrize("how", ["bound_method", "closure"])
def test_a_number_read_by_a_method_of_an_object_the_trainer_holds(device, how):
    """``torch.compile(t.step)`` (or ``lambda x: t.step(x)``) where ``step`` calls ``self.helper.run(x)``, which
    reads ``self.scale``: eager uses the new number after ``t.helper.scale = 3.0``.  Compiled before the fix: the
    names the guards fingerprint did not include those read by the methods of the objects the step reaches, so the
    replay kept the captured 1.0."""
    runs = []
    for compiled in (False, True):
        t = _UsesScale()
        fn = t.step if how == "bound_method" else (lambda x: t.step(x))
        f = torch.compile(fn) if compiled else fn
        out = []
        for i in range(6):
            if i == 3:
                t.helper.scale = 3.0
            out.append(f(_rand(device, 3, 4, seed=i)))
        runs.append(out)
    for i, (a, b) in enumerate(zip(*runs)):
        _close(device, a, b, f"call {i}")


def test_fork_rng_forks_a_device_generator_first_used_inside_the_block(device, monkeypatch):
    """``with torch.random.fork_rng(device_type=...)`` around a device's first random op, in a compiled function or
    not: on exit the device's generator is back where it was (PyTorch forks every device of the type), so the draw
    after the block repeats the one inside.  Before the fix only the default generators already made were saved: one
    first used inside the block was not restored (eager and compiled calls then disagreed depending on which ran
    first)."""
    from coretorch.ops import random as _r
    dev = torch.device(device)
    x = torch.ones(64, device=device)
    for compiled in (False, True):
        table_dev = torch._backend.get_table(dev).device
        monkeypatch.delitem(_r._defaults, table_dev, raising=False)  # (as in a fresh process: no generator yet)
        torch.manual_seed(5)

        def fn(x):
            with torch.random.fork_rng(device_type=dev.type):
                a = torch.rand(x.shape, device=x.device)
            return a, torch.rand(x.shape, device=x.device)
        f = torch.compile(fn) if compiled else fn
        a, b = f(x)
        _close(device, a, b, f"compiled={compiled}")
        monkeypatch.undo()


def test_a_capture_building_its_replay_while_another_thread_captures(device, monkeypatch):
    """Thread A's capture has run its call and builds its replay (planning and fusion read the device's kernel tables
    and compiler hooks) when thread B starts a capture.  Before the fix A had released the capture lock, so B
    patched the tables under A's build: A planned no temporaries (its kernels were not the tables' entries any more)
    and, where it planned some, raised ``AttributeError: 'function' object has no attribute 'empty_like'`` (B's
    wrapper in place of the ``compile_out`` hook) after its step had run.  Now B's call runs eagerly meanwhile."""
    from coretorch._compile import replay
    build = replay.build
    b_inside, a_built = threading.Event(), threading.Event()
    errors: list = []

    def slow_build(*a, **k):
        if threading.current_thread() is not threading.main_thread():
            return build(*a, **k)
        t = threading.Thread(target=other)
        t.start()
        assert b_inside.wait(10)
        try:
            return build(*a, **k)
        finally:
            a_built.set()
            t.join(10)

    def g(x):
        b_inside.set()
        a_built.wait(10)
        return x * 3

    def other():
        try:
            torch.compile(g)(torch.ones(4, device=device))
        except Exception as e:  # (reported below)
            errors.append(e)
    w = torch.ones(4, 4, device=device)

    def fn(x):
        return ((x @ w).exp() * 2 - x @ w).tanh().sum()
    x = _rand(device, 4, 4)
    alone = torch.compile(fn)
    alone(x)
    monkeypatch.setattr(replay, "build", slow_build)
    f = torch.compile(fn)
    got = f(x)
    monkeypatch.undo()
    assert not errors, errors
    assert f.planned == alone.planned and f.launches == alone.launches
    _close(device, fn(x), got, "result")
    _close(device, fn(x), f(x), "replay")


@pytest.mark.parametrize("how", ["consumed", "returned", "kept"])
def test_a_step_that_takes_its_batch_from_a_queue(device, how):
    """A consumer step that takes its batch out of a ``queue.Queue`` a producer thread fills (``x = q.get()`` inside
    the compiled function), and returns it too, or the producer keeps a reference too: eager trains on each batch.
    Compiled before the fix: the capture read the batch by its array as a tensor of the step (it died in the call, or
    lived in the result or the producer's list only), and every replay trained on the first batch again."""
    returned = how == "returned"
    history: list = []
    import queue
    runs = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = nn.Linear(4, 2).to(device)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        q: queue.Queue = queue.Queue()

        def producer():
            for i in range(5):
                q.put(_rand(device, 3, 4, seed=i))
                if how == "kept":
                    history.append(q.queue[-1])
        t = threading.Thread(target=producer)
        t.start()
        t.join()

        def step():
            x = q.get()
            opt.zero_grad()
            loss = m(x).pow(2).mean()
            loss.backward()
            opt.step()
            return (loss.detach(), x) if returned else loss.detach()
        f = torch.compile(step) if compiled else step
        outs = [f() for _ in range(5)]
        runs.append([o for out in outs for o in (out if returned else (out,))] +
                    [p.detach().clone() for p in m.parameters()])
    for i, (a, b) in enumerate(zip(*runs)):
        _close(device, a, b, f"result {i}")
