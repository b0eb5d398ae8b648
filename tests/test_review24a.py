"""Review 24a: coretorch.compile on training programs of new kinds (a VAE with ``torch.distributions``, a DDPM step
with an EMA through ``swa_utils.AveragedModel``, a SimCLR step with an explicit ``torch.Generator``, an actor-critic
update with ``Categorical``, a ViT with AdamW + OneCycleLR, a GRU seq2seq with attention and packed batches).  Each
test runs a small reproduction eagerly and compiled and compares call by call (bitwise on cpu, 1e-5 relative on
opencl); PyTorch's eager behaviour is the spec, each test says what PyTorch does and what coretorch did before the
fix (or, for the programs that already matched, pins that they do)."""
from __future__ import annotations

import logging


import coretorch as torch
import coretorch.nn.functional as F
from coretorch import nn
from coretorch.nn.utils.rnn import pack_padded_sequence

from _compile_helpers import close


class _Records(logging.Handler):
    """The messages of the compiler's graph_breaks logger."""

    def __init__(self):
        super().__init__()
        self.msgs: list = []

    def emit(self, record):
        self.msgs.append(record.getMessage())


def _packed_run(device: str, compiled: bool, log: _Records | None = None):
    torch.manual_seed(0)
    emb, gru = nn.Embedding(10, 8).to(device), nn.GRU(8, 8, batch_first=True).to(device)
    opt = torch.optim.SGD([*emb.parameters(), *gru.parameters()], lr=0.1)

    def step(x, lens):
        opt.zero_grad()
        _, h = gru(pack_padded_sequence(emb(x), lens, batch_first=True, enforce_sorted=False))
        loss = h.pow(2).mean()
        loss.backward()
        opt.step()
        return loss.detach()

    fn = torch.compile(step) if compiled else step
    x = torch.randint(1, 10, (4, 5)).to(device)
    pats = [[5, 3, 4, 2], [2, 5, 5, 1], [5, 3, 4, 2], [4, 4, 4, 4]]
    losses, seen = [], []
    for i in range(8):
        before = len(log.msgs) if log is not None else 0
        losses.append(fn(x, torch.tensor(pats[i % 4])))
        seen.append(len(log.msgs) > before if log is not None else None)
    return losses, [p.detach() for p in (*emb.parameters(), *gru.parameters())], fn, seen


def test_a_packed_batch_whose_lengths_differ_logs_its_eager_call(device):
    """PyTorch: Dynamo skips ``pack_padded_sequence`` (a graph break ``explain`` and the graph_breaks log report),
    so a seq2seq step over batches of varying lengths shows why it is not one graph.  coretorch replays the packing
    as a checked read of ``batch_sizes``: a call whose lengths differ from the capture's runs eagerly (values
    eager's), but nothing said so: ``set_logs(graph_breaks=True)`` logged nothing while the step ran eagerly at
    every call but those of the captured lengths.  Each such call is now logged."""
    eager, eparams, _, _ = _packed_run(device, False)
    log = _Records()
    lg = logging.getLogger("coretorch._dynamo.graph_breaks")
    lg.addHandler(log)
    try:
        torch._logging.set_logs(graph_breaks=True)
        comp, cparams, fn, seen = _packed_run(device, True, log)
    finally:
        torch._logging.set_logs()
        lg.removeHandler(log)
    for i, (a, b) in enumerate(zip(eager, comp)):
        close(device, a, b, f"loss {i}")
    for a, b in zip(eparams, cparams):
        close(device, a, b, "parameter")
    assert fn.replays >= 1  # the captured lengths ([2, 5, 5, 1], the second capture's) replay
    # calls 2, 3, 4, 6, 7: the capture's checks meet other lengths; call 5 replays; 0 and 1 capture
    assert seen == [False, False, True, True, True, False, True, True], (seen, log.msgs)
    assert all("checked read" in m and "batch_sizes" in m and "runs eagerly" in m for m in log.msgs)


def _onecycle_step(device: str):
    torch.manual_seed(0)
    m = nn.Linear(4, 2).to(device)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=30)

    def step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(m(x), y)
        loss.backward()
        opt.step()
        sched.step()
        return loss.detach(), sched.get_last_lr()[0]
    return step, m


