"""Review 16f of coretorch.compile: realistic PyTorch programs (a nanoGPT-style GPT, a VAE, a CNN classifier, a
Transformer encoder classifier, REINFORCE, an LSTM language model) run eagerly and compiled (a compiled train step,
``torch.compile(model)`` with the optimizer eager), every installed device: per-step losses and final parameters
compared (cpu bitwise, opencl within float32 rounding)."""
from __future__ import annotations

import numpy as np

import coretorch as torch
import coretorch.nn as nn
from coretorch.nn import functional as F


def _close(a, b, device) -> None:
    a, b = np.asarray(a), np.asarray(b)
    if device == "cpu":
        assert np.array_equal(a, b), np.abs(a.astype(np.float64) - b).max()
    else:
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


class _LossModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 5)

    def forward(self, x, y):  # nanoGPT's forward: the logits and the loss
        logits = self.lin(x)
        return logits, F.cross_entropy(logits, y, ignore_index=-1)


def test_a_compiled_model_returning_its_cross_entropy_loss(device):
    """A module whose forward returns ``F.cross_entropy`` (nanoGPT's ``logits, loss = model(X, Y)``), with the
    backward of ``loss / accum``: eager's gradients.  Compiled, every replayed backward raised "a value the captured
    backward read on the host differs": the nll backward's cpu fast path read the output gradient on the host, which
    the module capture records with a placeholder gradient (zeros)."""
    def run(compiled):
        torch.manual_seed(0)
        m = _LossModel().to(device)
        f = torch.compile(m) if compiled else m
        x, y = torch.randn(6, 4, device=device), torch.randint(0, 5, (6,), device=device)
        out = []
        for i in range(4):
            m.zero_grad()
            _, loss = f(x, y)
            (loss / (i + 2)).backward()
            out.append(m.lin.weight.grad.cpu().numpy().copy())
        return out, getattr(f, "_capture", None)
    eager, _ = run(False)
    comp, cap = run(True)
    for a, b in zip(eager, comp):
        _close(a, b, device)
    assert cap.replays == 3
