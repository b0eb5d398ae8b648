"""coretorch.compile against eager on random tensor programs (a seeded differential test): chains of unary and binary
elementwise ops with broadcasting, reductions, views, in-place ops on temporaries and on the arguments, products,
0-d and non-contiguous arguments, with and without a backward inside the call.  Each program is called three times
with new values of the same shapes: the capture, then two replays, whose results, argument values and version
counters and gradients must be eager's (bitwise on cpu; on a fusing device within float32 rounding).  The
programs exercise what a capture transforms: fusion, planned temporaries, lowering, write-backs."""
from __future__ import annotations

import random

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F

UNARY = [lambda x: x.exp().clamp(max=1e3), torch.tanh, torch.sigmoid, torch.relu, torch.neg, torch.abs,
         lambda x: x.abs().sqrt(), lambda x: x.abs().log1p(), lambda x: x * 2.5, lambda x: x + 1,
         lambda x: x.pow(2), F.gelu, lambda x: x.clamp(-0.5, 0.7), lambda x: torch.where(x > 0, x, x * 0.1),
         torch.sin, lambda x: 1.0 / (x.abs() + 1), lambda x: (x.abs() + 1).rsqrt()]
BINARY = [torch.add, torch.sub, torch.mul, lambda a, b: a / (b.abs() + 1), torch.maximum, torch.minimum,
          lambda a, b: torch.where(a > b, a, b), lambda a, b: a * 0.5 + b * 0.25, lambda a, b: torch.atan2(a, b + 2)]
REDUCE = {"sum": lambda x: x.sum(-1, keepdim=True), "mean": lambda x: x.mean(-1, keepdim=True),
          "amax": lambda x: x.amax(-1, keepdim=True), "softmax": lambda x: x.softmax(-1),
          "logsumexp": lambda x: x.logsumexp(-1, keepdim=True)}
VIEW = {"t": lambda x: x.t() if x.ndim == 2 else x, "flip": lambda x: x.flip(-1),
        "every_other": lambda x: x[..., ::2].repeat_interleave(2, -1) if x.ndim and x.shape[-1] % 2 == 0 else x,
        "expand": lambda x: x.expand(4, x.shape[-1]) if x.ndim == 1 or x.ndim == 2 and x.shape[0] == 1 else x}
SHAPES = [(4, 6), (1, 6), (4, 1), (6,), (), (6, 4)]


def _program(seed: int) -> tuple[list, list]:
    rng = random.Random(seed)
    shapes = [rng.choice(SHAPES) for _ in range(rng.randint(2, 3))]
    ops, n = [], len(shapes)
    for _ in range(rng.randint(3, 12)):
        c, a, b = rng.random(), rng.randrange(n), rng.randrange(n)
        if c < 0.35:
            ops.append(("unary", rng.randrange(len(UNARY)), a))
        elif c < 0.7:
            ops.append(("binary", rng.randrange(len(BINARY)), a, b))
        elif c < 0.78:
            ops.append(("reduce", rng.choice(sorted(REDUCE)), a))
        elif c < 0.86:
            ops.append(("view", rng.choice(sorted(VIEW)), a))
        elif c < 0.93:
            ops.append(("inplace", rng.choice(["add_", "mul_", "clamp_"]), a))
        elif c < 0.96:
            ops.append(("mm", a, b))
        else:
            ops.append(("argument_inplace", rng.choice(["add_", "mul_"]), rng.randrange(len(shapes))))
        n += 1
    return shapes, ops


def _apply(op: tuple, vals: list):
    kind = op[0]
    if kind == "unary":
        return UNARY[op[1]](vals[op[2]])
    if kind == "binary":
        return BINARY[op[1]](vals[op[2]], vals[op[3]])
    if kind == "reduce":
        return REDUCE[op[1]](vals[op[2]])
    if kind == "view":
        return VIEW[op[1]](vals[op[2]])
    if kind == "inplace":
        x = vals[op[2]].clone()
        return x.add_(1.5) if op[1] == "add_" else x.mul_(0.5) if op[1] == "mul_" else x.clamp_(-1, 1)
    if kind == "argument_inplace":
        x = vals[op[2]]
        return x.add_(0.25) if op[1] == "add_" else x.mul_(1.5)
    a, b = vals[op[1]], vals[op[2]]
    if a.ndim == 2 and b.ndim == 2 and a.shape[-1] in (b.shape[0], b.shape[-1]):
        return a @ b if a.shape[-1] == b.shape[0] else a @ b.t()
    return a * 1


