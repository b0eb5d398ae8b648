"""Products beyond the op table: einsum notation against numpy.einsum on random shapes, PyTorch's errors, the
opt_einsum settings, cdist/dist over p (and the zero-distance gradient), block_diag, combinations, out=."""
import itertools
import math
import os
import subprocess
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import pytest

import coretorch as torch
from coretorch.autograd import gradcheck, gradgradcheck
from coretorch.ops import _distance, _einsum
from coretorch.testing import available_devices

DEVICES = available_devices()

# (equation, shapes): numpy.einsum accepts every one of these as is
EQUATIONS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),
    ("ab,bc,cd,de,ef->af", [(2, 3), (3, 4), (4, 5), (5, 3), (3, 2)]),
    ("ii->i", [(5, 5)]),
    ("ii", [(5, 5)]),
    ("iii->i", [(3, 3, 3)]),
    ("bii->b", [(2, 4, 4)]),
    ("iji->j", [(3, 4, 3)]),
    ("...ij,...jk", [(2, 3, 4, 5), (5, 2)]),
    ("...ij,...jk->...ik", [(3, 1, 4, 5), (2, 5, 3)]),
    ("i...,i...->...", [(3, 2, 4), (3, 2, 4)]),
    ("...->...", [(2, 3)]),
    ("ij", [(3, 4)]),
    ("ji", [(3, 4)]),
    ("ijk->kji", [(2, 3, 4)]),
    ("ijk->", [(2, 3, 4)]),
    ("i,i", [(6,), (6,)]),
    ("i,j", [(3,), (4,)]),
    ("i,j,k->ijk", [(2,), (3,), (4,)]),
    ("ij,ij->i", [(3, 4), (3, 4)]),
    ("ij,kj->ik", [(3, 4), (5, 4)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("abc,cda,db->b", [(2, 3, 4), (4, 5, 2), (5, 3)]),
    ("ijkl,jl->ik", [(2, 3, 4, 5), (3, 5)]),
    ("aB,Bc->ac", [(2, 3), (3, 4)]),
    (",i->i", [(), (4,)]),
    ("i,->", [(4,), ()]),
]


def _to(a, device):
    return torch.tensor(a, device=device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("eq,shapes", EQUATIONS, ids=[e for e, _ in EQUATIONS])
def test_einsum_matches_numpy(eq, shapes, device):
    rng = np.random.default_rng(abs(hash(eq)) % 2**32)
    arrays = [rng.standard_normal(s) for s in shapes]
    got = torch.einsum(eq, *[_to(a, device) for a in arrays])
    want = np.einsum(eq, *arrays)
    assert got.device.type == device and got.dtype is torch.float64
    assert tuple(got.shape) == np.shape(want)
    np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_einsum_random_contractions(device):
    """Random two- and three-operand equations over random label sets and sizes, against numpy.einsum."""
    rng = np.random.default_rng(7)
    letters = "abcdefg"
    for _ in range(12):
        size = {c: int(rng.integers(1, 4)) for c in letters}
        ops = []
        for _k in range(int(rng.integers(2, 4))):
            n = int(rng.integers(1, 4))
            ops.append("".join(rng.choice(list(letters), n, replace=False)))
        used = sorted(set("".join(ops)))
        out = "".join(c for c in used if rng.random() < 0.4)
        eq = ",".join(ops) + "->" + out
        arrays = [rng.standard_normal([size[c] for c in o]) for o in ops]
        got = torch.einsum(eq, *[_to(a, device) for a in arrays])
        np.testing.assert_allclose(got.cpu().numpy(), np.einsum(eq, *arrays), rtol=1e-9, atol=1e-11, err_msg=eq)


@pytest.mark.parametrize("device", DEVICES)
def test_einsum_size_one_broadcasts(device):
    a = np.random.default_rng(0).standard_normal((3, 1, 4))
    b = np.random.default_rng(1).standard_normal((1, 5, 4))
    got = torch.einsum("bik,bjk->bij", _to(a, device), _to(b, device))
    want = np.einsum("bik,bjk->bij", a, np.broadcast_to(b, (3, 5, 4)))
    np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-10)


def test_einsum_forms_and_methods():
    a, b = torch.randn(3, 4), torch.randn(4, 2)
    ref = (a @ b).numpy()
    for r in (torch.einsum("ij,jk", [a, b]), torch.einsum("ij,jk", (a, b)), torch.einsum(a, [0, 1], b, [1, 2]),
              torch.einsum(a, [0, 1], b, [1, 2], [0, 2]), torch.einsum(" i j , j k -> i k ", a, b)):
        np.testing.assert_allclose(r.numpy(), ref, rtol=1e-5, atol=1e-6)
    x = torch.randn(2, 3, 4)
    np.testing.assert_allclose(torch.einsum(x, [Ellipsis, 1], [Ellipsis]).numpy(), x.numpy().sum(-1), rtol=1e-5)


@pytest.mark.parametrize("eq,shapes,match", [
    ("ij,jk->ik", [(3, 4)], "fewer operands"),
    ("ij->ij", [(3, 4), (4, 5)], "more operands"),
    ("ijk->i", [(3, 4)], r"number of subscripts in the equation \(3\) does not match"),
    ("ij...k->i", [(3, 4)], r"is more than the number of dimensions"),
    ("ij,jk->ik", [(3, 4), (5, 2)], "subscript j has size 5 for operand 1"),
    ("ij->ik", [(3, 4)], "output subscript k does not appear"),
    ("ij->ii", [(3, 4)], "output subscript i appears more than once"),
    ("i.j->ij", [(3, 4)], "not part of any ellipsis"),
    ("i1->i", [(3,)], "invalid subscript"),
    ("ii->i", [(3, 4)], "repeated"),
    ("...ij,...jk", [(2, 3, 4), (3, 4, 5)], "covered by ellipsis"),
])
def test_einsum_errors(eq, shapes, match):
    with pytest.raises(RuntimeError, match=match):
        torch.einsum(eq, *[torch.randn(*s) for s in shapes])
    with pytest.raises(RuntimeError, match="at least one operand"):
        torch.einsum("i")


def test_einsum_mixed_dtypes_raise_like_matmul():
    a, b = torch.randn(3, 4), torch.randn(4, 2, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):  # PyTorch 2.13's bmm
        torch.einsum("ij,jk->ik", a, b)
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.matmul(a, b)


def test_einsum_opt_einsum_settings(monkeypatch):
    """torch.backends.opt_einsum.enabled / strategy are honoured when coretorch.backends provides them."""
    a, b, c = torch.randn(30, 2), torch.randn(2, 30), torch.randn(30, 3)
    want = a.numpy() @ b.numpy() @ c.numpy()
    calls = []
    real = _einsum.opt_einsum.contract_path

    def spy(*args, **kwargs):
        calls.append(kwargs.get("optimize"))
        return real(*args, **kwargs)
    monkeypatch.setattr(_einsum.opt_einsum, "contract_path", spy)
    _einsum._path_cache.clear()
    _einsum._plan_cache.clear()
    existing = getattr(getattr(torch, "backends", None), "opt_einsum", None)
    if existing is not None:  # coretorch.backends exists: drive its flags
        flags = existing
        monkeypatch.setattr(flags, "enabled", True)
        monkeypatch.setattr(flags, "strategy", "greedy")
    else:  # a stand-in module with PyTorch's two flags
        flags = types.SimpleNamespace(enabled=True, strategy="greedy")
        monkeypatch.setitem(sys.modules, "coretorch.backends", types.SimpleNamespace(opt_einsum=flags))
    np.testing.assert_allclose(torch.einsum("ij,jk,kl->il", a, b, c).numpy(), want, rtol=1e-4, atol=1e-4)
    assert calls == ["greedy"]
    torch.einsum("ij,jk,kl->il", a, b, c)
    assert calls == ["greedy"], "the path is cached per (equation, shapes, strategy)"
    flags.enabled = False  # left to right, no path
    np.testing.assert_allclose(torch.einsum("ij,jk,kl->il", a, b, c).numpy(), want, rtol=1e-4, atol=1e-4)
    assert calls == ["greedy"]
    flags.enabled = True
    flags.strategy = "auto"
    torch.einsum("ij,jk,kl->il", a, b, c)
    assert calls == ["greedy", "auto"]


def test_einsum_attention_grad_and_gradgrad():
    q = torch.randn(2, 2, 3, 4, dtype=torch.float64, requires_grad=True)
    k = torch.randn(2, 2, 5, 4, dtype=torch.float64, requires_grad=True)
    v = torch.randn(2, 2, 5, 4, dtype=torch.float64, requires_grad=True)

    def attn(q, k, v):
        s = torch.einsum("bhqd,bhkd->bhqk", q, k).softmax(-1)
        return torch.einsum("bhqk,bhkd->bhqd", s, v)
    assert gradcheck(attn, (q, k, v))
    assert gradgradcheck(lambda a, b: torch.einsum("ii,ij,jk->k", a, a, b), (torch.randn(3, 3, dtype=torch.float64,
                         requires_grad=True), torch.randn(3, 2, dtype=torch.float64, requires_grad=True)))
    assert gradgradcheck(lambda a, b: torch.tensordot(a, b, dims=([0, 2], [1, 0])),
                         (torch.randn(3, 2, 4, dtype=torch.float64, requires_grad=True),
                          torch.randn(4, 3, 2, dtype=torch.float64, requires_grad=True)))


# ---------------------------------------------------------------------------------------------
# cdist / dist
# ---------------------------------------------------------------------------------------------
def _cdist_np(a, b, p):
    d = np.abs(a[..., :, None, :] - b[..., None, :, :])
    if p == 0:
        return (d != 0).sum(-1).astype(a.dtype)
    if math.isinf(p):
        return d.max(-1)
    return (d ** p).sum(-1) ** (1 / p)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, math.inf])