def test_explain_reports_the_break_of_a_step_returning_the_schedulers_lr(device):
    """PyTorch's ``explain`` says what compiling the function meets.  A ViT step with OneCycleLR that returns
    ``sched.get_last_lr()[0]`` for logging writes the scheduler's ``_last_lr``, which it also reads: compiled, each
    call is a graph break (logged, no replay; values eager's), but ``torch._dynamo.explain(step)(x, y)`` captured
    without the guards' view of the roots and said "Graph Break Count: 0"; the break's place was the caller's line
    (``in <module>``), found only after the step returned.  Now explain captures as compile does and the place is
    the step's definition."""
    step, _ = _onecycle_step(device)
    x, y = torch.randn(5, 4).to(device), torch.randn(5, 2).to(device)
    out = torch._dynamo.explain(step)(x, y)
    assert out.graph_break_count == 1, str(out)
    reason = out.break_reasons[0]
    assert "assigns a global, a closure variable, or an entry or attribute" in reason
    line = step.__code__.co_firstlineno
    assert f"test_review24a.py:{line} in step, found when it returned" in reason, reason

    step, m = _onecycle_step(device)
    c = torch.compile(step)
    eager_step, em = _onecycle_step(device)
    for _ in range(4):
        x, y = torch.randn(5, 4).to(device), torch.randn(5, 2).to(device)
        (la, lra), (lb, lrb) = eager_step(x, y), c(x, y)
        close(device, la, lb, "loss")
        assert lra == lrb
    close(device, em.weight, m.weight, "weight")
    assert c.replays == 0  # (each call breaks, as explain says)


class _CountingDecoder(nn.Module):
    """A decoder that counts its calls in a Python attribute (a teacher-forcing schedule's step counter)."""

    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(4, 4)
        self.calls = 0

    def forward(self, x, h):
        self.calls += 1
        return self.cell(x, h)


def test_a_compiled_modules_break_found_at_its_return_names_its_forward(device):
    """PyTorch names the user line where a graph breaks.  A compiled decoder whose forward does ``self.calls += 1``
    breaks the graph (a replay would not repeat the assignment); coretorch found that when the forward returned and
    named the caller's line (``test_...:N in <module>``/the test function, with ``core: nn/modules/module.py``) in
    ``explain`` and the graph_breaks log, a line that assigns nothing.  It now names the forward's definition.
    The calls still run eagerly (the counter is eager's)."""
    dec = _CountingDecoder().to(device)
    x, h = torch.randn(2, 4).to(device), torch.zeros(2, 4).to(device)
    out = torch._dynamo.explain(dec)(x, h)
    line = _CountingDecoder.forward.__code__.co_firstlineno
    assert out.graph_break_count == 1
    assert f"test_review24a.py:{line} in forward, found when it returned" in out.break_reasons[0], out.break_reasons
    assert "core: nn/modules" not in out.break_reasons[0]
    c = torch.compile(dec)
    for _ in range(3):
        c(x, h).sum().backward()
    assert dec.calls == 4 and c._capture.replays == 0


class _HistoryDecoder(nn.Module):
    """A decoder step that appends its hidden state to a list it is given (``hidden.append(h)``)."""

    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(4, 4)

    def forward(self, x, h, hist: list):
        h = self.cell(x, h)
        hist.append(h)
        return h


def test_a_compiled_modules_break_on_an_argument_it_assigns_names_its_forward(device):
    """As above for the breaks a compiled module's capture finds in what its forward did to its arguments
    (``hist.append(h)``): they named no place at all (no ``(at ...)``: PyTorch names the user line), so
    ``user_stack`` was empty; they now name the forward's definition."""
    dec = _HistoryDecoder().to(device)
    x, h, hist = torch.randn(2, 4).to(device), torch.zeros(2, 4).to(device), []
    out = torch._dynamo.explain(dec)(x, h, hist)
    line = _HistoryDecoder.forward.__code__.co_firstlineno
    r = out.break_reasons[0]
    assert r.reason.startswith("the forward assigns an entry or attribute of an argument"), r
    assert (r.user_stack[-1].lineno, r.user_stack[-1].name) == (line, "forward")
    assert len(hist) == 1


