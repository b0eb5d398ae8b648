"""Review 19d: threads and concurrency in eager code. PyTorch lets several Python threads run ops, forward and
backward passes and optimizers at once; its per-thread settings (grad mode, autocast, inference mode, the default
device) stay in their thread and a new thread starts from the defaults, while the default dtype, the global RNG
and the modules' caches are shared by every thread and must stay consistent."""
import multiprocessing
import subprocess
import sys
import threading

import pytest

import coretorch
import coretorch as torch
from coretorch.plugins import hookimpl
from coretorch.testing import available_devices
from coretorch.utils.data import DataLoader
from test_hardening_threads import _in_threads, fast_switching  # noqa: F401  (a sibling test module: pytest puts
# tests/ on the path; fast_switching is a fixture)


def _in_a_thread(fn):
    out = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join(timeout=60)
    return out[0]


# ---- the default device is per thread ------------------------------------------------------------------------
@pytest.mark.parametrize("other", [d for d in available_devices() if d != "cpu"] or ["cpu"])
def test_the_default_device_is_per_thread(other):
    """PyTorch: torch.set_default_device applies to the calling thread (a DeviceContext on its thread-local mode
    stack): a new thread's factories make cpu tensors, and a thread that sets it leaves the main thread's
    factories on cpu. Before: one process-wide setting, so a worker's set_default_device("opencl") moved every
    other thread's torch.zeros onto opencl (and the main thread's setting reached every new thread)."""
    try:
        torch.set_default_device(other)
        seen = _in_a_thread(lambda: (torch.get_default_device().type, torch.zeros(1).device.type))
        assert seen == ("cpu", "cpu")
        assert torch.zeros(1).device.type == other
        torch.set_default_device(None)

        def worker():
            torch.set_default_device(other)
            return torch.arange(3).device.type
        assert _in_a_thread(worker) == other
        assert torch.get_default_device().type == "cpu"
        assert torch.zeros(1).device.type == "cpu" and torch.tensor([1.0]).device.type == "cpu"
    finally:
        torch.set_default_device(None)


# ---- a leaf's gradient node ----------------------------------------------------------------------------------
def test_threads_first_using_a_leaf_at_once_make_one_gradient_node(device, monkeypatch):
    """PyTorch makes a leaf's AccumulateGrad under the leaf's mutex: threads that first use a fresh parameter at
    once share one node, and torch.autograd.grad(loss, leaf) in each thread finds its gradient. Before: each
    thread could make its own node and the last one stayed on the leaf, so a thread whose graph reached the leaf
    through another node raised "One of the differentiated Tensors appears to not have been used in the graph"
    (or got only part of the gradient). Making the node waits here (a while) for every thread to be making one."""
    from coretorch.autograd import graph
    made = graph.AccumulateGrad.__init__
    meet = threading.Barrier(4, timeout=0.5)
    nodes = []

    def slow(self, variable):
        nodes.append(self)
        try:
            meet.wait()
        except threading.BrokenBarrierError:  # one thread at a time makes it: the others find it made
            pass
        made(self, variable)
    monkeypatch.setattr(graph.AccumulateGrad, "__init__", slow)
    w = torch.ones(3, device=device, requires_grad=True)
    xs = [torch.full((3,), float(i + 1), device=device) for i in range(4)]

    def work(x):
        y = (x * w).sum() + (w * w).sum()
        (g,) = torch.autograd.grad(y, w)
        return g.cpu().tolist()
    got = _in_threads([lambda x=x: work(x) for x in xs])
    assert got == [[i + 1.0 + 2.0] * 3 for i in range(4)]
    assert len(nodes) == 1 and w._accum is nodes[0]


