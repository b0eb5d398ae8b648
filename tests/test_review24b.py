"""Review 24b: threads, a third pass (eager and compiled). What a multi-threaded PyTorch program relies on: the
settings PyTorch keeps per thread (the saved-tensor hooks switch, the accelerator's current device index) stay in
their thread and a new thread starts from the defaults; a decorator-context-manager entered by several threads at
once restores each thread's own state; torch.save changes no process-wide state (the umask) another thread's files
would see; a sampler PyTorch runs as one kernel (Gamma, Dirichlet, Beta, binomial) is one whole draw from the shared
generator, whatever other threads draw; a compiled function reading a ContextVar computes with the calling
context's value, and one reading an array.array, a memoryview, a multiprocessing.Value or a ctypes value another
thread writes reads its current value.  Each scenario is ordered with events/barriers (no sleeps; a bounded join
where the fixed code must keep the other thread waiting), so it runs the same interleaving every time."""
import array
import contextvars
import ctypes
import multiprocessing
import os
import stat
import threading

import pytest

import coretorch as torch


def _in_a_thread(fn):
    """``fn()`` run in a new thread; its result (an exception is re-raised here)."""
    out: list = []

    def run():
        try:
            out.append((True, fn()))
        except BaseException as e:  # noqa: BLE001  (handed to the caller)
            out.append((False, e))
    t = threading.Thread(target=run)
    t.start()
    t.join(timeout=60)
    ok, value = out[0]
    if not ok:
        raise value
    return value


# ---- disable_saved_tensors_hooks is per thread ----------------------------------------------------------------
def test_disable_saved_tensors_hooks_stays_in_its_thread():
    """PyTorch keeps the switch in SavedTensorDefaultHooksTLS: inside one thread's
    ``disable_saved_tensors_hooks("msg")`` another thread's ``save_on_cpu()`` (a saved_tensors_hooks) works, while
    the disabling thread's raises ``RuntimeError: msg``.  Before: coretorch's switch was a process-wide global, so
    the other thread's ``save_on_cpu()`` raised the message too."""
    def use_save_on_cpu():
        with torch.autograd.graph.save_on_cpu():
            x = torch.ones(3, requires_grad=True)
            (x * x).sum().backward()
            return x.grad.tolist()

    with torch.autograd.graph.disable_saved_tensors_hooks("hooks are off in this thread"):
        assert _in_a_thread(use_save_on_cpu) == [2.0, 2.0, 2.0]
        with pytest.raises(RuntimeError, match="hooks are off in this thread"):
            use_save_on_cpu()
    assert use_save_on_cpu() == [2.0, 2.0, 2.0]


def test_disable_saved_tensors_hooks_blocks_overlapping_in_two_threads_end_enabled():
    """Thread A enters the block, thread B enters another, A leaves, B leaves (one instance, as a decorator uses
    it): in PyTorch each thread's switch comes back to its own state, so save_on_cpu works everywhere afterwards.
    Before: the global switch restored by A's exit was B's value, and B's exit put A's message back for good: every
    later ``save_on_cpu()`` of every thread raised."""
    cm = torch.autograd.graph.disable_saved_tensors_hooks("off")
    steps = [threading.Event() for _ in range(3)]
    seen: dict = {}

    def a():
        with cm:
            steps[0].set()
            steps[1].wait(10)
        steps[2].set()

    def b():
        steps[0].wait(10)
        with cm:
            steps[1].set()
            steps[2].wait(10)
            try:
                with torch.autograd.graph.save_on_cpu():
                    seen["b_inside"] = "ran"
            except RuntimeError as e:
                seen["b_inside"] = str(e)
        with torch.autograd.graph.save_on_cpu():
            seen["b_after"] = "ran"

    ts = [threading.Thread(target=a), threading.Thread(target=b)]
    [t.start() for t in ts]
    [t.join(timeout=30) for t in ts]
    assert seen == {"b_inside": "off", "b_after": "ran"}
    with torch.autograd.graph.save_on_cpu():  # (this thread never disabled it)
        pass


