"""Review 21e (compile): hooks and nn.utils inside compiled steps and models: the deprecated hook-based
``nn.utils.weight_norm``/``spectral_norm`` (their forward pre-hooks assign ``module.weight`` at every call), module
forward/backward hooks, tensor and post-accumulate-grad hooks, global module hooks, ``parametrize.cached()``,
pruning-style masks, EMA in a forward hook and ``swa_utils.AveragedModel``, each run eagerly and compiled (the whole
step and ``compile(model)``) over several calls: the compiled calls must give eager's losses, parameters, gradients,
buffers and module attributes."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn as nn
import coretorch.nn.functional as F


def _same(device, a, b):
    a, b = np.asarray(a), np.asarray(b)
    if device == "cpu":
        assert np.array_equal(a, b), (a, b)
    else:
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def _np(t):
    return t.detach().cpu().numpy().copy()


def _hooked(kind: str, layer: nn.Module) -> nn.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return nn.utils.weight_norm(layer) if kind == "weight_norm" else nn.utils.spectral_norm(layer)


def _train(device, kind, form, compiled, steps=7):
    """SGD with momentum on a two-layer net whose layers are hooked; the model turns to eval mode at step 4 (the
    step still trains: spectral_norm then keeps u and v), then three no_grad predictions."""
    torch.manual_seed(0)
    m = nn.Sequential(_hooked(kind, nn.Linear(4, 8)), nn.Tanh(), _hooked(kind, nn.Linear(8, 3))).to(device)
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    fm = torch.compile(m) if compiled and form == "module" else m

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(fm(x), y)
        loss.backward()
        opt.step()
        return loss

    fn = torch.compile(step) if compiled and form == "function" else step
    g = torch.Generator().manual_seed(1)
    seen = []
    for i in range(steps):
        x, y = torch.randn(16, 4, generator=g).to(device), torch.randint(0, 3, (16,), generator=g).to(device)
        if i == 4:
            m.eval()
        loss = fn(x, y)
        seen.append([_np(loss), *[_np(t) for t in m.state_dict().values()], _np(m[0].weight), _np(m[2].weight),
                     *[_np(p.grad) for p in m.parameters()]])
    with torch.no_grad():
        for _ in range(3):
            seen.append([_np(fm(torch.randn(5, 4, generator=g).to(device))), _np(m[0].weight)])
    replays = (fn.replays if form == "function" else fm._capture.replays) if compiled else 0
    return seen, replays, m


@pytest.mark.parametrize("form", ["function", "module"])
@pytest.mark.parametrize("kind", ["weight_norm", "spectral_norm"])
def test_hook_based_weight_and_spectral_norm_replay_as_eager(device, kind, form):
    """The deprecated ``nn.utils.weight_norm``/``spectral_norm`` assign ``module.weight = g * v / ||v||`` (spectral:
    ``weight_orig / sigma``, with one power-iteration step on the ``weight_u``/``weight_v`` buffers in training
    mode) in a forward pre-hook at every call.  Eager: each call leaves the attribute holding this call's weight.
    Compiled before: the guards keyed the attribute by identity, so each call's new tensor captured again (and the
    capture broke the graph: "the call assigns a module attribute"): no call ever replayed, in training, eval or
    no_grad.  Now the attribute is read and written where it lives and keyed by shape, dtype and device: the steps
    replay with eager's losses, parameters, buffers (u, v), gradients and ``module.weight`` values."""
    eager, _, _ = _train(device, kind, form, False)
    compiled, replays, m = _train(device, kind, form, True)
    for a, b in zip(eager, compiled):
        for x, y in zip(a, b):
            _same(device, x, y)
    assert replays >= 4
    if form == "module":  # a replay's weight is an output of its node, as eager's is of the hook's ops
        assert type(m[0].weight.grad_fn).__name__ == "CompiledFunctionBackward" or not m[0].weight.requires_grad


