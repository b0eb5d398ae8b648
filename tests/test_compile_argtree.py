"""Argument containers of compiled functions and modules (coretorch/_compile/argtree.py): a fresh batch dict, list
or tuple per call replays (keyed by its structure and entries, not its identity), a changed structure captures
again, and what depends on a container's identity (a counter list, a returned or mutated container) stays eager's."""
from __future__ import annotations

import dataclasses
import types

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn as nn
import coretorch.nn.functional as F

from _compile_helpers import close


def _model(device, seed=0):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
    return model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def _batches(device, n=8):
    torch.manual_seed(123)
    return [(torch.randn(5, 4).to(device), torch.randint(0, 3, (5,)).to(device)) for _ in range(n)]


@pytest.mark.parametrize("form", ["dict", "list", "tuple", "nested", "kwargs_dict"])
def test_a_fresh_batch_container_per_call_replays_with_eager_results(device, form):
    """A data loader's batch as a new dict (or list, tuple, nested dict) at every call: each call was a new capture
    (the container was keyed by its identity), the limit of 8 was reached and the rest ran eagerly with a warning."""
    pack = {"dict": lambda x, y: ({"x": x, "y": y},), "list": lambda x, y: ([x, y],),
            "tuple": lambda x, y: ((x, y),), "nested": lambda x, y: ({"inp": {"x": x}, "y": [y]},),
            "kwargs_dict": lambda x, y: ({"x": x}, y)}[form]
    get = {"dict": lambda b: (b["x"], b["y"]), "list": lambda b: (b[0], b[1]), "tuple": lambda b: b,
           "nested": lambda b: (b["inp"]["x"], b["y"][0]), "kwargs_dict": None}[form]

    def run(compiled):
        model, opt = _model(device)

        def step(batch, y=None):
            x, y = get(batch) if get is not None else (batch["x"], y)
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        s = torch.compile(step) if compiled else step
        losses = [s(*pack(x, y)) for x, y in _batches(device, 12)]
        return losses, list(model.parameters()), s
    (le, pe, _), (lc, pc, s) = run(False), run(True)
    for a, b in zip(le + pe, lc + pc):
        close(device, a, b, form)
    assert s.replays >= 9 and len(s._cache) <= 3


def test_a_changed_structure_captures_again(device):
    """Other keys, another key order, another length: another capture, eager's result (a replay of ``d["a"] * 2 +
    d["b"]`` for ``{"a": x, "c": y}`` must raise eager's KeyError, not read y as ``d["b"]``)."""
    def f(d):
        return sum(v * (i + 1) for i, v in enumerate(d.values())) + d["a"]
    c = torch.compile(f)
    x, y = torch.ones(3, device=device), torch.full((3,), 5.0, device=device)
    for d in ({"a": x, "b": y}, {"a": x, "b": y}, {"b": y, "a": x}, {"a": x, "b": y, "z": x}):
        close(device, f(d), c(d))
    assert c.replays == 1 and len(c._cache) == 3
    with pytest.raises(KeyError):
        c({"c": y, "b": x})

    class M(nn.Module):
        def forward(self, d):
            return d["a"] * 2 + d["b"]
    m = torch.compile(M())
    m({"a": x, "b": y})
    m({"a": x, "b": y})
    assert m._capture.replays == 1
    with pytest.raises(KeyError):  # the module capture had no key for the dict's keys: it replayed
        m({"a": x, "c": y})
    close(device, m({"b": x, "a": y}), y * 2 + x)  # (another key order: another capture)


def test_a_counter_list_argument_keeps_its_replay_and_its_appends(device):
    """A list the function only appends numbers to keeps its identity and its replay (appends happen at the capture
    only, as documented); a returned argument container is eager's own object at every call."""
    def f(x, log):
        log.append(1)
        return x * 2
    c = torch.compile(f)
    log: list = []
    x = torch.ones(2, device=device)
    for _ in range(4):
        c(x, log)
    assert c.replays == 3

    def g(batch):
        return batch, batch["x"] + 1
    cg = torch.compile(g)
    for i in range(5):
        b = {"x": torch.full((2,), float(i), device=device)}
        out = cg(b)
        assert out[0] is b
        np.testing.assert_array_equal(out[1].cpu().numpy(), np.full(2, i + 1.0, np.float32))


