"""torch.compile's full 2.13 signature: recompile_limit per call (eager with one warning past it, or
FailOnRecompileLimitHit under fullgraph=True), name, isolate_recompiles and shapes_spec accepted."""
from __future__ import annotations

import inspect
import warnings

import pytest

import coretorch as torch
from coretorch._compile import FailOnRecompileLimitHit


def test_signature_has_pytorch_213_keywords():
    params = inspect.signature(torch.compile).parameters
    # PyTorch 2.13's torch.compile parameters, in its order
    assert list(params) == ["model", "fullgraph", "dynamic", "backend", "mode", "options", "name", "disable",
                            "recompile_limit", "isolate_recompiles", "shapes_spec"]
    assert all(params[k].default is v for k, v in (("name", None), ("recompile_limit", None),
                                                   ("isolate_recompiles", False), ("shapes_spec", None)))


def test_recompile_limit_per_call(device):
    def f(x):
        return (x * 2).sum()
    g = torch.compile(f, recompile_limit=2, name="double_sum", isolate_recompiles=True, shapes_spec=None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outs = [g(torch.ones(n, device=device)).item() for n in (1, 2, 3, 3)]
    assert outs == [2.0, 4.0, 6.0, 6.0]
    assert len(g._cache) == 2 and g.name == "double_sum"
    assert [str(w.message) for w in caught if "recompile_limit (2)" in str(w.message)] != []
    assert len([w for w in caught if "recompile_limit" in str(w.message)]) == 1  # warned once


def test_recompile_limit_hit_under_fullgraph_raises(device):
    g = torch.compile(lambda x: x + 1, fullgraph=True, recompile_limit=1)
    assert g(torch.ones(2, device=device)).tolist() == [2.0, 2.0]
    with pytest.raises(FailOnRecompileLimitHit, match="fullgraph=True"):
        g(torch.ones(3, device=device))


def test_module_recompile_limit(device):
    lin = torch.nn.Linear(2, 1).to(device)
    m = torch.compile(lin, fullgraph=True, recompile_limit=1)
    m(torch.ones(1, 2, device=device))
    with pytest.raises(FailOnRecompileLimitHit):
        m(torch.ones(3, 2, device=device))
    lin2 = torch.nn.Linear(2, 1).to(device)
    lin2.compile(recompile_limit=1)
    lin2(torch.ones(1, 2, device=device))
    y = lin2(torch.ones(3, 2, device=device))   # past the limit: eager
    assert tuple(y.shape) == (3, 1)