# ---- an autocast decorator run by two threads at once ---------------------------------------------------------
def test_an_autocast_decorated_function_in_two_threads_restores_each_threads_state():
    """``@torch.autocast("cpu")`` on a function that two threads run at once: thread A calls it outside any
    autocast region, the main thread calls it inside one.  Each thread's autocast state after the call is the one
    it had before (PyTorch's no_grad decorator enters a copy per call for this).  Before: both calls entered the
    one instance, which keeps the caller's previous state on itself: A's exit restored the main thread's state
    (on), so A ran every later op under autocast (bfloat16 matmuls, silently)."""
    inside, go = threading.Event(), threading.Event()

    @torch.autocast("cpu")
    def f(wait):
        if wait:
            inside.set()
            go.wait(10)
        return torch.is_autocast_enabled("cpu")

    out: dict = {}

    def a():
        out["a_in"] = f(True)
        out["a_after"] = torch.is_autocast_enabled("cpu")
        out["a_mm"] = torch.mm(torch.ones(2, 2), torch.ones(2, 2)).dtype

    t = threading.Thread(target=a)
    t.start()
    assert inside.wait(10)
    with torch.autocast("cpu"):
        out["m_in"] = f(False)
        go.set()
        t.join(timeout=30)
        out["m_still"] = torch.is_autocast_enabled("cpu")
    out["m_after"] = torch.is_autocast_enabled("cpu")
    assert out == {"a_in": True, "m_in": True, "a_after": False, "a_mm": torch.float32, "m_still": True,
                   "m_after": False}


def test_an_autocast_decorator_keeps_its_settings_per_call():
    """The decorated function runs under the decorator's own settings at every call (dtype, enabled), as PyTorch's;
    the copy entered per call changes nothing there."""
    @torch.autocast("cpu", dtype=torch.float16)
    def f():
        return torch.get_autocast_dtype("cpu"), torch.is_autocast_enabled("cpu")

    @torch.autocast("cpu", enabled=False)
    def g():
        return torch.is_autocast_enabled("cpu")

    assert f() == (torch.float16, True) and _in_a_thread(f) == (torch.float16, True)
    with torch.autocast("cpu"):
        assert g() is False and torch.is_autocast_enabled("cpu")
    assert torch.get_autocast_dtype("cpu") is torch.bfloat16 and not torch.is_autocast_enabled("cpu")


# ---- the accelerator's current device index is per thread -----------------------------------------------------
class _TwoDevices:
    def device_count(self) -> int:
        return 2


def test_the_current_accelerator_index_is_per_thread(monkeypatch):
    """PyTorch's current device is per thread (CUDA's cudaSetDevice is a host thread's): after
    ``torch.accelerator.set_device_index(1)`` a new thread's ``current_device_index()`` is 0, and a thread's own
    ``set_device_index`` / ``device_index`` block leaves the main thread's index alone.  Before: one module-level
    index for every thread.  (A stand-in accelerator with two devices: this machine has one.)"""
    from coretorch import accelerator
    monkeypatch.setattr(accelerator, "_backend", lambda: ("opencl", _TwoDevices()))
    assert accelerator.current_device_index() == 0
    torch.accelerator.set_device_index(1)
    try:
        assert torch.accelerator.current_device_index() == 1
        assert _in_a_thread(torch.accelerator.current_device_index) == 0

        def own():
            with torch.accelerator.device_index(1):
                inside = torch.accelerator.current_device_index()
            torch.accelerator.set_device_index(0)
            return inside, torch.accelerator.current_device_index()
        torch.accelerator.set_device_index(0)
        assert _in_a_thread(own) == (1, 0)
        torch.accelerator.set_device_index(1)
        assert _in_a_thread(lambda: torch.accelerator.set_device_index(0)) is None
        assert torch.accelerator.current_device_index() == 1
    finally:
        torch.accelerator.set_device_index(0)


# ---- torch.save leaves the process umask alone ----------------------------------------------------------------
@pytest.mark.skipif(not hasattr(os, "umask") or os.name != "posix", reason="file modes and the umask are POSIX's")
def test_save_never_changes_the_process_umask(tmp_path, monkeypatch):
    """PyTorch's torch.save opens its file with ``open(f, "wb")``: the kernel applies the process umask and nothing
    else changes.  Before: coretorch read the umask by setting it (``os.umask(0)`` then back), a process-wide
    change: a file another thread created in between (here a log file, at exactly that moment) was world-writable
    (0o666 under a 0o027 umask), and two saves at once could leave the umask at 0 for good.  Now the temporary
    file is created with mode 0o666 for the kernel to reduce, and os.umask is never called."""
    real_umask = os.umask
    others: list = []

    def umask_with_another_thread_writing(mask):
        prev = real_umask(mask)
        if mask == 0:  # the window: another thread creates its file now
            path = tmp_path / f"log{len(others)}.txt"
            t = threading.Thread(target=path.write_text, args=("line",))
            t.start()
            t.join(timeout=10)
            others.append(stat.S_IMODE(path.stat().st_mode))
        return prev

    old = real_umask(0o027)
    try:
        monkeypatch.setattr(os, "umask", umask_with_another_thread_writing)
        target = tmp_path / "w.pt"
        torch.save({"w": torch.arange(4.0)}, target)
        monkeypatch.undo()
        assert others == []  # (before: [0o666], a world-writable log file)
        assert stat.S_IMODE(target.stat().st_mode) == 0o640  # 0o666 less the umask, as open(f, "wb")
        target.chmod(0o600)
        torch.save({"w": torch.ones(2)}, target)  # a file replaced keeps its mode, as open(f, "wb") keeps it
        assert stat.S_IMODE(target.stat().st_mode) == 0o600
        assert torch.equal(torch.load(target)["w"], torch.ones(2))
        assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    finally:
        assert real_umask(old) == 0o027