def test_a_vae_step_with_distributions_and_an_annealed_kl_weight_replays_as_eager(device):
    """PyTorch: a VAE step (``Independent(Normal(mu, std), 1).rsample()``, ``kl_divergence`` against an
    ``Independent`` standard-normal prior, the KL weight a 0-d tensor the loop anneals with ``fill_``) compiled gives
    eager's losses and parameters.  Pinned: coretorch replays it (the weight an input, the draws the same stream)
    bitwise on cpu, within float32 rounding on opencl."""
    from coretorch.distributions import Independent, Normal, kl_divergence

    def run(compiled: bool):
        torch.manual_seed(0)
        enc, dec = nn.Linear(6, 4).to(device), nn.Linear(2, 6).to(device)
        opt = torch.optim.Adam([*enc.parameters(), *dec.parameters()], lr=1e-2)
        prior = Independent(Normal(torch.zeros(2).to(device), torch.ones(2).to(device)), 1)
        beta = torch.zeros(()).to(device)

        def step(x):
            opt.zero_grad()
            h = enc(x)
            q = Independent(Normal(h[:, :2], torch.exp(0.5 * h[:, 2:])), 1)
            rec = F.mse_loss(dec(q.rsample()), x, reduction="sum") / x.shape[0]
            loss = rec + beta * kl_divergence(q, prior).mean()
            loss.backward()
            opt.step()
            return loss.detach()

        fn = torch.compile(step) if compiled else step
        torch.manual_seed(1)
        losses = []
        for i in range(8):
            beta.fill_(min(1.0, i / 4))
            losses.append(fn(torch.randn(5, 6).to(device)))
        return losses, [p.detach() for p in (*enc.parameters(), *dec.parameters())], fn

    (le, pe, _), (lc, pc, fn) = run(False), run(True)
    for a, b in zip(le + pe, lc + pc):
        close(device, a, b, "vae")
    assert fn.replays == 6  # (captures: the first call, and the second's with the Adam state made)


def test_explains_break_reasons_have_pytorchs_fields(device):
    """PyTorch: ``torch._dynamo.explain(fn)(*args).break_reasons`` holds ``GraphCompileReason`` objects with
    ``reason`` (the message), ``user_stack`` (a list of ``traceback.FrameSummary``: the user line) and
    ``graph_break``; a script printing ``r.reason`` and ``r.user_stack[-1].lineno`` for each (the seq2seq step whose
    teacher forcing is ``if torch.rand(1) < ratio``) raised AttributeError in coretorch, whose reasons were plain
    strings.  They keep being the message strings too."""
    def step(x):
        y = x * 2
        if torch.rand(1) < 0.5:  # teacher forcing decided by a tensor comparison: a break, here and in PyTorch
            y = y + 1
        return y
    out = torch._dynamo.explain(step)(torch.randn(3).to(device))
    assert out.graph_break_count == 1
    r = out.break_reasons[0]
    assert r.reason == "bool(tensor) reads a tensor value into Python" and r.graph_break is True
    frame = r.user_stack[-1]
    assert (frame.filename, frame.lineno, frame.name) == (__file__, step.__code__.co_firstlineno + 2, "step")
    assert "bool(tensor)" in r and r.startswith(r.reason + " (at ")


def test_a_host_random_augmentation_breaks_with_the_steps_place(device):
    """A SimCLR step whose flip is decided by a helper drawing from Python's generator through a name bound before
    the capture (``from random import random``), not a ``torch.Generator``, breaks the graph: a replay would repeat
    the number (PyTorch, too, breaks there and names the user line).  coretorch finds that draw when the step
    returns, and named the caller's line (``explain``'s own call, or the loop's), where nothing random is drawn; it
    now names the step.  The compiled calls run eagerly: eager's values and draws."""
    import random

    torch.manual_seed(0)
    m = nn.Linear(4, 4).to(device)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    coin = random.random  # (bound before the capture)

    def step(x):
        opt.zero_grad()
        v1 = x.flip(-1) if coin() < 0.5 else x
        z = F.normalize(m(torch.cat([v1, x])), dim=1)
        loss = -(z[:2] * z[2:]).sum(1).mean()
        loss.backward()
        opt.step()
        return loss.detach()

    random.seed(0)
    out = torch._dynamo.explain(step)(torch.randn(2, 4).to(device))
    r = out.break_reasons[0]
    assert r.reason.startswith("the call drew a host random number"), r
    assert (r.user_stack[-1].lineno, r.user_stack[-1].name) == (step.__code__.co_firstlineno, "step"), r
    c = torch.compile(step)
    random.seed(1)
    for _ in range(3):
        c(torch.randn(2, 4).to(device))
    ref = random.Random(1)
    for _ in range(3):
        ref.random()
    assert c.replays == 0 and random.random() == ref.random()  # (one draw a call, as eager)


class _Agent(nn.Module):
    """An actor-critic agent whose update is compiled in its class body (``@torch.compile`` on a method)."""

    def __init__(self):
        super().__init__()
        self.pi, self.v = nn.Linear(4, 3), nn.Linear(4, 1)
        self.opt = torch.optim.SGD(self.parameters(), lr=0.1)

    @torch.compile
    def update(self, s, ret):
        from coretorch.distributions import Categorical
        d = Categorical(logits=self.pi(s))
        v = self.v(s).squeeze(-1)
        adv = ret - v.detach()
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        loss = -(d.log_prob(d.sample()) * adv).mean() + 0.5 * F.smooth_l1_loss(v, ret) - 0.01 * d.entropy().mean()
        self.opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(self.parameters(), 0.5)
        self.opt.step()
        return loss.detach()