@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                                  "donot_use_mm_for_euclid_dist"])
def test_cdist_p_values_and_modes(p, mode, device):
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, 30, 4)), rng.standard_normal((2, 7, 4))
    got = torch.cdist(_to(a, device), _to(b, device), p=p, compute_mode=mode)
    np.testing.assert_allclose(got.cpu().numpy(), _cdist_np(a, b, p), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, math.inf])
@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"])
def test_cdist_zero_distance_gradient_is_zero(p, mode, device):
    """Rows of x1 equal to rows of x2: their pair contributes 0 to the gradient (PyTorch), never NaN."""
    x = np.array([[0.0, 1.0, 2.0], [1.0, -1.0, 0.5]])
    x1 = torch.tensor(x, device=device, requires_grad=True)
    x2 = torch.tensor(x, device=device, requires_grad=True)
    d = torch.cdist(x1, x2, p=p, compute_mode=mode)
    d.sum().backward()
    g1, g2 = x1.grad.cpu().numpy(), x2.grad.cpu().numpy()
    assert np.isfinite(g1).all() and np.isfinite(g2).all()
    # only the off-diagonal pairs count: d(|x0 - x1|_p)/dx0 and its negative
    diff = x[0] - x[1]
    if p == 1:
        w = np.sign(diff)
    elif math.isinf(p):
        w = np.sign(diff) * (np.abs(diff) == np.abs(diff).max())
    else:
        w = np.sign(diff) * np.abs(diff) ** (p - 1) / np.sum(np.abs(diff) ** p) ** ((p - 1) / p)
    np.testing.assert_allclose(g1, np.stack([w, -w]), atol=1e-12)
    np.testing.assert_allclose(g2, np.stack([w, -w]), atol=1e-12)