# ---- a multi-round sampler is one whole draw from the shared generator ----------------------------------------
_SAMPLERS = {
    "dirichlet": ("coretorch.ops._gamma", lambda d: torch.distributions.Dirichlet(torch.ones(6, 3, device=d)).sample()),
    "beta": ("coretorch.ops._gamma",
             lambda d: torch.distributions.Beta(torch.full((8,), 0.5, device=d), torch.full((8,), 2.0, device=d))
             .sample()),
    "gamma": ("coretorch.ops._gamma", lambda d: torch._standard_gamma(torch.full((8,), 0.7, device=d))),
    "binomial": ("coretorch.ops._binomial",
                 lambda d: torch.binomial(torch.full((8,), 5.0, device=d), torch.full((8,), 0.3, device=d))),
    "binomial_btrs": ("coretorch.ops._binomial",
                      lambda d: torch.distributions.Binomial(100, torch.full((8,), 0.4, device=d)).sample()),
}


@pytest.mark.parametrize("which", sorted(_SAMPLERS))
def test_another_threads_draw_between_a_samplers_rounds_waits_for_it(device, which, monkeypatch):
    """PyTorch's _standard_gamma / _sample_dirichlet / binomial are single kernels holding the generator's mutex:
    a draw of another thread from the shared default generator comes wholly before or after the sample (here
    after, as the other thread starts during the sample), so both get the numbers a sequential run gives them.
    coretorch's samplers take rejection rounds, each a draw (one host read per round).  Before: another thread's
    ``torch.rand`` between two rounds took numbers from the middle of the sample's stream (the sample and the other
    thread's numbers were both those of no sequential order).  Now the sampler holds the generators' lock for all
    its rounds."""
    import importlib
    module_name, sample = _SAMPLERS[which]
    mod = importlib.import_module(module_name)
    drawn: list = []
    started: list = []
    read = mod.data_read

    def read_while_another_thread_draws(*a, **kw):
        if not started:  # the first round's host read: another thread draws now
            t = threading.Thread(target=lambda: drawn.append(torch.rand(16, device=device).cpu()))
            started.append(t)
            t.start()
            t.join(timeout=0.5)  # (before: it drew now; now it waits for the sample's end)
        return read(*a, **kw)

    torch.manual_seed(11)
    want_sample = sample(device).cpu()
    want_other = torch.rand(16, device=device).cpu()
    monkeypatch.setattr(mod, "data_read", read_while_another_thread_draws)
    torch.manual_seed(11)
    got = sample(device).cpu()
    started[0].join(timeout=30)
    monkeypatch.undo()
    assert torch.equal(drawn[0], want_other)
    assert torch.equal(got, want_sample)


# ---- a compiled function reading a ContextVar ------------------------------------------------------------------
_SCALE = contextvars.ContextVar("review24b_scale", default=1.0)
_BIAS = contextvars.ContextVar("review24b_bias", default=(0.0, 0.5))


class _Holder:
    def __init__(self) -> None:
        self.cv = contextvars.ContextVar("review24b_held", default=1.0)


def test_a_compiled_function_reads_each_threads_contextvar(device):
    """A request handler's per-request setting kept in a ``contextvars.ContextVar`` (each thread, each asyncio task
    its own value) read by a compiled function: PyTorch's compiled call computes with the value the calling
    context holds, as eager does (dynamo does not bake it).  Before: the capture baked the value it read (a
    ContextVar was a guard root keyed by identity): every replay, in any thread, multiplied by the first call's
    scale (silently), also after ``cv.set`` in the same thread.  Now the guard keys it by the value the calling
    context holds (as a threading.local's attributes): four threads with four scales, each replaying its own."""
    held = _Holder()

    def f(x):
        return x * _SCALE.get() + _BIAS.get()[1] - held.cv.get()

    torch.compiler.reset()
    cf = torch.compile(f)
    x = torch.arange(3.0, device=device)
    for _ in range(3):
        assert torch.equal(cf(x), f(x))
    _SCALE.set(3.0)  # (this thread's context, after the capture)
    assert torch.equal(cf(x), x * 3.0 + 0.5 - 1.0)
    meet = threading.Barrier(4, timeout=30)
    out: dict = {}

    def run(i):
        _SCALE.set(float(i + 2))
        _BIAS.set((0.0, float(i)))
        held.cv.set(float(10 * i))
        meet.wait()
        out[i] = [cf(x).cpu() for _ in range(5)]

    ts = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    [t.start() for t in ts]
    [t.join(timeout=60) for t in ts]
    for i in range(4):
        want = (x * float(i + 2) + float(i) - float(10 * i)).cpu()
        assert len(out[i]) == 5 and all(torch.equal(o, want) for o in out[i]), i
    assert torch.equal(cf(x), x * 3.0 + 0.5 - 1.0)  # (this thread's value still)
    torch.compiler.reset()


