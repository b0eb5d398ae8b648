"""Review 17f: a differential fuzzer over more op families (convolutions and their transposes, pooling, batch/group
norm in train and eval, embedding, scaled_dot_product_attention, losses, matmul/einsum, advanced indexing reads and
writes, index_add/index_copy/masked_scatter, tensor clamp bounds, pad, interpolate, unfold, scans in backward,
broadcast ``where``; float64 and float16), eager against ``coretorch.compile`` in both capture forms."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F


def _same(a, b, device):
    x, y = a.detach().cpu().numpy(), b.detach().cpu().numpy()
    if device == "cpu":
        assert np.array_equal(x, y)
    else:
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-6)


def test_weighted_label_smoothed_cross_entropy_replays(device):
    """Eager: the mean of a label-smoothed cross-entropy with class weights divides by the weights of the targets
    that are not ignored.  Compiled before: that sum picked the weights with ``masked_select`` (a shape that depends
    on the data), so every call was a graph break and ran eagerly; it now reads class 0 for ignored targets and
    masks it out (PyTorch's own form), and the step replays."""
    w = torch.tensor([0.5, 1.0, 2.0, 3.0], device=device)

    def step(x, t):
        loss = F.cross_entropy(x, t, weight=w, ignore_index=1, label_smoothing=0.2)
        loss.backward()
        return loss.detach()

    compiled = torch.compile(step)
    for call in range(3):
        g = torch.Generator().manual_seed(call)
        x0 = torch.randn(2, 4, 5, generator=g)
        t = torch.randint(0, 4, (2, 5), generator=g).to(device)
        xe, xc = (x0.to(device).requires_grad_(True) for _ in range(2))
        _same(step(xe, t), compiled(xc, t), device)
        _same(xe.grad, xc.grad, device)
    assert compiled.replays == 2


def test_weighted_label_smoothed_cross_entropy_matches_pytorch(device):
    """PyTorch: loss 1.3173329 for these logits, targets (two ignored) and weights; the masked form keeps it."""
    x = torch.tensor(np.linspace(-2, 2, 24).reshape(2, 4, 3).astype(np.float32), device=device)
    t = torch.tensor([[0, 1, -100], [3, -100, 1]], device=device)
    w = torch.tensor([0.5, 1.0, 2.0, 3.0], device=device)
    loss = F.cross_entropy(x, t, weight=w, label_smoothing=0.2)
    assert abs(loss.item() - 1.3173328638076782) < 1e-6


def test_masked_scatter_with_a_backward_replays(device):
    """Eager: ``masked_scatter`` takes source's elements in order where the mask is True; the source's gradient is
    the output gradient at those places.  Compiled before: the forward read the mask's count back (a checked read
    that recaptured whenever the count changed) and the backward selected by the mask (a shape that depends on the
    data: a graph break), so the step never replayed; the k-th True now gathers source's element at the running
    count (no data-dependent shape) and the count is read only when the source is smaller than the mask."""
    def step(x, s):
        y = x.masked_scatter(x > 0, s * 2)
        (y * y).sum().backward()
        return y.detach()

    compiled = torch.compile(step)
    for call in range(3):
        g = torch.Generator().manual_seed(call)
        x0, s0 = torch.randn(3, 5, generator=g), torch.randn(4, 5, generator=g)
        xe, xc = (x0.to(device).requires_grad_(True) for _ in range(2))
        se, sc = (s0.to(device).requires_grad_(True) for _ in range(2))
        _same(step(xe, se), compiled(xc, sc), device)
        for a, b in ((xe.grad, xc.grad), (se.grad, sc.grad)):
            _same(a, b, device)
    assert compiled.replays == 2


def test_masked_scatter_of_a_short_source_still_checks_the_count(device):
    """PyTorch raises when the mask has more True than the source has elements (eager and compiled alike)."""
    x = torch.zeros(2, 3, device=device)
    with pytest.raises(RuntimeError, match="Number of elements of source"):
        x.masked_scatter(torch.ones(2, 3, dtype=torch.bool, device=device), torch.ones(4, device=device))
    y = x.masked_scatter(torch.tensor([True, False, True], device=device), torch.arange(4.0, device=device))
    assert y.cpu().tolist() == [[0.0, 0.0, 1.0], [2.0, 0.0, 3.0]]


def test_embedding_with_max_norm_in_a_compiled_step_replays(device):
    """Eager: ``embedding(..., max_norm=)`` rescales, in place, the referenced rows whose norm is above max_norm.
    Compiled before: it found the referenced rows with ``np.unique`` of the indices read back to the host, a graph
    break at every call; it now rescales every referenced row through the index tensor itself (a repeated row gets
    the same values) and the step replays, with the weight's values and version as eager's."""
    def step(i, w):
        y = F.embedding(i, w, max_norm=1.0)
        (y * y).sum().backward()
        return y.detach()

    compiled = torch.compile(step)
    for call in range(3):
        g = torch.Generator().manual_seed(call)
        w0 = torch.randn(6, 3, generator=g) * 2
        i = torch.randint(0, 6, (2, 4), generator=g).to(device)
        we, wc = (w0.to(device).requires_grad_(True) for _ in range(2))
        _same(step(i, we), compiled(i, wc), device)
        _same(we, wc, device)
        _same(we.grad, wc.grad, device)
        assert we._version == wc._version
    assert compiled.replays == 2


def test_one_hot_with_num_classes_in_a_compiled_step_replays(device):
    """Eager: ``one_hot(t, n)`` raises for a class outside [0, n).  Compiled before: the check read the smallest and
    largest class back (checked reads whose values change with the data), so each new batch recaptured; it now reads
    whether any class is out of range (the same value while the classes are valid) and the step replays."""
    def step(t):
        return F.one_hot(t, 5).sum(0)

    compiled = torch.compile(step)
    for call in range(3):
        t = torch.tensor([0, 1, 2 + call, 1, 0, 2, 1], device=device)  # the largest class changes
        assert torch.equal(step(t), compiled(t))
    assert compiled.replays == 2
    with pytest.raises(RuntimeError, match="smaller than num_classes"):
        compiled(torch.tensor([0, 1, 2, 3, 4, 5, 0], device=device))
    with pytest.raises(RuntimeError, match="non-negative"):
        compiled(torch.tensor([0, 1, 2, 3, 4, -1, 0], device=device))


def test_max_unpool_and_unravel_index_in_a_compiled_step_replay(device):
    """Eager: ``max_unpool2d`` and ``unravel_index`` raise for an index out of range.  Compiled before: the check
    read the smallest and largest index back (checked reads whose values change with the data), so each new batch
    recaptured; they now read whether any index is out of range, and the step replays (errors still raised)."""
    def step(x):
        y, i = F.max_pool2d(x, 2, return_indices=True)
        out = F.max_unpool2d(y, i, 2)
        (out * out).sum().backward()
        return out.detach(), torch.unravel_index(i.flatten(), (4, 4))[1]

    compiled = torch.compile(step)
    for call in range(3):
        x0 = torch.randn(2, 3, 4, 4, generator=torch.Generator().manual_seed(call))
        xe, xc = (x0.to(device).requires_grad_(True) for _ in range(2))
        for a, b in zip(step(xe), compiled(xc)):
            _same(a, b, device)
        _same(xe.grad, xc.grad, device)
    assert compiled.replays == 2
    y, i = F.max_pool2d(torch.randn(1, 1, 4, 4, device=device), 2, return_indices=True)
    with pytest.raises(RuntimeError, match=r"invalid max index: 16 \(output volumes are of size 4x4\)"):
        F.max_unpool2d(y, i.clone().fill_(16), 2)


class _EinsumPrelu(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4))
        self.W = torch.nn.Parameter(torch.randn(4, 4))

    def forward(self, x):
        return F.prelu(torch.einsum("nchw,cd->ndhw", x, self.W), self.w * 0.1)


def test_compiled_module_backward_of_a_non_contiguous_output_from_a_sum_bitwise():
    """Eager: the output (einsum's, strides (144, 1, 24, 4)) gets ``out.sum()``'s expanded gradient, so the
    gradient of prelu's per-channel weight is reduced in that output's memory order.  Compiled: the backward was
    recorded with a contiguous zero placeholder for the output gradient and reduced in another order: the weight's
    gradient differed in the last bits (cpu, where a replay claims bitwise equality).  Fixed in review 18a: the
    placeholder has the output's layout, and a gradient of another layout is copied into it."""
    torch.manual_seed(0)
    eager, model = _EinsumPrelu(), _EinsumPrelu()
    model.load_state_dict(eager.state_dict())
    compiled = torch.compile(model)
    for call in range(3):
        x = torch.randn(2, 4, 6, 6)
        for m in (eager, compiled):
            (m(x).sum() * 2).backward()
        assert np.array_equal(eager.w.grad.numpy(), model.w.grad.numpy()), call
