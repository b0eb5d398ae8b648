"""Whole objects in ``coretorch.save``/``coretorch.load`` (coretorch/_serialization_objects.py): ``torch.save(model,
f)`` as PyTorch's own examples do (word_language_model saves its best model whole and loads it back under
``torch.serialization.safe_globals``), user objects in checkpoints, and PyTorch 2.13's ``weights_only`` rules on
load.  Nothing is pickled: the objects are taken apart through the reduce protocol into the JSON structure."""
from __future__ import annotations

import dataclasses
import io
import os
import pickle
import sys
import types

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn as nn
import coretorch.nn.functional as F
from coretorch.serialization import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals


class TiedLM(nn.Module):
    """A language model with tied input/output weights, a shared block, buffers and plain attributes."""

    def __init__(self, ntok=11, d=6):
        super().__init__()
        self.emb = nn.Embedding(ntok, d)
        self.rnn = nn.LSTM(d, d, batch_first=True)
        self.block = nn.Linear(d, d)
        self.again = self.block                       # the same submodule under two names
        self.dec = nn.Linear(d, ntok)
        self.dec.weight = self.emb.weight             # tied weights: one Parameter
        self.register_buffer("scale", torch.tensor(2.0))
        self.register_buffer("tmp", torch.zeros(3), persistent=False)
        self.act = F.gelu
        self.cfg = {"d": d, "drop": 0.25, "names": ("a", "b")}

    def forward(self, idx):
        h, _ = self.rnn(self.emb(idx))
        return self.dec(self.act(self.again(h)) * self.scale)


GLOBAL_LAMBDA = lambda x: x  # noqa: E731 - a lambda pickle cannot look up by its name
_GLOBALS = [TiedLM, nn.Embedding, nn.LSTM, nn.Linear, F.gelu]


def _roundtrip(obj, **load_kw):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, **load_kw)


def test_a_whole_model_round_trips_with_its_structure_and_trains(device):
    """PyTorch: ``torch.save(model, f)`` pickles the module; ``torch.load(f, weights_only=False)`` gives an equal
    model of the same class: tied weights stay one Parameter, a submodule reached twice one module, non-persistent
    buffers and plain attributes come back, and it trains.  coretorch before: TypeError("cannot save obj of type
    TiedLM")."""
    torch.manual_seed(0)
    m = TiedLM().to(device)
    m.eval()
    r = _roundtrip(m, weights_only=False)
    assert type(r) is TiedLM and r is not m and not r.training and not r.block.training
    assert r.dec.weight is r.emb.weight and isinstance(r.dec.weight, nn.Parameter) and r.dec.weight.requires_grad
    assert r.again is r.block and r.act is F.gelu and r.cfg == m.cfg and type(r.cfg["names"]) is tuple
    assert "tmp" in dict(r.named_buffers()) and "tmp" not in r.state_dict()
    assert [k for k, _ in r.named_parameters()] == [k for k, _ in m.named_parameters()]
    for (k, a), (_, b) in zip(m.state_dict().items(), r.state_dict().items()):
        assert a.device == b.device and a.dtype == b.dtype, k
        np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())
    idx = torch.tensor([[1, 2, 3], [4, 5, 6]], device=device)
    np.testing.assert_array_equal(m(idx).detach().cpu().numpy(), r(idx).detach().cpu().numpy())
    r.train()
    opt = torch.optim.SGD(r.parameters(), lr=0.1)
    loss = F.cross_entropy(r(idx).reshape(-1, 11), idx.reshape(-1))
    loss.backward()
    assert r.emb.weight.grad is not None and r.dec.weight.grad is r.emb.weight.grad
    before = r.block.weight.detach().clone()
    opt.step()
    assert not torch.equal(before, r.block.weight.detach())
    assert torch.equal(m.block.weight, _roundtrip(m, weights_only=False).block.weight)  # m itself untouched