def test_a_forward_storing_an_auxiliary_loss_on_the_module(device):
    """A mixture-of-experts layer stores its load-balancing loss (``self.aux = ...``) in its forward, and the
    training code adds ``model.aux`` to the loss outside the compiled module.  Eager: the gradient of the auxiliary
    loss reaches the parameters through the attribute's graph.  A compiled module's replay now gives the attribute
    as an output of its ``CompiledFunctionBackward`` node (before: the attribute's new tensor each call captured
    again, and never replayed)."""
    class Gate(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(6, 4)
            self.aux = torch.zeros(())

        def forward(self, x):
            p = self.proj(x).softmax(-1)
            self.aux = (p.mean(0) ** 2).sum() * 4
            return p

    def run(compiled):
        torch.manual_seed(0)
        m = Gate().to(device)
        opt = torch.optim.Adam(m.parameters(), lr=0.01)
        fm = torch.compile(m) if compiled else m
        g = torch.Generator().manual_seed(2)
        out = []
        for _ in range(5):
            x = torch.randn(8, 6, generator=g).to(device)
            opt.zero_grad()
            loss = fm(x)[:, 0].sum() + 0.5 * m.aux
            loss.backward()
            opt.step()
            out.append([_np(loss), _np(m.aux), *[_np(p) for p in m.parameters()]])
        return out, (fm._capture.replays if compiled else 0)

    eager, _ = run(False)
    compiled, replays = run(True)
    for a, b in zip(eager, compiled):
        for x, y in zip(a, b):
            _same(device, x, y)
    assert replays >= 3


@pytest.mark.parametrize("form", ["function", "module"])
def test_a_cached_state_stored_and_read_again(device, form):
    """A module keeps a running state as a plain attribute (``self.h = h.clone()`` of a no_grad recurrence) and
    reads it at the next call.  Eager: each call reads the previous call's state.  Compiled: the replay reads the
    attribute as it is at the call and writes the new one back (before: every call captured again)."""
    class Smoother(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.h = torch.zeros(2, 3)

        def forward(self, x):
            y = self.lin(x)
            with torch.no_grad():
                self.h = (0.9 * self.h + 0.1 * y).clone()
            return y + self.h

    def run(compiled):
        torch.manual_seed(0)
        m = Smoother().to(device)
        m.h = m.h.to(device)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        fm = torch.compile(m) if compiled and form == "module" else m

        def step(x):
            opt.zero_grad()
            loss = fm(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss

        fn = torch.compile(step) if compiled and form == "function" else step
        g = torch.Generator().manual_seed(3)
        out = [[_np(fn(torch.randn(2, 3, generator=g).to(device))), _np(m.h), _np(m.lin.weight)] for _ in range(6)]
        return out, (fn.replays if form == "function" else fm._capture.replays) if compiled else 0

    eager, _ = run(False)
    compiled, replays = run(True)
    for a, b in zip(eager, compiled):
        for x, y in zip(a, b):
            _same(device, x, y)
    assert replays >= 3


def test_stores_a_replay_cannot_repeat_stay_graph_breaks(device):
    """What a replay cannot repeat stays eager: storing an argument (``self.last = x``: eager's attribute is the
    caller's tensor itself), a view of an intermediate that is no detach (``self.h = y[:, :3]``: eager's shares the
    result's version counter), and reading a state that carries the previous call's autograd graph (``self.h = h``
    without ``detach``: checked by identity)."""
    class Keep(nn.Module):
        def __init__(self, how):
            super().__init__()
            self.lin, self.how = nn.Linear(3, 3), how
            self.h = torch.zeros(2, 3)

        def forward(self, x):
            y = self.lin(x) + self.h
            if self.how == "arg":
                self.h = x
            elif self.how == "view":
                with torch.no_grad():
                    self.h = y[:, :3]
            return y

    for how in ("arg", "view"):
        m = Keep(how).to(device)
        m.h = m.h.to(device)
        fm = torch.compile(m)
        xs = [torch.randn(2, 3).to(device) for _ in range(4)]
        for x in xs:
            out = fm(x)
            out.sum().backward()
            if how == "arg":
                assert m.h is x
        assert fm._capture.replays == 0
    m = nn.Linear(3, 3).to(device)

    class Carry(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = m
            self.h = torch.zeros(2, 3, device=device)

        def forward(self, x):
            self.h = torch.tanh(self.lin(x) + self.h)
            return self.h

    c = Carry()
    step = torch.compile(lambda x: c(x).sum().backward(retain_graph=True))
    eager_c = Carry()
    eager_c.lin = nn.Linear(3, 3).to(device)
    eager_c.lin.load_state_dict(m.state_dict())
    xs = [torch.randn(2, 3).to(device) for _ in range(4)]
    for x in xs:
        step(x)
        eager_c(x).sum().backward(retain_graph=True)
        _same(device, _np(m.weight.grad), _np(eager_c.lin.weight.grad))
    assert step.replays == 0


@pytest.mark.parametrize("form", ["function", "module"])
def test_a_gan_step_with_spectral_norm_discriminator_and_generator(device, form):
    """An SN-GAN step (spectral_norm on the generator's ConvTranspose2d, dim 1, and on the discriminator's Conv2d
    with two power iterations and its Linear; the discriminator called three times per step, each call running its
    pre-hooks; two Adam optimizers).  Eager: each call of D updates u and v and assigns a new weight.  Compiled
    before: no call replayed (every call captured again).  Now the step replays with eager's losses, parameters and
    buffers; the whole step's capture stores the generator's weight at the discriminator's ``step()``, before the
    generator's backward consumed its graph, which is checked at the call's end (a check where it was written back
    made that a graph break)."""
    def run(compiled):
        torch.manual_seed(0)
        G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Unflatten(1, (1, 4, 4)),
                          _hooked("spectral_norm", nn.ConvTranspose2d(1, 2, 3, padding=1))).to(device)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            D = nn.Sequential(nn.utils.spectral_norm(nn.Conv2d(2, 4, 3, padding=1), n_power_iterations=2),
                              nn.LeakyReLU(0.2), nn.Flatten(), nn.utils.spectral_norm(nn.Linear(64, 1))).to(device)
        o_g = torch.optim.Adam(G.parameters(), lr=1e-3, betas=(0.5, 0.9))
        o_d = torch.optim.Adam(D.parameters(), lr=1e-3, betas=(0.5, 0.9))
        f_g, f_d = (torch.compile(G), torch.compile(D)) if compiled and form == "module" else (G, D)

        def step(z, real):
            o_d.zero_grad()
            fake = f_g(z)
            loss_d = F.softplus(-f_d(real)).mean() + F.softplus(f_d(fake.detach())).mean()
            loss_d.backward()
            o_d.step()
            o_g.zero_grad()
            loss_g = F.softplus(-f_d(fake)).mean()
            loss_g.backward()
            o_g.step()
            return loss_d, loss_g

        fn = torch.compile(step) if compiled and form == "function" else step
        g = torch.Generator().manual_seed(1)
        out = []
        for _ in range(6):
            ld, lg = fn(torch.randn(8, 4, generator=g).to(device), torch.randn(8, 2, 4, 4, generator=g).to(device))
            out.append([_np(ld), _np(lg), *[_np(t) for t in (*G.state_dict().values(), *D.state_dict().values())],
                        _np(D[0].weight), _np(G[3].weight)])
        replays = (fn.replays if form == "function" else f_d._capture.replays) if compiled else 0
        return out, replays

    eager, _ = run(False)
    compiled, replays = run(True)
    for a, b in zip(eager, compiled):
        for x, y in zip(a, b):
            _same(device, x, y)
    assert replays >= 3


def test_a_forward_only_call_leaving_the_weights_graph_runs_eagerly(device):
    """A compiled prediction without ``no_grad`` on a weight-normed layer: eager leaves ``module.weight`` holding a
    tensor with its autograd graph (nothing consumed it), which the caller may still use.  A replay's tensor carries
    none, so such a call is a graph break (run eagerly, the attribute eager's); under ``no_grad`` it replays."""
    m = _hooked("weight_norm", nn.Linear(4, 3)).to(device)
    pred = torch.compile(lambda x: m(x).argmax(-1))
    xs = [torch.randn(5, 4).to(device) for _ in range(4)]
    for x in xs:
        assert np.array_equal(_np(pred(x)), _np(m(x).argmax(-1)))
        assert m.weight.requires_grad and m.weight.grad_fn is not None
    assert pred.replays == 0
    with torch.no_grad():
        for x in xs:
            assert np.array_equal(_np(pred(x)), _np(m(x).argmax(-1)))
    assert pred.replays >= 2


def test_a_module_attribute_sharing_its_tensor_with_another_path_reassigned(device):
    """A plain tensor attribute that is also a global tensor of the step (``model.mask = mask_a``), or another
    module's attribute (one mask shared), then reassigned between calls (``model.mask = mask_b``, same shape).
    Eager reads the new mask.  Attributes are keyed by shape, dtype and device (not identity) since this review,
    and the recording loads the shared array through its first path: a replay that only checked the key read the
    old mask; it now checks first that the attribute still holds that array, and captures again where not."""
    mask_a, mask_b = torch.ones(3, device=device), torch.full((3,), 2.0, device=device)

    class Masked(nn.Module):
        def __init__(self, mask):
            super().__init__()
            self.lin, self.mask = nn.Linear(3, 3), mask

        def forward(self, x):
            return self.lin(x) * self.mask

    m = Masked(mask_a).to(device)

    def step(x):
        return (m(x) + mask_a).sum()

    f = torch.compile(step)
    shared = torch.ones(3, device=device)
    seq = nn.Sequential(Masked(shared), Masked(shared)).to(device)
    fs = torch.compile(seq)
    x = torch.randn(2, 3).to(device)
    with torch.no_grad():
        for i in range(5):
            if i == 3:
                m.mask, seq[1].mask = mask_b, torch.full((3,), 3.0, device=device)
            _same(device, _np(step(x)), _np(f(x)))
            _same(device, _np(seq(x)), _np(fs(x)))
    assert f.replays >= 2 and fs._capture.replays >= 2


@pytest.mark.parametrize("form", ["function", "module"])
def test_one_tensor_stored_in_two_attributes_and_returned(device, form):
    """A forward stores one new tensor in two attributes (``self.last = out * 2; self.prev = self.last``) and returns
    ``out``, also kept as ``self.out``.  Eager: ``m.last is m.prev`` and the result is ``m.out``.  A compiled step's
    replay made a tensor per attribute (``m.last is m.prev`` False) before it wrote the second as the first."""
    class Keep(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 3)
            self.last = self.prev = self.out = torch.zeros(8, 3)

        def forward(self, x):
            out = self.lin(x).tanh()
            self.last = out * 2
            self.prev = self.last
            self.out = out
            return out

    def run(compiled):
        torch.manual_seed(0)
        m = Keep().to(device)
        m.last = m.prev = m.out = m.last.to(device)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        fm = torch.compile(m) if compiled and form == "module" else m

        def step(x):
            opt.zero_grad()
            out = fm(x)
            (out.sum() + m.last.pow(2).sum()).backward()
            opt.step()
            return out

        fn = torch.compile(step) if compiled and form == "function" else step
        g = torch.Generator().manual_seed(1)
        seen = []
        for _ in range(5):
            out = fn(torch.randn(8, 4, generator=g).to(device))
            assert m.last is m.prev and out is m.out
            seen.append([_np(out), _np(m.last), _np(m.lin.weight)])
        return seen, (fn.replays if form == "function" else fm._capture.replays) if compiled else 0

    eager, _ = run(False)
    compiled, replays = run(True)
    for a, b in zip(eager, compiled):
        for x, y in zip(a, b):
            _same(device, x, y)
    assert replays >= 3


@pytest.mark.parametrize("form", ["function", "module"])
def test_an_output_kept_as_an_attribute_under_no_grad(device, form):
    """Inference under ``no_grad``: a forward keeps its output as ``self.out``.  Eager: the result is ``m.out``.
    A compiled module's replay wrote the attribute as a tensor of its own (``out is m.out`` False); its stores are
    now outputs of the replayed forward, so the two are one tensor, as eager's."""
    class Keep(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 3)
            self.out = torch.zeros(8, 3)

        def forward(self, x):
            self.out = self.lin(x).tanh()
            return self.out

    m = Keep().to(device)
    m.out = m.out.to(device)
    f = torch.compile(m) if form == "module" else torch.compile(lambda x: m(x))
    with torch.no_grad():
        for _ in range(4):
            x = torch.randn(8, 4).to(device)
            out = f(x)
            assert out is m.out
            _same(device, _np(out), _np(m.lin(x).tanh()))
    assert (f._capture.replays if form == "module" else f.replays) >= 2


def test_a_backward_hook_storing_a_module_attribute(device):
    """A full backward hook keeps the output gradient on the module (``mod.g = go[0].clone()``).  Eager: each
    backward stores that call's gradient.  A compiled module records its backward once with placeholder gradients:
    such a store stays a graph break (the calls run eagerly, with eager's attribute)."""
    m = nn.Linear(4, 3).to(device)
    m.g = torch.zeros(5, 3, device=device)
    m.register_full_backward_hook(lambda mod, gi, go: setattr(mod, "g", go[0].clone()))
    f = torch.compile(m)
    for _ in range(4):
        w = torch.randn(5, 3).to(device)
        (f(torch.randn(5, 4).to(device).requires_grad_()) * w).sum().backward()
        _same(device, _np(w), _np(m.g))
    assert f._capture.replays == 0


class _Sym(nn.Module):
    def forward(self, w):
        return w.triu() + w.triu(1).transpose(-1, -2)


@pytest.mark.parametrize("form", ["function", "module"])
def test_a_parametrize_cached_block_around_several_calls(device, form):
    """``with parametrize.cached():`` around several calls: eager computes the parametrized weight at the first
    access and reads that cached tensor until the block ends, even after the original changed in place.  A replay
    recomputed the weight from the current original at every call (the first call's capture filled the cache; the
    replays never read it): the outputs of calls 2-5 differed.  The cache's entries are now part of the guards, a
    replay writes the entries its capture filled, and one that hits the cache reads the cached tensor."""
    from coretorch.nn.utils import parametrize

    def run(compiled):
        torch.manual_seed(0)
        m = nn.Linear(3, 3).to(device)
        parametrize.register_parametrization(m, "weight", _Sym())
        f = (torch.compile(m) if form == "module" else torch.compile(lambda x: m(x))) if compiled else m
        x = torch.randn(2, 3).to(device)
        out = []
        with torch.no_grad(), parametrize.cached():
            for _ in range(5):
                out.append(_np(f(x)))
                m.parametrizations.weight.original.add_(1.0)
        with torch.no_grad():  # (a block per call: each computes the weight again)
            for _ in range(4):
                with parametrize.cached():
                    out.append(_np(f(x)))
        return out, (f._capture.replays if form == "module" else f.replays) if compiled else 0

    eager, _ = run(False)
    compiled, replays = run(True)
    for a, b in zip(eager, compiled):
        _same(device, a, b)
    assert replays >= 5


def test_a_recurrent_step_with_parametrize_cached_inside_the_forward(device):
    """A recurrent cell whose parametrized weight is read at every time step, the forward inside ``cached()``
    (PyTorch's recommended use): compiled, it trains as eager and replays."""
    from coretorch.nn.utils import parametrize

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.cell, self.head = nn.Linear(4, 4), nn.Linear(4, 2)
            parametrize.register_parametrization(self.cell, "weight", _Sym())

        def forward(self, x):
            h = torch.zeros(x.shape[0], 4, device=x.device)
            with parametrize.cached():
                for t in range(x.shape[1]):
                    h = torch.tanh(self.cell(x[:, t]) + h)
            return self.head(h)

    def run(compiled, form):
        torch.manual_seed(0)
        m = Net().to(device)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        fm = torch.compile(m) if compiled and form == "module" else m

        def step(x, y):
            opt.zero_grad()
            loss = F.mse_loss(fm(x), y)
            loss.backward()
            opt.step()
            return loss

        fn = torch.compile(step) if compiled and form == "function" else step
        g = torch.Generator().manual_seed(1)
        out = [[_np(fn(torch.randn(8, 5, 4, generator=g).to(device), torch.randn(8, 2, generator=g).to(device))),
                *[_np(p) for p in m.parameters()]] for _ in range(5)]
        return out, (fn.replays if form == "function" else fm._capture.replays) if compiled else 0

    for form in ("function", "module"):
        eager, _ = run(False, form)
        compiled, replays = run(True, form)
        for a, b in zip(eager, compiled):
            for x, y in zip(a, b):
                _same(device, x, y)
        assert replays >= 3


@pytest.mark.parametrize("form", ["function", "module"])
def test_an_attribute_holding_a_graph_made_in_init(device, form):
    """A decoder weight kept as a transposed view of the encoder's (``self.w_t = self.enc.weight.t()`` in
    ``__init__``): eager's backward runs through that view's graph into the encoder's gradient at every step.  The
    replay reads the same tensor (checked by identity, as an attribute read with a graph is) and gives eager's
    parameters; reading it is no graph break."""
    class TiedT(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(4, 6)

        def forward(self, x):
            return F.linear(torch.tanh(self.enc(x)), self.w_t)

    def run(compiled):
        torch.manual_seed(0)
        m = TiedT().to(device)
        m.w_t = m.enc.weight.t()
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        fm = torch.compile(m) if compiled and form == "module" else m

        def step(x):
            opt.zero_grad()
            loss = (fm(x) - x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss

        fn = torch.compile(step) if compiled and form == "function" else step
        g = torch.Generator().manual_seed(1)
        out = [[_np(fn(torch.randn(8, 4, generator=g).to(device))), *[_np(p) for p in m.parameters()]]
               for _ in range(5)]
        return out, (fn.replays if form == "function" else fm._capture.replays) if compiled else 0

    eager, _ = run(False)
    compiled, replays = run(True)
    for a, b in zip(eager, compiled):
        for x, y in zip(a, b):
            _same(device, x, y)
    assert replays >= 3


@pytest.mark.parametrize("form", ["function", "module"])
def test_a_pruning_mask_applied_in_a_forward_pre_hook(device, form):
    """Pruning as ``torch.nn.utils.prune`` does it: the parameter ``weight_orig``, the buffer ``weight_mask`` and a
    forward pre-hook assigning ``module.weight = weight_orig * weight_mask`` at every call; the mask is changed in
    place (more pruning) between steps.  Eager: each call's weight is this call's product.  Compiled before: the
    new attribute each call captured again (never a replay); now the steps replay with eager's parameters and
    ``module.weight``."""
    def run(compiled):
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)).to(device)
        lin = m[0]
        w = lin._parameters.pop("weight")
        lin.register_parameter("weight_orig", w)
        lin.register_buffer("weight_mask", torch.ones_like(w))
        lin.weight = lin.weight_orig * lin.weight_mask

        def apply_mask(mod, inputs):
            mod.weight = mod.weight_orig * mod.weight_mask

        lin.register_forward_pre_hook(apply_mask)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        fm = torch.compile(m) if compiled and form == "module" else m

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(fm(x), y)
            loss.backward()
            opt.step()
            return loss

        fn = torch.compile(step) if compiled and form == "function" else step
        g = torch.Generator().manual_seed(1)
        out = []
        for i in range(6):
            if i == 3:
                lin.weight_mask[::2].zero_()
            loss = fn(torch.randn(16, 4, generator=g).to(device), torch.randint(0, 3, (16,), generator=g).to(device))
            out.append([_np(loss), _np(lin.weight), *[_np(p) for p in m.parameters()]])
        return out, (fn.replays if form == "function" else fm._capture.replays) if compiled else 0

    eager, _ = run(False)
    compiled, replays = run(True)
    for a, b in zip(eager, compiled):
        for x, y in zip(a, b):
            _same(device, x, y)
    assert replays >= 3


@pytest.mark.parametrize("form", ["function", "module"])
def test_truncated_bptt_keeps_the_detached_hidden_state(device, form):
    """Truncated BPTT: ``out, h = self.rnn(x, self.h); self.h = h.detach()`` (a GRU), a new sequence's zero state
    set between calls.  Eager: each call starts from the previous call's final state.  Compiled before: storing the
    detached view was a graph break (every call eager); now the replay reads ``self.h`` where it lives and stores
    this call's state (a compiled module's as a detached view of its node's base, as eager's), with eager's losses,
    states and parameters."""
    class TBPTT(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn, self.head = nn.GRU(4, 6, batch_first=True), nn.Linear(6, 3)
            self.h = torch.zeros(1, 8, 6)

        def forward(self, x):
            out, h = self.rnn(x, self.h)
            self.h = h.detach()
            return self.head(out)

    def run(compiled):
        torch.manual_seed(0)
        m = TBPTT().to(device)
        m.h = m.h.to(device)
        opt = torch.optim.Adam(m.parameters(), lr=0.01)
        fm = torch.compile(m) if compiled and form == "module" else m

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(fm(x).flatten(0, 1), y.flatten())
            loss.backward()
            opt.step()
            return loss

        fn = torch.compile(step) if compiled and form == "function" else step
        g = torch.Generator().manual_seed(1)
        out = []
        for i in range(8):
            if i == 5:
                m.h = torch.zeros(1, 8, 6, device=device)
            x, y = torch.randn(8, 5, 4, generator=g).to(device), torch.randint(0, 3, (8, 5), generator=g).to(device)
            out.append([_np(fn(x, y)), _np(m.h), *[_np(p) for p in m.parameters()]])
            assert not m.h.requires_grad
        return out, (fn.replays if form == "function" else fm._capture.replays) if compiled else 0

    eager, _ = run(False)
    compiled, replays = run(True)
    for a, b in zip(eager, compiled):
        for x, y in zip(a, b):
            _same(device, x, y)
    assert replays >= 5


def test_a_module_tensor_attribute_replaced_by_one_with_another_user_attribute(device):
    """A plain tensor attribute carrying a number the forward reads (``self.mask.scale``), replaced by a tensor of
    the same shape with another number, or the number changed on the same tensor.  Eager reads the new number.
    Keyed by shape, dtype and device since this review, the attribute's key also holds the attributes set on the
    tensor (as a buffer's), so the capture's number is not replayed."""
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            return self.lin(x) * self.mask * self.mask.scale

    m = M().to(device)
    m.mask = torch.ones(3, device=device)
    m.mask.scale = 2.0
    f = torch.compile(m)
    x = torch.randn(2, 3).to(device)
    with torch.no_grad():
        for i in range(6):
            if i == 2:
                t = torch.ones(3, device=device)
                t.scale = 5.0
                m.mask = t
            if i == 4:
                m.mask.scale = 7.0
            _same(device, _np(m.lin(x) * m.mask * m.mask.scale), _np(f(x)))
    assert f._capture.replays >= 2


@pytest.mark.parametrize("form", ["function", "module"])
@pytest.mark.parametrize("how", ["detach", "reset"])
def test_an_lstm_state_kept_as_a_tuple_attribute(device, form, how):
    """An LSTM's state kept on the module as a tuple: truncated BPTT's ``self.state = (h.detach(), c.detach())``
    (a new sequence's zeros set between calls), or PyTorch's LSTM tutorial's ``self.state = (h, c)`` with the loop
    setting fresh zeros before every sequence.  Eager: each call reads the state as the previous call or the loop
    left it.  Compiled before: a tuple attribute was keyed by its tensors' identities, so every call captured again
    (never a replay); now its tensors are read where they live and the replay stores this call's tuple."""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn, self.head = nn.LSTM(4, 6, batch_first=True), nn.Linear(6, 3)

        def forward(self, x):
            out, state = self.rnn(x, self.state)
            self.state = tuple(s.detach() for s in state) if how == "detach" else state
            return self.head(out)

    def run(compiled):
        torch.manual_seed(0)
        m = Net().to(device)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        fm = torch.compile(m) if compiled and form == "module" else m

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(fm(x).flatten(0, 1), y.flatten())
            loss.backward()
            opt.step()
            return loss

        fn = torch.compile(step) if compiled and form == "function" else step
        g = torch.Generator().manual_seed(1)
        out = []
        for i in range(7):
            if how == "reset" or i in (0, 4):
                m.state = (torch.zeros(1, 8, 6, device=device), torch.zeros(1, 8, 6, device=device))
            x, y = torch.randn(8, 5, 4, generator=g).to(device), torch.randint(0, 3, (8, 5), generator=g).to(device)
            out.append([_np(fn(x, y)), *[_np(s) for s in m.state], *[_np(p) for p in m.parameters()]])
            assert type(m.state) is tuple
        return out, (fn.replays if form == "function" else fm._capture.replays) if compiled else 0

    eager, _ = run(False)
    compiled, replays = run(True)
    for a, b in zip(eager, compiled):
        for x, y in zip(a, b):
            _same(device, x, y)
    assert replays >= 4
