"""Review 14 of coretorch.compile: state a compiled step reads that changed between calls (every installed
device).  Each test runs the same calls eagerly and compiled and compares the results."""
from __future__ import annotations

import types

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn as nn


def _runs(make, calls: int, one):
    """``make()`` -> (fn, args(i), change(i)) built afresh for the eager and the compiled run; ``one(f, args)`` of
    every call, eager and compiled."""
    out = []
    for compiled in (False, True):
        torch.manual_seed(0)
        fn, args, change = make()
        f = torch.compile(fn) if compiled else fn
        res = []
        for i in range(calls):
            change(i)
            res.append(one(f, args(i)))
        out.append(res)
    return out


def _twins(make, calls: int = 6):
    """The results of every call, eager and compiled (see _runs)."""
    return _runs(make, calls, lambda f, a: f(*a).detach().cpu().numpy().copy())


def _assert_same(pair):
    for i, (a, b) in enumerate(zip(*pair)):
        assert np.array_equal(a, b), f"call {i}: eager {a} compiled {b}"


GLOBAL_CFG = {"scale": 2.0}


@pytest.mark.parametrize("where", ["dict", "list", "object", "global dict", "dict tensor", "list tensor"])
def test_a_container_or_object_the_step_reads_changed(device, where):
    """A step reading a number or a tensor from a dict, a list or a plain object of its closure (or a global dict):
    the entry changed after the capture (``cfg["scale"] = 3.0``, ``state["w"] = new``).  The replay used to reuse
    the number it baked in, or load the old tensor."""
    def make():
        GLOBAL_CFG["scale"] = 2.0
        d = {"scale": 2.0, "w": torch.ones(4, device=device)}
        lst = [2.0, torch.ones(4, device=device)]
        obj = types.SimpleNamespace(scale=2.0)
        fns = {"dict": lambda x: x * d["scale"], "list": lambda x: x * lst[0], "object": lambda x: x * obj.scale,
               "global dict": lambda x: x * GLOBAL_CFG["scale"], "dict tensor": lambda x: x * d["w"],
               "list tensor": lambda x: x * lst[1]}

        def change(i):
            if i == 3:
                d["scale"] = lst[0] = obj.scale = GLOBAL_CFG["scale"] = 3.0
                d["w"] = lst[1] = torch.full((4,), 5.0, device=device)
        return fns[where], lambda i: (torch.arange(4.0, device=device) + i,), change
    _assert_same(_twins(make))


def test_a_list_the_step_appends_to_keeps_its_replay(device):
    """A list the step only appends to (a counter: a Python side effect, at the capture only) does not make every
    call a capture."""
    calls = []

    def fn(x):
        calls.append(1)
        return x * 2
    f = torch.compile(fn)
    for _ in range(5):
        f(torch.ones(3, device=device))
    assert len(calls) == 1 and f.replays == 4