def test_weights_only_load_needs_the_globals_allowed():
    """PyTorch 2.6+: ``torch.load`` defaults to ``weights_only=True``, whose unpickler refuses any class or function
    not allowed by ``add_safe_globals``/``safe_globals`` with an UnpicklingError naming it (the first one it meets),
    and loads the model once all are allowed (the word_language_model example's way)."""
    m = TiedLM()
    buf = io.BytesIO()
    torch.save(m, buf)
    for kw in ({}, {"weights_only": True}):
        buf.seek(0)
        with pytest.raises(pickle.UnpicklingError, match=r"(?s)Weights only load failed.*Unsupported global: GLOBAL "
                           r"test_serialization_objects\.TiedLM was not an allowed global by default\. Please use "
                           r"`torch\.serialization\.add_safe_globals\(\[test_serialization_objects\.TiedLM\]\)`"):
            torch.load(buf, **kw)
    buf.seek(0)
    with safe_globals([TiedLM, nn.Embedding, nn.LSTM, nn.Linear]):  # gelu still missing
        with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL coretorch\.nn\.functional\.gelu was not"):
            torch.load(buf)
    assert get_safe_globals() == []
    buf.seek(0)
    with safe_globals(_GLOBALS):
        r = torch.load(buf)
    assert type(r) is TiedLM and r.dec.weight is r.emb.weight
    buf.seek(0)
    try:
        add_safe_globals([*_GLOBALS[:-1], (F.gelu, "coretorch.nn.functional.gelu")])  # the (object, name) form
        assert torch.load(buf).act is F.gelu
    finally:
        clear_safe_globals()


def test_weights_only_never_imports_what_it_refuses(tmp_path, monkeypatch):
    """A refused global is named, never imported: the module defining it is not loaded by ``torch.load`` with
    ``weights_only=True``; with ``weights_only=False`` it is (a file from a trusted source), and a name that no
    longer exists is an error naming it."""
    mod_dir = tmp_path / "mods"
    mod_dir.mkdir()
    (mod_dir / "ct_probe_mod.py").write_text("class Thing:\n    def __init__(self, w):\n        self.w = w\n")
    monkeypatch.syspath_prepend(str(mod_dir))
    import ct_probe_mod
    p = tmp_path / "thing.pt"
    torch.save(ct_probe_mod.Thing(torch.arange(3.0)), p)
    monkeypatch.delitem(sys.modules, "ct_probe_mod")
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL ct_probe_mod.Thing"):
        torch.load(p)
    assert "ct_probe_mod" not in sys.modules
    t = torch.load(p, weights_only=False)
    assert type(t).__name__ == "Thing" and t.w.tolist() == [0.0, 1.0, 2.0] and "ct_probe_mod" in sys.modules
    monkeypatch.delattr(sys.modules["ct_probe_mod"], "Thing")
    with pytest.raises(AttributeError, match="ct_probe_mod.Thing"):
        torch.load(p, weights_only=False)


@dataclasses.dataclass
class Record:
    w: object
    step: int
    tags: list


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a, self.b = a, b


class WithState:
    def __init__(self, t):
        self.t, self.cache = t, object()

    def __getstate__(self):
        return {"t": self.t}

    def __setstate__(self, state):
        self.t, self.cache = state["t"], "rebuilt"


def test_user_objects_shared_references_and_cycles():
    """pickle's semantics for plain objects: dataclasses, slotted classes, ``__getstate__``/``__setstate__``, an
    object referenced twice loads as one object, and a cycle (an object holding itself) survives."""
    w = torch.arange(4.0).reshape(2, 2)
    rec = Record(w, 3, ["x"])
    node = types.SimpleNamespace(name="n")
    node.me = node
    obj = {"a": rec, "b": rec, "s": Slotted(1.5, w), "g": WithState(w), "cyc": node}
    r = _roundtrip(obj, weights_only=False)
    assert r["a"] is r["b"] and type(r["a"]) is Record and r["a"].step == 3 and r["a"].tags == ["x"]
    assert r["s"].a == 1.5 and r["s"].b is r["a"].w and r["g"].cache == "rebuilt" and r["g"].t is r["a"].w
    assert r["cyc"].me is r["cyc"] and r["cyc"].name == "n"
    np.testing.assert_array_equal(r["a"].w.numpy(), w.numpy())


