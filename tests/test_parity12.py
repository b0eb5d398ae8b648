"""PyTorch-parity gaps closed in session 12, each pinned on every device with values derived by hand or with numpy
(checked against PyTorch 2.13): out-of-place add/sub with alpha rounded once, unsafe_split/unsafe_chunk, in-place
ops on split/chunk/unbind pieces, a stale view's grad_fn, and the optimizers' fused/foreach argument checks."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import coretorch as torch
from coretorch_cpu import blas1

# the cpu backend rounds once where this machine's BLAS does (a CPU with FMA); else numpy's two roundings
_CPU_FUSED = blas1.fused()


def _arr(t) -> np.ndarray:
    return t.detach().cpu().float().numpy() if t.dtype in (torch.float16, torch.bfloat16) else t.detach().cpu().numpy()


def _once(x: np.ndarray, a: float, y: np.ndarray, dt: str) -> np.ndarray:
    """x + a * y rounded once to ``dt`` (PyTorch's vectorised fmadd): exact rationals (float32: rounded to odd in
    float64 first, exact for 24-bit significands); float16/bfloat16 as PyTorch's kernel, alpha rounded to the dtype
    and the rest in float32 (the product is exact there)."""
    x, y = np.broadcast_arrays(x, y)
    if dt == "float64":
        af = Fraction(a)
        return np.array([float(Fraction(float(u)) + af * Fraction(float(v))) for u, v in zip(x.flat, y.flat)],
                        np.float64).reshape(x.shape)
    if dt == "float32":
        x64, p = x.astype(np.float64), float(np.float32(a)) * y.astype(np.float64)
        s = x64 + p
        e = (x64 - (s - (s - x64))) + (p - (s - x64))  # the sum's rounding error (TwoSum)
        odd = ((e > 0) | (e < 0)) & (s.view(np.int64) % 2 == 0)
        return np.where(odd, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s).astype(np.float32)
    a16 = float(torch.tensor(a, dtype=getattr(torch, dt)).float())
    return x.astype(np.float32) + np.float32(a16) * y.astype(np.float32)   # (rounded to dt by the caller)


def _twice(x: np.ndarray, a: float, y: np.ndarray, dt: str) -> np.ndarray:
    """x + a * y with the product rounded to ``dt`` first (the result before the fix)."""
    ad = np.dtype(dt).type(a) if dt in ("float32", "float64") else np.float32(_once(0.0, a, 1.0, dt))
    return _rounded(x + _rounded(y * ad, dt), dt)


def _rounded(v: np.ndarray, dt: str) -> np.ndarray:
    return _arr(torch.tensor(v, dtype=torch.float32).to(getattr(torch, dt))) if dt in ("float16", "bfloat16") else v


def _inputs(dt: str, shape_x, shape_y, seed: int):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape_x) * 3).astype(np.float32)
    y = (rng.standard_normal(shape_y) * 3).astype(np.float32)
    if dt == "float64":
        x, y = rng.standard_normal(shape_x) * 3, rng.standard_normal(shape_y) * 3
    return _rounded(x, dt), _rounded(y, dt)


# ---- 1. add/sub with alpha: one rounding per element, as PyTorch's fmadd (and as add_ already did) ----
@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "bfloat16"])
def test_add_sub_alpha_round_once(device, dt):
    two_differs = False
    for k, (sx, sy, alpha) in enumerate([((256,), (256,), 0.1), ((4, 64), (64,), -0.37), ((64,), (4, 64), 3),
                                          ((4, 64), (4, 1), 7.25)]):
        x, y = _inputs(dt, sx, sy, k)
        tx, ty = (torch.tensor(v, device=device).to(getattr(torch, dt)) for v in (x, y))
        for got, a in ((torch.add(tx, ty, alpha=alpha), alpha), (tx.sub(ty, alpha=alpha), -alpha),
                       (torch.sub(tx, ty, alpha=-alpha), alpha)):
            assert got.dtype is getattr(torch, dt) and got.shape == np.broadcast_shapes(sx, sy)
            want = _rounded(_once(x, a, y, dt), dt)
            if device == "cpu" and not _CPU_FUSED and dt in ("float32", "float64"):
                want = x + y * np.dtype(dt).type(a)
            np.testing.assert_array_equal(_arr(got), want)
            two_differs |= bool((_twice(x, a, y, dt) != want).any())
        out = torch.empty(0, device=device, dtype=getattr(torch, dt))
        assert torch.add(tx, ty, alpha=alpha, out=out) is out
        np.testing.assert_array_equal(_arr(out), _arr(torch.add(tx, ty, alpha=alpha)))
    assert two_differs  # the two-rounding result differs somewhere: the check has teeth


def test_add_alpha_promotion_scalars_and_integers(device):
    rng = np.random.default_rng(5)
    x32 = rng.standard_normal(128).astype(np.float32)
    xi = rng.integers(-1000, 1000, 128)
    x64 = rng.standard_normal(128)
    t32, ti, t64 = (torch.tensor(v, device=device) for v in (x32, xi, x64))
    exact = device != "cpu" or _CPU_FUSED
    # an integer tensor and a float32 one: both in float32, rounded once
    r = torch.add(ti, t32, alpha=0.1)
    assert r.dtype is torch.float32
    if exact:
        np.testing.assert_array_equal(_arr(r), _once(xi.astype(np.float32), 0.1, x32, "float32"))
        # float64 with float32 (promoted exactly to float64) out of place and in place
        want = _once(x64, 0.1, x32.astype(np.float64), "float64")
        np.testing.assert_array_equal(_arr(torch.add(t64, t32, alpha=0.1)), want)
        np.testing.assert_array_equal(_arr(t64.clone().add_(t32, alpha=0.1)), want)
        # a Python number as other: rounded to the dtype, then one rounding (the product 2.3 * 0.1 is not exact)
        np.testing.assert_array_equal(_arr(torch.add(t32, 2.3, alpha=0.1)),
                                      _once(x32, 0.1, np.float32(2.3), "float32"))
        np.testing.assert_array_equal(_arr(t32.clone().add_(2.3, alpha=0.1)),   # in place too
                                      _once(x32, 0.1, np.float32(2.3), "float32"))
    h = t32.half()
    c16 = _arr(torch.tensor(2.3).half())  # the number rounded to float16 first, then computed in float32
    np.testing.assert_array_equal(_arr(h.clone().sub_(2.3, alpha=3)), _rounded(_once(_arr(h), -3, c16, "float16"),
                                                                                "float16"))
    # a product the dtype holds: the plain add (one rounding whatever the device)
    np.testing.assert_array_equal(_arr(torch.sub(t32, 1.5, alpha=2)), x32 - np.float32(3.0))
    # integers wrap in their dtype (int8: 100 + 100 * 3 = 400 - 512); alpha must be an integer (PyTorch's checks)
    i8 = torch.tensor([100, -7], dtype=torch.int8, device=device)
    assert torch.add(i8, i8, alpha=3).tolist() == [-112, -28]
    assert torch.sub(i8, i8, alpha=2).tolist() == [-100, 7]
    with pytest.raises(RuntimeError, match="alpha must not be a floating point number"):
        torch.add(i8, i8, alpha=0.5)
    with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean results"):
        torch.add(t32, t32, alpha=True)
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.add(i8, i8, alpha=300)
    assert torch.add(ti, 2.5, alpha=3).dtype is torch.float32   # a float other makes the result float


def test_add_alpha_graph_is_one_node(device):
    a = torch.tensor([1.0, 2.0], device=device, requires_grad=True)
    b = torch.tensor([3.0, -1.0], device=device, requires_grad=True)
    r = torch.add(a, b, alpha=2.5)
    # PyTorch's single AddBackward0 (no MulBackward0 for the scaling), other's gradient scaled by alpha
    assert type(r.grad_fn).__name__ == "AddBackward0"
    assert [type(n).__name__ for n, _ in r.grad_fn.next_functions] == ["AccumulateGrad", "AccumulateGrad"]
    s = torch.sub(a, b[:1], alpha=3)
    assert type(s.grad_fn).__name__ == "SubBackward0"
    (r.sum() + s.sum()).backward()
    assert a.grad.tolist() == [2.0, 2.0] and b.grad.tolist() == [2.5 - 6.0, 2.5]
    a64 = torch.tensor([0.3, -1.2], dtype=torch.float64, device=device, requires_grad=True)
    b64 = torch.tensor([0.7], dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda u, v: torch.sub(u, v, alpha=-1.75), (a64, b64))



@pytest.mark.parametrize("foreach", [None, False])
def test_sgd_weight_decay_and_nesterov_round_once(device, foreach):
    """SGD's ``g.add(p, alpha=wd)`` and ``g.add(buf, alpha=momentum)`` round once, as PyTorch's: in the foreach and
    per-tensor steps and in the device's fused kernel (opencl's fused_sgd_), PyTorch's parameters bit for bit."""
    once = _once if device != "cpu" or _CPU_FUSED else \
        (lambda x, a, y, dt: (x + y * np.float32(a)).astype(np.float32))  # (a CPU without FMA: numpy's two roundings)
    rng = np.random.default_rng(11)
    p0 = rng.standard_normal(64).astype(np.float32)
    gs = [rng.standard_normal(64).astype(np.float32) for _ in range(3)]
    lr, mom, wd = 0.1, 0.9, 0.01
    w = torch.tensor(p0, device=device, requires_grad=True)
    opt = torch.optim.SGD([w], lr=lr, momentum=mom, nesterov=True, weight_decay=wd, foreach=foreach)
    p, buf = p0, None
    for g in gs:
        w.grad = torch.tensor(g, device=device)
        opt.step()
        d = once(g, wd, p, "float32")
        buf = d if buf is None else buf * np.float32(mom) + d   # (dampening 0: a plain add)
        p = once(p, -lr, once(d, mom, buf, "float32"), "float32")
    np.testing.assert_array_equal(_arr(w), p)