_CFG = contextvars.ContextVar("review24b_cfg")


def test_a_compiled_function_reads_a_dict_a_contextvar_holds(device):
    """A per-request config dict in a ContextVar, changed in place between calls (``cfg["scale"] = ...``): PyTorch's
    compiled call reads the entry at each call, as eager.  Before: the guard keyed the ContextVar (or, with the
    first fix alone, the dict it holds) by identity, so replays reused the first call's scale (silently).  Now a
    ContextVar root is keyed as its value would be as a root of its own: a dict by its entries."""
    def f(x):
        return x * _CFG.get()["scale"]

    torch.compiler.reset()
    cf = torch.compile(f)
    x = torch.arange(3.0, device=device)
    cfg = {"scale": 1.0}
    token = _CFG.set(cfg)
    try:
        for i in range(4):
            cfg["scale"] = float(i + 1)
            for _ in range(3):
                assert torch.equal(cf(x), x * float(i + 1))
        assert cf.replays >= 4  # (the captures replay: not every call eager)
    finally:
        _CFG.reset(token)
        torch.compiler.reset()


_ARR = array.array("d", [1.0])
_VIEW = memoryview(bytearray(b"\x01"))


@pytest.mark.parametrize("which", ["array", "memoryview"])
def test_a_compiled_function_reads_a_shared_buffer_changed_in_place(device, which):
    """A data-producing thread's shared settings written in place between calls: an ``array.array`` (the stdlib's
    typed buffer, shared with threads and C code) or a ``memoryview`` of a buffer.  PyTorch's compiled call reads
    the current value, as eager.  Before: these roots were keyed by identity alone (unlike a list, dict, set or
    bytearray), so replays reused the capture's number (silently).  Now they are keyed by their bytes."""
    read, write = {"array": (lambda: _ARR[0], lambda v: _ARR.__setitem__(0, v)),
                   "memoryview": (lambda: float(_VIEW[0]), lambda v: _VIEW.__setitem__(0, int(v)))}[which]
    if which == "array":
        def f(x):
            return x * _ARR[0]
    else:
        def f(x):
            return x * _VIEW[0]
    torch.compiler.reset()
    cf = torch.compile(f)
    x = torch.arange(3.0, device=device)
    try:
        for i in range(4):
            write(float(i + 2))
            for _ in range(3):
                assert torch.equal(cf(x), x * read())
        assert cf.replays >= 4
    finally:
        write(1.0)
        torch.compiler.reset()


_SHARED = multiprocessing.Value("d", 1.0)
_RAW = ctypes.c_double(1.0)


@pytest.mark.parametrize("which", ["mp_value", "ctypes"])
def test_a_compiled_function_reads_a_shared_value_another_thread_sets(device, which):
    """A training step reading a ``multiprocessing.Value`` a monitor thread or a worker process writes (a
    curriculum level, an epoch counter), or a ctypes value: PyTorch's compiled call reads the current value (dynamo
    runs the ctypes reads eagerly).  Before: these roots were keyed by identity, so replays kept the value the
    capture read (silently).  Now they are keyed by their current value (the ctypes object's bytes)."""
    holder = _SHARED if which == "mp_value" else _RAW

    def f(x):
        return x * holder.value

    def set_to(i):
        holder.value = float(i + 2)

    def want(i):
        return float(i + 2)
    torch.compiler.reset()
    cf = torch.compile(f)
    x = torch.arange(3.0, device=device)
    try:
        for i in range(4):
            t = threading.Thread(target=set_to, args=(i,))  # (another thread sets it between the calls)
            t.start()
            t.join(timeout=30)
            for _ in range(3):
                assert torch.equal(cf(x), x * want(i))
        assert cf.replays >= 4
    finally:
        _SHARED.value = _RAW.value = 1.0
        torch.compiler.reset()
