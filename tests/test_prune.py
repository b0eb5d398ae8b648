"""torch.nn.utils.prune, as PyTorch's (every mask below was compared with PyTorch 2.13's for the same weights when
written): the reparametrization (``weight_orig``, ``weight_mask``, the pre-hook), iterative pruning through a
PruningContainer, global pruning, ``remove``, the argument errors; and a pruned model trained compiled."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch

nn = torch.nn
prune = torch.nn.utils.prune


def _linear(device):
    w = np.arange(24, dtype=np.float32).reshape(4, 6) * np.where(np.arange(24).reshape(4, 6) % 3 == 0, -1, 1) / 7.0
    m = nn.Linear(6, 4).to(device)
    with torch.no_grad():
        m.weight.copy_(torch.tensor(w))
        m.bias.copy_(torch.tensor([0.5, -0.1, 0.3, -0.7]))
    return m


def test_l1_then_ln_structured_then_l1_again_combine_as_pytorchs(device):
    m = _linear(device)
    prune.l1_unstructured(m, "weight", amount=0.3)  # round(0.3 * 24) = 7 smallest magnitudes
    assert sorted(m.state_dict()) == ["bias", "weight_mask", "weight_orig"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_orig"]
    assert m.weight_mask.cpu().tolist() == [[0.0] * 6, [0.0] + [1.0] * 5, [1.0] * 6, [1.0] * 6]
    assert prune.is_pruned(m) and not isinstance(m.weight, nn.Parameter)
    prune.ln_structured(m, "weight", amount=1, n=2, dim=0)  # the weakest remaining row
    hook = list(m._forward_pre_hooks.values())[0]
    assert isinstance(hook, prune.PruningContainer) and len(hook) == 2
    prune.l1_unstructured(m, "weight", amount=2)  # two more among the entries still kept
    assert m.weight_mask.cpu().tolist() == [[0.0] * 6, [0.0] * 6, [0.0, 0.0] + [1.0] * 4, [1.0] * 6]
    m(torch.ones(2, 6).to(device)).sum().backward()
    np.testing.assert_array_equal(m.weight_orig.grad.cpu().numpy(), 2 * m.weight_mask.cpu().numpy())
    prune.remove(m, "weight")
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight"] and isinstance(m.weight, nn.Parameter)
    assert int((m.weight == 0).sum()) == 14 and not prune.is_pruned(m)
    with pytest.raises(ValueError, match="has to be pruned before pruning can be removed"):
        prune.remove(m, "weight")


def test_global_custom_identity_random_and_prune():
    net = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2))
    with torch.no_grad():
        net[0].weight.copy_(torch.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)))
        net[1].weight.copy_(torch.tensor(np.linspace(-0.5, 0.7, 6, dtype=np.float32).reshape(2, 3)))
    prune.global_unstructured([(net[0], "weight"), (net[1], "weight")], pruning_method=prune.L1Unstructured, amount=5)
    assert net[0].weight_mask.tolist() == [[1.0] * 4, [1.0, 0.0, 0.0, 1.0], [1.0] * 4]
    assert net[1].weight_mask.tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]]
    m = prune.custom_from_mask(nn.Linear(5, 3), name="bias", mask=torch.tensor([0, 1, 0]))
    assert m.bias_mask.tolist() == [0.0, 1.0, 0.0] and m.bias_mask.dtype == torch.float32
    assert prune.identity(nn.Linear(2, 3), "bias").bias_mask.tolist() == [1.0] * 3
    torch.manual_seed(0)
    assert int((prune.random_unstructured(nn.Linear(4, 5), "weight", amount=0.25).weight_mask == 0).sum()) == 5
    m = prune.random_structured(nn.Linear(5, 3), "weight", amount=3, dim=1)
    assert int((m.weight.sum(0) == 0).sum()) == 3
    assert prune.L1Unstructured(amount=2).prune(torch.tensor([3., -1., 0.5, 2.])).tolist() == [3.0, 0.0, 0.0, 2.0]


def test_prune_argument_errors_are_pytorchs():
    with pytest.raises(ValueError, match=r"amount=1.5 should either be a float in the range \[0, 1\] or a "
                                         "non-negative integer"):
        prune.l1_unstructured(nn.Linear(2, 2), "weight", amount=1.5)
    with pytest.raises(ValueError, match="amount=5 should be smaller than the number of parameters to prune=4"):
        prune.l1_unstructured(nn.Linear(2, 2), "weight", amount=5)
    with pytest.raises(TypeError, match="Invalid type for amount: a. Must be int or float."):
        prune.l1_unstructured(nn.Linear(2, 2), "weight", amount="a")
    m = nn.Linear(2, 2)
    with pytest.raises(ValueError, match="Structured pruning can only be applied to multidimensional tensors"):
        prune.ln_structured(m, "bias", amount=1, n=1, dim=0)
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]  # (rolled back)
    with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE supported'):
        prune.global_unstructured([(m, "weight")], pruning_method=prune.LnStructured, amount=1, n=2, dim=0)


def test_a_pruned_model_trains_compiled_as_eager():
    """The pre-hook reassigns ``module.weight`` each forward: a compiled step replays it and gives eager's values."""
    def run(compiled: bool):
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2))
        prune.l1_unstructured(m[0], "weight", amount=0.5)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(m(x), y)
            loss.backward()
            opt.step()
            return loss

        fn = torch.compile(step) if compiled else step
        torch.manual_seed(1)
        out = [fn(torch.randn(5, 4), torch.randn(5, 2)).item() for _ in range(5)]
        if compiled:
            assert fn.replays >= 2
        return out, m[0].weight.detach().clone()

    (la, wa), (lb, wb) = run(False), run(True)
    assert la == lb
    np.testing.assert_array_equal(wa.numpy(), wb.numpy())
    assert int((wa == 0).sum()) == 12
