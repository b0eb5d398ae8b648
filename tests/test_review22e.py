"""Review 22e (compile): compiled modules (``torch.compile(model)`` / ``model.compile()``) in real use, compared with
the eager module call by call: the wrapper's API, inference loops, training with the eager optimizer."""
import dataclasses
from collections import OrderedDict
from typing import Optional

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn as nn


def _compiled(m, form):
    if form == "wrap":
        return torch.compile(m)
    m.compile()
    return m


@pytest.mark.parametrize("form", ["wrap", "in_place"])
@pytest.mark.parametrize("hook", ["full_backward", "full_backward_pre", "tensor_in_forward", "node_in_forward"])
def test_a_gradient_hook_inside_a_compiled_module_runs_once_per_backward(device, form, hook):
    """A hook in the compiled module's autograd graph that logs what it sees (a submodule's full backward hook or
    backward pre-hook, ``h.register_hook`` on an intermediate from a forward hook, a ``grad_fn`` hook): eager calls
    it once per backward with that call's gradients.  Compiled before the fix: the capture recorded the module's
    backward with placeholder (zero) output gradients, which called the hook too, so each capture call logged an
    extra ``0.0`` before the real entry (and the log changing made every call capture again, up to the recompile
    limit); a replay would never call it.  Now such a region runs eagerly (a graph break)."""
    logs = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2)).to(device)
        log: list = []
        if hook == "full_backward":
            m[2].register_full_backward_hook(lambda mod, gi, go: log.append(float(go[0].abs().sum())))
        elif hook == "full_backward_pre":
            m[2].register_full_backward_pre_hook(lambda mod, go: log.append(float(go[0].abs().sum())))
        elif hook == "tensor_in_forward":
            m[0].register_forward_hook(
                lambda mod, i, o: [o.register_hook(lambda g: log.append(float(g.abs().sum())))] and None)
        else:
            m[0].register_forward_hook(lambda mod, i, o: [o.grad_fn.register_hook(
                lambda gi, go: log.append(float(go[0].abs().sum())))] and None)
        f = _compiled(m, form) if compiled else m
        for i in range(4):
            torch.manual_seed(10 + i)
            f(torch.randn(3, 4, device=device)).pow(2).sum().backward()
        logs.append(log)
    assert len(logs[0]) == len(logs[1]) == 4, logs
    np.testing.assert_allclose(logs[1], logs[0], rtol=1e-6)


def test_a_counting_gradient_hook_registered_in_forward(device):
    """``h.register_hook(count)`` inside ``forward`` (a counter of backward passes): eager counts one per backward;
    compiled before the fix, the capture's backward recording counted one more."""
    counts = []
    for compiled in (False, True):
        n = [0]

        def count(g):
            n[0] += 1

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.a, self.b = nn.Linear(4, 6), nn.Linear(6, 2)

            def forward(self, x):
                h = torch.relu(self.a(x))
                h.register_hook(count)
                return self.b(h)
        torch.manual_seed(0)
        m = Net().to(device)
        f = torch.compile(m) if compiled else m
        for _ in range(3):
            f(torch.randn(3, 4, device=device)).sum().backward()
        counts.append(n[0])
    assert counts == [3, 3]


class _ModelOutput(OrderedDict):
    """transformers' ModelOutput, reduced: a dataclass and an OrderedDict at once, each field both an item (when
    not None) and an attribute."""

    def __post_init__(self):
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is not None:
                self[f.name] = v

    def __getitem__(self, k):
        return dict(self.items())[k] if isinstance(k, str) else tuple(self.values())[k]

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        super().__setattr__(key, value)


@dataclasses.dataclass
class _LMOutput(_ModelOutput):
    loss: Optional[torch.Tensor] = None
    logits: Optional[torch.Tensor] = None


class _TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.head = nn.Embedding(10, 8), nn.Linear(8, 10)

    def forward(self, input_ids=None, labels=None):
        logits = self.head(self.emb(input_ids))
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten()) if labels is not None else None
        return _LMOutput(loss=loss, logits=logits)


