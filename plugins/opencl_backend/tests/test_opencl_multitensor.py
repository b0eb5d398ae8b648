"""opencl's multi-tensor optimizer kernels (coretorch_opencl/optim_multi.py): a param group in one launch, in eager
steps and in a compiled step's optimizer replay, chunked when a launch cannot take every tensor, grouped by step
count, with the per-tensor path's results bit for bit; lists the kernels do not take fall back with nothing
written."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch
from coretorch._compile import optim as optim_replay
from coretorch.plugins import get_kernel, to_array

_BE = coretorch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")

if _BE is not None and _BE.is_available():
    from coretorch_opencl import optim_multi
    from coretorch_opencl.device import STATS

SHAPES = [(), (1,), (9,), (4, 5), (33,), (2, 17), (0,), (7,), (3, 3, 3)]
OPTS = [("SGD", {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01}), ("SGD", {"lr": 0.1}),
        ("AdamW", {"lr": 0.01}), ("Adam", {"lr": 0.01, "amsgrad": True})]


def _params(rng, dtype=np.float32):
    """Leaves of mixed sizes, some of them offset views into a larger buffer (no aligned start)."""
    out = []
    for i, s in enumerate(SHAPES):
        a = rng.standard_normal(s).astype(dtype)
        if i % 2:
            big = coretorch.tensor(np.concatenate([[1.0, 2.0, 3.0], a.ravel()]).astype(dtype), device="opencl")
            out.append(big[3:].view(s).detach().requires_grad_(True))
        else:
            out.append(coretorch.tensor(a, device="opencl", requires_grad=True))
    return out


def _steps(name, hp, steps=3, late=(), dtype=np.float32, **kw):
    """Parameters after ``steps`` eager steps with given gradients (``late``: indices without a gradient in the
    first step) and the launches of the last step."""
    rng = np.random.default_rng(1)
    ps = _params(rng, dtype)
    opt = getattr(coretorch.optim, name)(ps, **hp, **kw)
    launches = 0
    for k in range(steps):
        for i, p in enumerate(ps):
            g = rng.standard_normal(p.shape).astype(dtype)
            p.grad = None if k == 0 and i in late else coretorch.tensor(g, device="opencl")
        n0 = STATS["launches"]
        opt.step()
        launches = STATS["launches"] - n0
    return [p.detach().cpu().numpy() for p in ps], launches


@pytest.mark.parametrize("name, hp", OPTS)
def test_one_launch_per_group_equal_to_the_per_tensor_step(name, hp):
    got, launches = _steps(name, hp)
    ref, ref_launches = _steps(name, hp, foreach=False)
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(a, b)
    assert launches == 1 and ref_launches >= len(SHAPES) - 1  # (the empty tensor: no launch)


@pytest.mark.parametrize("name, hp", OPTS)
def test_chunked_when_one_launch_cannot_take_every_tensor(name, hp, monkeypatch):
    monkeypatch.setattr(optim_multi, "MAX_TENSORS", 3)
    got, launches = _steps(name, hp)
    ref, _ = _steps(name, hp, foreach=False)
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(a, b)
    assert launches == 3  # 9 tensors (one of them empty): 3 + 3 + 3


@pytest.mark.parametrize("per_item", [1, 5])
@pytest.mark.parametrize("name, hp", [OPTS[0], OPTS[3]])
def test_float64_and_one_or_several_elements_per_work_item(name, hp, per_item, monkeypatch):
    """float64 (scalar code; one element per work-item as on GPUs, or a run of them as on CPUs)."""
    monkeypatch.setattr(optim_multi, "_ELEMENTS_PER_ITEM", per_item)
    got, launches = _steps(name, hp, dtype=np.float64)
    ref, _ = _steps(name, hp, dtype=np.float64, foreach=False)
    for a, b in zip(got, ref):
        assert a.dtype == np.float64
        np.testing.assert_array_equal(a, b)
    assert launches == 1


def test_adam_groups_tensors_by_step_count():
    """Parameters whose first gradient came a step later have another step count (bias corrections): one launch
    per count."""
    got, launches = _steps("AdamW", {"lr": 0.01}, late=(1, 4))
    ref, _ = _steps("AdamW", {"lr": 0.01}, late=(1, 4), foreach=False)
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(a, b)
    assert launches == 2


def test_lists_it_does_not_take_are_refused_with_nothing_written():
    kernel = get_kernel("fused_adam_", "opencl")
    p32, p16 = coretorch.ones(3, device="opencl"), coretorch.ones(3, device="opencl", dtype=coretorch.float16)
    z32, z16 = [coretorch.zeros(3, device="opencl") for _ in range(2)], coretorch.zeros(3, device="opencl",
                                                                                     dtype=coretorch.float16)
    a = [to_array(t) for t in (p32, p16)]
    assert kernel(a, a, [to_array(z32[0]), to_array(z16)], [to_array(z32[1]), to_array(z16)], None, [1.0, 1.0],
                  0.1, 0.9, 0.999, 1e-8, 0.0, False, False) is False
    t = coretorch.ones(4, 2, device="opencl").t()  # a transposed view
    assert get_kernel("fused_sgd_", "opencl")([to_array(t)], [to_array(t)], None, 0.1, 0, 0, 0, False, False,
                                              False) is False
    assert z32[0].sum().item() == 0 and p32.sum().item() == 3 and t.sum().item() == 8
    # an optimizer over such tensors steps them through its per-tensor path
    w = coretorch.ones(4, 2, device="opencl").t().detach().requires_grad_(True)
    h = coretorch.ones(3, device="opencl", dtype=coretorch.float16, requires_grad=True)
    opt = coretorch.optim.SGD([w, h], lr=0.5)
    w.grad, h.grad = coretorch.ones(2, 4, device="opencl"), coretorch.ones(3, device="opencl", dtype=coretorch.float16)
    opt.step()
    assert w.detach().cpu().numpy().tolist() == [[0.5] * 4] * 2 and h.float().sum().item() == 1.5


@pytest.mark.parametrize("name, hp", [OPTS[0], OPTS[2], ("Adam", {"lr": 0.01, "foreach": False})])
def test_compiled_step_replays_the_optimizer_in_one_launch(name, hp):
    """(Adam with foreach=False launches a kernel per parameter eagerly: its replay merges them into one.)"""
    rng = np.random.default_rng(2)
    ps = _params(rng)
    xs = [coretorch.tensor(rng.standard_normal(p.shape).astype(np.float32), device="opencl") for p in ps]
    opt = getattr(coretorch.optim, name)(ps, **hp)

    @coretorch.compile
    def step(xs):
        opt.zero_grad()
        loss = sum((p * x).sum() for p, x in zip(ps, xs))
        loss.backward()
        opt.step()
        return loss

    for _ in range(4):
        step(xs)
    replay = optim_replay.replay_of(opt)
    n0, r0 = STATS["launches"], replay.replays
    replay()
    assert r0 >= 1 and replay.replays == r0 + 1 and STATS["launches"] - n0 == 1