def test_cdist_gradchecks():
    x1 = torch.randn(2, 4, 3, dtype=torch.float64, requires_grad=True)
    x2 = torch.randn(1, 5, 3, dtype=torch.float64, requires_grad=True)
    for p in (1.0, 2.0, 2.5, math.inf):
        assert gradcheck(lambda a, b: torch.cdist(a, b, p=p), (x1, x2))
    assert gradgradcheck(lambda a, b: torch.cdist(a, b), (x1, x2))
    assert gradgradcheck(lambda a, b: torch.cdist(a, b, compute_mode="use_mm_for_euclid_dist"), (x1, x2))
    assert torch.cdist(x1, x2).grad_fn.name() == "CdistBackward0"
    assert torch.cdist(x1, x2, compute_mode="use_mm_for_euclid_dist").grad_fn.name() == "EuclideanDistBackward0"


def test_cdist_large_uses_matmul_form_and_agrees():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((100, 16)).astype(np.float32), rng.standard_normal((80, 16)).astype(np.float32)
    got = torch.cdist(torch.tensor(a), torch.tensor(b))
    np.testing.assert_allclose(got.numpy(), _cdist_np(a.astype(np.float64), b.astype(np.float64), 2.0),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
def test_dist(device):
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4,))
    ta, tb = _to(a, device), _to(b, device)
    d = np.abs(a - b).ravel()
    for p, want in ((2, np.sqrt((d ** 2).sum())), (1, d.sum()), (0, (d != 0).sum()), (math.inf, d.max()),
                    (-math.inf, d.min()), (3.5, (d ** 3.5).sum() ** (1 / 3.5))):
        got = torch.dist(ta, tb, p)
        assert got.ndim == 0
        np.testing.assert_allclose(got.item(), want, rtol=1e-10)
    x = torch.tensor([1.0, 2.0], device=device, requires_grad=True)
    torch.dist(x, x.detach()).backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [0.0, 0.0])
    # mixed float dtypes promote (dist is a norm of a difference)
    assert torch.dist(torch.ones(3, device=device), torch.zeros(3, dtype=torch.float64, device=device)).dtype \
        is torch.float64


