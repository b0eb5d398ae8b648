"""Review 16d: what a compiled training step (``step = torch.compile(train_step)``: zero_grad, forward, backward,
optimizer.step) leaves behind across calls, and the training loop around it (cpu bitwise against eager, opencl)."""
import gc
import weakref

import numpy as np
import pytest

import coretorch
import coretorch.nn as nn
import coretorch.nn.functional as F
from coretorch._compile.capture import Recorder

from _compile_helpers import ce_step


def _batches(n, device, bs=8):
    g = coretorch.Generator().manual_seed(1)
    return [(coretorch.randn(bs, 4, generator=g).to(device), coretorch.randint(0, 3, (bs,), generator=g).to(device))
            for _ in range(n)]


def _trained_and_dropped(device, opt_cls):
    """Weak references to a model, one of its parameters and the compiled step that trained it, after the caller
    dropped all three (the step holds the model and optimizer in its closure)."""
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
    opt = opt_cls(model.parameters(), lr=0.01)

    train_step = ce_step(model, opt)
    step = coretorch.compile(train_step)
    for x, y in _batches(4, device):
        step(x, y)
    assert step.replays >= 1
    return weakref.ref(model), weakref.ref(model[0].weight), weakref.ref(step)  # (the locals die here)


@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_a_deleted_model_and_its_compiled_step_are_freed(device, opt_name):
    """Eager: a model, its optimizer and the step function are freed once the caller drops them. Compiled, before
    the fix: the model (its parameters, their arrays) stayed alive for good: guards kept a process-wide cache of
    each step's module list by ``id`` (cleared only past 256 entries, not by ``compiler.reset()``), so a
    hyper-parameter sweep training one compiled model after another kept every model."""
    refs = _trained_and_dropped(device, getattr(coretorch.optim, opt_name))
    gc.collect()
    assert [r() is None for r in refs] == [True, True, True]
    coretorch.compiler.reset()


def test_the_first_capture_of_an_adam_step_is_not_kept_alive(device, monkeypatch):
    """Eager: nothing outlives the step. Compiled, before the fix: the extra_ops Adam cached the device's own
    ``adam_step_`` kernel at its first lookup; when that lookup happened inside a capture (the first Adam step of
    the process is a compiled one), the cache held the capture's recording wrapper, and through it the Recorder
    with every array of that capture and the model it trained."""
    from coretorch_extra_ops import optimizers
    dev = coretorch.zeros(1, device=device).device
    for name in ("adam_step_", "fused_adam_"):
        monkeypatch.delitem(optimizers._OWN_KERNELS, (name, dev), raising=False)  # as in a fresh process
    refs = _trained_and_dropped(device, coretorch.optim.Adam)
    gc.collect()
    assert refs[0]() is None and refs[1]() is None
    assert not [o for o in gc.get_objects() if isinstance(o, Recorder)]
    assert all(v is True or v is None for v in optimizers._OWN_KERNELS.values())


class _Cfg:
    def __init__(self):
        self.scale = 1.0


class _Trainer:
    def __init__(self, device):
        self.model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
        self.opt = coretorch.optim.SGD(self.model.parameters(), lr=0.1)
        self.cfg = _Cfg()

    def step(self, x, y):
        self.opt.zero_grad()
        loss = F.cross_entropy(self.model(x), y) * self.cfg.scale
        loss.backward()
        self.opt.step()
        return loss


def _trainer_dropped(device, how):
    trainer = _Trainer(device)
    if how == "method":
        step = coretorch.compile(trainer.step)
    else:
        def step_fn(x, y):
            return trainer.step(x, y)
        step = coretorch.compile(step_fn)
    for x, y in _batches(4, device):
        step(x, y)
    assert step.replays >= 1
    return weakref.ref(trainer), weakref.ref(trainer.model)


@pytest.mark.parametrize("how", ["method", "closure"])
def test_a_trainer_object_s_model_is_freed_with_it(device, how):
    """Eager: a trainer object (``self.model``, ``self.opt``, a config object) and its model are freed once dropped.
    Compiled (``compile(trainer.step)`` or a closure holding the trainer), before the fix: the trainer was freed but
    its model stayed alive: the guards' cache of which attribute names a plain object has held the object's
    ``__dict__`` by ``id`` (cleared only past 1024 entries), and with it the model and the optimizer."""
    refs = _trainer_dropped(device, how)
    gc.collect()
    assert [r() is None for r in refs] == [True, True]