# ---- 2. unsafe_split / unsafe_chunk: split's pieces, not views to autograd (in-place ops on them allowed) ----
def test_unsafe_split_and_chunk(device):
    x = torch.arange(6.0, device=device)
    assert [p.tolist() for p in torch.unsafe_split(x, 4)] == [[0, 1, 2, 3], [4, 5]]
    assert [p.tolist() for p in x.unsafe_chunk(4)] == [[0, 1], [2, 3], [4, 5]]
    assert [p.tolist() for p in x.unsafe_split_with_sizes([1, 5])] == [[0], [1, 2, 3, 4, 5]]
    assert [p.tolist() for p in torch.unsafe_chunk(x.reshape(2, 3), 2, dim=-1)] == [[[0, 1], [3, 4]], [[2], [5]]]
    assert [p.shape for p in torch.unsafe_chunk(torch.zeros(0, device=device), 2)] == [(0,), (0,)]
    with pytest.raises(TypeError, match="argument 'split_size' .* must be int, not list"):
        torch.unsafe_split(x, [1, 5])
    with pytest.raises(RuntimeError, match="chunk expects `chunks` to be greater than 0"):
        torch.unsafe_chunk(x, 0)
    w = torch.ones(6, device=device, requires_grad=True)
    y = w * 1
    a, b, c = torch.unsafe_split(y, 2)
    assert type(a.grad_fn).__name__ == "UnsafeSplitBackward0" and a._version == 0
    a.mul_(3)  # allowed: the piece shares y's memory, not its version counter or its autograd history
    assert y.tolist() == [3, 3, 1, 1, 1, 1] and y._version == 0 and a._version == 1
    assert type(a.grad_fn).__name__ == "MulBackward0"
    (a.sum() + 2 * b.sum()).backward()
    assert w.grad.tolist() == [3, 3, 2, 2, 0, 0]
    assert type(torch.unsafe_split_with_sizes(y, [2, 4])[0].grad_fn).__name__ == "UnsafeSplitWithSizesBackward0"


