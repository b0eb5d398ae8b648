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


def _vae_like_losses(device, compiled):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 6), nn.Sigmoid()).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)

    def step(x):
        opt.zero_grad()
        loss = F.binary_cross_entropy(model(x), x, reduction="sum")
        loss.backward()
        opt.step()
        return loss
    f = torch.compile(step) if compiled else step
    data = (torch.rand(5, 4, 6) > 0.5).float().to(device)
    losses = [f(data[i % 5]).item() for i in range(8)]
    return losses, model[0].weight.detach().cpu().numpy(), getattr(f, "replays", None)


def test_binary_cross_entropy_in_a_compiled_step(device):
    """A VAE's step with ``F.binary_cross_entropy``: eager trains.  Compiled, the second replay raised "a value the
    captured step read on the host ... differs": the input range check read the batch's min and max on the host,
    a checked read of values that change every step; it now reads the test's outcome."""
    el, ew, _ = _vae_like_losses(device, False)
    cl, cw, replays = _vae_like_losses(device, True)
    _close(el, cl, device)
    _close(ew, cw, device)
    assert replays == 6


def test_binary_cross_entropy_of_nan_raises(device):
    """PyTorch's range check fails for a NaN prediction ("all elements of input should be between 0 and 1");
    coretorch returned nan (its min/max test is false for NaN)."""
    import pytest
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(torch.tensor([0.5, float("nan")], device=device), torch.ones(2, device=device))


class _LSTMOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(3, 4)

    def forward(self, x):
        return self.rnn(x)[0]


def test_a_compiled_lstm_gives_its_two_bias_gradients_their_own_memory(device):
    """``nn.LSTM``'s backward returns one tensor as the gradient of ``bias_ih`` and ``bias_hh``: eager's engine
    stores it for one and a copy for the other, so ``clip_grad_norm_`` (in place on every ``.grad``) scales each
    once.  Compiled (the module), the replayed backward made two tensors over the one array: both ``.grad`` shared
    memory and the clipping scaled the biases' gradients twice (a word-language-model run drifted from eager)."""
    def run(compiled):
        torch.manual_seed(0)
        m = _LSTMOut().to(device)
        f = torch.compile(m) if compiled else m
        out = []
        for _ in range(3):
            m.zero_grad()
            f(torch.randn(5, 2, 3, device=device)).pow(2).sum().backward()
            torch.nn.utils.clip_grad_norm_(m.parameters(), 0.01)
            out.append([p.grad.cpu().numpy().copy() for p in m.parameters()])
        return out
    for a, b in zip(run(False), run(True)):
        for u, v in zip(a, b):
            _close(u, v, device)


class _RNNLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(7, 4)
        self.rnn = nn.LSTM(4, 5)
        self.dec = nn.Linear(5, 7)

    def forward(self, x, hidden):  # the word language model's: log-probabilities and the (h, c) pair
        out, hidden = self.rnn(self.emb(x), hidden)
        return {"logp": F.log_softmax(self.dec(out).view(-1, 7), dim=1), "hidden": hidden}


def test_a_compiled_module_returning_nested_tuples_and_dicts_replays(device):
    """A forward returning ``output, (h, c)`` (or a dict holding them): eager returns that structure.  Compiled, it
    was a graph break at every call ("the forward returns something other than a tensor or a tuple of tensors");
    now it replays, with the same structure, values and gradients (truncated BPTT with ``h.detach()``)."""
    def run(compiled):
        torch.manual_seed(0)
        m = _RNNLM().to(device)
        f = torch.compile(m) if compiled else m
        data = torch.randint(0, 7, (4, 6, 2), device=device)
        hidden = (torch.zeros(1, 2, 5, device=device), torch.zeros(1, 2, 5, device=device))
        out = []
        for i in range(3):
            m.zero_grad()
            r = f(data[i], tuple(h.detach() for h in hidden))
            assert type(r) is dict and list(r) == ["logp", "hidden"] and type(r["hidden"]) is tuple
            hidden = r["hidden"]
            F.nll_loss(r["logp"], data[i + 1].reshape(-1)).backward()
            out.append([r["logp"].detach().cpu().numpy(), hidden[1].detach().cpu().numpy()]
                       + [p.grad.cpu().numpy().copy() for p in m.parameters()])
        return out, getattr(f, "_capture", None)
    eager, _ = run(False)
    comp, cap = run(True)
    for a, b in zip(eager, comp):
        for u, v in zip(a, b):
            _close(u, v, device)
    assert cap.replays == 2