class _Masked(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.mask = torch.ones(4)
        self.scales = [1.0, 2.0]

    def forward(self, x):
        return self.lin(x) * self.mask * self.scales[1]


@pytest.mark.parametrize("change", ["tensor attribute", "list attribute", "new attribute"])
@pytest.mark.parametrize("how", ["function", "module"])
def test_a_module_attribute_changed_after_the_capture(device, change, how):
    """A module's plain (non-buffer) tensor attribute reassigned (``model.mask = other``), an entry of its list
    attribute changed, or an instance attribute added over a class attribute: the replay loaded the old tensor or
    reused the old number (only the modules' Python numbers were guarded)."""
    class Scaled(_Masked):
        factor = 1.0

        def forward(self, x):
            return super().forward(x) * self.factor

    def make():
        m = Scaled().to(device)
        m.mask = m.mask.to(device)
        if how == "function":
            m.requires_grad_(False)

        def ch(i):
            if i == 3:
                if change == "tensor attribute":
                    m.mask = torch.full((4,), 3.0, device=device)
                elif change == "list attribute":
                    m.scales[1] = 5.0
                else:
                    m.factor = 7.0
        fn = (lambda x: m(x)) if how == "function" else m
        return fn, lambda i: (torch.ones(2, 4, device=device) * i,), ch
    _assert_same(_twins(make))


@pytest.mark.parametrize("where", ["argument", "closure", "closure from_numpy"])
def test_a_numpy_array_the_step_reads(device, where):
    """A numpy array read by the step on the host (``torch.tensor(a)``, ``torch.from_numpy(a)``): a new array each
    call (an argument, at an address a freed one had) or one mutated in place.  The replay made its tensor from the
    values of the capture (the array was keyed by identity, and its values were a snapshot)."""
    a = np.ones(3, dtype=np.float32)

    def make():
        a[:] = 1.0
        fns = {"argument": lambda x, b: x * torch.tensor(b, device=device),
               "closure": lambda x, b: x * torch.tensor(a, device=device),
               "closure from_numpy": lambda x, b: x * torch.from_numpy(a).to(device)}

        def change(i):
            a[:] = i
        return fns[where], lambda i: (torch.ones(3, device=device), np.full(3, float(i), dtype=np.float32)), change
    _assert_same(_twins(make))


SCALE = 2.0
CFG = {"s": 2.0}


class _ReadsGlobals(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x) * SCALE * CFG["s"]


@pytest.mark.parametrize("how", ["function", "module"])
def test_a_global_a_module_forward_reads_changed(device, how):
    """A user module's ``forward`` reading a global number or a global dict's entry, changed after the capture:
    only the compiled function's own globals (and its helpers') were guarded, not those of the modules' methods."""
    global SCALE

    def make():
        global SCALE
        SCALE, CFG["s"] = 2.0, 2.0
        m = _ReadsGlobals().to(device)
        if how == "function":
            m.requires_grad_(False)

        def change(i):
            global SCALE
            if i == 3:
                SCALE = 3.0
            if i == 5:
                CFG["s"] = 5.0
        return ((lambda x: m(x)) if how == "function" else m), lambda i: (torch.ones(2, 3, device=device),), change
    try:
        _assert_same(_twins(make, 8))
    finally:
        SCALE, CFG["s"] = 2.0, 2.0


HELPERS = types.ModuleType("_review14_helpers")  # a module of helper functions (``utils.helper(x)``)
exec("SCALE = 2.0\ndef helper(x):\n    return x * SCALE\n", HELPERS.__dict__)  # noqa: S102 - fixed source


def _times_g(x):
    return x * HELPERS.SCALE


class _ClassScaled(nn.Module):
    K = 2.0

    def forward(self, x):
        return x * self.K


class _Opts:
    K = 2.0


def _mul(x, s):
    return x * s


class _ScaleFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * HELPERS.SCALE

    @staticmethod
    def backward(ctx, g):
        return g * HELPERS.SCALE


@pytest.mark.parametrize("case", ["helper of another module", "helper in the closure", "module class attribute",
                                  "object class attribute", "partial keywords", "class attribute",
                                  "autograd.Function"])
def test_numbers_read_through_helpers_classes_and_partials(device, case):
    """Numbers a step reads one step removed, changed after the capture: a global of another module's helper
    (``utils.helper(x)``), a helper held in the closure, a class attribute read through ``self`` or an object
    (``M.K = 3.0``), a ``functools.partial``'s keyword.  The replays reused the captured number."""
    import functools
    opts = _Opts()

    def make():
        HELPERS.SCALE = _ClassScaled.K = _Opts.K = 2.0
        m = _ClassScaled()
        part = functools.partial(_mul, s=2.0)
        helper = _times_g
        fns = {"helper of another module": lambda x: HELPERS.helper(x), "helper in the closure": lambda x: helper(x),
               "module class attribute": lambda x: m(x), "object class attribute": lambda x: x * opts.K,
               "partial keywords": part, "class attribute": lambda x: x * _Opts.K,
               "autograd.Function": lambda x: _ScaleFn.apply(x)}

        def change(i):
            if i == 3:
                HELPERS.SCALE = _ClassScaled.K = _Opts.K = 3.0
                part.keywords["s"] = 3.0
        return fns[case], lambda i: (torch.ones(3, device=device) * i,), change
    try:
        _assert_same(_twins(make))
    finally:
        HELPERS.SCALE = _ClassScaled.K = _Opts.K = 2.0


@pytest.mark.parametrize("what", ["input", "parameter", "input of a graph", "output", "view of the output"])
def test_a_saved_tensor_modified_before_the_backward_of_a_compiled_module(device, what):
    """A compiled module's input, parameter or output (``sigmoid``'s backward reads its result) modified in place
    between the forward and the backward (``x.mul_(2)``, an optimizer step before a second loss's backward,
    ``y[0].zero_()``): eager raises the saved-tensor version error; the replayed backward computed silently with
    the modified values (it read the arrays, no version check)."""
    errors = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 2), nn.Sigmoid()).to(device)
        cm = torch.compile(m) if compiled else m
        got = []
        for i in range(6):
            x = torch.randn(3, 4, device=device, requires_grad=what == "input of a graph")
            h = x * 2 if what == "input of a graph" else x
            y = cm(h)
            if i >= 3:
                with torch.no_grad():
                    {"parameter": m[2].weight, "output": y, "view of the output": y[0]}.get(what, h).mul_(2)
            try:
                y.sum().backward()
                got.append(y.detach().cpu().numpy())
            except RuntimeError as e:
                got.append(str(e).split(":")[0])
        errors.append(got)
    assert errors[0][3:] == ["one of the variables needed for gradient computation has been modified by an "
                             "inplace operation"] * 3
    assert errors[1][3:] == errors[0][3:]
    for a, b in zip(errors[0][:3], errors[1][:3]):
        assert np.array_equal(a, b)