# ---- 3. in-place ops on split/chunk/unbind pieces raise where autograd records them (PyTorch's rule) ----
_MULTI = ("This view is the output of a function that returns multiple views. Such functions do not allow the "
          "output views to be modified inplace. You should replace the inplace operation by an out-of-place one.")


def _raises(msg: str):
    import re
    return pytest.raises(RuntimeError, match="^" + re.escape(msg) + "$")


def test_inplace_on_split_pieces_raises(device):
    w = torch.ones(6, device=device, requires_grad=True)
    y = w * 2
    for pieces, name in ((y.split(2), "Split"), (y.chunk(3), "Split"), (y.split([2, 4]), "SplitWithSizes"),
                         (y.unbind(), "Unbind"), (w.split(3), "Split")):
        with _raises(f"Output 1 of {name} is a view and is being modified inplace. {_MULTI}"):
            pieces[1].mul_(2)
    p = y.split(2)[0]
    for f in (p.zero_, lambda: p.copy_(torch.ones(2, device=device)), lambda: p.__setitem__(slice(None), 1.0)):
        with _raises(f"Output 0 of Split is a view and is being modified inplace. {_MULTI}"):
            f()
    q = y.view(2, 3).split(1)[1]
    for f, view in ((lambda: p[0].add_(1), "Select"), (lambda: p.__setitem__(0, 1.0), "Select"),
                    (lambda: q.__setitem__((0, slice(1, 2)), 1.0), "Slice"), (lambda: q[:, 0].mul_(2), "Select")):
        with _raises(f"Output 0 of {view} is a view and is being modified inplace. {_MULTI}"):
            f()  # a view of a piece is one too, named after its own node (x[0] = v writes through x.select(0, 0))
    with _raises(f"Output 0 of View is a view and is being modified inplace. {_MULTI}"):
        p.view(2).add_(1)
    with _raises(f"A view was created in no_grad mode and is being modified inplace with grad mode enabled. {_MULTI}"):
        torch.ones(4, device=device).split(2)[0].mul_(w[:2])  # no node of its own, but the op is recorded
    assert y.tolist() == [2] * 6  # nothing was written
    # allowed where autograd records nothing: no_grad, detached pieces, pieces of a tensor without grad, and the
    # pieces of tensor_split (slices, each a view of its own)
    with torch.no_grad():
        p.add_(1)
    y.detach().split(2)[1].add_(2)
    z = torch.zeros(4, device=device)
    z.split(2)[1].add_(5)
    y.tensor_split(3)[2].mul_(3)
    assert y.tolist() == [3, 3, 4, 4, 6, 6] and z.tolist() == [0, 0, 5, 5]


