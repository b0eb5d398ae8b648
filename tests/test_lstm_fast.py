"""nn.LSTM's whole-sequence path (issue 14's LSTM speed): the cpu backend's ``lstm_sequence`` /
``lstm_sequence_backward`` kernels (coretorch_cpu/rnn_seq.py), b_hh folded into the input projection's bias, and the
row fast path of the cpu ``index_add`` kernel (embedding's backward).  Forward against a numpy LSTM written here,
gradients by gradcheck and against the per-step composite (what a create_graph backward differentiates), on every
device."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
from coretorch import _backend
from coretorch.autograd import gradcheck

from _kernel_tables import KernelSpy


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _np_lstm(x, h0, c0, weights, layers, bidir):
    """PyTorch's LSTM equations in numpy: x (L, N, E); weights[k] = (w_ih, w_hh, b_ih or None, b_hh or None)
    for k = layer * D + direction -> (y, h_n, c_n)."""
    nd = 2 if bidir else 1
    inp, hn, cn = x, [], []
    for layer in range(layers):
        outs = []
        for d in range(nd):
            w_ih, w_hh, b_ih, b_hh = weights[layer * nd + d]
            h, c = h0[layer * nd + d], c0[layer * nd + d]
            ys = [None] * len(inp)
            for t in (range(len(inp) - 1, -1, -1) if d else range(len(inp))):
                g = inp[t] @ w_ih.T + h @ w_hh.T + (0 if b_ih is None else b_ih + b_hh)
                i, f, gg, o = np.split(g, 4, axis=1)
                c = _sig(f) * c + _sig(i) * np.tanh(gg)
                h = _sig(o) * np.tanh(c)
                ys[t] = h
            outs.append(np.stack(ys))
            hn.append(h)
            cn.append(c)
        inp = np.concatenate(outs, 2)
    return inp, np.stack(hn), np.stack(cn)


def _np(t):
    return t.detach().cpu().numpy()


def _net(device, layers=2, bidir=True, batch_first=False, bias=True, e=3, h=4, seed=0):
    torch.manual_seed(seed)
    return torch.nn.LSTM(e, h, layers, bias=bias, batch_first=batch_first, bidirectional=bidir).double().to(device)


@pytest.mark.parametrize("layers,bidir,batch_first,bias", [(2, True, True, True), (1, False, False, False),
                                                           (2, False, False, True)])
def test_lstm_matches_numpy(device, layers, bidir, batch_first, bias):
    net = _net(device, layers, bidir, batch_first, bias)
    rng = np.random.default_rng(1)
    nd = 2 if bidir else 1
    x, h0, c0 = rng.normal(size=(5, 2, 3)), rng.normal(size=(layers * nd, 2, 4)), rng.normal(size=(layers * nd, 2, 4))
    xin = x.transpose(1, 0, 2) if batch_first else x
    y, (hn, cn) = net(torch.tensor(xin, device=device), (torch.tensor(h0, device=device),
                                                          torch.tensor(c0, device=device)))
    ws = [tuple(_np(p) for p in ps) + ((None, None) if not bias else ()) for ps in net.all_weights]
    ry, rh, rc = _np_lstm(x, h0, c0, ws, layers, bidir)
    np.testing.assert_allclose(_np(y), ry.transpose(1, 0, 2) if batch_first else ry, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(hn), rh, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(cn), rc, rtol=1e-12, atol=1e-12)


def test_lstm_gradcheck_bidirectional(device):
    """gradcheck through a bidirectional LSTM on x, h0, c0 and the reverse direction's recurrent weight."""
    net = _net(device, layers=1, bidir=True, e=2, h=2)
    gen = torch.Generator().manual_seed(2)
    x, h0, c0 = (torch.randn(*s, dtype=torch.float64, generator=gen).to(device).requires_grad_()
                 for s in ((3, 1, 2), (2, 1, 2), (2, 1, 2)))
    w = net.weight_hh_l0_reverse.detach().clone().requires_grad_()
    del net._parameters["weight_hh_l0_reverse"]

    def run(x, h0, c0, w):
        net.weight_hh_l0_reverse = w
        y, (h, c) = net(x, (h0, c0))
        return y, h, c
    assert gradcheck(run, (x, h0, c0, w))