# ---------------------------------------------------------------------------------------------
# block_diag, cartesian_prod, combinations
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_block_diag_shapes_and_dtypes(device):
    a = torch.tensor(7, device=device)
    b = torch.tensor([1.5, 2.5], device=device)
    c = torch.tensor([[1, 2], [3, 4]], device=device)
    r = torch.block_diag(a, b, c)
    assert r.dtype is torch.float32 and tuple(r.shape) == (4, 5)
    want = np.zeros((4, 5), np.float32)
    want[0, 0] = 7
    want[1, 1:3] = [1.5, 2.5]
    want[2:, 3:] = [[1, 2], [3, 4]]
    np.testing.assert_array_equal(r.cpu().numpy(), want)
    assert torch.block_diag(c, c).dtype is torch.int64
    assert torch.block_diag(torch.tensor([True], device=device), c).dtype is torch.int64
    assert tuple(torch.block_diag().shape) == (1, 0)
    with pytest.raises(RuntimeError, match="2 or fewer dimensions"):
        torch.block_diag(torch.zeros(1, 1, 1, device=device))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("r", [0, 1, 2, 3])
@pytest.mark.parametrize("rep", [False, True])
def test_combinations(r, rep, device):
    x = torch.tensor([3, 1, 4, 5], device=device)
    got = torch.combinations(x, r, with_replacement=rep)
    if r == 0:
        assert tuple(got.shape) == (0,)
        return
    gen = itertools.combinations_with_replacement if rep else itertools.combinations
    want = np.array(list(gen([3, 1, 4, 5], r))).reshape(-1, r)
    np.testing.assert_array_equal(got.cpu().numpy(), want)
    with pytest.raises(RuntimeError, match="non-negative"):
        torch.combinations(x, -1)


@pytest.mark.parametrize("device", DEVICES)
def test_cartesian_prod(device):
    a, b = torch.tensor([1, 2], device=device), torch.tensor([5, 6, 7], device=device)
    np.testing.assert_array_equal(torch.cartesian_prod(a, b).cpu().numpy(),
                                  [[1, 5], [1, 6], [1, 7], [2, 5], [2, 6], [2, 7]])
    assert torch.cartesian_prod(a) is a