class _MaybeLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 5)

    def forward(self, x, targets=None):  # nanoGPT's: the loss is None without targets
        logits = self.lin(x)
        return logits, None if targets is None else F.cross_entropy(logits, targets)


def test_a_compiled_module_returning_none_beside_its_logits_replays(device):
    """nanoGPT's ``logits, loss = model(idx)`` with ``loss`` None (generation, no targets): eager returns
    ``(logits, None)``.  Compiled, every call was a graph break (the result held a None); now it replays and returns
    ``(logits, None)``, while calls with targets capture their own replay."""
    torch.manual_seed(0)
    m = _MaybeLoss().to(device)
    f = torch.compile(m)
    x, y = torch.randn(3, 4, device=device), torch.randint(0, 5, (3,), device=device)
    with torch.no_grad():
        for _ in range(3):
            logits, loss = f(x)
            assert loss is None
            _close(logits.cpu().numpy(), m.lin(x).cpu().numpy(), device)
    logits, loss = f(x, y)
    _close(loss.item(), F.cross_entropy(m(x)[0], y).item(), device)
    assert f._capture.replays == 2


def test_the_recompile_log_names_a_python_number_argument():
    """An EMA step ``step(x, decay)`` with a new float each call captures again at each call (numbers are guarded
    by value): the recompile log said only "the tensors (arguments' shapes, ...)" changed, which a user reads as
    a tensor problem; it now names the argument and its two values."""
    import logging
    got: list = []

    class _H(logging.Handler):
        def emit(self, record):
            got.append(record.getMessage())
    h = _H()
    log = logging.getLogger("coretorch._dynamo.recompiles")
    f = torch.compile(lambda x, d: x * d)
    torch._logging.set_logs(recompiles=True)
    log.addHandler(h)
    try:
        f(torch.ones(2), 0.5)
        f(torch.ones(2), 0.6)
    finally:
        log.removeHandler(h)
        torch._logging.set_logs()
    assert any("argument 1: value mismatch, expected 0.5, actual 0.6" in m for m in got), got


class _Heads(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(3, 2), nn.Linear(3, 1)

    def forward(self, x):
        from collections import OrderedDict, namedtuple
        Out = _HEADS_OUT[0] or namedtuple("Out", "cls box")
        _HEADS_OUT[0] = Out
        return OrderedDict(out=Out(self.a(x), [self.b(x)]), aux=None)


_HEADS_OUT: list = [None]


def test_a_compiled_module_returning_an_ordered_dict_of_named_tuples(device):
    """A detection-style forward returning an OrderedDict holding a named tuple and a list: eager's structure and
    gradients; compiled it replays (it was a graph break) and rebuilds the same types."""
    from collections import OrderedDict

    def run(compiled):
        torch.manual_seed(0)
        m = _Heads().to(device)
        f = torch.compile(m) if compiled else m
        out = []
        for _ in range(3):
            m.zero_grad()
            r = f(torch.randn(4, 3, device=device))
            assert type(r) is OrderedDict and type(r["out"]).__name__ == "Out" and r["aux"] is None
            (r["out"].cls.sum() + r["out"].box[0].pow(2).sum()).backward()
            out.append([p.grad.cpu().numpy().copy() for p in m.parameters()])
        return out, getattr(f, "_capture", None)
    eager, _ = run(False)
    comp, cap = run(True)
    for a, b in zip(eager, comp):
        for u, v in zip(a, b):
            _close(u, v, device)
    assert cap.replays == 2