class _Plain:
    """A plain object with a method compiled in its class body."""

    def __init__(self, device: str):
        self.w = torch.ones(3).to(device)

    @torch.compile
    def scaled(self, x):
        return x * self.w + x.sum().item()


def test_explain_of_a_method_compiled_in_its_class_body(device):
    """PyTorch: ``torch._dynamo.explain(agent.update)(s, ret)`` explains a method compiled in its class body, bound
    to the instance.  coretorch took the bare function through the bound method (``fn._orig_fn``) and called it
    without ``self``: ``TypeError: ... missing 1 required positional argument``, for a module's method and a plain
    object's alike."""
    ag = _Agent().to(device)
    s, ret = torch.randn(6, 4).to(device), torch.randn(6).to(device)
    out = torch._dynamo.explain(ag.update)(s, ret)
    assert out.graph_break_count == 0 and out.op_count > 0
    p = _Plain(device)
    out = torch._dynamo.explain(p.scaled)(torch.randn(3).to(device))
    assert out.graph_break_count == 1 and out.break_reasons[0].reason.startswith("Tensor.item")
    # (and the compiled method itself still trains, replaying)
    for _ in range(4):
        ag.update(torch.randn(6, 4).to(device), torch.randn(6).to(device))
    assert ag.update.__func__.replays >= 2


class _PackedEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.gru = nn.Embedding(10, 8), nn.GRU(8, 8, batch_first=True)

    def forward(self, x, lens):
        return self.gru(pack_padded_sequence(self.emb(x), lens, batch_first=True, enforce_sorted=False))[1]


def test_a_compiled_encoders_packed_batch_of_other_lengths_is_logged(device):
    """As the packed step above, for ``torch.compile(encoder)``: a batch whose lengths differ from the capture's
    ran eagerly without a word in the graph_breaks log; now each such call is logged (values eager's)."""
    torch.manual_seed(0)
    enc = _PackedEncoder().to(device)
    c = torch.compile(enc)
    x = torch.randint(1, 10, (3, 4)).to(device)
    log = _Records()
    lg = logging.getLogger("coretorch._dynamo.graph_breaks")
    lg.addHandler(log)
    try:
        torch._logging.set_logs(graph_breaks=True)
        for lens in ([4, 2, 3], [4, 2, 3], [1, 4, 4], [4, 2, 3]):
            n = len(log.msgs)
            h = c(x, torch.tensor(lens))
            close(device, enc(x, torch.tensor(lens)), h, str(lens))
            assert (len(log.msgs) > n) == (lens == [1, 4, 4]), (lens, log.msgs)
    finally:
        torch._logging.set_logs()
        lg.removeHandler(log)
    assert c._capture.replays == 2 and "checked read" in log.msgs[0]


def test_a_sampler_indexing_by_a_0d_timestep_tensor_logs_each_eager_call(device):
    """A DDPM sampler compiled with the timestep passed as a 0-d tensor (to avoid a capture per ``t``) reads
    ``abar[t]``: PyTorch's eager ``x[t]`` reads a 0-d integer index as an int (a select), and so does coretorch,
    a checked read; each new ``t`` then ran eagerly and nothing said so.  Now each such call is logged with the way
    out (``abar[t.view(1)]``, which replays at every ``t``); values are eager's either way."""
    abar = torch.cumprod(1 - torch.linspace(1e-4, 0.02, 10), 0).to(device)

    def step(x, t):
        return x * abar[t].sqrt()

    def step1(x, t):
        return x * abar[t.view(1)].sqrt()

    log = _Records()
    lg = logging.getLogger("coretorch._dynamo.graph_breaks")
    lg.addHandler(log)
    try:
        torch._logging.set_logs(graph_breaks=True)
        c, c1 = torch.compile(step), torch.compile(step1)
        x = torch.randn(3).to(device)
        for t in range(4):
            tt = torch.tensor(t).to(device)
            close(device, step(x, tt), c(x, tt), "abar[t]")
            close(device, step1(x, tt), c1(x, tt), "abar[t.view(1)]")
    finally:
        torch._logging.set_logs()
        lg.removeHandler(log)
    assert c.replays == 0 and c1.replays == 3
    assert len(log.msgs) == 3 and all("function name: 'step'" in m and "abar[t.view(1)]" in m for m in log.msgs)