def test_an_unsaved_tensor_modified_before_the_backward_of_a_compiled_module(device):
    """What eager's backward does not read may change (the output of the last layer, a bias): no error, eager's
    gradients."""
    grads = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 2)).to(device)
        cm = torch.compile(m) if compiled else m
        for _ in range(5):
            y = cm(torch.randn(3, 4, device=device))
            with torch.no_grad():
                m[2].bias.add_(1.0)
            y.add_(1.0)
            y.pow(2).sum().backward()
        grads.append([p.grad.cpu().numpy() for p in m.parameters()])
    for a, b in zip(*grads):
        assert np.array_equal(a, b)


def _outcome(f, a):
    try:
        return f(*a).detach().cpu().numpy()
    except (RuntimeError, ValueError, TypeError) as e:
        return f"{type(e).__name__}: {str(e)[:40]}"


def _outcomes(make, calls: int = 7):
    """Like _twins, each call's result or the type and start of the error it raised."""
    out = _runs(make, calls, _outcome)
    for i, (a, b) in enumerate(zip(*out)):
        assert type(a) is type(b), f"call {i}: eager {a} compiled {b}"
        assert (np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b), f"call {i}: eager {a} compiled {b}"
    return out


class _WithMask(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.norm = nn.BatchNorm1d(3)
        self.mask = torch.ones(3)

    def forward(self, x):
        return self.norm(self.lin(x)) * self.mask


@pytest.mark.parametrize("what, how", [(w, h) for w in ("model", "submodule", "buffer", "plain tensor",
                                                         "attribute tensor") for h in ("function", "module")
                                       if (w, h) != ("plain tensor", "module")])  # (a compiled module: no closure)
def test_state_moved_to_another_device_or_reshaped(device, what, how):
    """Parameters, buffers or plain tensors the step reads moved to another device or given another shape or dtype
    (``model.to(other)``, ``m.norm.to(other)``, ``m.norm.running_mean = ...``, ``w.data = ...``) after the capture:
    eager raises; the replay computed on the new arrays with the captured kernels (an array of cl.Array objects on
    cpu, numpy's broadcasting error) - parameters were keyed without their device, buffers and the other tensors
    not at all."""
    from coretorch.testing import available_devices
    other = next((d for d in available_devices() if d != device), None)
    if other is None and what in ("model", "submodule"):
        pytest.skip("one device: nothing to move to")

    def make():
        m = _WithMask().to(device).eval()
        m.mask = m.mask.to(device)
        w = torch.ones(3, device=device)
        if how == "function":
            m.requires_grad_(False)

        def change(i):
            if i == 3:
                if what == "model":
                    m.to(other)
                elif what == "submodule":
                    m.norm.to(other)
                elif what == "buffer":
                    m.norm.running_mean = torch.zeros(4, device=device)
                elif what == "plain tensor":
                    w.data = torch.ones(4, device=device)
                else:
                    m.mask.data = torch.ones(4, device=device)
            if i == 5 and what in ("buffer", "plain tensor", "attribute tensor"):
                t = {"buffer": lambda: m.norm.running_mean, "plain tensor": lambda: w,
                     "attribute tensor": lambda: m.mask}[what]()
                t.data = torch.ones(3, device=device, dtype=torch.float64)
        fn = (lambda x: m(x) * w) if how == "function" else m
        return fn, lambda i: (torch.ones(2, 3, device=device),), change
    _outcomes(make)


@pytest.mark.parametrize("where", ["closure", "argument"])
def test_the_grad_of_a_leaf_that_is_no_parameter_accumulates(device, where):
    """A step whose backward accumulates into the ``.grad`` of a leaf that is no module parameter: a closure's
    ``w = torch.randn(3, requires_grad=True)``, or the same leaf passed as an argument each call.  The replay
    dropped the accumulation (the leaf's ``.grad`` was no tracked state and not in the guards: the capture's
    ``w.grad = new`` was not replayed)."""
    out = []
    for compiled in (False, True):
        torch.manual_seed(0)
        w = torch.randn(3, device=device, requires_grad=True)
        c = torch.randn(3, device=device)

        def step(x, leaf):
            loss = (x * leaf * c).pow(2).sum() if where == "argument" else (x * w).pow(2).sum()
            loss.backward()
            return loss
        f = torch.compile(step) if compiled else step
        got = []
        for i in range(6):
            leaf = w if where == "argument" else None
            got.append(f(torch.randn(3, device=device), leaf).detach().cpu().numpy())
            got.append(w.grad.cpu().numpy().copy())
            if i == 3:
                w.grad = None
        out.append(got)
        if compiled:
            assert f.replays >= 3
    for a, b in zip(*out):
        assert np.array_equal(a, b)


def test_manual_sgd_on_a_closure_leaf(device):
    """The tutorial loop: ``loss.backward()``, ``w.sub_(lr * w.grad)`` under no_grad, ``w.grad = None``."""
    out = []
    for compiled in (False, True):
        torch.manual_seed(0)
        w = torch.randn(3, device=device, requires_grad=True)

        def step(x):
            loss = (x * w).pow(2).sum()
            loss.backward()
            with torch.no_grad():
                w.sub_(0.1 * w.grad)
                w.grad.zero_()
            return loss
        f = torch.compile(step) if compiled else step
        got = [(f(torch.randn(3, device=device)).detach().cpu().numpy(), w.detach().cpu().numpy().copy())
               for _ in range(6)]
        out.append(got)
    for (a, wa), (b, wb) in zip(*out):
        assert np.array_equal(a, b) and np.array_equal(wa, wb)


@pytest.mark.parametrize("draw", ["random.random", "random.randint", "np.random.rand", "np.random.randn"])
def test_a_host_random_number_drawn_in_the_step(device, draw):
    """``random.random()`` or ``np.random.rand()`` inside the step (an augmentation, epsilon-greedy): eager draws a
    new number each call; the replay reused the captured one as a constant.  Now a graph break: eager's numbers."""
    import random
    draws = {"random.random": lambda: random.random(), "random.randint": lambda: float(random.randint(0, 1000)),
             "np.random.rand": lambda: float(np.random.rand()),
             "np.random.randn": lambda: torch.from_numpy(np.random.randn(3).astype(np.float32)).to(device)}

    def step(x):
        return x * draws[draw]()
    out = []
    for compiled in (False, True):
        random.seed(0)
        np.random.seed(0)
        f = torch.compile(step) if compiled else step
        out.append([f(torch.ones(3, device=device)).cpu().numpy() for _ in range(5)])
    for a, b in zip(*out):
        assert np.array_equal(a, b)
    assert not np.array_equal(out[0][0], out[0][1])


@pytest.mark.parametrize("read", ["return lr", "branch on lr", "lr in the loss", "get_last_lr"])
def test_the_step_reads_the_learning_rate_itself(device, read):
    """The step reads the learning rate as a Python number (returned for logging, branched on, used in the loss,
    ``scheduler.get_last_lr()`` with the scheduler stepped inside): a scheduler changes it between calls.  The
    optimizer's own replayed step takes lr as an input, but the step's own reads were captured constants."""
    out = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = nn.Linear(3, 2).to(device)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        sched = torch.optim.lr_scheduler.StepLR(opt, 2, 0.5)

        def step(x):
            opt.zero_grad()
            loss = m(x).pow(2).mean()
            lr = opt.param_groups[0]["lr"]
            if read == "branch on lr" and lr < 0.05:
                loss = loss * 10
            if read == "lr in the loss":
                loss = loss * lr
            loss.backward()
            opt.step()
            if read == "get_last_lr":
                sched.step()
                return loss, sched.get_last_lr()[0]
            return loss, lr
        f = torch.compile(step) if compiled else step
        got = []
        for i in range(8):
            if i and read != "get_last_lr":
                sched.step()
            loss, lr = f(torch.ones(4, 3, device=device))
            got.append((loss.detach().cpu().numpy(), lr))
        out.append(got)
    for (a, la), (b, lb) in zip(*out):
        assert np.array_equal(a, b) and la == lb


@pytest.mark.parametrize("where", ["nested dict", "nested object", "nested list"])
def test_nested_configuration_changed(device, where):
    """A number or a tensor two levels down the closure (``cfg["opt"]["s"]``, ``trainer.cfg.w``, ``t[0][0]``)
    changed: only the first level was fingerprinted."""
    def make():
        cfg = {"a": {"w": torch.ones(3, device=device), "s": 2.0}}
        obj = types.SimpleNamespace(cfg=types.SimpleNamespace(w=torch.ones(3, device=device), s=2.0))
        lst = [[2.0, torch.ones(3, device=device)]]
        fns = {"nested dict": lambda x: x * cfg["a"]["w"] * cfg["a"]["s"],
               "nested object": lambda x: x * obj.cfg.w * obj.cfg.s, "nested list": lambda x: x * lst[0][0] * lst[0][1]}

        def change(i):
            if i == 3:
                cfg["a"]["w"] = obj.cfg.w = lst[0][1] = torch.full((3,), 5.0, device=device)
            if i == 5:
                cfg["a"]["s"] = obj.cfg.s = lst[0][0] = 3.0
        return fns[where], lambda i: (torch.ones(3, device=device) + i,), change
    _assert_same(_twins(make, 7))


def test_the_last_entry_of_a_list_grown_by_the_caller(device):
    """``buf[-1]`` of a list the caller appends tensors to between calls: the replay kept the tensor of the capture
    (a list was fingerprinted up to the length it had when first seen)."""
    def make():
        buf = [torch.ones(3, device=device)]

        def change(i):
            buf.append(torch.full((3,), float(i), device=device))
        return (lambda x: x * buf[-1]), lambda i: (torch.ones(3, device=device),), change
    _assert_same(_twins(make))


@pytest.mark.parametrize("source", ["data loader", "generator", "zip"])
def test_next_of_an_iterator_inside_the_step(device, source):
    """``x, y = next(it)`` inside the step, ``it`` a data loader's iterator, a generator or a zip of the caller's:
    eager takes the next batch each call; the replay returned the captured batch every time (the batch tensors
    were loaded as constants).  Now a graph break."""
    from coretorch.utils.data import DataLoader, TensorDataset
    out = []
    for compiled in (False, True):
        x_all = torch.arange(40.0, device=device).reshape(20, 2)
        y_all = torch.arange(20.0, device=device)

        def gen():
            for i in range(0, 18, 3):
                yield x_all[i:i + 3], y_all[i:i + 3]
        it = {"data loader": lambda: iter(DataLoader(TensorDataset(x_all, y_all), batch_size=3)),
              "generator": gen, "zip": lambda: zip(x_all.split(3), y_all.split(3))}[source]()

        def step():
            x, y = next(it)
            return x.sum(1) * 2 + y
        f = torch.compile(step) if compiled else step
        out.append([f().cpu().numpy() for _ in range(5)])
    for a, b in zip(*out):
        assert np.array_equal(a, b)


def test_next_of_an_iterator_made_inside_the_step_still_replays(device):
    """An iterator the step makes itself (``next(iter(model.parameters()))``) is no persistent state."""
    m = nn.Linear(3, 2).to(device)
    m.requires_grad_(False)

    def step(x):
        w = next(iter(m.parameters()))
        return m(x) + w.sum()
    f = torch.compile(step)
    x = torch.ones(2, 3, device=device)
    for _ in range(4):
        assert np.array_equal(f(x).cpu().numpy(), step(x).cpu().numpy())
    assert f.replays == 3


def test_the_last_number_of_a_list_grown_by_the_caller(device):
    """``lrs[-1]`` of a list of numbers the caller appends to: the replay kept the captured number (numbers appended
    to a root list were no guard; now only for a list the step's code only appends to, see guards.append_names)."""
    def make():
        lrs = [1.0]

        def change(i):
            lrs.append(float(i))
        return (lambda x: x * lrs[-1]), lambda i: (torch.ones(3, device=device),), change
    _assert_same(_twins(make))


@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("alias", ["itself", "detached"])
def test_an_argument_that_was_a_closure_tensor_at_the_capture(device, inplace, alias):
    """``f(w)`` (or ``f(w.detach())``) at the capture with ``w`` also in the closure, ``f(other)`` later: the
    recording read both as the argument (one array), so the replay used ``other`` for the closure's ``w`` too.  Now
    the argument being the step's own tensor is in the key, and the replay checks that an argument it read as a
    persistent tensor's array still is (else it captures again)."""
    out = []
    for compiled in (False, True):
        w = torch.ones(3, device=device)
        others = [torch.full((3,), float(i), device=device) for i in range(6)]

        def f(x):
            if inplace:
                w.add_(1)
            return x * 2 + w
        g = torch.compile(f) if compiled else f
        got = []
        for i in range(6):
            arg = (w if alias == "itself" or inplace else w.detach()) if i in (0, 4) else others[i]
            got.append(g(arg).cpu().numpy())
            got.append(w.cpu().numpy().copy())
        out.append(got)
        if compiled:
            assert g.replays >= 2
    for a, b in zip(*out):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("which", [0, 1])
def test_backward_through_one_output_of_a_compiled_module_with_several(device, which):
    """``out, h = gru(x); out.sum().backward()`` (the other output unused): the engine passed one gradient to the
    compiled node (it had no output metadata), and the replayed backward raised IndexError."""
    grads = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = nn.GRU(4, 5).to(device)
        cm = torch.compile(m) if compiled else m
        got = []
        for _ in range(4):
            outs = cm(torch.randn(3, 2, 4, device=device))
            outs[which].pow(2).sum().backward()
            got.append(outs[which].detach().cpu().numpy())
        got += [p.grad.cpu().numpy() for p in m.parameters()]
        grads.append(got)
    for a, b in zip(*grads):
        np.testing.assert_array_equal(a, b)


def test_two_threads_capturing_at_once_leave_no_patch_behind(device):
    """A capture patches process-wide functions (kernel tables, Tensor methods, builtins.next): two threads capturing
    at once saved each other's patches as originals and left them installed.  One capture at a time now: a thread
    that finds another capturing runs its call eagerly (and captures at a later call); results are eager's."""
    import builtins
    import threading

    from coretorch import _backend
    tables = {id(t): t for t in _backend._tables.values()}.values()
    before = [(t, dict(t.__dict__)) for t in tables]
    next_before, item_before = builtins.next, torch.Tensor.item
    inside, go = threading.Event(), threading.Event()
    w = torch.randn(5, 5, device=device)

    def slow(x):   # holds its capture open until the other thread has called
        y = x @ w
        inside.set()
        go.wait(10)
        return y.relu()

    def fast(x):
        return (x * 2 + 1).sum(0)
    fs, ff = torch.compile(slow), torch.compile(fast)
    x = torch.randn(4, 5, device=device)
    got: dict = {}
    t = threading.Thread(target=lambda: got.setdefault("slow", fs(x)))
    t.start()
    assert inside.wait(10)
    got["fast"] = ff(x)   # while slow captures: eagerly
    go.set()
    t.join(10)
    assert not t.is_alive()
    assert ff.replays == 0 and len(ff._cache) == 0   # nothing captured during the other capture
    for _ in range(3):   # captured and replayed afterwards
        got["fast2"] = ff(x)
    assert ff.replays == 2
    np.testing.assert_array_equal(got["slow"].cpu().numpy(), slow(x).cpu().numpy())
    np.testing.assert_array_equal(got["fast"].cpu().numpy(), fast(x).cpu().numpy())
    np.testing.assert_array_equal(got["fast2"].cpu().numpy(), fast(x).cpu().numpy())
    # every patched function restored
    assert builtins.next is next_before and torch.Tensor.item is item_before
    for tb, d in before:
        assert all(tb.__dict__.get(n) is v for n, v in d.items() if n in tb.names)


def test_a_second_capture_waits_for_none_and_restores_everything(device):
    """The recorder of an optimizer step (recorded at a step's first replay) can start while another thread captures
    a step: its install found the other capture's patches and saved them as the originals, and removing both left
    the first capture's wrappers installed for good.  A second install now raises CaptureBusy (its caller runs
    eagerly), and every patched function is the original afterwards."""
    import builtins
    import threading

    from coretorch import _backend
    from coretorch._compile.capture import CaptureBusy, Recorder
    tables = {id(t): t for t in _backend._tables.values()}.values()
    before = [(t, {n: t.__dict__.get(n) for n in t.names}) for t in tables]
    next_before, item_before = builtins.next, torch.Tensor.item
    first = Recorder(False)
    first.install()
    seen = []

    def other():
        rec = Recorder(False, symbolic=True)
        try:
            rec.install()
        except CaptureBusy:
            seen.append("busy")
            return
        seen.append("installed")
        rec.remove()
    try:
        t = threading.Thread(target=other)
        t.start()
        t.join(10)
    finally:
        first.remove()
    assert seen == ["busy"]
    assert builtins.next is next_before and torch.Tensor.item is item_before
    for tb, d in before:
        assert all(tb.__dict__.get(n) is v for n, v in d.items())
    # and a capture after both runs as usual
    later = Recorder(False)
    later.install()
    later.remove()