@pytest.mark.parametrize("form", ["module", "function"])
def test_a_model_output_dict_dataclass_holds_this_calls_tensors(device, form):
    """A result that is a dict subclass whose attributes hold the same tensors (transformers' ``ModelOutput``:
    ``out.logits`` and ``out["logits"]``): eager's holds this call's tensors both ways.  Compiled before the fix: a
    compiled module rebuilt the attributes only (``out["logits"]`` and ``out[1]`` stayed the capture call's logits
    at every replay), a compiled function the items only (``out.logits``, ``out.loss`` stayed the capture's)."""
    torch.manual_seed(0)
    m = _TinyLM().to(device)
    if form == "module":
        f = torch.compile(m)
    else:
        f = torch.compile(lambda ids: _no_grad_call(m, ids))
    for i in range(4):
        ids = torch.randint(0, 10, (2, 5)).to(device)
        with torch.no_grad():
            e = m(input_ids=ids, labels=ids)
        r = f(input_ids=ids, labels=ids) if form == "module" else f(ids)
        assert type(r) is _LMOutput and list(r.keys()) == ["loss", "logits"]
        for got in (r.logits, r["logits"], r[1]):
            np.testing.assert_allclose(got.detach().cpu().numpy(), e.logits.cpu().numpy(), rtol=1e-6, atol=1e-6)
        for got in (r.loss, r["loss"]):
            np.testing.assert_allclose(got.detach().cpu().numpy(), e.loss.cpu().numpy(), rtol=1e-6, atol=1e-6)
    assert (f._capture.replays if form == "module" else f.replays) >= 2


def _no_grad_call(m, ids):
    with torch.no_grad():
        return m(input_ids=ids, labels=ids)


@pytest.mark.parametrize("form", ["wrap", "in_place"])
def test_an_in_place_op_on_a_compiled_modules_3d_linear_output(device, form):
    """``y = model(x)`` with a 3-D ``x`` through ``nn.Linear`` (its result a view of the 2-D product), then
    ``y[..., 0] = 0.0; y.mul_(2)`` before the backward (masking logits in place): eager records both ops and the
    backward works.  Compiled before the fix, on the capture call and every replay: the output was made a view of a
    base without autograd history, so the in-place op raised "a view of a leaf Variable that requires grad is being
    used in an in-place operation".  Now it is a plain output, as PyTorch's compiled one (``_base`` None)."""
    res = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 5)).to(device)
        f = _compiled(m, form) if compiled else m
        got = []
        for i in range(3):
            torch.manual_seed(10 + i)
            m.zero_grad()
            y = f(torch.randn(2, 3, 4, device=device))
            y[:, :, 0] = 0.0
            y.mul_(2)
            y.pow(2).sum().backward()
            got += [y.detach().cpu().numpy(), m[0].weight.grad.cpu().numpy(), m[2].bias.grad.cpu().numpy()]
        res.append(got)
    for e, c in zip(*res):
        np.testing.assert_allclose(c, e, rtol=0 if device == "cpu" else 1e-5, atol=0 if device == "cpu" else 1e-6)


class _Writer(nn.Module):
    def __init__(self, how):
        super().__init__()
        self.lin, self.how = nn.Linear(4, 3), how

    def forward(self, batch):
        if self.how == "dict":
            batch["pred"] = self.lin(batch["x"])
            return batch["pred"].pow(2).mean()
        batch.append(self.lin(batch[0]))
        return batch[-1].pow(2).mean()


@pytest.mark.parametrize("how", ["dict", "list"])
def test_a_compiled_module_assigning_into_its_argument_container(device, how):
    """A forward that stores into its argument (``batch["pred"] = self.head(batch["x"])``, ``outs.append(y)``): eager
    leaves the prediction in the caller's dict or list at every call.  Compiled before the fix: the replays (a fresh
    batch of the same structure each call) returned the loss but never repeated the store: ``batch["pred"]`` raised
    KeyError, the list kept one entry.  Now such a forward is a graph break, as it is in a compiled function."""
    res = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = _Writer(how).to(device)
        f = torch.compile(m) if compiled else m
        got = []
        for i in range(4):
            x = torch.randn(2, 4).to(device)
            b = {"x": x} if how == "dict" else [x]
            loss = f(b)
            loss.backward()
            got += [loss.detach().cpu().numpy(), (b["pred"] if how == "dict" else b[-1]).detach().cpu().numpy(),
                    len(b), m.lin.weight.grad.cpu().numpy().copy()]
        res.append(got)
    for e, c in zip(*res):
        np.testing.assert_allclose(c, e, rtol=0 if device == "cpu" else 1e-5, atol=0 if device == "cpu" else 1e-6)