@pytest.mark.parametrize("seq,use", [(1, "yhc"), (4, "yhc"), (4, "y"), (4, "h"), (4, "c")])
def test_lstm_gradients_match_the_per_step_composite(device, seq, use):
    """Every parameter's gradient (b_ih and b_hh share the folded bias's) against the create_graph backward, which
    differentiates the per-step composite of differentiable ops, with all outputs or one used (the others' gradients
    None); retain_graph gives the same twice."""
    net = _net(device, layers=2, bidir=True, e=3, h=4, seed=3)
    x = torch.randn(seq, 2, 3, dtype=torch.float64, device=device, requires_grad=True)
    y, (hn, cn) = net(x)
    parts = {"y": (y * y).sum(), "h": (hn * 2).sum(), "c": cn.sum() * 3}
    loss = sum(parts[k] for k in use)
    params = [x] + list(net.parameters())
    fast = torch.autograd.grad(loss, params, retain_graph=True)
    again = torch.autograd.grad(loss, params, retain_graph=True)
    ref = torch.autograd.grad(loss, params, create_graph=True)
    for a, b, r in zip(fast, again, ref):
        np.testing.assert_array_equal(_np(a), _np(b))
        np.testing.assert_allclose(_np(a), _np(r), rtol=1e-10, atol=1e-12)


def test_cpu_lstm_runs_the_sequence_kernels_and_matches_the_step_kernels(monkeypatch):
    """float32: the whole-sequence kernels give the per-step kernels' outputs and gradients (the same operations in
    the same order; the recurrent weight's gradient split in two products)."""
    table = _backend.get_table(torch.device("cpu"))
    net = torch.nn.LSTM(5, 8, 2, batch_first=True, bidirectional=True)
    x = torch.randn(3, 6, 5, requires_grad=True)

    def run():
        y, (h, c) = net(x)
        ((y * y).sum() + h.sum() + c.sum()).backward()
        grads = [_np(p.grad) for p in [x] + list(net.parameters())]
        for p in [x] + list(net.parameters()):
            p.grad = None
        return [_np(y), _np(h), _np(c)] + grads
    spy = KernelSpy(monkeypatch, table, ("lstm_sequence", "lstm_sequence_backward", "lstm_cell"))
    fast = run()
    assert spy.calls["lstm_sequence"] == 4 and spy.calls["lstm_sequence_backward"] == 4 and not spy.calls["lstm_cell"]
    monkeypatch.setattr(table, "names", table.names - {"lstm_sequence", "lstm_sequence_backward"})
    steps = run()
    assert spy.calls["lstm_cell"] == 4 * 6
    for a, r in zip(fast, steps):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, r, rtol=1e-5, atol=1e-6)
    for a, r in zip(fast[:4], steps[:4]):      # outputs and the input's gradient: bitwise the same
        np.testing.assert_array_equal(a, r)


def test_embedding_backward_and_index_add_rows(device):
    """index_add of whole rows (the cpu kernel's flat fast path from 1,024 source elements; float, integer and
    bool rows) against numpy's ufunc.at, and the embedding gradient it makes."""
    rng = np.random.default_rng(4)
    idx = rng.integers(0, 7, 300)
    for dt, src in ((np.float32, rng.normal(size=(300, 5))), (np.int64, rng.integers(-9, 9, (300, 5))),
                    (np.bool_, rng.random((300, 5)) < 0.1)):
        x = (rng.normal(size=(7, 5)) * 3).astype(dt)
        ref = x.copy()
        np.add.at(ref, idx, src.astype(dt))
        # in index order, as np.add.at (a device's float atomics otherwise sum in any order, PyTorch's CUDA rule)
        before = torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(True)
        try:
            got = torch.tensor(x, device=device).index_add(0, torch.tensor(idx, device=device),
                                                           torch.tensor(src.astype(dt), device=device))
        finally:
            torch.use_deterministic_algorithms(before)
        np.testing.assert_array_equal(_np(got), ref)
    with pytest.raises(RuntimeError, match="out of bounds"):  # (a device reports it at the next read)
        _np(torch.zeros(7, 5, device=device).index_add(0, torch.tensor(np.full(300, 7), device=device),
                                                       torch.ones(300, 5, device=device)))
    emb = torch.nn.Embedding(11, 4).to(device)
    ids = rng.integers(0, 11, (40, 30))
    g = rng.normal(size=(40, 30, 4)).astype(np.float32)
    emb(torch.tensor(ids, device=device)).backward(torch.tensor(g, device=device))
    ref = np.zeros((11, 4))
    np.add.at(ref, ids.reshape(-1), g.reshape(-1, 4).astype(np.float64))
    np.testing.assert_allclose(_np(emb.weight.grad), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("per_step", [False, True])
def test_compiled_lstm_step_equals_eager(device, per_step, monkeypatch):
    """coretorch.compile replays the LSTM's kernels with each step's own saved activations: bitwise eager after four
    steps, with the sequence kernel (a flat tuple of results) and with the per-step cells (their saved activations
    in a nested tuple, which the recorder once left untracked: stale gradients from the second replay on)."""
    if per_step:
        table = _backend.get_table(torch.device(device))
        has = table.has
        monkeypatch.setattr(table, "has", lambda name: name != "lstm_sequence" and has(name))

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
