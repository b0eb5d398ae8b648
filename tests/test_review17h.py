"""Review 17h: the guard lookup's per-call cost.  The modules' user attributes' key is reused while every attribute
is the same object as at the last call (coretorch/_compile/reuse.py), a function's defaults' key while its
``__defaults__`` is the same tuple (keyvalues._fn_key), and a compiled function's key takes the parameters'
identities from the structure key only.  These tests hold that every change those keys saw is still seen: an
attribute replaced, a list attribute changed in place, a function's defaults or closure number changed, a
parameter replaced; each compiled call matches eager (bitwise on cpu)."""
import numpy as np
import pytest

import coretorch as torch
import coretorch.nn as nn


def _same(a, b, device):
    a, b = a.detach().cpu().numpy(), b.detach().cpu().numpy()
    if device == "cpu":
        assert a.tobytes() == b.tobytes()
    else:
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _scale(t, k=2.0):
    return t * k


SHIFT = 0.5
CFG = {"s": 1.0}


class _M(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.s = 1.5
        self.pads = [1.0, 2.0]
        self.act = None

    def forward(self, x):
        y = _scale(self.lin(x)) * self.s + self.pads[1] + SHIFT
        return self.act(y) if self.act is not None else y


def test_module_attributes_changed_between_calls(device):
    """Each call after a change (a float attribute replaced, a list attribute's entry set in place, a global
    function's ``__defaults__`` reassigned, a function attribute's closure number changed, a global number the
    class reads replaced, a parameter replaced)
    matches eager: the reused key of unchanged attributes still sees each change."""
    torch.manual_seed(0)
    m = _M().to(device)
    c = torch.compile(m, recompile_limit=100)
    x = torch.randn(3, 4).to(device)
    k = 3.0

    def act(t):
        return t * k

    steps = [lambda: None, lambda: setattr(m, "s", 2.5), lambda: m.pads.__setitem__(1, 7.0),
             lambda: setattr(_scale, "__defaults__", (5.0,)), lambda: setattr(m, "act", act),
             lambda: globals().__setitem__("SHIFT", 0.25),
             lambda: setattr(act.__closure__[0], "cell_contents", 4.0),
             lambda: setattr(m.lin, "weight", nn.Parameter(torch.randn(4, 4).to(device))),
             lambda: setattr(m, "s", 2.5)]
    try:
        with torch.no_grad():
            for s in steps:
                s()
                _same(c(x), m(x), device)
                _same(c(x), m(x), device)
    finally:
        _scale.__defaults__ = (2.0,)
        globals()["SHIFT"] = 0.5


def test_step_parameter_replaced_and_attribute_changed(device):
    """A compiled training step: a parameter replaced (``model.fc.bias = Parameter(...)``) and a module number
    changed after replays: the losses and parameters match eager's at each step (the key's parameter identities
    now come from the structure key)."""
    def run(compiled):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x, y = torch.randn(5, 4).to(device), torch.randn(5, 2).to(device)

        def step():
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss
        f = torch.compile(step) if compiled else step
        out = []
        for i in range(6):
            if i == 3:
                model[2].bias = nn.Parameter(torch.zeros(2).to(device))
                opt.param_groups[0]["params"][-1] = model[2].bias
            if i == 4:
                model[1].inplace = True
            out.append(f().detach().cpu())
        return out + [p.detach().cpu() for p in model.parameters()]
    for a, b in zip(run(False), run(True)):
        _same(a, b, device)


def _make_mul(k):
    return lambda t: t * k


_mul = _make_mul(2.0)


class _N(nn.Module):
    def forward(self, x):
        return _mul(_scale(x)) * CFG["s"] + SHIFT


class _P(nn.Module):  # (no dict among its globals)
    def forward(self, x):
        return _mul(_scale(x)) + SHIFT


def test_module_class_globals_changed_between_calls(device):
    """A module whose class reads a global dict's entry (and one that reads none), a global number, a global function
    with defaults and one with a closure number: each changed between calls, the compiled module matches eager (a
    dict among the globals: their key is computed at every call; without one it is reused while the same objects,
    defaults tuples and closure cells' contents)."""
    for m in (_N(), _P()):
        c = torch.compile(m, recompile_limit=100)
        x = torch.randn(3, 4).to(device)
        steps = [lambda: None, lambda: CFG.__setitem__("s", 3.0), lambda: setattr(_scale, "__defaults__", (5.0,)),
                 lambda: globals().__setitem__("SHIFT", 0.25),
                 lambda: setattr(_mul.__closure__[0], "cell_contents", 4.0)]
        try:
            with torch.no_grad():
                for s in steps:
                    s()
                    _same(c(x), m(x), device)
                    _same(c(x), m(x), device)
        finally:
            _scale.__defaults__ = (2.0,)
            globals()["SHIFT"] = 0.5
            CFG["s"] = 1.0
            _mul.__closure__[0].cell_contents = 2.0


def _make_act(k):
    def act(t):
        return t * k[0]
    return act


class _A(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.act = _make_act(k)

    def forward(self, x):
        return self.act(x)


def test_module_function_attribute_closure_list_set_in_place(device):
    """A module attribute that is a function whose closure holds a list (``self.act = make(k)``), the list's entry
    set in place between calls: eager multiplies by the new number; compiled replayed the capture's (the function
    was keyed by its closure cells' identities only, one level); now as a function argument, by what it reads."""
    k = [3.0]
    m = _A(k)
    c = torch.compile(m)
    x = torch.ones(2).to(device)
    with torch.no_grad():
        _same(c(x), m(x), device)
        _same(c(x), m(x), device)
        k[0] = 4.0
        _same(c(x), m(x), device)


_K = [3.0]
_ACT = _make_act(_K)


class _G(nn.Module):
    def forward(self, x):
        return _ACT(x)


@pytest.mark.xfail(strict=True, reason="a global function's closure list set in place is keyed by identity only "
                   "(root_key's _fn_key); keying the closure's contents breaks the append-only counter lists "
                   "(lens/appends in root_key) that the same closures hold")
def test_global_function_closure_list_set_in_place(device):
    """A global function whose closure holds a list (``ACT = make(K)``), read by a compiled module's forward and by a
    compiled function, the list's entry set in place between calls: eager uses the new number; compiled replays the
    capture's (root_key keys the function by its closure cells' identities only)."""
    x = torch.ones(2).to(device)
    m = _G()
    for c, e in ((torch.compile(m), m), (torch.compile(lambda t: _ACT(t)), lambda t: _ACT(t))):
        try:
            with torch.no_grad():
                _same(c(x), e(x), device)
                _same(c(x), e(x), device)
                _K[0] = 4.0
                _same(c(x), e(x), device)
        finally:
            _K[0] = 3.0