@pytest.mark.parametrize("where", ["optimizer", "param_group", "parameter", "argument", "function"])
def test_a_tensor_the_step_stores_on_an_unguarded_object(device, where):
    """Eager: a step that stores this call's activations on the optimizer (``opt.last = h``), in a param group
    (``group["last"] = h``), on a parameter or an argument tensor (``w.last = h``) or on the function itself leaves
    this call's tensor there. Compiled, before the fix: the replays did not repeat the assignment (no guard keys those
    attributes, unlike a module's), so the caller read the capture's tensor from the third call on (and ``x.last``
    of a new batch raised AttributeError). Now such a call is a graph break: it runs eagerly."""
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
    opt = coretorch.optim.SGD(model.parameters(), lr=0.1)

    def train_step(x, y):
        opt.zero_grad()
        out = model(x)
        loss = F.cross_entropy(out, y)
        loss.backward()
        opt.step()
        h = out.detach()
        if where == "optimizer":
            opt.last = h
        elif where == "param_group":
            opt.param_groups[0]["last"] = h
        elif where == "parameter":
            model[0].weight.last = h
        elif where == "argument":
            x.last = h
        else:
            train_step.last = h
        return h

    stored = {"optimizer": lambda x: opt.last, "param_group": lambda x: opt.param_groups[0]["last"],
              "parameter": lambda x: model[0].weight.last, "argument": lambda x: x.last,
              "function": lambda x: train_step.last}[where]
    step = coretorch.compile(train_step)
    for x, y in _batches(5, device):
        h = step(x, y)
        assert coretorch.equal(stored(x), h)


def _pack(kind, x, y):
    return [x, y] if kind == "list" else (x, y) if kind == "tuple" else {"input": x, "target": y}


def _unpack(batch):
    return (batch["input"], batch["target"]) if isinstance(batch, dict) else batch


@pytest.mark.parametrize("kind", ["list", "tuple", "dict"])
def test_a_batch_in_a_fresh_container_each_call_replays(device, kind):
    """``for batch in loader: step(batch)``: a data loader gives a new ``[x, y]`` list (or a tuple, a dict) each
    call. Eager: each batch is freed after its step. Compiled, before the fix: the container was an argument object
    keyed by its identity, so every call captured again (up to the recompile limit, then eagerly: never a replay),
    and the roots' state kept each batch alive (up to 65 of them). Now the container is keyed by its structure, its
    tensors as arguments: the steps replay, bitwise eager's, and the batches are freed."""
    results = {}
    for compiled in (False, True):
        coretorch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
        opt = coretorch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def train_step(batch):
            x, y = _unpack(batch)
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        step = coretorch.compile(train_step) if compiled else train_step
        losses, seen = [], []
        for i in range(12):
            x, y = _batches(1, device)[0] if i == 0 else (coretorch.randn(8, 4).to(device),
                                                          coretorch.randint(0, 3, (8,)).to(device))
            losses.append(step(_pack(kind, x, y)).detach())
            seen.append(weakref.ref(x))
            del x, y
        gc.collect()
        assert sum(r() is not None for r in seen) == 0
        if compiled:
            assert step.replays >= 9
        results[compiled] = [t.detach().cpu().numpy() for t in (*losses, *model.parameters())]
    for a, b in zip(results[False], results[True]):
        if device == "cpu":
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("what", ["append", "setitem", "return"])
def test_a_step_that_changes_or_returns_its_batch_container(device, what):
    """Eager: the step's ``batch.append(h)`` / ``batch[0] = ...`` changes the caller's list, and ``return batch``
    returns the caller's list itself. Compiled, with the batch keyed by its structure, a replay would repeat none of
    it: such a call is a graph break (it runs eagerly), so the caller sees eager's list."""
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
    opt = coretorch.optim.SGD(model.parameters(), lr=0.1)

    def train_step(batch):
        if what == "setitem":
            batch[0] = batch[0] * 2
        opt.zero_grad()
        out = model(batch[0])
        loss = F.cross_entropy(out, batch[1])
        loss.backward()
        opt.step()
        if what == "append":
            batch.append(out.detach())
        return (loss, batch) if what == "return" else loss

    step = coretorch.compile(train_step)
    for x, y in _batches(5, device):
        batch = [x, y]
        got = step(batch)
        if what == "return":
            assert got[1] is batch and got[1][0] is x
        elif what == "append":
            assert len(batch) == 3 and batch[2].shape == (8, 3)
        else:
            assert batch[0] is not x and coretorch.equal(batch[0], x * 2)


@pytest.mark.parametrize("hook", ["register_hook", "post_accumulate", "list"])
def test_a_gradient_hook_that_stores_python_state(device, hook):
    """Eager: a parameter's gradient hook that keeps the gradient (``store["g"] = g``, ``norms.append(g.norm())``)
    runs at every backward. Compiled, before the fix: a replay's backward does not call Python hooks, so the caller
    read the capture's gradient (and the list stopped growing) from the third call on; now such a call is a graph
    break, as a module hook that writes Python state."""
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
    opt = coretorch.optim.SGD(model.parameters(), lr=0.1)
    store, norms = {}, []
    w = model[0].weight
    if hook == "register_hook":
        w.register_hook(lambda g: store.__setitem__("g", g))
    elif hook == "post_accumulate":
        w.register_post_accumulate_grad_hook(lambda p: store.__setitem__("g", p.grad.clone()))
    else:
        w.register_hook(lambda g: norms.append(g.norm()))

    train_step = ce_step(model, opt)
    step = coretorch.compile(train_step)
    for i, (x, y) in enumerate(_batches(5, device)):
        step(x, y)
        if hook == "list":
            assert len(norms) == i + 1 and coretorch.equal(norms[-1], w.grad.norm())
        else:
            assert coretorch.equal(store["g"], w.grad)