def test_a_mutated_argument_container_is_eagers(device):
    """The function writes into its batch dict: a replay would not, so that is a graph break; the caller sees the
    entry at every call."""
    def f(batch):
        batch["out"] = batch["x"] * 3
        return batch["out"].sum()
    c = torch.compile(f)
    for i in range(4):
        b = {"x": torch.full((2,), float(i), device=device)}
        c(b)
        np.testing.assert_array_equal(b["out"].cpu().numpy(), np.full(2, 3.0 * i, np.float32))
    assert c.replays == 0


def test_a_module_or_number_inside_an_argument_container_is_guarded(device):
    """What a container holds besides tensors is guarded as an argument would be: numbers by value, a module by its
    state (its ``training`` flag, its parameters)."""
    torch.manual_seed(0)
    lin = nn.Linear(3, 3).to(device)
    drop = nn.Dropout(0.5)

    def f(cfg, x):
        return cfg["act"](cfg["m"](x)) * cfg["scale"]
    c = torch.compile(f)
    x = torch.randn(2, 3).to(device)
    with torch.no_grad():
        for scale in (2.0, 2.0, 3.0, 3.0):
            close(device, f({"m": lin, "act": torch.relu, "scale": scale}, x),
                  c({"m": lin, "act": torch.relu, "scale": scale}, x))
        assert c.replays == 2
        for p in (0.0, 0.0, 1.0):  # a module in the container: its attributes are guarded (Dropout.p)
            drop.p = p
            close(device, f({"m": lin, "act": drop, "scale": 1.0}, x), c({"m": lin, "act": drop, "scale": 1.0}, x))
        assert c.replays == 3


@dataclasses.dataclass
class _Batch:
    x: torch.Tensor
    y: torch.Tensor
    weight: float = 1.0


@dataclasses.dataclass
class _BatchWithMethod:
    x: torch.Tensor
    y: torch.Tensor

    def scale(self):
        return 2.0


@pytest.mark.parametrize("form", ["dataclass", "namespace"])
def test_a_fresh_dataclass_or_namespace_batch_per_call_replays(device, form):
    """A collate function's ``Batch(x=..., y=...)`` (or a ``SimpleNamespace``) made at every call was an argument
    object keyed by its identity: each call captured again until the limit, then ran eagerly.  A record whose class
    holds only its fields is opened as a dict of its attributes (argtree.record): the step replays, bitwise eager,
    and a changed number in it (``weight``) captures again."""
    def make(x, y, w):
        return _Batch(x, y, w) if form == "dataclass" else types.SimpleNamespace(x=x, y=y, weight=w)
    results = []
    for compiled in (False, True):
        model, opt = _model(device)

        def step(b):
            opt.zero_grad()
            loss = F.cross_entropy(model(b.x), b.y) * b.weight
            loss.backward()
            opt.step()
            return loss
        f = torch.compile(step) if compiled else step
        losses = [f(make(x, y, 1.0 + (i > 3))) for i, (x, y) in enumerate(_batches(device))]
        results.append((losses, [p.detach().clone() for p in model.parameters()]))
        if compiled:
            assert f.replays == 5  # captures: the first call, the first with a .grad, the first with weight 2.0
    for a, b in zip(results[0][1] + results[0][0], results[1][1] + results[1][0]):
        close(device, a, b)


def test_a_record_with_methods_stays_an_argument_object(device):
    """A dataclass with a method (or a property, a class attribute) may give the step values besides its fields:
    it is not opened, and stays an argument keyed by identity (a new one each call captures again)."""
    f = torch.compile(lambda b: b.x * b.scale())
    for _ in range(3):
        b = _BatchWithMethod(torch.ones(2, device=device), torch.zeros(2, device=device))
        assert torch.equal(f(b), b.x * 2)
    assert f.replays == 0


def test_a_step_assigning_a_field_of_its_record_argument(device):
    """``b.x = b.x * 2`` inside the step: the caller's record is changed as eager changes it (a replay would not
    repeat the assignment: a graph break)."""
    def step(b):
        b.x = b.x * 2
        return b.x.sum()
    c = torch.compile(step)
    for _ in range(3):
        b1, b2 = (_Batch(torch.ones(2, device=device), torch.zeros(2, device=device)) for _ in range(2))
        assert torch.equal(step(b1), c(b2)) and torch.equal(b1.x, b2.x)
