"""coretorch.compile names every array of a kernel's result, nested tuples included: the per-step LSTM cell kernels
return their saved activations in an inner tuple, which the recorder once left untracked, so a replay read the
capture run's activations (stale gradients from the second replay on)."""
from __future__ import annotations

import numpy as np

import coretorch as torch
from coretorch import _backend


def _np(t):
    return t.detach().cpu().numpy()


def test_compiled_step_through_nested_kernel_results_equals_eager(device, monkeypatch):
    table = _backend.get_table(torch.device(device))
    has = table.has
    monkeypatch.setattr(table, "has", lambda name: name != "lstm_sequence" and has(name))  # the per-step cells

    def build():
        torch.manual_seed(0)
        lstm, head = torch.nn.LSTM(3, 4, 1, batch_first=True).to(device), torch.nn.Linear(4, 2).to(device)
        params = list(lstm.parameters()) + list(head.parameters())
        opt = torch.optim.SGD(params, lr=0.5)
        x = torch.randn(2, 5, 3).to(device)

        def step():
            h, _ = lstm(x)
            loss = (head(h) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss
        return step, params
    eager, pe = build()
    compiled, pc = build()
    compiled = torch.compile(compiled)
    for _ in range(4):
        assert eager().item() == compiled().item()
    for a, b in zip(pe, pc):
        np.testing.assert_array_equal(_np(a), _np(b))
