"""Review 16d: what a compiled training step (``step = torch.compile(train_step)``: zero_grad, forward, backward,
optimizer.step) leaves behind across calls, and the training loop around it (cpu bitwise against eager, opencl)."""
import gc
import weakref

import pytest

import coretorch
import coretorch.nn as nn
import coretorch.nn.functional as F
from coretorch._compile.capture import Recorder


def _batches(n, device, bs=8):
    g = coretorch.Generator().manual_seed(1)
    return [(coretorch.randn(bs, 4, generator=g).to(device), coretorch.randint(0, 3, (bs,), generator=g).to(device))
            for _ in range(n)]


def _trained_and_dropped(device, opt_cls):
    """Weak references to a model, one of its parameters and the compiled step that trained it, after the caller
    dropped all three (the step holds the model and optimizer in its closure)."""
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
    opt = opt_cls(model.parameters(), lr=0.01)

    def train_step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

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
