"""Review 20f: real programs compiled end to end (a CNN classifier, char-RNNs, a Transformer classifier and a
seq2seq Transformer, a GPT with weight tying and top-k sampling, a VAE, GANs, gradient checkpointing, data-loader
loops with a smaller last batch and no_grad evaluation, embedding bags, checkpoints saved and loaded mid-training,
mixup, VQ-VAE, SimCLR, distillation), each trained eagerly and compiled (the whole step and ``compile(model)``):
the compiled runs must give eager's losses, parameters, buffers and optimizer state."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn as nn
from coretorch.distributions import Beta


def _same(device, a, b):
    a, b = np.asarray(a), np.asarray(b)
    if device == "cpu":
        assert np.array_equal(a, b), (a, b)
    else:
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("form", ["function", "module"])
def test_a_gamma_draw_whose_rejection_rounds_differ_falls_back_to_eager(device, form):
    """Gamma, Beta, Dirichlet, Chi2 and StudentT draw by rejection: a round of ``randn``/``rand`` proposals, then
    ``bool(todo.any())`` on the host decides whether another round is drawn.  Eager simply draws as many rounds as
    the numbers need (mixup's ``lam = Beta(a, a).sample()``).  A replay recorded the capture's number of rounds;
    where a call needs another number its checked read differs after the step drew random numbers, and the compiled
    call raised "a value the captured step read on the host ... differs in this call after persistent state was
    already written" (the draws counted as writes) on the 4th call.  Now the generators are set back to their
    states at the replay's start and the call runs eagerly: every call gives eager's draw, and the state after."""
    conc = torch.full((8,), 0.4, device=device)
    x = torch.linspace(-1, 1, 8, device=device)

    class Mix(nn.Module):
        def forward(self, x):
            return Beta(conc, conc).sample() * x

    mix = Mix()

    def run(compiled):
        torch.compiler.reset()
        w = torch.zeros(8, device=device)
        m = torch.compile(mix) if compiled and form == "module" else mix

        def step(w, x):
            lam = m(x)
            w.add_(lam)
            return lam
        fn = torch.compile(step) if compiled and form == "function" else step
        outs = []
        for i in range(8):
            torch.manual_seed(i)
            outs.append(fn(w, x).cpu().numpy())
        return outs, w.cpu().numpy(), torch.rand(4, device=device).cpu().numpy(), fn if form == "function" else m

    eager, w_e, r_e, _ = run(False)
    comp, w_c, r_c, c = run(True)
    for a, b in zip(eager, comp):
        _same(device, a, b)
    _same(device, w_e, w_c)
    _same(device, r_e, r_c)
    replays = c.replays if form == "function" else c._capture.replays
    assert 0 < replays < 7  # (some calls replayed, some drew another number of rounds and ran eagerly)


@pytest.mark.parametrize("form", ["function", "module"])
def test_a_dirichlet_vae_with_batch_norm_trains_as_eager(device, form):
    """A Dirichlet VAE (a topic model): an encoder with BatchNorm1d, ``Dirichlet(alpha).rsample()``, a KL term.
    Eager trains.  Compiled before: the draw's rejection rounds are a checked read after BatchNorm wrote its running
    statistics, and the rsample's gradient sums a number of series terms read on the host from the draws (another
    at almost every call), so the 2nd replay raised "a value the captured step read on the host ... differs in this
    call after persistent state was already written" (the whole step) or "a value the captured backward read on the
    host differs" (``compile(model)``).  Both reads are graph breaks now where a replay could only raise (the draw's
    after a write; the gradient's always): the calls run eagerly, with eager's results."""
    from coretorch.distributions import Dirichlet, kl_divergence

    class DVAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Sequential(nn.Linear(12, 8), nn.Softplus(), nn.Linear(8, 4), nn.BatchNorm1d(4))
            self.dec = nn.Linear(4, 12)

        def forward(self, x):
            q = Dirichlet(torch.nn.functional.softplus(self.enc(x)) + 1e-2)
            return self.dec(q.rsample()).log_softmax(-1), q

    def run(compiled):
        torch.compiler.reset()
        torch.manual_seed(0)
        model = DVAE().to(device)
        opt = torch.optim.Adam(model.parameters(), lr=2e-3)
        fwd = torch.compile(model) if compiled and form == "module" else model
        prior = Dirichlet(torch.full((4,), 0.3, device=device))

        def step(x):
            opt.zero_grad()
            logp, q = fwd(x)
            loss = (-(x * logp).sum(-1) + kl_divergence(q, prior)).mean()
            loss.backward()
            opt.step()
            return loss
        fn = torch.compile(step) if compiled and form == "function" else step
        g = torch.Generator().manual_seed(1)
        losses = [fn(torch.poisson(torch.rand(10, 12, generator=g) * 2).to(device)).detach() for _ in range(6)]
        return [t.cpu().numpy() for t in (torch.stack(losses), *model.state_dict().values(), torch.rand(3))]

    for a, b in zip(run(False), run(True)):
        _same(device, a, b)


def test_a_policy_gradient_step_replays_after_a_step_that_left_a_device_check_pending(device):
    """A policy-gradient step: actions sampled under no_grad, then ``Categorical(logits=policy(s)).log_prob(a)``
    (the sampler's probability checks are a host read the replay makes at its start; ``log_prob``'s gather queues a
    device-side index check on opencl that no read of the step follows).  Eager trains.  Compiled before, on
    opencl: the next replay found a check pending from the call before (the kernel table's ``check_pending`` said
    only that one *may* have failed) and ran the call eagerly, so the step never replayed (0 replays in 8 calls).
    Now ``check_pending`` reads the device's check flag: a check that passed is pending no more, and the step
    replays."""
    from coretorch.distributions import Categorical

    def run(compiled):
        torch.compiler.reset()
        torch.manual_seed(0)
        policy = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 4)).to(device)
        opt = torch.optim.Adam(policy.parameters(), lr=1e-2)

        def step(s, adv):
            with torch.no_grad():  # the rollout's actions
                a = Categorical(logits=policy(s)).sample()
            loss = -(Categorical(logits=policy(s)).log_prob(a) * adv).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss.detach(), a
        fn = torch.compile(step) if compiled else step
        g = torch.Generator().manual_seed(1)
        outs = [fn(torch.randn(6, 5, generator=g).to(device), torch.randn(6, generator=g).to(device))
                for _ in range(8)]
        return [*[torch.stack(o).cpu().numpy() for o in zip(*outs)],
                *[p.detach().cpu().numpy() for p in policy.parameters()]], fn

    eager, _ = run(False)
    comp, fn = run(True)
    for a, b in zip(eager, comp):
        _same(device, a, b)
    assert fn.replays == 6


@pytest.mark.parametrize("law", ["gamma", "von_mises"])
def test_a_rejection_sampler_after_a_write_runs_eagerly(device, law):
    """A step that writes state (``w.add_(1)``: a BatchNorm's statistics, an optimizer step) and then samples by
    rejection (Gamma's Marsaglia-Tsang rounds, VonMises's Best-Fisher loop ``while not done.all()``): eager draws
    as many rounds as the numbers need.  Compiled before: the capture's number of rounds was a checked read after
    the write, and a call needing another number raised the compile error.  Now such a read is a graph break: every
    call is eager's."""
    from coretorch.distributions import Gamma, VonMises
    conc = torch.full((8,), 0.7, device=device)
    zero = torch.zeros(8, device=device)
    law_ = Gamma(conc, zero + 1) if law == "gamma" else VonMises(zero, conc)

    def run(compiled):
        torch.compiler.reset()
        w = torch.zeros(8, device=device)

        def step():
            w.add_(1)
            return law_.sample()
        fn = torch.compile(step) if compiled else step
        outs = []
        for i in range(8):
            torch.manual_seed(i)
            outs.append(fn().cpu().numpy())
        return [*outs, w.cpu().numpy(), torch.rand(3).numpy()]

    for a, b in zip(run(False), run(True)):
        _same(device, a, b)


def test_explain_of_a_generator_step_given_the_fake_batch_names_one_reason(device):
    """A GAN written as two functions, the generator's step given ``fake = G(z)`` (with its graph) by the caller:
    the step's backward runs into the caller's graph, a graph break (documented).  ``explain`` before also named a
    second reason, "the call changes an optimizer's state outside its step()": after the first break the
    optimizer's step ran unrecorded, and its new state (Adam's first step) was taken for a change made outside it."""
    torch.manual_seed(0)
    G = nn.Linear(4, 8).to(device)
    D = nn.Linear(8, 1).to(device)
    og = torch.optim.Adam(G.parameters(), lr=1e-3)

    def g_step(fake):
        og.zero_grad()
        loss = -D(fake).mean()
        loss.backward()
        og.step()
        return loss
    out = torch.compiler.explain(g_step, G(torch.randn(6, 4, device=device)))
    assert out.graph_break_count == 1 and "autograd graph of a tensor it receives" in out.break_reasons[0]
