"""Review 15 of coretorch.compile: state that changes between calls, where the replay must do what the eager call
does (every installed device; bitwise on cpu, within float32 rounding on devices whose fused kernels differ)."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch


def _rand(device, *shape, seed=0):
    torch.manual_seed(seed)
    return torch.randn(*shape).to(device)


def _close(device, a, b):
    a, b = a.detach().cpu().numpy(), b.detach().cpu().numpy()
    if device == "cpu":
        assert np.array_equal(a, b), f"eager {a}\ncompiled {b}"
    else:
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["add_ of the same tensor", "add_ of a transpose", "copy_ of a transpose",
                                "axpy of the same tensor"])
def test_in_place_ops_on_persistent_tensors_made_to_share_memory(device, op):
    """``w2.data = w1.data`` after the capture: an in-place op reading ``w2`` while writing ``w1`` (an identical
    operand is allowed and doubles ``w1``; a transposed one raises 'unsupported operation', as PyTorch).  The replay
    checks the pair is still apart and captures again where not, so each call does what eager does."""
    def run(compiled):
        w1, w2 = _rand(device, 6, 6, seed=2), _rand(device, 6, 6, seed=3)

        def fn(x):
            if op == "add_ of the same tensor":
                w1.add_(w2)
            elif op == "add_ of a transpose":
                w1.add_(w2.t())
            elif op == "copy_ of a transpose":
                w1.copy_(w2.t())
            else:
                w1.add_(w2, alpha=0.5)
            return w1 * x
        f = torch.compile(fn) if compiled else fn
        outs = []
        for i in range(6):
            if i == 3:
                w2.data = w1.data
            try:
                outs.append(f(_rand(device, 6, 6, seed=i)))
            except RuntimeError as e:
                assert "unsupported operation" in str(e)
                outs.append(None)
            outs.append(w1.clone())
        return outs
    eager, compiled = run(False), run(True)
    assert (eager[6] is None) == (op in ("add_ of a transpose", "copy_ of a transpose"))
    for e, c in zip(eager, compiled):
        assert (e is None) == (c is None)
        if e is not None:
            _close(device, e, c)