# ---------------------------------------------------------------------------------------------
# warnings, out=, errors of the matmul family
# ---------------------------------------------------------------------------------------------
def test_deprecation_warnings():
    x, y = torch.randn(2, 3), torch.randn(2, 3)
    from coretorch import _warn_once  # PyTorch warns once a process (TORCH_WARN_ONCE): see them again here
    _warn_once.GIVEN.difference_update({"cross.dim", "chain_matmul"})
    with pytest.warns(UserWarning, match="without specifying the dim arg is deprecated"):
        r = torch.cross(x, y)
    np.testing.assert_allclose(r.numpy(), np.cross(x.numpy(), y.numpy(), axis=1), rtol=1e-6)
    with pytest.warns(UserWarning, match="chain_matmul is deprecated"):
        r = torch.chain_matmul(torch.ones(2, 3), torch.ones(3, 4), torch.ones(4, 1))
    np.testing.assert_array_equal(r.numpy(), np.full((2, 1), 12.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.cross(x, y, dim=1)


@pytest.mark.parametrize("device", DEVICES)
def test_out_arguments(device):
    a, b = torch.randn(3, 4, device=device), torch.randn(4, 2, device=device)
    out = torch.empty(3, 2, device=device)
    r = torch.tensordot(a, b, dims=1, out=out)
    assert r is out
    np.testing.assert_allclose(out.cpu().numpy(), a.cpu().numpy() @ b.cpu().numpy(), rtol=1e-5, atol=1e-6)
    c = torch.randn(3, 2, device=device)
    out2 = torch.empty(0, device=device)
    assert torch.addmm(c, a, b, beta=2, out=out2) is out2
    np.testing.assert_allclose(out2.cpu().numpy(), 2 * c.cpu().numpy() + a.cpu().numpy() @ b.cpu().numpy(),
                               rtol=1e-5, atol=1e-5)
    b1, b2 = torch.randn(2, 3, 4, device=device), torch.randn(2, 4, 2, device=device)
    out3 = torch.empty(3, 2, dtype=torch.float64, device=device)
    torch.addbmm(c, b1, b2, out=out3)
    assert out3.dtype is torch.float64
    np.testing.assert_allclose(out3.cpu().numpy(), c.cpu().numpy() + (b1.cpu().numpy() @ b2.cpu().numpy()).sum(0),
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.kron(a, b, out=torch.empty(1, dtype=torch.int64, device=device))
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        torch.baddbmm(torch.zeros(2, 3, 2, device=device), b1.requires_grad_(), b2, out=torch.empty(2, 3, 2,
                      device=device))


def test_matmul_family_errors_and_in_place():
    m, v = torch.randn(3, 4), torch.randn(4)
    with pytest.raises(RuntimeError):
        torch.addmv(torch.zeros(3), m, torch.randn(5))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):  # as PyTorch 2.13
        torch.baddbmm(torch.zeros(2, 3, 2), torch.randn(2, 3, 4), torch.randn(2, 4, 2, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="must not be a floating point"):
        torch.addr(torch.zeros(3, 3, dtype=torch.int64), v[:3].long(), v[:3].long(), alpha=0.5)
    # the matrix products convert a float alpha/beta to the integer type, truncated (PyTorch 2.13)
    assert torch.addmv(torch.zeros(3, dtype=torch.int64), m.long(), v.long(), alpha=0.5).tolist() == [0, 0, 0]
    y = torch.zeros(3)
    assert y.addmv_(m, v) is y
    np.testing.assert_allclose(y.numpy(), m.numpy() @ v.numpy(), rtol=1e-5, atol=1e-6)
    w = torch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        w.addmv_(m, v)
    z = w * 1
    z.addmv_(m, v, beta=2)
    z.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.full(3, 2.0))
    with pytest.raises(RuntimeError, match="tensordot expects dims >= 0"):
        torch.tensordot(m, m, dims=-1)
    with pytest.raises(RuntimeError, match="contracted dimensions need to match"):
        torch.tensordot(m, m, dims=([1], [0]))
    np.testing.assert_allclose(torch.tensordot(torch.ones(3, 1), torch.ones(4, 2), dims=([1], [1])).numpy(),
                               np.full((3, 4), 2.0))


@pytest.mark.parametrize("device", DEVICES)
def test_einsum_attention_example_learns(device):
    """examples/einsum_attention.py (multi-head attention written with einsum) learns to reverse sequences."""
    script = Path(__file__).resolve().parents[1] / "examples" / "einsum_attention.py"
    r = subprocess.run([sys.executable, str(script), "--device", device, "--steps", "60"], capture_output=True,
                       text=True, timeout=600, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    assert r.returncode == 0, r.stdout + r.stderr
    acc = float(r.stdout.strip().splitlines()[-1].split("held-out accuracy ")[1].split(";")[0])
    assert acc >= 0.9, r.stdout


@pytest.mark.parametrize("device", DEVICES)
def test_cdist_direct_path_in_row_blocks(device, monkeypatch):
    """The direct cdist bounds its (.., P, R, M) temporary: computed a block of rows at a time, same values and
    gradients (forward and backward)."""
    rng = np.random.default_rng(11)
    a, b = rng.standard_normal((2, 7, 3)), rng.standard_normal((2, 5, 3))
    want = _cdist_np(a, b, 1.5)
    x1 = torch.tensor(a, device=device, requires_grad=True)
    x2 = torch.tensor(b, device=device, requires_grad=True)
    full = torch.cdist(x1, x2, p=1.5)
    g_full = torch.autograd.grad(full.sum(), (x1, x2))
    monkeypatch.setattr(_distance, "_CHUNK", 60)  # 2 rows (of 2 batches x 5 x 3 differences) per block
    assert len(_distance._row_chunks(x1, x2)) == 4
    blocked = torch.cdist(x1, x2, p=1.5)
    np.testing.assert_allclose(blocked.detach().cpu().numpy(), want, rtol=1e-10)
    for g, h in zip(torch.autograd.grad(blocked.sum(), (x1, x2)), g_full):
        np.testing.assert_allclose(g.cpu().numpy(), h.cpu().numpy(), rtol=1e-10, atol=1e-12)
    assert gradgradcheck(lambda u, v: torch.cdist(u, v, p=3), (x1, x2))


def test_dot_mv_outer_parity():
    with pytest.raises(RuntimeError, match="dot : expected both vectors to have same dtype, but found Float and Doub"):
        torch.dot(torch.ones(3), torch.ones(3, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="inconsistent tensor size"):
        torch.dot(torch.ones(3), torch.ones(4))
    assert torch.outer(torch.ones(2), torch.ones(3, dtype=torch.float64)).dtype is torch.float64  # promotes
    assert torch.dot(torch.tensor([1, 2]), torch.tensor([3, 4])).item() == 11
    np.testing.assert_allclose(torch.mv(torch.ones(2, 3), torch.arange(3.0)).numpy(), [3.0, 3.0])
