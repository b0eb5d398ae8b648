"""Review 20d (eager): the nn.Module API (attribute rules, state_dict / load_state_dict and their hooks, the member
walkers, conversions, hooks), the containers (Sequential, ModuleList/Dict, ParameterList/Dict) and nn.init, each
against PyTorch 2.13's documented behaviour."""
import warnings

import pytest

import coretorch as torch
from coretorch import nn


# ---- load_state_dict / state_dict -----------------------------------------------------------------------------
def _with_scalar():
    m = nn.Module()
    m.s = nn.Parameter(torch.zeros(()))
    return m


@pytest.mark.parametrize("shape", [(3,), (0,)])
def test_a_0d_parameter_refuses_a_1d_value_of_another_length(device, shape):
    """PyTorch: load_state_dict takes ``value[0]`` for a 0-d parameter only from a 1-d value of ONE element (the
    0.3-era layout); any other 1-d value is a size mismatch. Before: any 1-d value was indexed, so a (3,) value
    silently loaded its first element and a (0,) value raised IndexError."""
    m = _with_scalar().to(device)
    with pytest.raises(RuntimeError, match=r"size mismatch for s: copying a param with shape "
                                           rf"coretorch.Size\(\[{shape[0]}\]\) from checkpoint"):
        m.load_state_dict({"s": torch.arange(float(shape[0]), device=device)})
    assert m.s.item() == 0.0
    m.load_state_dict({"s": torch.tensor([7.0], device=device)})  # the one-element form still loads
    assert m.s.item() == 7.0


def test_a_public_state_dict_post_hook_must_return_none():
    """PyTorch: a hook registered with register_state_dict_post_hook may only edit the dict in place; returning a
    value raises RuntimeError("state_dict post-hook must return None"), and that function can then not be
    registered again through the private _register_state_dict_hook (whose hooks may return a new dict). Before:
    the returned value silently replaced the state_dict, and the private registration accepted it."""
    def returns(module, sd, prefix, meta):
        return {"x": 1}

    m = nn.Linear(2, 2)
    h = m.register_state_dict_post_hook(returns)
    with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
        m.state_dict()
    h.remove()
    with pytest.raises(RuntimeError, match="Cannot register the same function"):
        m._register_state_dict_hook(returns)

    def private(module, sd, prefix, meta):
        return {"x": 1}
    m._register_state_dict_hook(private)
    assert list(m.state_dict()) == ["x"]


def test_state_dict_positional_arguments_warn():
    """PyTorch: state_dict(destination, prefix, keep_vars) given positionally still works but warns a
    FutureWarning (deprecated). Before: no warning."""
    m = nn.Linear(2, 2)
    with pytest.warns(FutureWarning, match="Positional args are being deprecated"):
        sd = m.state_dict(None, "p.")
    assert list(sd) == ["p.weight", "p.bias"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.state_dict(prefix="p.")


def test_a_load_state_dict_post_hook_returning_a_value_raises_assertion_error():
    """PyTorch: a load_state_dict post-hook that returns something raises AssertionError. Before:
    RuntimeError."""
    m = nn.Linear(2, 2)
    m.register_load_state_dict_post_hook(lambda mod, keys: 1)
    with pytest.raises(AssertionError, match="not expected to return new values"):
        m.load_state_dict(m.state_dict())


# ---- the member protocol: set_submodule, to -----------------------------------------------------------------
def test_set_submodule_strict_and_a_target_that_is_no_module():
    """PyTorch 2.13: set_submodule(target, module, strict=False); strict=True raises AttributeError when the
    parent has no attribute of that name, and an existing target that is not a Module (a parameter, a plain
    attribute) raises AttributeError "`name` is not an nn.Module" instead of being overwritten. Before: no strict
    argument (TypeError), a plain attribute was silently replaced by the module and a parameter name gave
    TypeError."""
    seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    with pytest.raises(AttributeError, match="Sequential has no attribute `new`"):
        seq.set_submodule("new", nn.Tanh(), strict=True)
    assert "new" not in seq._modules
    seq.set_submodule("1", nn.Tanh(), strict=True)
    assert isinstance(seq[1], nn.Tanh)
    seq.set_submodule("new", nn.Tanh())
    assert isinstance(seq.new, nn.Tanh)
    seq.attr = 5
    with pytest.raises(AttributeError, match="`attr` is not an nn.Module"):
        seq.set_submodule("attr", nn.ReLU())
    assert seq.attr == 5
    with pytest.raises(AttributeError, match="`weight` is not an nn.Module"):
        seq.set_submodule("0.weight", nn.ReLU())


@pytest.mark.parametrize("call", [lambda m: m.to(torch.float64, copy=False), lambda m: m.to("cpu", torch.float64,
                                                                                             False, True)])
def test_module_to_refuses_a_copy_argument(call):
    """PyTorch: Module.to has no copy argument; one given (by keyword, or as Tensor.to's 4th positional argument,
    even False) raises RuntimeError(".to() does not accept copy argument"). Before: accepted and ignored."""
    m = nn.Linear(2, 2)
    with pytest.raises(RuntimeError, match="does not accept copy argument"):
        call(m)
    assert m.weight.dtype == torch.float32
