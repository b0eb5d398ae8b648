"""Review 22h (compile): real training programs compiled end to end after session 22's merges (a GAN with an R1
penalty, a ViT with AdamW + warmup-cosine + clipping + label smoothing, mixup/cutmix, a seq2seq GRU with teacher
forcing, distillation with a temperature, gradient accumulation, an EMA teacher, AMP, a checkpoint resumed mid-run),
each run eagerly and compiled (``torch.compile(step)`` and ``torch.compile(model)``) on every device and compared step
by step with eager coretorch (bitwise on cpu, within float32 rounding where opencl fuses); and what those probes
found on the way."""
from __future__ import annotations

import math

import numpy as np
import pytest

import coretorch as torch


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_full_of_negative_zero_keeps_its_sign(device, dtype):
    """``torch.full(size, -0.0)`` (and ``new_full``/``full_like``) holds -0.0, as PyTorch's: its reciprocal is
    -inf.  Before, the cpu kernel took any fill value equal to 0 as ``np.zeros``, so the tensor held +0.0 and the
    reciprocal was +inf (opencl was right)."""
    dt = getattr(torch, dtype)
    for t in (torch.full((3,), -0.0, dtype=dt, device=device),
              torch.ones(2, dtype=dt, device=device).new_full((3,), -0.0),
              torch.full_like(torch.ones(3, dtype=dt, device=device), -0.0)):
        a = t.cpu().numpy()
        assert np.all(np.signbit(a)) and np.all(a == 0)
        assert t.reciprocal().cpu().numpy().tolist() == [-math.inf] * 3
    assert not np.any(np.signbit(torch.full((3,), 0.0, dtype=dt, device=device).cpu().numpy()))


def _index_after_a_step(device: str, compiled: bool) -> list:
    torch.manual_seed(0)
    emb = torch.nn.Embedding(5, 6).to(device)
    lin = torch.nn.Linear(6, 3).to(device)
    opt1 = torch.optim.SGD(lin.parameters(), lr=0.05, momentum=0.9)
    opt2 = torch.optim.Adam(emb.parameters(), lr=0.01)

    def step(idx, y):
        loss = torch.nn.functional.cross_entropy(lin(emb(idx)), y)
        opt1.zero_grad()
        opt2.zero_grad()
        loss.backward()
        opt1.step()
        row = emb.weight[idx.sum() % 7]  # (a 0-d index: its value read on the host, after opt1's writes)
        opt2.step()
        return loss.detach(), row.detach()
    f = torch.compile(step) if compiled else step
    g = torch.Generator().manual_seed(1)
    out = []
    for _ in range(6):
        idx, y = torch.randint(0, 5, (8,), generator=g), torch.randint(0, 3, (8,), generator=g)
        try:
            loss, row = f(idx.to(device), y.to(device))
            out.append([loss.cpu().numpy(), row.cpu().numpy()])
        except IndexError as e:
            out.append([str(e)])
        out.append([p.detach().cpu().numpy().copy() for p in (*lin.parameters(), emb.weight)])
    return out


def test_a_host_read_index_after_the_steps_writes_runs_eagerly_when_it_changes(device):
    """A step indexing a weight with a 0-d tensor computed from its arguments (``emb.weight[idx.sum() % 7]``) after
    an optimizer step: eager reads the index on the host and raises IndexError only where it is out of range.
    Compiled on opencl before the fix: the embedding's device-side index check kept the index read from moving to
    the replay's start, so a call whose index differed from the capture's raised coretorch.compile's RuntimeError (a
    value read after persistent state was written) where eager returns; now the check also runs at the start (the
    call runs eagerly when it differs) and stays at its place, whose read reports a device-side check as eager's."""
    want, got = _index_after_a_step(device, False), _index_after_a_step(device, True)
    assert sum(len(w) == 1 for w in want) == 2  # (two calls out of range: the test's premise)
    tol = {"rtol": 0, "atol": 0} if device == "cpu" else {"rtol": 1e-5, "atol": 1e-6}
    for w, o in zip(want, got):
        assert len(w) == len(o)
        for a, b in zip(w, o):
            if isinstance(a, str):
                assert a == b
            else:
                np.testing.assert_allclose(b, a, **tol)


class _IndexedRow(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.lin = torch.nn.Embedding(5, 6), torch.nn.Linear(6, 3)
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, idx):
        h = self.emb(idx)
        self.calls.add_(1)
        return self.lin(h) + self.emb.weight[idx.sum() % 7].sum()


def _indexed_row_run(device: str, compiled: bool) -> list:
    torch.manual_seed(0)
    m = _IndexedRow().to(device)
    f = torch.compile(m) if compiled else m
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(1)
    out = []
    for _ in range(8):
        idx = torch.randint(0, 5, (8,), generator=g)
        try:
            loss = f(idx.to(device)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            out.append(loss.item())
        except IndexError as e:
            out.append(str(e))
        out.append([m.calls.item(), *[p.detach().cpu().numpy().copy() for p in m.parameters()]])
    return out


def test_a_compiled_modules_host_read_index_after_a_buffer_write(device):
    """The same in a compiled module's forward: ``self.calls.add_(1)`` then ``self.emb.weight[idx.sum() % 7]``.
    Eager raises IndexError where the index is out of range and returns otherwise; compiled on opencl before the
    fix, every call after the first whose index differed raised coretorch.compile's RuntimeError (the forward's
    check was not moved across the embedding's device-side check); now it runs eagerly, as eager."""
    want, got = _indexed_row_run(device, False), _indexed_row_run(device, True)
    assert 0 < sum(isinstance(w, str) for w in want) < 6  # (the test's premise)
    tol = {"rtol": 0, "atol": 0} if device == "cpu" else {"rtol": 1e-5, "atol": 1e-6}
    for w, o in zip(want, got):
        if isinstance(w, (str, float)):
            assert type(o) is type(w)
            if isinstance(w, str):
                assert o == w
            else:
                np.testing.assert_allclose(o, w, **tol)
        else:
            assert w[0] == o[0]
            for a, b in zip(w[1:], o[1:]):
                np.testing.assert_allclose(b, a, **tol)
