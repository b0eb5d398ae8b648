"""Review 18a: real nn modules under compile, both forms (``torch.compile(model)`` with an eager loop, and a compiled
training step doing zero_grad/forward/backward/step), found by a seeded differential fuzzer over the modules and
their constructor options (convolutions and their padding modes, batch/group/layer/instance/RMS norms, RNN/LSTM/GRU,
MultiheadAttention and the Transformer layers, scaled_dot_product_attention, embeddings, pooling, upsampling,
dropout, in-place activations, weight tying, weight_norm/spectral_norm): parameters, gradients, buffers, optimizer
state and outputs bitwise on cpu, within float32 rounding on opencl."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn as nn


def _same(a, b, device):
    x, y = a.detach().cpu().numpy(), b.detach().cpu().numpy()
    if device == "cpu":
        assert np.array_equal(x, y)
    else:
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-6)


class _Centred(nn.Module):
    """A conv3d (its output is not row-major) and a batch statistic: the backward sums the output's gradient over
    several dims."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(2, 3, 1)

    def forward(self, x):
        y = self.conv(x)
        return y - y.mean((0, 2, 3, 4), keepdim=True)


class _Permuted(nn.Module):
    def forward(self, x):
        y = x.permute(0, 1, 3, 2)
        return y - y.mean((2, 3), keepdim=True)


def _grads(make, shape, device, loss, calls=3):
    """The inputs' and the parameters' gradients of ``calls`` backwards of ``loss(model(x))`` (a fresh ``x`` each),
    eager and compiled."""
    xs = [torch.randn(*shape) for _ in range(calls)]
    grads = []
    for compiled in (False, True):
        torch.manual_seed(0)
        model = make().to(device)
        fwd = torch.compile(model) if compiled else model
        got = []
        for x0 in xs:
            x = x0.to(device).requires_grad_(True)
            loss(fwd(x)).backward()
            got.append(x.grad)
        grads.append([*got, *[p.grad for p in model.parameters()]])
    assert fwd.__dict__["_capture"].replays == calls - 1
    return grads


_NOT_ROW_MAJOR = ((_Centred, (2, 2, 3, 3, 3)), (_Permuted, (2, 3, 4, 5)),
                  (lambda: nn.Sequential(nn.Conv3d(2, 3, 1), nn.BatchNorm3d(3)), (2, 2, 3, 3, 3)))


def test_compiled_module_backward_of_an_output_that_is_not_row_major(device):
    """Eager: ``BatchNorm3d`` after ``Conv3d`` (whose output is laid out (N, D, C, H, W)), or a permuted output,
    gets the gradient of ``out.sin().sum()`` in the output's layout, and its backward's sums over several dims run
    on that layout.  Compiled module before: the backward was recorded with a row-major placeholder gradient and
    took the row-major path, so the replayed gradients differed from eager's in the last bits (conv3d's bias
    gradient by 7e-6) from the first call on; the placeholder now has the output's layout."""
    for make, shape in _NOT_ROW_MAJOR:
        for a, b in zip(*_grads(make, shape, device, lambda out: out.sin().sum())):
            _same(a, b, device)


def test_compiled_module_backward_of_a_gradient_in_another_layout(device):
    """Eager: the backward runs on whatever layout the output's gradient has (row-major through
    ``out.contiguous()``, broadcast through ``out.sum()``).  The recorded backward took the paths of its placeholder's
    layout (a ``view`` of the gradient that only that layout allows): on a gradient of another layout it returned
    None from the view (an AttributeError deep in conv3d's backward) or other bits; a replay now copies such a
    gradient into the recorded layout first (PyTorch's AOTAutograd coerces its tangents alike), and the gradients
    match eager's within float32 rounding."""
    for make, shape in _NOT_ROW_MAJOR:
        for loss in (lambda out: out.contiguous().sin().sum(), lambda out: out.sum(), lambda out: out.mean(),
                     lambda out: out.transpose(0, 1).contiguous().sin().sum()):
            for a, b in zip(*_grads(make, shape, device, loss)):
                np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy(), rtol=1e-4, atol=1e-4)


class _Pool(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 1)
        self.pool = nn.MaxPool2d(2, 2, return_indices=True)

    def forward(self, x):
        return self.pool(self.conv(x))


