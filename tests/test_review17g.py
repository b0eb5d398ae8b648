"""Review 17g: compiled modules and the nn.Module API between calls — ``torch.compile(model)`` (``OptimizedModule``,
``_orig_mod``) and ``model.compile()`` in training and eval loops with state_dict, load_state_dict, save/load,
deepcopy/pickle, ``.to``, freezing, replaced submodules and parameters, hooks, parametrize and weight tying used
between calls, each against the same eager program."""
import copy

import pytest

import coretorch as torch
import coretorch.nn as nn


def _b(t) -> bytes:
    return t.detach().cpu().numpy().tobytes()


class _Flagged(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.double_it = False

    def forward(self, x):
        y = self.fc(x)
        return y * 2 if self.double_it else y


def test_attributes_set_on_the_wrapper_reach_the_wrapped_module(device):
    """PyTorch's ``OptimizedModule.__setattr__`` sets anything but its own names on ``_orig_mod``: ``compiled.flag =
    True`` changes what the forward reads, ``compiled.fc = nn.Linear(...)`` replaces the module's submodule (state_dict
    keys stay ``_orig_mod.fc.*``), ``del compiled.flag`` removes it there.  Before: the flag and the new Linear were
    set on the wrapper (the forward kept the old ones; state_dict gained ``fc.weight`` beside
    ``_orig_mod.fc.weight``)."""
    torch.manual_seed(0)
    m = _Flagged().to(device)
    c = torch.compile(m)
    x = torch.ones(1, 3, device=device)
    c(x), c(x)
    c.double_it = True
    assert m.double_it is True and "double_it" not in c.__dict__
    assert _b(c(x)) == _b(m.fc(x) * 2)
    new = nn.Linear(3, 2).to(device)
    c.fc = new
    assert m.fc is new and list(c.state_dict()) == ["_orig_mod.fc.weight", "_orig_mod.fc.bias"]
    assert _b(c(x)) == _b(new(x) * 2) and _b(c(x)) == _b(new(x) * 2)
    c.register_buffer("b", torch.zeros(2))  # (register_* are the wrapper's own methods, as PyTorch's)
    assert "b" in c._buffers and not hasattr(m, "b")
    del c.double_it
    assert not hasattr(m, "double_it") and "fc" in dir(c)


def test_the_wrapper_s_training_flag_is_the_wrapped_module_s():
    """PyTorch: ``compiled.training`` mirrors ``_orig_mod.training`` (a module in eval mode when compiled gives
    False; ``model.train()`` later gives True); ``len(compiled)`` is the wrapped Sequential's.  Before: the wrapper
    kept its own flag (True after compiling an eval-mode module, stale after ``model.train()``) and had no len."""
    m = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5))
    m.eval()
    c = torch.compile(m)
    assert c.training is False
    m.train()
    assert c.training is True
    c.training = False
    assert m.training is False
    assert len(c) == 2
    with pytest.raises(TypeError):
        len(torch.compile(nn.Linear(2, 2)))


def test_the_wrapper_s_repr_is_pytorch_s():
    """PyTorch prints ``OptimizedModule(\\n  (_orig_mod): Linear(...)\\n)`` (a Module's repr with its one child).
    Before: ``OptimizedModule(Linear(...))``."""
    assert repr(torch.compile(nn.Linear(2, 2))) == \
        "OptimizedModule(\n  (_orig_mod): Linear(in_features=2, out_features=2, bias=True)\n)"


def test_a_full_backward_hook_on_the_wrapper_runs(device):
    """A full backward hook registered on the compiled wrapper runs at every backward as on the eager module (its
    flag stays on the wrapper: PyTorch's ``__setattr__`` sends it to ``_orig_mod``, where the wrapper's hook is
    silently dropped; the attribute forwarding of this review must not copy that)."""
    grads = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(2, 2)).to(device)
        c = torch.compile(m) if compiled else m
        seen = []
        c.register_full_backward_hook(lambda mod, gi, go: seen.append(1) or (gi[0] * 2,))
        for _ in range(3):
            x = torch.ones(1, 2, device=device, requires_grad=True)
            c(x).sum().backward()
            grads.append(_b(x.grad))
        assert len(seen) == 3
    assert grads[:3] == grads[3:]


class _Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)
        self.k = 1.0

    def forward(self, x):
        return self.fc(x) * self.k


class _ScaledCompiled(_Scaled):
    @torch.compile
    def forward(self, x):
        return self.fc(x) * self.k


@pytest.mark.parametrize("how", ["compile()", "compile(forward)", "class body"])
def test_a_shallow_copy_of_a_module_compiled_in_place_runs_its_own_forward(device, how):
    """``copy.copy(model)`` of a module compiled in place: the copy's ``forward`` reads the copy's attributes, as
    eager's (``m2.k = 3.0`` triples the copy's output, not the original's).  Before: the copy's instance ``forward``
    was the original's capture, bound to the original module (the copy returned the original's output); so was the
    per-instance capture of a class whose body compiles ``forward``."""
    x = torch.ones(1, 2, device=device)
    outs = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = (_ScaledCompiled if compiled and how == "class body" else _Scaled)().to(device)
        if compiled and how == "compile()":
            m.compile()
        elif compiled and how == "compile(forward)":
            m.forward = torch.compile(m.forward)
        m(x), m(x)
        m2 = copy.copy(m)
        m2.k = 3.0
        outs.append([_b(m2(x)), _b(m2(x)), _b(m(x))])
        assert m2(x).sum().item() != m(x).sum().item()
    assert outs[0] == outs[1]


