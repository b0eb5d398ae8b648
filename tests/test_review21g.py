"""Review 21g (compile): real training programs using session 21's compile features together (float arguments as
replay inputs, reads at the return, module tensor attributes written by hooks/forwards), each run eagerly and
compiled, several calls with changes between them; results and state compared with eager coretorch (bitwise on cpu,
within float32 rounding where opencl fuses)."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn as nn
import coretorch.nn.functional as F


def _tol(device: str) -> dict:
    return {"rtol": 0, "atol": 0} if device == "cpu" else {"rtol": 2e-5, "atol": 1e-6}


class _VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc, self.mu, self.lv, self.dec = nn.Linear(10, 8), nn.Linear(8, 3), nn.Linear(8, 3), nn.Linear(3, 10)

    def forward(self, x):
        h = F.relu(self.enc(x))
        mu, lv = self.mu(h), self.lv(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * lv)
        return torch.sigmoid(self.dec(z)), mu, lv


def test_vae_with_an_annealed_kl_weight_replays(device):
    """A VAE step with the KL weight ``beta = min(1, i / 5)`` as a keyword and ``return {"loss": loss.item(), "kl":
    kl.item()}``: eager's losses and parameters, and the float becomes an input of the replay. Before, in a script,
    the autograd engine copied a bias's gradient in the float's second capture and not in the first (see the next
    test: whether it copied depended on addresses), the captures differed, the float stayed specialised and every
    new ``beta`` captured again (2 replays in 8 calls)."""
    runs = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = _VAE().to(device)
        opt = torch.optim.Adam(m.parameters(), lr=1e-3)

        def step(x, beta):
            opt.zero_grad()
            rec, mu, lv = m(x)
            r = F.binary_cross_entropy(rec, x, reduction="sum") / x.shape[0]
            kl = -0.5 * torch.sum(1 + lv - mu.pow(2) - lv.exp()) / x.shape[0]
            loss = r + beta * kl
            loss.backward()
            opt.step()
            return {"loss": loss.item(), "kl": kl.item()}

        s = torch.compile(step) if compiled else step
        g = torch.Generator().manual_seed(3)
        out = [s(torch.rand(16, 10, generator=g).to(device), beta=min(1.0, i / 5)) for i in range(8)]
        runs.append((out, [p.detach().cpu().numpy() for p in m.parameters()], s))
    (oe, pe, _), (oc, pc, s) = runs
    for a, b in zip(oe, oc):
        assert a.keys() == b.keys() and all(type(b[k]) is float for k in b)
        np.testing.assert_allclose([a["loss"], a["kl"]], [b["loss"], b["kl"]], **_tol(device))
    for a, b in zip(pe, pc):
        np.testing.assert_allclose(a, b, **_tol(device))
    assert s._dyn and s.replays == 5


def test_a_gradient_at_a_freed_gradients_address_is_stored_as_is(monkeypatch):
    """PyTorch steals a leaf's first gradient when nothing else holds it. A gradient sent along several edges (add's
    backward) is copied where a leaf stores it; one made later at its address, after it was freed, is held by nothing
    and is stored as is. Before, ``owned`` was a set of bare ids: the later gradient was taken for the freed one and
    copied (in every one of 20 backwards of this graph), and a compiled step's two captures could differ by that
    copy (the VAE above stayed specialised to its ``beta`` in a script)."""
    from coretorch.autograd import engine
    from coretorch.tensor import Tensor

    clones = []
    orig = Tensor.clone
    monkeypatch.setattr(Tensor, "clone", lambda self, *a, **k: clones.append(1) or orig(self, *a, **k))
    for _ in range(20):
        w = torch.randn(5, requires_grad=True)
        h = w * 2
        (h.exp() + h.sin() + h.cos() * h).sum().backward()
        # (float32 values summed in another order: a few ulp apart, whatever the global generator's draws)
        np.testing.assert_allclose(w.grad.numpy(), (2 * (h.exp() + h.cos() + h.cos() - h.sin() * h)).detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
    assert not clones
    ids = engine._Owned()
    t = torch.ones(3)
    ids.add(t)
    i = id(t)
    assert i in ids
    del t
    assert i not in ids


def _run_both(device, build, calls, after_eager=None):
    """``build(device)`` -> (step, modules, args_of(i)); runs ``calls`` calls eagerly and compiled (same seeds) and
    returns (eager results, compiled results, eager params, compiled params, compiled step), and what
    ``after_eager()`` returned after the eager run where given."""
    runs = []
    for compiled in (False, True):
        torch.manual_seed(0)
        step, mods, args_of = build(device)
        s = torch.compile(step) if compiled else step
        out = []
        for i in range(calls):
            r = s(*args_of(i))
            out.append([t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else t
                        for t in (r if isinstance(r, (tuple, list)) else (r,))])
        runs.append((out, [p.detach().cpu().numpy() for m in mods for p in m.parameters()], s))
        if after_eager is not None and not compiled:
            kept = after_eager()
    (oe, pe, _), (oc, pc, s) = runs
    return (oe, oc, pe, pc, s) if after_eager is None else (oe, oc, pe, pc, s, kept)


def _assert_same(device, oe, oc, pe, pc):
    for a, b in zip(oe, oc):
        for x, y in zip(a, b):
            assert type(x) is type(y)
            np.testing.assert_allclose(x, y, **_tol(device))
    for a, b in zip(pe, pc):
        np.testing.assert_allclose(a, b, **_tol(device))


def test_gradient_clipping_thresholds_as_float_arguments(device):
    """``clip_grad_norm_(params, max_norm)`` and ``clip_grad_value_(params, clip_value)`` with thresholds passed to the
    step and changed every call: eager's results, and the floats become inputs of the replay (PyTorch's automatic
    dynamic floats). Before, both called ``float()`` on the threshold, which took the number out of the recorded
    arithmetic: the step stayed specialised and captured again at every call (no replay in 8 calls)."""
    def build(device):
        m = nn.Sequential(nn.Linear(5, 10), nn.ReLU(), nn.Linear(10, 3)).to(device)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(3)

        def step(x, y, clip_value, max_norm):
            opt.zero_grad()
            loss = F.cross_entropy(m(x), y, label_smoothing=0.1)
            loss.backward()
            nn.utils.clip_grad_value_(m.parameters(), clip_value)
            norm = nn.utils.clip_grad_norm_(m.parameters(), max_norm=max_norm)
            opt.step()
            return loss.detach(), norm

        def args_of(i):
            return (torch.randn(8, 5, generator=g).to(device) * 3, torch.randint(0, 3, (8,), generator=g).to(device),
                    0.05 * (1 + i), 0.3 / (1 + i))
        return step, [m], args_of

    oe, oc, pe, pc, s = _run_both(device, build, 8)
    _assert_same(device, oe, oc, pe, pc)
    assert s._dyn and s.replays == 5


D_LOSSES: list = []


@pytest.mark.parametrize("old_style", [True, False])
def test_gan_with_spectral_norm_appending_its_losses_and_a_float_argument(device, old_style):
    """A GAN step (spectral_norm in D, hook-based or parametrization) with a label-smoothing target passed as a float
    that changes every call and ``d_losses.append(d_loss.item())`` (a closure's list, and a global one): eager's
    losses, lists and parameters, and the float becomes an input of the replay. Before, each capture's record of
    the list appended to (a ListRef made per capture) was a constant the two captures' comparison took for a
    different one: the step stayed specialised and captured again at every new value (1 replay in 8 calls)."""
    sn = nn.utils.spectral_norm if old_style else nn.utils.parametrizations.spectral_norm

    def build(device):
        G = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 6)).to(device)
        D = nn.Sequential(sn(nn.Linear(6, 16)), nn.LeakyReLU(0.2), sn(nn.Linear(16, 1))).to(device)
        og = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
        od = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
        d_losses: list = []
        D_LOSSES.clear()
        lists.append((d_losses, D_LOSSES))
        gen = torch.Generator().manual_seed(3)

        def step(real, z, smooth):
            od.zero_grad()
            fake = G(z)
            dr, df = D(real), D(fake.detach())
            d_loss = F.binary_cross_entropy_with_logits(dr, torch.full_like(dr, smooth)) + \
                F.binary_cross_entropy_with_logits(df, torch.zeros_like(df))
            d_loss.backward()
            od.step()
            og.zero_grad()
            g_loss = F.binary_cross_entropy_with_logits(D(fake), torch.ones_like(df))
            g_loss.backward()
            og.step()
            d_losses.append(d_loss.item())
            D_LOSSES.append(g_loss.item())
            return g_loss.detach()

        def args_of(i):
            return (torch.randn(8, 6, generator=gen).to(device), torch.randn(8, 3, generator=gen).to(device),
                    0.9 if i < 3 else 0.9 - 0.01 * i)
        return step, [G, D], args_of

    lists: list = []
    d_eager = _run_both(device, build, 8, lambda: list(lists[0][1]))
    oe, oc, pe, pc, s = d_eager[:5]
    (de, _), (dc, gc) = lists
    assert len(dc) == 8 and all(type(v) is float for v in dc) and len(gc) == 8
    _assert_same(device, [[v] for v in de + d_eager[5]], [[v] for v in dc + gc], pe, pc)
    _assert_same(device, oe, oc, pe, pc)
    assert s._dyn and s.replays == 5


class _DecayedStateLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn, self.out, self.h = nn.GRU(4, 6, batch_first=True), nn.Linear(6, 3), None

    def forward(self, x, decay):
        y, h = self.rnn(x, self.h)
        self.h = (h * decay).detach()  # truncated BPTT, the carried state decayed
        return self.out(y)


def test_truncated_bptt_returning_its_float_argument(device):
    """Truncated BPTT (``self.h = (h * decay).detach()``) with ``decay`` a float argument changing every call and
    returned with the loss (``{"loss": loss.item(), "decay": decay, "twice": twice}``): eager's results, state and
    parameters, and the float becomes an input of the replay. Before, the returned argument was ``A[2]`` in both
    captures, which the two captures' comparison refused (it expected a constant of the specialised capture there):
    the step stayed specialised and never replayed."""
    def build(device):
        m = _DecayedStateLM().to(device)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        gen = torch.Generator().manual_seed(3)

        def step(x, y, decay):
            opt.zero_grad()
            out = m(x, decay)
            loss = F.cross_entropy(out.reshape(-1, 3), y.reshape(-1))
            loss.backward()
            opt.step()
            twice, h = 2 * decay, m.h
            return {"loss": loss.item(), "decay": decay, "twice": twice}, h

        def args_of(i):
            decay = (0.3, 0.6, 0.45, 0.7, 0.8, 0.35, 0.2, 0.9)[i]
            return (torch.randn(2, 5, 4, generator=gen).to(device),
                    torch.randint(0, 3, (2, 5), generator=gen).to(device), decay)
        return step, [m], args_of

    oe, oc, pe, pc, s = _run_both(device, build, 8)
    for (de, he), (dc, hc) in zip(oe, oc):
        assert de.keys() == dc.keys() and type(dc["decay"]) is float and type(dc["twice"]) is float
        assert (de["decay"], de["twice"]) == (dc["decay"], dc["twice"])
        np.testing.assert_allclose(de["loss"], dc["loss"], **_tol(device))
        np.testing.assert_allclose(he, hc, **_tol(device))
    _assert_same(device, [], [], pe, pc)
    assert s._dyn and s.replays == 5


def test_float_argument_returned_in_a_namespace_or_dataclass(device):
    """A step returning its float argument in a ``SimpleNamespace`` and a dataclass (a logging record): each call's
    record holds this call's float (a plain ``float``) and tensors, and the float becomes an input of the replay.
    Before, the two captures' copies of the record (the templates ``REOBJ`` rebuilds from, holding each capture's
    values) compared unequal, so the step stayed specialised (no replay), and the capture call's namespace held the
    capture's ``Sym`` in place of the float."""
    import dataclasses
    import types

    @dataclasses.dataclass
    class Record:
        loss: torch.Tensor
        lam: float
        tag: str = "train"

    torch.manual_seed(0)
    w = torch.randn(3, device=device, requires_grad=True)

    def step(x, lam):
        w.grad = None
        loss = (w * x * lam).sum()
        loss.backward()
        return types.SimpleNamespace(lam=lam, scaled=loss.detach() * lam), Record(loss.detach(), lam), w.grad

    s = torch.compile(step)
    x = torch.ones(3, device=device)
    for i in range(1, 8):
        lam = 0.1 * i
        ns, rec, g = s(x, lam)
        ens, erec, eg = step(x, lam)
        assert type(ns.lam) is float and type(rec.lam) is float and ns.lam == rec.lam == lam and rec.tag == "train"
        np.testing.assert_allclose(ns.scaled.cpu().numpy(), ens.scaled.cpu().numpy(), **_tol(device))
        np.testing.assert_allclose(rec.loss.cpu().numpy(), erec.loss.cpu().numpy(), **_tol(device))
        np.testing.assert_allclose(g.cpu().numpy(), eg.cpu().numpy(), **_tol(device))
    assert s._dyn and s.replays == 4  # (the 2nd call captures again: w.grad is no longer None at its start)


def test_where_and_masked_fill_take_a_float_argument_as_an_input(device):
    """``torch.where(mask, x, lam)`` and ``x.masked_fill(mask, lam)`` with ``lam`` a float argument changing every
    call (a masked logit fill, a mixup-style blend): eager's values, and the float becomes an input of the replay.
    Before, where's scalar operand went through ``float()``, which took the number out of the recorded arithmetic:
    the function stayed specialised (no replay). A numpy float64 operand is still made a Python float (its own type
    would promote the result to float64)."""
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0)).to(device)

    def f(x, lam):
        return torch.where(x > 0, x, lam) * 2, x.masked_fill(x < 0, lam)

    s = torch.compile(f)
    for lam in (0.3, 0.7, 1.3, 2.1, 0.45, 1.7):
        for a, b in zip(s(x, lam), f(x, lam)):
            assert a.dtype == b.dtype == torch.float32
            np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())
    assert s._dyn and s.replays == 4
    assert torch.where(x > 0, x, np.float64(0.5)).dtype == torch.float32