def test_compiled_module_with_an_output_that_does_not_require_grad_replays(device):
    """Eager: ``MaxPool2d(return_indices=True)`` returns the values (with a grad_fn) and the int64 indices
    (none); a backward of the values reaches the conv.  Compiled module before: "some outputs of the forward do not
    require grad" was a graph break, so every training call ran eagerly (``explain`` said so); the node now has the
    outputs that require grad only, and the indices come back without a grad_fn."""
    torch.manual_seed(0)
    model = _Pool().to(device)
    twin = _Pool().to(device)
    twin.load_state_dict(model.state_dict())
    compiled = torch.compile(twin)
    for call in range(3):
        x = torch.randn(2, 2, 6, 6).to(device)
        (ye, ie), (yc, ic) = model(x), compiled(x)
        assert ic.grad_fn is None and not ic.requires_grad and yc.grad_fn is not None
        assert np.array_equal(ie.cpu().numpy(), ic.cpu().numpy())
        _same(ye, yc, device)
        ye.sin().sum().backward()
        yc.sin().sum().backward()
        for p, q in zip(model.parameters(), twin.parameters()):
            _same(p.grad, q.grad, device)
    assert compiled._capture.replays == 2


class _Ctc(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 5)

    def forward(self, x, targets, input_lengths, target_lengths):
        return nn.functional.ctc_loss(self.lin(x).log_softmax(-1), targets, input_lengths, target_lengths)


def test_compiled_module_with_ctc_loss_of_length_tensors_replays(device):
    """Eager: ``ctc_loss`` with its lengths as (cpu) tensors reads them on the host.  Compiled module before: a
    core op reading a whole array was a graph break, so every call ran eagerly (PyTorch's compiled ctc_loss takes
    the lengths as tensors); a small integer array read before any write is now a checked read, as a number is: a
    call with the same lengths replays, another runs as eager does."""
    lens = [([6, 5], [3, 2]), ([6, 5], [3, 2]), ([6, 4], [3, 2]), ([6, 5], [3, 2]), ([5, 5], [2, 2])]
    xs = [torch.randn(6, 2, 4) for _ in lens]
    targets = torch.tensor([[1, 2, 3], [2, 2, 1]], device=device)
    got = []
    for compiled in (False, True):
        torch.manual_seed(0)
        model = _Ctc().to(device)
        fwd = torch.compile(model) if compiled else model
        seen = []
        for x, (il, tl) in zip(xs, lens):
            loss = fwd(x.to(device), targets, torch.tensor(il), torch.tensor(tl))
            loss.backward()
            seen += [loss.detach(), model.lin.weight.grad.clone()]
        got.append(seen)
    assert fwd.__dict__["_capture"].replays == 2
    for a, b in zip(*got):
        _same(a, b, device)


def test_compiled_lstm_of_a_packed_sequence_replays(device):
    """Eager: an LSTM given a PackedSequence reads its ``batch_sizes`` (a cpu int64 tensor) on the host.  Compiled
    before: that whole-array read was a graph break at every call; it is now checked, so a batch of the same
    lengths replays (outputs, hidden state and gradients as eager's), and other lengths run as eager does."""
    from coretorch.nn.utils.rnn import pack_padded_sequence

    lengths = [[5, 4, 2], [5, 4, 2], [5, 3, 3], [5, 4, 2]]
    xs = [torch.randn(5, 3, 3) for _ in lengths]
    got = []
    for compiled in (False, True):
        torch.manual_seed(0)
        model = nn.LSTM(3, 4).to(device)
        fwd = torch.compile(model) if compiled else model
        seen = []
        for x, n in zip(xs, lengths):
            out, (h, c) = fwd(pack_padded_sequence(x.to(device), n))
            (out.data.sin().sum() + h.sum() + c.sum()).backward()
            seen += [out.data.detach(), h.detach(), c.detach(), model.weight_hh_l0.grad.clone()]
        got.append(seen)
    assert fwd.__dict__["_capture"].replays == 2
    for a, b in zip(*got):
        _same(a, b, device)


def test_explain_of_a_module_is_its_module_capture(device):
    """PyTorch: ``torch._dynamo.explain(model)(x)`` of a training model (Linear + BatchNorm1d) gives one graph and
    no break.  coretorch before: explain captured the module as a function, whose result's autograd graph is still
    needed, so every module reported a graph break that ``compile(model)`` (which replays forward and backward)
    never has; a module, compiled or not, is now explained by its module capture, and its real breaks remain."""
    import warnings

    model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2)).to(device)
    x = torch.randn(4, 3).to(device)
    model.compile()  # (its forward, a ModuleCapture, too)
    for target in (model, torch.compile(model), model.forward):
        ex = torch.compiler.explain(target)(x)
        assert (ex.graph_count, ex.graph_break_count, ex.break_reasons) == (1, 0, [])
        assert ex.op_count > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        hooked = nn.utils.weight_norm(nn.Linear(3, 2)).to(device)  # its pre-hook assigns module.weight every call
    ex = torch.compiler.explain(hooked, x)  # (no break since review 21e: the attribute is an output of the replay)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0)