class _Named(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)

    def forward(self, input_ids, attention_mask=None, *, labels=None):
        """Doc of forward."""
        return self.fc(input_ids)


@pytest.mark.parametrize("how", ["compile()", "compile(forward)"])
def test_a_module_compiled_in_place_keeps_its_forward_s_signature(how):
    """PyTorch's ``model.compile()`` leaves ``model.forward`` as it is: ``inspect.signature(model.forward)`` (what
    trainers read to pick a batch's columns), its ``__name__`` and ``__doc__`` are the method's, as are
    ``torch.compile(model.forward)``'s.  Before: ``(*args, **kwargs)``, no name and the capture class's doc."""
    import inspect
    m = _Named()
    if how == "compile()":
        m.compile()
    else:
        m.forward = torch.compile(m.forward)
    assert str(inspect.signature(m.forward)) == "(input_ids, attention_mask=None, *, labels=None)"
    assert m.forward.__name__ == "forward" and m.forward.__doc__ == "Doc of forward."
    assert m(input_ids=torch.ones(1, 2)).shape == (1, 2)


def test_optimized_module_is_found_where_scripts_look_for_it():
    """``isinstance(model, torch._dynamo.eval_frame.OptimizedModule)`` (how scripts and accelerate's
    ``unwrap_model`` unwrap ``_orig_mod`` before saving) is True for a compiled module, as PyTorch's.  Before:
    ``AttributeError: module 'coretorch._dynamo' has no attribute 'eval_frame'``."""
    from coretorch._dynamo.eval_frame import OptimizedModule
    m = nn.Linear(2, 2)
    c = torch.compile(m)
    assert isinstance(c, torch._dynamo.eval_frame.OptimizedModule) and OptimizedModule is type(c)
    assert not isinstance(m, OptimizedModule)


def test_a_compiled_model_s_state_dict_loads_into_the_bare_module_after_consume_prefix(device):
    """``torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(sd, "_orig_mod.")``, PyTorch's way to load a
    compiled model's checkpoint into the bare module, strips the prefix of the keys and ``_metadata`` in place.
    Before: ``AttributeError`` (no such function)."""
    from coretorch.nn.modules.utils import consume_prefix_in_state_dict_if_present
    torch.manual_seed(0)
    c = torch.compile(nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)).to(device))
    c(torch.randn(3, 2, device=device)), c(torch.randn(3, 2, device=device))
    sd = c.state_dict()
    consume_prefix_in_state_dict_if_present(sd, "_orig_mod.")
    assert list(sd) == list(c._orig_mod.state_dict()) and dict(sd._metadata) == {"": {"version": 1},
                                                                                 "0": {"version": 1},
                                                                                 "1": {"version": 2}}
    m = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)).to(device)
    m.load_state_dict(sd)
    assert [_b(v) for v in m.state_dict().values()] == [_b(v) for v in c._orig_mod.state_dict().values()]


def test_model_compile_keeps_an_instance_forward(device):
    """``model.forward = MethodType(patched, model)`` (a wrapped or instrumented forward, as accelerate's mixed
    precision sets) before ``model.compile()``: PyTorch compiles the module's calls, which run the instance forward;
    so do the compiled calls (trained bitwise like eager, replayed), and a deepcopy's (bound to the copy).  Before:
    the capture used the class's ``forward``: the patch was silently dropped."""
    import types
    runs = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).to(device)
        plain = m.forward

        def patched(self, x, plain=plain):
            return plain(x) * 10 + 1
        m.forward = types.MethodType(patched, m)
        if compiled:
            m.compile()
        opt = torch.optim.SGD(m.parameters(), lr=0.01)
        out = []
        for _ in range(4):
            loss = m(torch.ones(2, 3, device=device)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            out.append(_b(loss))
        c = copy.deepcopy(m)
        out.append(_b(c(torch.ones(2, 3, device=device))))
        runs.append(out)
        if compiled:
            assert m.forward.replays >= 2
    assert runs[0] == runs[1]


def test_a_compiled_wrapper_warns_of_global_module_hooks():
    """PyTorch warns at each call of a ``torch.compile(module)`` wrapper while global module hooks are registered
    (they fire an extra time, for the ``OptimizedModule``), pointing at the caller's line.  Before: no warning."""
    import warnings
    c = torch.compile(nn.Linear(2, 2))
    h = torch.nn.modules.module.register_module_forward_hook(lambda *a: None)
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            c(torch.ones(1, 2))
    finally:
        h.remove()
    assert [x.filename for x in w if "global hooks on modules" in str(x.message)] == [__file__]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c(torch.ones(1, 2))