class _Tracker:
    def __init__(self):
        self.vals, self.count = [], 0

    def update(self, v):
        self.vals.append(v)
        self.count += 1


class _Normalizer:
    def __init__(self, mean, std, clip=3.0):
        self.mean, self.std, self.clip = mean, std, clip

    def apply(self, x):
        return ((x - self.mean) / self.std).clamp(-self.clip, self.clip)


class _Holder(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.lin = nn.Linear(4, 3)
        self.norm = _Normalizer(torch.zeros(4, device=device), torch.full((4,), 2.0, device=device))
        self.tracker = _Tracker()
        self.trackers = [_Tracker()]

    def forward(self, x, track):
        y = self.lin(self.norm.apply(x))
        if track == "attribute":
            self.tracker.update(y.detach())
        elif track == "list":
            self.trackers[0].update(y.detach())
        return y


@pytest.mark.parametrize("track", ["attribute", "list", "none"])
def test_state_of_a_plain_object_a_compiled_module_holds(device, track):
    """A module holding a plain object whose methods the forward calls: a normalizer's ``apply`` reading its
    ``clip``/``mean`` (changed between calls), a metrics tracker whose ``update`` appends and counts.  Eager reads
    and writes that state at every call.  Compiled before the fix: the guards keyed only the attribute names the
    module's own methods read, so a replay used the capture's ``clip`` and ``mean`` (other outputs) and never
    repeated ``update`` (the tracker counted 1 call of 6).  Now the held objects' methods' reads are keyed (a change
    captures again) and a write is a graph break."""
    res = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = _Holder(device).to(device)
        f = torch.compile(m) if compiled else m
        got = []
        for i in range(6):
            if i == 3:
                m.norm.clip = 0.5
            if i == 4:
                m.norm.mean = torch.ones(4, device=device)
            torch.manual_seed(10 + i)
            got.append(f(torch.randn(2, 4, device=device) * 5, track).detach().cpu().numpy())
        got.append(np.array([m.tracker.count, m.trackers[0].count]))
        res.append(got)
    for e, c in zip(*res):
        np.testing.assert_allclose(c, e, rtol=0 if device == "cpu" else 1e-5, atol=0 if device == "cpu" else 1e-6)


class _KeepsAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.o = nn.Linear(4, 4), nn.Linear(4, 2)

    def forward(self, x):
        p = (self.q(x) @ x.transpose(-1, -2)).softmax(-1)
        self.attn = p  # kept for inspection, with its gradient
        p.retain_grad()
        return self.o(p @ x)


def test_an_attention_map_kept_with_retain_grad(device):
    """``self.attn = p; p.retain_grad()`` in the forward (an attention map inspected with its gradient after the
    backward): eager's ``model.attn.grad`` is that call's gradient.  Compiled before the fix: the replays left
    ``model.attn`` an output of the replayed node without the retain hook, so its ``.grad`` stayed None."""
    res = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = _KeepsAttention().to(device)
        f = torch.compile(m) if compiled else m
        got = []
        for i in range(4):
            torch.manual_seed(10 + i)
            f(torch.randn(2, 3, 4, device=device)).pow(2).sum().backward()
            assert m.attn.grad is not None, f"call {i}"
            got += [m.attn.detach().cpu().numpy(), m.attn.grad.cpu().numpy()]
        res.append(got)
    for e, c in zip(*res):
        np.testing.assert_allclose(c, e, rtol=0 if device == "cpu" else 1e-5, atol=0 if device == "cpu" else 1e-6)


class _RunningStats:
    def __init__(self):
        self.count, self.mean = 0, 0.0

    def update(self, v):
        self.count += 1
        self.mean += (v - self.mean) / self.count


class _WithStats(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)
        self.stats = _RunningStats()  # updated by the training loop, never by the forward

    def forward(self, x):
        return self.lin(x)


def test_an_object_the_loop_updates_keeps_the_replay(device):
    """The module holds a statistics object the training loop updates after each step (``model.stats.update(...)``),
    which the forward never calls: the calls keep replaying (the held objects' methods are read only for classes the
    forward calls a method of)."""
    m = _WithStats().to(device)
    f = torch.compile(m)
    for _ in range(6):
        loss = f(torch.randn(2, 4, device=device)).sum()
        loss.backward()
        m.stats.update(float(loss.detach()))
    assert f._capture.replays == 5 and m.stats.count == 6


class _HooksItsInput(nn.Module):
    def __init__(self, on):
        super().__init__()
        self.lin, self.on = nn.Linear(4, 3), on

    def forward(self, x):
        if self.on == "input":
            x.register_hook(lambda g: g * 0.5)
        else:
            self.lin.weight.register_hook(lambda g: g * 0.5)
        return self.lin(x).tanh()


@pytest.mark.parametrize("on", ["input", "parameter"])
def test_a_forward_registering_a_hook_on_its_input_or_a_parameter(device, on):
    """``x.register_hook(lambda g: g * 0.5)`` on the input (a gradient scaling trick), or a hook on a parameter,
    registered inside ``forward``: eager registers it at every call, so the input's gradient is halved each time (a
    parameter's hooks pile up).  Compiled before the fix: a replay never registered it, so from the second call the
    input's gradient (and the parameter's) was eager's without the hook.  Now such a forward is a graph break."""
    res = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = _HooksItsInput(on).to(device)
        f = torch.compile(m) if compiled else m
        got = []
        for i in range(4):
            torch.manual_seed(10 + i)
            x = torch.randn(2, 4, device=device).requires_grad_()
            m.zero_grad()
            f(x).sum().backward()
            got += [x.grad.cpu().numpy(), m.lin.weight.grad.cpu().numpy()]
        res.append(got)
    for e, c in zip(*res):
        np.testing.assert_allclose(c, e, rtol=0 if device == "cpu" else 1e-5, atol=0 if device == "cpu" else 1e-6)


class _SetsRequiresGrad(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x):
        x.requires_grad_(True)
        return self.lin(x).tanh()


def test_a_forward_setting_requires_grad_on_its_input_keeps_the_replay(device):
    """``x.requires_grad_(True)`` inside the forward (no hook): the replay sets it as eager does and gives ``x`` its
    gradient, so the calls keep replaying (the hook check above compares hooks, not ``requires_grad``)."""
    m = _SetsRequiresGrad().to(device)
    f = torch.compile(m)
    for i in range(4):
        x = torch.randn(2, 4, device=device)
        f(x).sum().backward()
        assert x.requires_grad and x.grad is not None
    assert f._capture.replays == 3


class _PlainListOfLayers(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Linear(6, 2)]  # a plain list: not registered
        self.out = nn.Linear(2, 2)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.out(x)


def test_modules_kept_in_a_plain_list_attribute(device):
    """Layers kept in a plain Python list (``self.layers = [...]``, not an ``nn.ModuleList``): eager runs them, in
    their own training mode, with their current parameters.  Compiled before the fix: the guards looked only at
    the registered submodules, so after ``layers[1].eval()`` the replay still normalised with the batch statistics
    (and updated the running ones), and after ``layers[0].weight = Parameter(...)`` it kept using the old weight."""
    res = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = _PlainListOfLayers()
        for layer in m.layers:
            layer.to(device)
        m.to(device)
        f = torch.compile(m) if compiled else m
        got = []
        for i in range(6):
            if i == 3:
                m.layers[1].eval()
            if i == 4:
                m.layers[0].weight = nn.Parameter(m.layers[0].weight.detach() * 2)
            torch.manual_seed(10 + i)
            out = f(torch.randn(5, 4, device=device))
            out.pow(2).sum().backward()
            got += [out.detach().cpu().numpy(), m.layers[0].weight.grad.cpu().numpy(),
                    m.layers[1].running_mean.cpu().numpy()]
            m.layers[0].weight.grad = None
        res.append(got)
    for e, c in zip(*res):
        np.testing.assert_allclose(c, e, rtol=0 if device == "cpu" else 1e-5, atol=0 if device == "cpu" else 1e-6)