def _models():
    """(name, make, inputs(i, device)) of real modules with their options, as the review's fuzzer built them."""
    def randn(*shape):
        return lambda i, device: (torch.randn(*shape, generator=torch.Generator().manual_seed(i)).to(device),)

    class Mha(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(8, 2, dropout=0.1, kdim=5, vdim=6, batch_first=True)

        def forward(self, q, k, v, mask):
            return self.attn(q, k, v, key_padding_mask=mask, average_attn_weights=False)

    def mha_inputs(i, device):
        g = torch.Generator().manual_seed(i)
        mask = torch.tensor([[False, False, True, False], [False, True, False, False]], device=device)
        return (torch.randn(2, 3, 8, generator=g).to(device), torch.randn(2, 4, 5, generator=g).to(device),
                torch.randn(2, 4, 6, generator=g).to(device), mask)

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.TransformerEncoderLayer(8, 2, 16, 0.1, activation="gelu", batch_first=True,
                                                    norm_first=True)

        def forward(self, x):
            mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1], device=x.device)
            return self.layer(x, src_mask=mask, is_causal=True)

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(11, 6, padding_idx=0)
            self.rnn = nn.LSTM(6, 6, 2, dropout=0.2, bidirectional=True, proj_size=3, batch_first=True)
            self.head = nn.Linear(6, 11, bias=False)
            self.head.weight = self.tok.weight

        def forward(self, ids):
            return self.head(self.rnn(self.tok(ids))[0])

    return [
        ("conv-bn", lambda: nn.Sequential(nn.Conv2d(3, 4, 3, padding="same", padding_mode="circular", groups=1),
                                          nn.BatchNorm2d(4), nn.ReLU(inplace=True), nn.Dropout2d(0.2),
                                          nn.Conv2d(4, 4, 3, padding=1, padding_mode="reflect", groups=2,
                                                    bias=False), nn.GroupNorm(2, 4)), randn(2, 3, 5, 5)),
        ("pool-up", lambda: nn.Sequential(nn.ConvTranspose2d(3, 4, 3, stride=2, output_padding=1),
                                          nn.MaxPool2d(3, 2, 1, ceil_mode=True), nn.InstanceNorm2d(4, affine=True),
                                          nn.Upsample(scale_factor=2, mode="bicubic"), nn.PixelUnshuffle(2),
                                          nn.PixelShuffle(2)), randn(2, 3, 4, 4)),
        ("mha", Mha, mha_inputs),
        ("encoder", Encoder, randn(2, 5, 8)),
        ("tied-lstm", Tied, lambda i, device: (torch.randint(0, 11, (2, 5), generator=torch.Generator()
                                                             .manual_seed(i)).to(device),)),
        ("weight-norm", lambda: nn.Sequential(nn.utils.parametrizations.weight_norm(nn.Linear(5, 6)),
                                              nn.RMSNorm(6), nn.SiLU(), nn.utils.parametrizations.spectral_norm(
                                                  nn.Linear(6, 3))), randn(4, 5)),
    ]


def _flat(out):
    return [out] if isinstance(out, torch.Tensor) else [t for o in out for t in _flat(o)] \
        if isinstance(out, (tuple, list)) else []


def test_real_modules_train_as_eager_in_both_compile_forms(device):
    """The review's differential check over real modules with their options, four SGD-momentum steps, the last
    in eval mode: ``compile(model)`` in an eager loop and a compiled zero_grad/forward/backward/step give
    eager's outputs, parameters, gradients and buffers (bitwise on cpu) and replay.  On opencl the runs use
    deterministic algorithms: the max pool's overlapping windows and the embedding's repeated ids accumulate their
    gradients with float atomics otherwise, in an order that varies from run to run under load, and a 4-element
    gradient made by cancellation once differed between runs by 2e-6 against this check's atol of 1e-6."""
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(device != "cpu")
    try:
        _check_real_modules(device)
    finally:
        torch.use_deterministic_algorithms(was)


def _check_real_modules(device):
    for name, make, inputs in _models():
        runs = []
        for form in ("eager", "module", "step"):
            torch.manual_seed(0)
            model = make().to(device)
            opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
            fwd = torch.compile(model) if form == "module" else model

            def step(*args):
                opt.zero_grad()
                out = _flat(fwd(*args))
                sum((t * (1 + i)).sin().sum() for i, t in enumerate(out) if t.requires_grad).backward()
                opt.step()
                return [t.detach() for t in out]
            run = torch.compile(step) if form == "step" else step
            seen = []
            torch.manual_seed(1)
            for i in range(4):
                model.train(i != 3)
                seen += run(*inputs(i, device))
                seen += [p.detach().clone() for p in model.parameters()] + [p.grad.clone() for p in
                                                                           model.parameters()]
                seen += [b.clone() for b in model.buffers()]
            runs.append(seen)
            if form != "eager":
                assert (fwd.__dict__["_capture"] if form == "module" else run).replays >= 1, (name, form)
        for other in runs[1:]:
            assert len(other) == len(runs[0])
            for a, b in zip(runs[0], other):
                _same(a, b, device)