def test_what_pickle_cannot_save_is_refused_before_writing(tmp_path):
    """PyTorch (pickle): a module-level lambda is a PicklingError ("attribute lookup <lambda> on ... failed"), a
    local function or class an AttributeError ("Can't pickle local object"), a lock a TypeError; coretorch names
    where it sits and writes nothing."""
    p = tmp_path / "x.pt"

    def local():
        class L:
            pass
        return L()
    m = nn.Linear(2, 2)
    m.hook = GLOBAL_LAMBDA
    for obj, err, msg in [({"f": GLOBAL_LAMBDA}, pickle.PicklingError, r"attribute lookup <lambda> on .* obj\['f'\]"),
                          ({"f": lambda: 0}, AttributeError, r"Can't pickle local object 'test_what.*<lambda>'"),
                          (local(), AttributeError, "Can't pickle local object 'test_what_pickle_cannot"),
                          (m, pickle.PicklingError, r"<lambda>.*obj\.hook"),
                          ({"lock": __import__("threading").Lock()}, TypeError, "cannot pickle")]:
        with pytest.raises(err, match=msg):
            torch.save(obj, p)
        assert not p.exists() and os.listdir(tmp_path) == []


def test_a_saved_model_names_its_tensors_as_its_state_dict(tmp_path):
    """The file stays a good safetensors citizen: a whole module's tensors are named by their state-dict keys
    (tied weights stored once), and identical models give identical bytes."""
    from safetensors import safe_open
    torch.manual_seed(0)
    m = TiedLM()
    p1, p2 = tmp_path / "a.pt", tmp_path / "b.pt"
    torch.save(m, p1)
    torch.save(m, p2)
    assert p1.read_bytes() == p2.read_bytes()
    with safe_open(str(p1), framework="numpy") as f:
        keys = set(f.keys())
    assert {"emb.weight", "block.weight", "dec.bias", "rnn.weight_ih_l0", "scale", "tmp"} <= keys
    assert not any("_parameters" in k or "_modules" in k for k in keys)


def test_map_location_applies_inside_objects(device, tmp_path):
    """``map_location`` moves the tensors of a whole saved model as those of a state dict."""
    m = nn.Linear(3, 2).to(device)
    p = tmp_path / "m.pt"
    torch.save(m, p)
    r = torch.load(p, map_location="cpu", weights_only=False)
    assert r.weight.device.type == "cpu" and r.bias.device.type == "cpu"
    np.testing.assert_array_equal(r.weight.detach().numpy(), m.weight.detach().cpu().numpy())


def test_force_no_weights_only_environment_switch(tmp_path, monkeypatch):
    """``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` makes ``weights_only=False`` the default, and
    ``TORCH_FORCE_WEIGHTS_ONLY_LOAD=1`` forces it on even when asked off (PyTorch 2.13's switches)."""
    p = tmp_path / "r.pt"
    torch.save(Record(torch.ones(1), 1, []), p)
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    assert type(torch.load(p)) is Record
    monkeypatch.delenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(pickle.UnpicklingError, match="Record"):
        torch.load(p, weights_only=False)


def test_state_dicts_load_with_weights_only_as_before(tmp_path):
    """What held only tensors and containers loads under ``weights_only=True`` without any allow-listing."""
    m = nn.Linear(2, 2)
    p = tmp_path / "sd.pt"
    torch.save({"model": m.state_dict(), "epoch": 3}, p)
    r = torch.load(p)
    assert r["epoch"] == 3 and torch.equal(r["model"]["weight"], m.weight.detach())


def test_tensors_as_dict_keys_and_a_whole_optimizer(device):
    """PyTorch pickles tensors used as dict keys, and so a whole optimizer (``state`` is keyed by its parameters):
    loaded, each key is the same tensor object as the parameter its param group holds, and the optimizer steps on.
    coretorch before: TypeError("a tensor used as a dict key ... cannot be saved")."""
    w = nn.Parameter(torch.tensor([1.0, -2.0], device=device))
    opt = torch.optim.Adam([w], lr=0.1)
    (w * w).sum().backward()
    opt.step()
    r = _roundtrip({"opt": opt, "w": w, "keyed": {w: "weight"}}, weights_only=False)
    o, w2 = r["opt"], r["w"]
    assert type(o) is torch.optim.Adam and o.param_groups[0]["params"][0] is w2 and list(o.state) == [w2]
    assert r["keyed"] == {w2: "weight"} and w2.device == w.device
    np.testing.assert_array_equal(o.state[w2]["exp_avg"].cpu().numpy(), opt.state[w]["exp_avg"].cpu().numpy())
    w2.grad = torch.ones_like(w2)
    o.step()
    assert int(o.state[w2]["step"]) == 2