# ---- forked DataLoader workers -------------------------------------------------------------------------------
class _BackwardDataset:
    """Each item is computed with autograd (a worker's own backward)."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        x = torch.full((2,), float(i), requires_grad=True)
        (x * x).sum().backward()
        return x.grad


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork start method")
def test_a_forked_worker_runs_a_backward_while_the_parent_accumulates_in_another_thread():
    """PyTorch: a DataLoader worker may run autograd while threads of the main process run backward passes (its
    gradient accumulation's mutexes are not inherited held). Before: a worker forked while another thread held
    the lock that every gradient accumulation takes waited on it forever in its first backward (the holder is not
    in the child). The lock is held here on purpose for the whole fork."""
    from coretorch.autograd.graph import ACCUMULATE_LOCK
    held, release = threading.Event(), threading.Event()

    def hold():
        with ACCUMULATE_LOCK:
            held.set()
            release.wait(60)
    t = threading.Thread(target=hold)
    t.start()
    try:
        assert held.wait(30)
        loader = DataLoader(_BackwardDataset(), batch_size=2, num_workers=1, multiprocessing_context="fork",
                            timeout=20)
        batches = [b.tolist() for b in loader]
    finally:
        release.set()
        t.join(30)
    assert batches == [[[0.0, 0.0], [2.0, 2.0]], [[4.0, 4.0], [6.0, 6.0]]]


# ---- __torch_function__ subclasses ---------------------------------------------------------------------------
class _Tagged(torch.Tensor):
    """A subclass with PyTorch's default ``__torch_function__`` behaviour (results keep the subclass)."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {})


def test_one_thread_inside_torch_function_leaves_the_others_dispatching():
    """PyTorch: the default __torch_function__ disables subclass dispatch for the op it runs in its own thread only
    (DisableTorchFunctionSubclass is thread-local), so another thread's ops on a subclass still reach its
    __torch_function__ and return the subclass. Before: one process-wide counter, so while any thread was inside
    a subclass op, every other thread's subclass ops skipped __torch_function__ and returned plain Tensors (and
    the unlocked += / -= could leave the counter off for good)."""
    inside, done = threading.Event(), threading.Event()

    def blocking():
        inside.set()
        done.wait(30)
        return torch.ones(1)

    t = threading.Thread(target=lambda: _Tagged.__torch_function__(blocking, (_Tagged,)))
    t.start()
    try:
        assert inside.wait(30)
        x = torch.ones(3).as_subclass(_Tagged)
        got = [type(x * 2), type(torch.add(x, 1)), type(x.sum())]
    finally:
        done.set()
        t.join(30)
    assert got == [_Tagged] * 3


# ---- a device's kernel table ---------------------------------------------------------------------------------
def test_threads_first_using_a_device_at_once_share_its_kernel_table(device, monkeypatch):
    """PyTorch: tensors made on one device by several threads are on the same device, whatever thread first used
    it. Before: threads first using a device at once each made its own kernel table (the core tells devices apart
    by table), so a thread's index tensor could sit on "another" table than the tensor it indexed: t[i] raised
    "indices should be either on cpu or on the same device as the indexed tensor (opencl:0)" and torch.cat
    "found at least two devices, opencl:0 and opencl:0". The tables are made afresh here (the process's own come
    back after the test), each thread's making waiting for the others'."""
    from coretorch import _backend
    monkeypatch.setattr(_backend, "_tables", {})
    made = _backend.KernelTable.__init__
    meet = threading.Barrier(4, timeout=0.5)

    def slow(self, backend, dev):
        try:
            meet.wait()
        except threading.BrokenBarrierError:
            pass
        made(self, backend, dev)
    monkeypatch.setattr(_backend.KernelTable, "__init__", slow)

    def work(k):
        a = torch.arange(5.0, device=device) + k
        i = torch.tensor([1, 3], device=device)
        return a._be, a[i].cpu().tolist(), torch.cat([a, i.float()]).cpu().tolist()
    got = _in_threads([lambda k=k: work(k) for k in range(4)])
    assert len({id(t) for t, _, _ in got}) == 1
    assert [r[1:] for r in got] == [([1.0 + k, 3.0 + k], [k + 0.0, k + 1.0, k + 2.0, k + 3.0, k + 4.0, 1.0, 3.0])
                                    for k in range(4)]


# ---- bfloat16's first use ------------------------------------------------------------------------------------
_BF16_FIRST_USE = r"""
import threading
import coretorch as torch
from coretorch import dtypes

entered, go = threading.Event(), threading.Event()
loader = []

def first_listener(npd):  # runs before the backends' own: holds the loading thread there
    if threading.current_thread() in loader:
        entered.set()
        go.wait(30)

dtypes._BF16_LISTENERS.insert(0, first_listener)
t = threading.Thread(target=lambda: torch.zeros(1, dtype=torch.bfloat16))
loader.append(t)
t.start()
assert entered.wait(60)
s = torch.ones(300, dtype=torch.bfloat16).sum().item()
go.set()
t.join(30)
print(s)
"""


def test_bfloat16_first_used_by_two_threads_at_once_sums_in_float32():
    """PyTorch sums bfloat16 in float32 (300 ones sum to 300). coretorch loads ml_dtypes on bfloat16's first use
    and tells the backends its numpy dtype. Before: the dtype was published to every thread before the backends
    were told, so a second thread's bfloat16 ops in between ran with the cpu backend not knowing bfloat16: its sum
    accumulated in bfloat16 (256: 256 + 1 rounds back to 256). A fresh process (bfloat16 loads once per process),
    the loading thread held just before the backends are told."""
    r = subprocess.run([sys.executable, "-c", _BF16_FIRST_USE], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split()[-1] == "300.0"


# ---- grad-mode decorators on generator functions -------------------------------------------------------------
def test_grad_mode_decorators_apply_to_a_generators_body():
    """PyTorch's no_grad / enable_grad / set_grad_enabled / inference_mode decorators run a generator function's
    body in their mode at every resumption and give the caller its own mode back at every yield (its
    _DecoratorContextManager wraps generators). Before: the decorator left its mode when the generator object was
    made, so the body ran in the caller's mode (a @no_grad generator recorded graphs)."""
    @torch.no_grad()
    def quiet():
        for _ in range(2):
            yield torch.is_grad_enabled()

    @torch.inference_mode()
    def inferring():
        yield torch.is_inference_mode_enabled()

    @torch.enable_grad()
    def recording():
        yield torch.is_grad_enabled()

    @torch.set_grad_enabled(False)
    def talking():
        got = yield torch.is_grad_enabled()
        yield got, torch.is_grad_enabled()
        return "done"

    x = torch.ones(2, requires_grad=True)
    seen = []
    for off in quiet():
        seen.append((off, torch.is_grad_enabled(), (x * 2).requires_grad))
    assert seen == [(False, True, True)] * 2
    assert list(inferring()) == [True] and not torch.is_inference_mode_enabled()
    with torch.no_grad():
        assert list(recording()) == [True] and not torch.is_grad_enabled()
    it = talking()
    assert next(it) is False and torch.is_grad_enabled()
    assert it.send(7) == (7, False) and torch.is_grad_enabled()
    with pytest.raises(StopIteration) as stop:
        next(it)
    assert stop.value.value == "done"


# ---- the plugin registry: kernels registered while tensors exist -----------------------------------------------
class _CubeOps:
    CORETORCH_PLUGIN_API = 1

    @hookimpl
    def coretorch_register_functions(self, register):
        register("review19d_cube", lambda x: x * x * x, kernels={"cpu": lambda a: a * a * a})


def test_tensors_made_before_and_after_a_plugin_registers_kernels_share_their_device(device):
    """PyTorch: two tensors on one device are on the same device, whenever they were made. coretorch's documented
    in-process plugin registration (coretorch.plugins.register) may come after tensors exist. Before: it dropped
    every device's kernel table and later tensors got new ones, which the core's same-device checks (by table)
    took for another device: torch.cat([older, newer]) raised "found at least two devices, cpu and cpu", and on
    opencl older[newer_index] raised "indices should be ... on the same device" (after unregister too)."""
    older = torch.arange(4.0, device=device)
    coretorch.plugins.register(_CubeOps(), name="review19d_cube")
    try:
        newer = torch.tensor([1, 2], device=device)
        assert torch.cat([older, newer.float()]).cpu().tolist() == [0.0, 1.0, 2.0, 3.0, 1.0, 2.0]
        assert older[newer].cpu().tolist() == [1.0, 2.0]
        assert coretorch.ops.review19d_cube(older).cpu().tolist() == [0.0, 1.0, 8.0, 27.0]
    finally:
        coretorch.plugins.unregister("review19d_cube")
    latest = torch.tensor([3], device=device)
    assert torch.cat([older, newer.float(), latest.float()]).cpu().tolist() == [0.0, 1.0, 2.0, 3.0, 1.0, 2.0, 3.0]
    assert older[latest].cpu().tolist() == [3.0]
    assert not hasattr(older._be, "review19d_cube")


# ---- a gradient sent along two edges -------------------------------------------------------------------------
@pytest.mark.parametrize("via", ["direct", "clone"])
def test_a_gradient_passed_to_a_leaf_and_on_is_not_changed_by_another_threads_accumulation(device, via):
    """PyTorch's AccumulateGrad keeps a gradient as the leaf's .grad only when nothing else holds it (else a copy),
    so another thread's backward into the same shared leaf (adding into .grad in place) cannot change what this
    backward still reads. Before: for z = w + u the engine stored add's pass-through gradient itself as w.grad
    and then sent the same tensor on to u's node; a second thread's backward into w added into it in place, and
    x.grad (u = 3 * x) silently came out 3 * (2 + 5) instead of 3 * 2. The second thread runs here while the
    first waits in a hook on u, between the two edges ("clone": z = u + w.clone(), where clone's backward passes the
    shared gradient on to the leaf)."""
    w = torch.zeros(4, device=device, requires_grad=True)
    x = torch.ones(4, device=device, requires_grad=True)
    waiting, added = threading.Event(), threading.Event()

    def first():
        u = x * 3
        u.register_hook(lambda g: (waiting.set(), added.wait(30), None)[-1])
        ((w + u if via == "direct" else u + w.clone()) * 2).sum().backward()

    def second():
        assert waiting.wait(30)
        (w * 5).sum().backward()
        added.set()
    _in_threads([first, second])
    assert x.grad.cpu().tolist() == [6.0] * 4
    assert w.grad.cpu().tolist() == [7.0] * 4