def test_compiled_step_packing_unsorted_lengths_replays(device):
    """Eager: ``pack_padded_sequence(..., enforce_sorted=False)`` sorts the batch and inverts the permutation,
    and the GRU reads the packed ``batch_sizes`` on the host.  Compiled step before: ``invert_permutation`` wrote
    its fresh tensor with ``scatter_``, so the later read of the sizes came after a write (a graph break at every
    call); the inverse is now the permutation's sort order (no write), the read is a checked one, and a batch of
    the captured lengths replays with eager's losses and parameters."""
    from coretorch.nn.utils.rnn import invert_permutation, pack_padded_sequence

    assert invert_permutation(torch.tensor([2, 0, 1])).tolist() == [1, 2, 0]
    lengths = [[6, 3, 5], [6, 3, 5], [2, 6, 5], [6, 3, 5], [6, 3, 5]]
    xs = [torch.randn(3, 6, 4) for _ in lengths]
    got = []
    for compiled in (False, True):
        torch.manual_seed(0)
        gru = nn.GRU(4, 5, batch_first=True).to(device)
        opt = torch.optim.SGD(gru.parameters(), lr=0.1)

        def step(x, n):
            opt.zero_grad()
            out, h = gru(pack_padded_sequence(x, n, batch_first=True, enforce_sorted=False))
            loss = h.pow(2).sum() + out.data.sin().sum()
            loss.backward()
            opt.step()
            return loss.detach()
        run = torch.compile(step) if compiled else step
        got.append([t for x, n in zip(xs, lengths) for t in (run(x.to(device), torch.tensor(n)),
                                                               gru.weight_hh_l0.detach().clone())])
    assert run.replays == 2
    for a, b in zip(*got):
        _same(a, b, device)


_WITH_INDICES = [
    ("max_pool2d", lambda x: nn.functional.max_pool2d(x, 2, return_indices=True), (1, 2, 4, 4)),
    ("max_pool1d", lambda x: nn.functional.max_pool1d(x, 2, return_indices=True), (1, 2, 6)),
    ("max_pool3d", lambda x: nn.functional.max_pool3d(x, 2, return_indices=True), (1, 1, 4, 4, 4)),
    ("adaptive_max_pool2d", lambda x: nn.functional.adaptive_max_pool2d(x, 2, return_indices=True), (1, 2, 5, 5)),
    ("max", lambda x: x.max(1), (3, 4)), ("min", lambda x: x.min(1), (3, 4)), ("sort", lambda x: x.sort(1), (3, 4)),
    ("topk", lambda x: x.topk(2, 1), (3, 4)), ("kthvalue", lambda x: x.kthvalue(2, 1), (3, 4)),
    ("median", lambda x: x.median(1), (3, 4)), ("mode", lambda x: x.mode(1), (3, 4)),
    ("cummax", lambda x: x.cummax(1), (3, 4)),
]


def test_indices_modified_in_place_before_the_backward_raise(device):
    """PyTorch saves the indices of max pooling (``return_indices``), ``max``/``min``/``sort``/``topk``/... with
    a dim for the backward: an in-place change of the returned indices before the backward raises "one of the
    variables needed for gradient computation has been modified by an inplace operation".  coretorch before: the
    nodes held the indices without their version, so eager scattered the gradient to the changed positions
    (``idx.zero_()``: every gradient to element 0) while a compiled module, whose backward watches the indices'
    counter, raised: the compiled module and eager disagreed.  The nodes now save them (``max_unpool2d`` its
    indices argument too)."""
    for name, fn, shape in _WITH_INDICES:
        x = torch.randn(*shape).to(device).requires_grad_(True)
        values, indices = fn(x)
        indices.zero_()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            values.sum().backward()
        values, _ = fn(x)  # (unchanged indices: the gradient as before)
        values.sum().backward()
        assert x.grad is not None, name
    x = torch.randn(1, 2, 2, 2).to(device).requires_grad_(True)  # max_unpool2d saves its indices (an input) too
    indices = torch.tensor([[[[0, 3], [8, 15]], [[1, 2], [9, 14]]]], device=device)
    out = nn.functional.max_unpool2d(x, indices, 2)
    indices.add_(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()
    torch.manual_seed(0)
    model = _Pool().to(device)
    for compiled in (model, torch.compile(model)):
        for _ in range(3):
            y, idx = compiled(torch.randn(2, 2, 6, 6).to(device))
            idx.zero_()
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                y.sum().backward()