def _run(args: tuple, ops: list):
    vals = list(args)
    for op in ops:
        try:
            vals.append(_apply(op, vals))
        except (RuntimeError, IndexError):  # shapes that do not combine (or a leaf's in-place op): eager's too
            vals.append(vals[op[-1]] * 1)
    made = vals[len(args):]
    return made[-1], made[len(made) // 2]


def _same(a, b, device: str, what: str) -> None:
    assert (a is None) == (b is None), what
    if a is None:
        return
    assert (a.shape, a.dtype, a.stride()) == (b.shape, b.dtype, b.stride()), what
    x, y = a.detach().cpu().numpy(), b.detach().cpu().numpy()
    if device == "cpu":
        assert np.array_equal(x, y, equal_nan=True), what
    else:
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5, err_msg=what)


@pytest.mark.parametrize("backward", [False, True], ids=["forward", "backward"])
@pytest.mark.parametrize("block", range(4))
def test_random_programs_replay_as_eager(device, block, backward):
    for seed in range(block * 12, block * 12 + 12):
        shapes, ops = _program(seed)

        def f(*args):
            a, b = _run(args, ops)
            if backward:
                (a.sum() + b.sum()).backward()
                return a.detach(), b.detach()
            return a, b
        compiled = torch.compile(f)
        for call in range(3):
            g = torch.Generator().manual_seed(seed * 10 + call)
            base = [torch.randn(*s, generator=g) for s in shapes]
            if seed % 3 == 0 and not backward:  # non-contiguous arguments (the same values)
                base = [t.t().contiguous().t() if t.ndim == 2 else t for t in base]
            runs = []
            for fn in (f, compiled):
                args = [t.to(device, copy=True).requires_grad_(backward) for t in base]
                runs.append((fn(*args), args))
            (want, wargs), (got, gargs) = runs
            what = f"seed {seed}, call {call}: {ops}"
            for a, b in zip(want, got):
                _same(a, b, device, what)
            for a, b in zip(wargs, gargs):
                _same(a, b, device, what)
                _same(a.grad, b.grad, device, what)
                assert a._version == b._version, what
        assert compiled.replays == 2, f"seed {seed}: {ops}"


class _Program(torch.nn.Module):
    def __init__(self, shapes: list, ops: list):
        super().__init__()
        self.ps = torch.nn.ParameterList([torch.nn.Parameter(torch.randn(*s)) for s in shapes[1:]])
        self.ops = ops

    def forward(self, x):
        return _run((x, *self.ps), self.ops)


@pytest.mark.parametrize("block", range(2))
def test_random_programs_as_compiled_modules(device, block):
    """The same programs as a module's forward (the first argument the input, the others parameters), compiled
    with ``torch.compile(model)`` and trained by an eager backward: outputs, the input's and the parameters'
    gradients (values and strides) as eager's.  (Programs returning an input or a parameter itself are graph
    breaks: they run eagerly.)"""
    for seed in range(block * 25, block * 25 + 25):
        shapes, ops = _program(seed)
        torch.manual_seed(seed)
        eager = _Program(shapes, ops).to(device)
        model = _Program(shapes, ops).to(device)
        model.load_state_dict(eager.state_dict())
        compiled = torch.compile(model)
        for call in range(3):
            g = torch.Generator().manual_seed(seed * 10 + call)
            x = torch.randn(*shapes[0], generator=g)
            xs = [x.to(device, copy=True).requires_grad_(True) for _ in range(2)]
            outs = []
            for m, xx in ((eager, xs[0]), (compiled, xs[1])):
                a, b = m(xx)
                (a.sum() * 2 + b.pow(2).sum()).backward()
                outs.append((a, b))
            what = f"seed {seed}, call {call}: {ops}"
            for a, b in zip(*outs):
                _same(a, b, device, what)
            _same(xs[0].grad, xs[1].grad, device, what)
            for p, q in zip(eager.parameters(), model.parameters()):
                _same(p.grad, q.grad, device, what)
        cap = compiled._capture
        assert cap.replays == 2 or all(e.forward is None for e in cap.cache.values()), what