def test_split_piece_used_after_an_inplace_change_raises(device):
    w = torch.ones(4, device=device, requires_grad=True)
    y = w * 2
    a, b = y.split(2)
    (a * 3).sum().backward()  # a graph built before the change stays usable
    y.add_(1)
    with _raises(f"Output 1 of Split is a view and its base or another view of its base has been modified "
                 f"inplace. {_MULTI}"):
        b * 2
    with _raises(f"Output 0 of Split is a view and its base or another view of its base has been modified "
                 f"inplace. {_MULTI}"):
        a.grad_fn
    assert repr(a).endswith("grad_fn=<Invalid>)")
    c, d = (w * 2).split(2)
    with torch.no_grad():
        c.add_(1)  # allowed here, but c's history is gone: using it in a recorded op raises
    with torch.no_grad():
        assert (c * 2).tolist() == [6, 6]
    with pytest.raises(RuntimeError, match="Output 0 of Split is a view and its base"):
        c * 2
    assert w.grad.tolist() == [6, 6, 0, 0]


# ---- 4. a view's grad_fn after an in-place op on its base: PyTorch's regenerated AsStridedBackward0 ----
def test_stale_view_grad_fn_is_regenerated(device):
    w = torch.ones(4, 3, device=device, requires_grad=True)
    y = w * 1
    a = y[0:2]
    b = a[1:]
    assert type(a.grad_fn).__name__ == "SliceBackward0"
    y.mul_(2)
    fn = a.grad_fn  # read before any use of a
    assert type(fn).__name__ == "AsStridedBackward0" and fn.next_functions[0][0] is y.grad_fn
    assert a.grad_fn is fn and "grad_fn=<AsStridedBackward0>" in repr(b)
    c = y[2:]
    c.mul_(-1)  # through another view: y's node is now CopySlices, a's regenerated again
    assert type(y.grad_fn).__name__ == "CopySlices" and a.grad_fn.next_functions[0][0] is y.grad_fn
    b.sum().backward()
    assert w.grad.tolist() == [[0] * 3, [2] * 3, [0] * 3, [0] * 3]
    v = (w * 1).view(12)
    assert type(v.grad_fn).__name__ == "ViewBackward0"  # no in-place op: the view keeps its own node


# ---- 5. the fused=/foreach= checks: one public helper, used by SGD and by the extra-ops plugin's Adam ----
def test_check_fused_is_public_and_shared(device):
    from coretorch.optim import check_fused
    check_fused(False, foreach=True, differentiable=True, params=[torch.zeros(1, dtype=torch.int64)])  # not fused
    for cls in (torch.optim.SGD, torch.optim.Adam):
        w = torch.zeros(2, device=device, requires_grad=True)
        with _raises("`fused` and `foreach` cannot be `True` together."):
            cls([w], lr=0.1, fused=True, foreach=True)
        with _raises("`fused` does not support `differentiable`"):
            cls([w], lr=0.1, fused=True, differentiable=True)
        i = torch.zeros(2, dtype=torch.int64, device=device)
        i.grad = torch.ones(2, dtype=torch.int64, device=device)
        with _raises("`fused=True` requires all the params to be floating point Tensors of supported devices: "
                     f"['cpu', 'opencl'] but {torch.int64} and {device}"):
            cls([i], lr=0.1, fused=True).step()
    with _raises("`fused` and `foreach` cannot be `True` together."):
        torch.optim.sgd.sgd([], [], [], foreach=True, fused=True, weight_decay=0, momentum=0, lr=0.1,
                            dampening=0, nesterov=False, maximize=False)
