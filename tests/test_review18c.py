"""Review 18c of coretorch.compile: fusion and lowering against eager (dtypes, layouts, aliasing), the tests that
make sense on every device.  Each test states what eager gives and what a compiled replay gave before the fix."""
from __future__ import annotations

import pytest

import coretorch as torch


def _outcome(fn, *args):
    try:
        r = fn(*args)
    except RuntimeError as e:
        return ("raised", type(e))
    return (r.stride(), r.cpu().numpy().tobytes())


@pytest.mark.parametrize("case", ["plain", "view", "fused_first", "sum"])
def test_a_persistent_tensors_changed_layout_gives_eagers_result_layout(device, case):
    """A closure tensor's data replaced by a transposed view after the capture (``w.data = other.t()``): eager's
    elementwise results follow their operands' layouts (``w * 2 + x`` is transposed, so ``.view(24)`` raises).  On
    opencl the replay kept running the capture's kernels: planned temporaries and fused kernels are row-major, so
    ``w * 2 + x`` came back row-major (strides (6, 1) for eager's (1, 4)) and ``.view(24)`` returned a tensor where
    eager raises.  The replay now checks the layouts of the persistent arrays such launches read (as on cpu) and
    captures again where one changed."""
    w = torch.arange(24., device=device).reshape(4, 6)

    def step(x):
        if case == "plain":
            return w * 2 + x
        if case == "view":
            return (w * 2 + x).view(24)
        if case == "fused_first":
            return ((w + 1) * 2 + x).relu()
        return (w * 2 + x).exp().sum(0)
    compiled = torch.compile(step)
    x = torch.ones(4, 6, device=device)
    for i in range(4):
        if i == 2:
            w.data = torch.arange(24., device=device).reshape(6, 4).t() * 1.5
        assert _outcome(compiled, x) == _outcome(step, x), i


def _outcomes(step, x, new_w, w):
    """Eager's and the compiled step's results (value, strides, or the exception's type) and w's values, four calls,
    ``w.data`` replaced by ``new_w`` before the third."""
    res = []
    for fn in (step, torch.compile(step)):
        w.data = torch.arange(float(w.numel()), device=x.device).reshape(w.shape)
        out = []
        for i in range(4):
            if i == 2:
                w.data = new_w.clone() if new_w.is_contiguous() else new_w
            try:
                r = fn(x)
                out.append(r if isinstance(r, bool) else (r.stride(), r.cpu().numpy().tobytes()))
            except RuntimeError as e:
                out.append(("raised", str(e)[:40]))
            out.append(w.cpu().numpy().tobytes())
        res.append(out)
    return res


def test_contiguous_of_a_persistent_tensor_that_became_strided_copies_as_eager(device):
    """``y = w.contiguous(); y.add_(x)`` with a closure tensor ``w``: eager returns ``w`` itself while it is
    contiguous and a copy once ``w.data = other[::2]``.  The replay kept the capture's answer (no copy): it added
    into ``w`` itself where eager leaves ``w`` unchanged (a silently different ``w``; also on cpu)."""
    w = torch.arange(6., device=device)

    def step(x):
        y = w.contiguous()
        y.add_(x)
        return y
    want, got = _outcomes(step, torch.ones(6, device=device), torch.arange(12., device=device)[::2], w)
    assert got == want


@pytest.mark.parametrize("case", ["is_contiguous", "view", "reshape", "flatten", "contiguous_view"])
def test_a_layout_query_of_a_persistent_tensor_follows_its_changed_layout(device, case):
    """A capture's layout queries of a closure tensor (``is_contiguous``, whether ``view`` is possible, so whether
    ``reshape``/``flatten`` copy), then ``w.data = other.t()``: eager answers for the transposed layout
    (``is_contiguous()`` False, ``view(24)`` raises RuntimeError, ``reshape`` copies).  The replay answered for the
    capture's layout: ``is_contiguous()`` returned True, the recorded view gave None (TypeError or AttributeError
    inside the replay, or None returned), ``reshape`` and ``flatten`` failed the same way (cpu and opencl)."""
    w = torch.arange(24., device=device).reshape(4, 6)

    def step(x):
        if case == "is_contiguous":
            return w.is_contiguous()
        if case == "view":
            return w.view(24) + x
        if case == "reshape":
            return w.reshape(24) * x
        if case == "flatten":
            return w.flatten()
        return w.contiguous().view(24) + x
    new_w = torch.arange(24., device=device).reshape(6, 4).t() * 1.5
    want, got = _outcomes(step, torch.ones(24, device=device), new_w, w)
    assert got == want


