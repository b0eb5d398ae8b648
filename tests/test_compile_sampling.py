"""coretorch.compile in a sampling loop (nanoGPT's ``generate``): the model's input is ``idx[:, -block:]`` of a batch
that grows by one token per step, so once the context is full every call passes the same sizes at a new row stride
and offset.  Size-1 dims' strides address nothing, so the guards key them loosely (coretorch/_compile/strides.py)
and such calls replay; a capture that reads those strides as numbers checks them exactly.  Also the recompile log's
reasons, which name the argument and what changed in it, as PyTorch's guard failures do; and the cpu selection ops
(``topk``, ``kthvalue``, ``mode``), whose PyTorch tie order is host code: now a recorded call, not a graph break."""
from __future__ import annotations

import logging
import warnings

import coretorch as torch
import coretorch.nn as nn
import coretorch.nn.functional as F


class _TinyLM(nn.Module):
    def __init__(self, block: int = 8):
        super().__init__()
        self.tok, self.pos, self.head = nn.Embedding(50, 32), nn.Embedding(block, 32), nn.Linear(32, 50)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        return self.head(torch.tanh(x))


def _generate(model, idx, steps, block=8):
    logits = []
    for _ in range(steps):
        out = model(idx[:, -block:])[:, -1, :]
        logits.append(out)
        idx = torch.cat([idx, torch.argmax(F.softmax(out, dim=-1), dim=-1, keepdim=True)], dim=1)
    return idx, logits


def test_a_sampling_loop_replays_once_the_context_is_full(device):
    """Eager and compiled sampling give the same tokens and logits (bitwise on cpu).  Before, every call after the
    context filled was a new capture (the row stride of ``idx[:, -8:]`` grows with ``idx``): the limit of 8 was
    reached while the context grew, and every later call ran eagerly after a warning."""
    torch.manual_seed(0)
    model = _TinyLM().to(device).eval()
    compiled = torch.compile(model)
    start = torch.zeros(1, 1, dtype=torch.long, device=device)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")  # no recompile_limit warning
        want, want_logits = _generate(model, start, 30)
        got, got_logits = _generate(compiled, start, 30)
    assert torch.equal(want, got)
    for a, b in zip(want_logits, got_logits):
        if device == "cpu":
            assert torch.equal(a, b)
        else:
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    cap = compiled._capture
    assert len(cap.cache) == 8 and cap.replays == 22  # one capture per context length 1..8, then replays


def test_a_read_stride_of_a_size1_dim_is_checked_at_the_replay(device):
    """A function that reads such a stride as a number (here it scales by it) must not replay the capture's number
    for an argument whose size-1 dim has another stride: the replay checks it and captures again."""
    def f(x):
        return x * x.stride(0)
    c = torch.compile(f)
    for rows in (10, 12, 10, 14):
        x = torch.arange(float(rows * 8), device=device).reshape(1, rows * 8)[:, :8]  # (1, 8), row stride rows*8
        assert torch.equal(c(x), f(x))
    assert c.replays == 0
    assert torch.equal(c(x), f(x)) and c.replays == 1  # the same stride again: a replay


def test_the_recompile_log_names_the_argument_and_what_changed(device):
    """Each reason says which argument changed and how (size at an index, dtype, requires_grad, a Python number's
    value), against the closest capture; it said only "the tensors and numbers (arguments' shapes, ...)"."""
    records: list = []
    handler = logging.Handler()
    handler.emit = records.append
    log = logging.getLogger("coretorch._dynamo.recompiles")
    log.addHandler(handler)
    torch._logging.set_logs(recompiles=True)
    try:
        f = torch.compile(lambda x, k: x * k)
        f(torch.ones(3, device=device), 2)
        f(torch.ones(4, device=device), 2)
        f(torch.ones(4, device=device), 3)
        f(torch.ones(4, device=device, dtype=torch.float64), 3)
        f(torch.ones(4, device=device, dtype=torch.float64, requires_grad=True), 3)
    finally:
        torch._logging.set_logs()
        log.removeHandler(handler)
    reasons = [r.getMessage().split("triggered by a change in: ")[1] for r in records]
    assert reasons == ["argument 0: size mismatch at index 0, expected 3, actual 4",
                       "argument 1: value mismatch, expected 2, actual 3",
                       "argument 0: dtype mismatch, expected coretorch.float32, actual coretorch.float64",
                       "argument 0: requires_grad mismatch, expected False, actual True"]


def test_top_k_sampling_replays_with_pytorchs_tie_order(device):
    """``torch.topk`` with a small k on cpu puts equal values in PyTorch's CPU order by host code, which read the
    arrays back: a graph break, so a compiled top-k sampler never replayed on cpu.  That code is now a recorded
    call (``ops._util.host_call``): the replays run it again, and rows whose ties appear only at a replay (or only
    at the capture) get eager's indices."""
    def top(x):
        v, i = torch.topk(x, 3)
        return v, i, x.masked_fill(x < v[:, [-1]], float("-inf")).softmax(-1)
    c = torch.compile(top)
    g = torch.Generator().manual_seed(0)
    for ties in (False, True, True, False, True):
        x = torch.randn(4, 65, generator=g)
        if ties:  # five equal maxima in row 1, three in row 3: which three indices topk returns is the tie order
            x[1, [3, 9, 20, 40, 60]] = 7.0
            x[3, [0, 1, 2]] = 9.0
        x = x.to(device)
        want, got = top(x), c(x)
        for a, b in zip(want, got):
            assert torch.equal(a, b)
    assert c.replays == 4
    assert torch.compiler.explain(top, x).graph_break_count == 0


def test_kthvalue_and_mode_replay_with_pytorchs_tie_order(device):
    """The same for ``kthvalue`` (the index among equal values PyTorch's quickselect picks) and ``mode`` (rows
    holding NaN as PyTorch's CPU sort leaves them): recorded host calls on cpu, where they were graph breaks."""
    def f(x):
        a, b = torch.kthvalue(x, 3), torch.mode(x)
        return a.values, a.indices, b.values, b.indices
    c = torch.compile(f)
    g = torch.Generator().manual_seed(0)
    for step in range(5):
        x = torch.randint(0, 4, (4, 20), generator=g).float()
        if step % 2:
            x[2, 5] = x[1, 0] = float("nan")
        x = x.to(device)
        for a, b in zip(f(x), c(x)):
            assert torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(), b.nan_to_num())
    assert c.replays == 4
    assert torch.compiler.explain(f, x).graph_break_count == 0