def test_gradient_hooks_without_python_state_still_replay(device):
    """A hook that only transforms the gradient (``g * SCALE``, a clamp, an in-place scale of ``p.grad``) keeps its
    replay, bitwise eager's on cpu."""
    results = {}
    for compiled in (False, True):
        coretorch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
        opt = coretorch.optim.SGD(model.parameters(), lr=0.1)
        model[0].weight.register_hook(lambda g: g * 0.5)
        model[2].weight.register_hook(lambda g: g.clamp(-0.01, 0.01))
        model[0].bias.register_post_accumulate_grad_hook(lambda p: [p.grad.mul_(2)] and None)

        train_step = ce_step(model, opt)
        step = coretorch.compile(train_step) if compiled else train_step
        for x, y in _batches(6, device):
            step(x, y)
        if compiled:
            assert step.replays >= 3
        results[compiled] = [p.detach().cpu().numpy() for p in model.parameters()]
    for a, b in zip(results[False], results[True]):
        np.testing.assert_allclose(a, b, rtol=0 if device == "cpu" else 1e-5, atol=0 if device == "cpu" else 1e-6)


@pytest.mark.parametrize("on", ["parameter", "input"])
def test_a_compiled_module_applies_a_gradient_hook_once(device, on):
    """``model.compile()`` (or ``torch.compile(model)``) with ``w.register_hook(lambda g: g * 2)`` on a parameter or
    on the input: eager's ``.grad`` is twice the plain gradient. Compiled, before the fix: the backward was recorded
    through ``autograd.grad`` with placeholder gradients, which ran the hook (its ``g * 2`` became part of the
    recorded gradients), and the engine ran the hook again where it handed the replay's gradients to the leaf:
    four times the gradient, on the capture call and every replay. A hook that logged (``norms.append(g.norm())``)
    also got a zero gradient first."""
    grads, logs = {}, {}
    for compiled in (False, True):
        coretorch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
        norms = []
        if on == "parameter":
            model[0].weight.register_hook(lambda g: g * 2)
            model[2].weight.register_hook(lambda g: norms.append(g.norm().item()))
        run = coretorch.compile(model) if compiled else model
        got = []
        for x, y in _batches(4, device):
            model.zero_grad()
            if on == "input":
                x.requires_grad_(True)
                x.register_hook(lambda g: g * 2)
            F.cross_entropy(run(x), y).backward()
            got.append((x.grad if on == "input" else model[0].weight.grad).detach().cpu().numpy())
        grads[compiled], logs[compiled] = got, norms
    for a, b in zip(grads[False], grads[True]):
        np.testing.assert_allclose(a, b, rtol=0 if device == "cpu" else 1e-5, atol=0 if device == "cpu" else 1e-6)
    assert len(logs[True]) == len(logs[False]) and np.allclose(logs[True], logs[False], rtol=1e-5)


@pytest.mark.skipif("opencl" not in coretorch.testing.available_devices(), reason="needs a second device")
def test_a_batch_moved_to_the_device_inside_the_step_replays():
    """``x, y = x.to(device), y.to(device)`` inside the step (the batch made on the cpu by a data loader) and
    ``loss.cpu()`` / ``grad.to("cpu")`` in its result. Eager: this call's values. Compiled, before the fix: the copy
    read the whole array on the host, a graph break, so the step never replayed (every call eager); now the read and
    the upload are one replayed call, which copies each call's batch, and the results match eager's."""
    results = {}
    for compiled in (False, True):
        coretorch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to("opencl")
        opt = coretorch.optim.Adam(model.parameters(), lr=0.01)

        def train_step(batch):
            x, y = batch
            x, y = x.to("opencl"), y.to("opencl")
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss.cpu(), model[0].weight.grad.to("cpu", coretorch.float64)

        step = coretorch.compile(train_step) if compiled else train_step
        got = []
        for x, y in _batches(6, "cpu"):
            loss, g = step([x, y])
            assert loss.device.type == "cpu" and g.dtype == coretorch.float64
            got += [loss.detach().numpy(), g.numpy()]
        if compiled:
            assert step.replays >= 3
        results[compiled] = got + [p.detach().cpu().numpy() for p in model.parameters()]
    for a, b in zip(results[False], results[True]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_a_tensor_the_step_stores_in_optimizer_state(device):
    """Eager: ``opt.state[w]["last"]`` is this call's tensor. Compiled: the replays kept the capture's (no guard
    keyed optimizer state entries the code writes, and the write is no kernel); review 17c: the state is compared
    around the optimizer's step segments, and a change outside them is a graph break."""
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
    opt = coretorch.optim.SGD(model.parameters(), lr=0.1)
    w = model[0].weight

    def train_step(x, y):
        opt.zero_grad()
        out = model(x)
        F.cross_entropy(out, y).backward()
        opt.step()
        h = out.detach()
        opt.state[w]["last"] = h
        return h

    step = coretorch.compile(train_step)
    for x, y in _batches(5, device):
        h = step(x, y)
        assert coretorch.equal(opt.state[w]["last"], h)