@pytest.mark.parametrize("op", ["lshift", "rshift", "ilshift", "lshift_wide"])
def test_shifts_of_0d_integer_tensors_replay_their_values(device, op):
    """``i << 2`` of a 0-d int tensor: the cpu kernel returned a numpy scalar (numpy's ufuncs give one for 0-d
    operands), which a capture records as a constant: the replays on cpu returned the capture's value for every
    new ``i`` (``(i << 2) + 1`` was 9 for i = 2 and 3; ``x <<= 1`` left the capture's 16 in x)."""
    def step(i):
        if op == "lshift":
            return (i << 2) + 1
        if op == "rshift":
            return (i >> 1) * 3
        if op == "ilshift":
            i <<= 1
            return i.clamp_(-4, 4)
        return torch.bitwise_left_shift(i, 40) - 1   # (a count of the width or more: 0)
    compiled = torch.compile(step)
    for v in (8, -7, 3, 2):
        want, got = (f(torch.tensor(v, dtype=torch.int32, device=device)) for f in (step, compiled))
        assert (got.dtype, got.tolist()) == (want.dtype, want.tolist()), v


def test_gelu_backward_of_a_0d_float64_replays_its_value(device):
    """The gradient of ``gelu(1.5 x)`` for a 0-d float64 ``x`` inside the compiled step: the cpu kernel's float64
    path returned a numpy scalar for a 0-d operand, recorded as a constant: every replay returned the capture's
    gradient (1.4988 for x = -1, where eager gives -0.1912)."""
    def step(x):
        x = x.detach().requires_grad_()
        torch.nn.functional.gelu(x * 1.5).backward()
        return x.grad
    compiled = torch.compile(step)
    for v in (0.5, -1.0, 2.0):
        x = torch.tensor(v, dtype=torch.float64, device=device)
        assert compiled(x).item() == step(x).item(), v


@pytest.mark.parametrize("op", ["searchsorted", "bucketize"])
def test_searchsorted_of_a_0d_value_replays_its_value(device, op):
    """``torch.searchsorted(boundaries, v)`` / ``torch.bucketize(v, boundaries)`` of a 0-d ``v`` computed in the
    step: the cpu kernel returned numpy's scalar for a 0-d value, recorded as a constant: every replay returned the
    capture's index (4 for v = -2, where eager gives 0)."""
    b = torch.tensor([0., 1., 2.], device=device)

    def step(x):
        v = x * 1
        r = torch.searchsorted(b, v) if op == "searchsorted" else torch.bucketize(v, b)
        return r * 2
    compiled = torch.compile(step)
    for v in (2.5, -2.0, 0.25, 1.0):
        x = torch.tensor(v, device=device)
        assert compiled(x).tolist() == step(x).tolist(), v


def test_a_result_modified_in_place_in_the_step_has_eagers_version(device):
    """``y = x * 2 + 1; y.mul_(3); return y, y[1:]``: eager's ``y._version`` is 1 (its in-place update), and the
    view shares it.  A replay's result was made fresh with version 0 (on opencl the update is fused into the
    kernel that makes y; on cpu the recorded update left the new tensor's counter at 0)."""
    def step(x):
        y = x * 2 + 1
        y.mul_(3)
        z = x * 3
        z.add_(1).sub_(2)
        return y, y[1:], z, (x + 1)[1:]
    compiled = torch.compile(step)
    for _ in range(3):
        x = torch.ones(3, 2, device=device)
        want, got = step(x), compiled(x)
        assert [t._version for t in got] == [t._version for t in want]
        got[0].add_(1)
        want[0].add_(1)
        assert [t._version for t in got] == [t._version for t in want]
