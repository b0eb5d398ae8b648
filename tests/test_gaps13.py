"""Issue 13's leftovers: autocast's CPU and GPU-like op lists (float32 and promote policies), out= on the product
ops, masked_scatter broadcasting, user subclasses through functions, PyTorch's grad_fn names, and
use_deterministic_algorithms on opencl.  Expected dtypes and names were checked against PyTorch 2.13 by hand."""
import warnings

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F


def low(device):
    """The region's dtype per device: PyTorch's CPU default (bfloat16), float16 on opencl (as CUDA)."""
    return torch.bfloat16 if device == "cpu" else torch.float16


# ---- 1. autocast ---------------------------------------------------------------------------------------------
class TestAutocastLists:
    def test_gpu_float32_list_elementwise_and_reductions(self, device):
        """CUDA's float32 list (opencl follows it): exp, log, pow, sum, logsumexp, norm, softmax, cumsum, ...
        run in float32; PyTorch's CPU list keeps them in the input dtype."""
        d = low(device)
        x = (torch.rand(4, 5, device=device) + 0.5).to(d)
        ops = {
            "exp": lambda: torch.exp(x), "log": lambda: x.log(), "log2": lambda: torch.log2(x),
            "log10": lambda: torch.log10(x), "log1p": lambda: torch.log1p(x), "expm1": lambda: torch.expm1(x),
            "rsqrt": lambda: x.rsqrt(), "reciprocal": lambda: torch.reciprocal(x), "tan": lambda: torch.tan(x),
            "sinh": lambda: torch.sinh(x), "cosh": lambda: torch.cosh(x), "pow": lambda: torch.pow(x, 2),
            "pow_op": lambda: x ** 2, "sum": lambda: x.sum(), "sum_dim": lambda: torch.sum(x, 1),
            "logsumexp": lambda: torch.logsumexp(x, 1), "norm": lambda: torch.norm(x),
            "vector_norm": lambda: torch.linalg.vector_norm(x), "softmax": lambda: torch.softmax(x, 1),
            "log_softmax": lambda: F.log_softmax(x, 1), "cumsum": lambda: torch.cumsum(x, 1),
            "cumprod": lambda: x.cumprod(1), "softplus": lambda: F.softplus(x),
            "cosine_similarity": lambda: F.cosine_similarity(x, x),
        }
        with torch.autocast(device, dtype=d):
            got = {k: f().dtype for k, f in ops.items()}
            # dtype= given: the op's own dtype wins (PyTorch's "set_opt_dtype" ops)
            assert torch.sum(x, dtype=torch.float64).dtype is torch.float64
            # ops on no list keep their input's dtype
            assert torch.sin(x).dtype is d and torch.sigmoid(x).dtype is d and x.mean().dtype is d
        want = torch.float32 if device != "cpu" else d
        assert got == {k: want for k in ops}
        assert torch.exp(x).dtype is d and x.sum().dtype is d  # outside the region: unchanged
        # float32 inputs stay float32 and give the same values as outside the region
        xf = x.float()
        with torch.autocast(device, dtype=d):
            inside = torch.exp(xf)
        np.testing.assert_array_equal(inside.cpu().numpy(), torch.exp(xf).cpu().numpy())

    def test_composites_on_no_list_keep_their_dtype(self, device):
        """PyTorch runs elu, mish, logsigmoid, nansum, logit, batch_norm, ... as one kernel below autocast: their
        inner exp/log/sum (float32 ops on GPU-like devices) must not change their result's dtype."""
        d = low(device)
        x = (torch.rand(4, 6, device=device) * 0.8 + 0.1).to(d)
        ops = {"elu": lambda: F.elu(x), "selu": lambda: F.selu(x), "celu": lambda: F.celu(x),
               "mish": lambda: F.mish(x), "logsigmoid": lambda: F.logsigmoid(x), "nansum": lambda: torch.nansum(x),
               "nanmean": lambda: torch.nanmean(x, 1), "logit": lambda: torch.logit(x),
               "batch_norm": lambda: F.batch_norm(x, None, None, training=True),
               "instance_norm": lambda: F.instance_norm(x[None])}
        with torch.autocast(device, dtype=d):
            inside = {k: f() for k, f in ops.items()}
            assert torch.is_autocast_enabled(device)  # (the composites restore the region)
        assert {k: v.dtype for k, v in inside.items()} == {k: d for k in ops}
        for k, f in ops.items():  # and the same values as outside the region
            np.testing.assert_array_equal(_np(inside[k].float()), _np(f().float()), err_msg=k)

    def test_gpu_float32_values_are_float32_math(self, device):
        d = low(device)
        x = (torch.rand(64, device=device) * 3).to(d)
        with torch.autocast(device, dtype=d):
            s = torch.exp(x).sum()
        ref = np.exp(x.float().cpu().numpy().astype(np.float64)).sum()
        if device != "cpu":
            assert s.dtype is torch.float32
            np.testing.assert_allclose(s.item(), ref, rtol=1e-5)

    def test_cpu_float32_list(self):
        """PyTorch's CPU float32 list: quantile, reflection/replication padding, the linalg decompositions."""
        x = torch.rand(4, 4, dtype=torch.bfloat16) + torch.eye(4, dtype=torch.bfloat16) * 4
        spd = (x.float() @ x.float().T + torch.eye(4)).bfloat16()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            assert torch.quantile(x.flatten(), 0.5).dtype is torch.float32
            assert torch.nanquantile(x, 0.25, dim=0).dtype is torch.float32
            assert F.pad(x[None], (1, 1), mode="reflect").dtype is torch.float32
            assert F.pad(x[None], (1, 1), mode="replicate").dtype is torch.float32
            assert F.pad(x[None], (1, 1), mode="circular").dtype is torch.bfloat16
            assert F.pad(x, (1, 1)).dtype is torch.bfloat16
            assert torch.linalg.inv(x).dtype is torch.float32
            assert torch.inverse(x).dtype is torch.float32
            assert torch.linalg.inv_ex(x).inverse.dtype is torch.float32
            assert torch.pinverse(x).dtype is torch.float32
            assert torch.linalg.solve(x, x).dtype is torch.float32
            assert torch.linalg.qr(x).Q.dtype is torch.float32
            assert torch.linalg.svd(x).U.dtype is torch.float32
            assert torch.linalg.svdvals(x).dtype is torch.float32
            assert torch.linalg.eigh(spd).eigenvalues.dtype is torch.float32
            assert torch.linalg.eigvalsh(spd).dtype is torch.float32
            assert torch.linalg.cholesky(spd).dtype is torch.float32
            assert torch.linalg.lstsq(x, x).solution.dtype is torch.float32
            assert torch.linalg.matrix_rank(x).dtype is torch.int64
            assert torch.linalg.cond(x).dtype is torch.float32
            assert torch.cholesky_inverse(torch.linalg.cholesky(spd.float()).bfloat16()).dtype is torch.float32
        # values: as the float32 op on the same (bfloat16) numbers
        with torch.autocast("cpu", dtype=torch.bfloat16):
            inv = torch.linalg.inv(x)
        np.testing.assert_allclose(inv.numpy(), np.linalg.inv(x.float().numpy()), rtol=1e-5, atol=1e-6)
        with pytest.raises(RuntimeError, match="Low precision"):  # outside: bfloat16 linalg is refused
            torch.linalg.inv(x)

    def test_lower_precision_composites(self, device):
        """einsum and inner run in the region's dtype (on PyTorch's CPU, through bmm); vdot does not."""
        d = low(device)
        a, b = torch.rand(3, 4, device=device), torch.rand(4, 5, device=device)
        v = torch.rand(4, device=device)
        with torch.autocast(device, dtype=d):
            assert torch.einsum("ij,jk->ik", a, b).dtype is d
            assert torch.einsum("ij,jk->ik", [a, b]).dtype is d
            assert torch.inner(a, a).dtype is d
            assert torch.vdot(v, v).dtype is torch.float32
            assert torch.tensordot(a, b, 1).dtype is (d if device == "cpu" else torch.float32)

    def test_promote_list(self, device):
        """Promote: the floating point arguments go to the widest type among them (CPU: cat, stack, index_copy;
        CUDA's list: dot, vdot, cross, index_put, tensordot, ...)."""
        d = low(device)
        lo, hi = torch.rand(4, 3, device=device).to(d), torch.rand(4, 3, device=device)
        i = torch.tensor([2, 0, 1, 3], device=device)
        with torch.autocast(device, dtype=d):
            assert torch.cat([lo, hi]).dtype is torch.float32
            assert torch.stack([lo, hi]).dtype is torch.float32
            assert torch.cat([lo, torch.ones(4, 3, dtype=torch.int64, device=device)]).dtype is d
            if device == "cpu":
                r = torch.index_copy(hi, 0, i, lo)
                assert r.dtype is torch.float32
                np.testing.assert_array_equal(r.numpy()[i.numpy()], lo.float().numpy())
                assert torch.index_copy(lo, 0, i, hi).dtype is torch.float32
            else:
                assert torch.dot(lo[:, 0], hi[:, 0]).dtype is torch.float32
                assert torch.vdot(lo[:, 0], hi[:, 0]).dtype is torch.float32
                assert torch.linalg.cross(lo, hi).dtype is torch.float32
                assert torch.index_put(hi, (i,), lo).dtype is torch.float32
        with pytest.raises(RuntimeError, match="same dtype"):  # outside the region: PyTorch's dtype check
            torch.index_copy(hi, 0, i, lo)

    def test_other_device_type_untouched(self, device):
        """autocast('cpu') leaves opencl tensors alone and autocast('opencl') leaves cpu tensors alone."""
        other = "opencl" if device == "cpu" else "cpu"
        x = torch.rand(3, device=device).to(low(device))
        with torch.autocast(other, dtype=low(other)):
            assert torch.exp(x).dtype is low(device) and torch.sum(x).dtype is low(device)


# ---- 2. out= on the products and scans ---------------------------------------------------------------------------
def _np(t):
    return t.detach().cpu().numpy()


class TestOut:
    CASES = {
        "matmul": (lambda a, m, v, b, o: torch.matmul(a, m, out=o), lambda a, m, v, b: a @ m),
        "mm": (lambda a, m, v, b, o: torch.mm(a, m, out=o), lambda a, m, v, b: a @ m),
        "bmm": (lambda a, m, v, b, o: torch.bmm(b, b, out=o), lambda a, m, v, b: b @ b),
        "mv": (lambda a, m, v, b, o: torch.mv(a, v, out=o), lambda a, m, v, b: a @ v),
        "dot": (lambda a, m, v, b, o: torch.dot(v, v, out=o), lambda a, m, v, b: np.dot(v, v)),
        "outer": (lambda a, m, v, b, o: torch.outer(v, v, out=o), lambda a, m, v, b: np.outer(v, v)),
        "addmm": (lambda a, m, v, b, o: torch.addmm(m, a, m, out=o), lambda a, m, v, b: m + a @ m),
        "cumsum": (lambda a, m, v, b, o: torch.cumsum(a, 1, out=o), lambda a, m, v, b: np.cumsum(a, 1)),
        "cumprod": (lambda a, m, v, b, o: torch.cumprod(a, 0, out=o), lambda a, m, v, b: np.cumprod(a, 0)),
    }

    @pytest.mark.parametrize("op", list(CASES))
    def test_writes_into_out(self, device, op):
        f, ref = self.CASES[op]
        rng = np.random.default_rng(0)
        a, v, b = rng.random((3, 3)), rng.random(3), rng.random((2, 3, 3))
        ts = [torch.tensor(x, dtype=torch.float32, device=device) for x in (a, a.T.copy(), v, b)]
        want = ref(a, a.T, v, b)
        o = torch.empty(np.shape(want), device=device)
        r = f(*ts, o)
        assert r is o
        np.testing.assert_allclose(_np(o), want, rtol=1e-5, atol=1e-6)
        # a wrongly shaped empty out is resized without a warning
        o2 = torch.empty(0, device=device)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert f(*ts, o2) is o2
        assert tuple(o2.shape) == np.shape(want)
        # an out that requires grad raises, as PyTorch
        with pytest.raises(RuntimeError, match="out=... arguments don't support automatic differentiation"):
            f(*ts, torch.empty(np.shape(want), device=device, requires_grad=True))

    @pytest.mark.parametrize("op", ["matmul", "mm", "bmm", "mv", "dot", "addmm"])
    def test_exact_dtype(self, device, op):
        """The BLAS ops need out in the result's dtype (PyTorch: 'Expected out tensor to have dtype float')."""
        f, _ = self.CASES[op]
        ts = [torch.ones(3, 3, device=device), torch.ones(3, 3, device=device), torch.ones(3, device=device),
              torch.ones(2, 3, 3, device=device)]
        with pytest.raises(RuntimeError):
            f(*ts, torch.empty(0, dtype=torch.int64, device=device))

    def test_outer_casts_and_scans_compute_in_out_dtype(self, device):
        v = torch.tensor([1.5, 2.0, 3.0], device=device)
        o = torch.empty(3, 3, dtype=torch.float64, device=device)
        torch.outer(v, v, out=o)
        np.testing.assert_allclose(_np(o), np.outer([1.5, 2, 3], [1.5, 2, 3]))
        with pytest.raises(RuntimeError, match="can't be cast"):
            torch.outer(v, v, out=torch.empty(3, 3, dtype=torch.int64, device=device))
        # cumsum / cumprod with an integer out: the input is cast first, then scanned (as PyTorch)
        x = torch.tensor([1.7, 2.7, 3.7], device=device)
        oi = torch.empty(3, dtype=torch.int64, device=device)
        torch.cumsum(x, 0, out=oi)
        assert _np(oi).tolist() == [1, 3, 6]
        torch.cumprod(x, 0, out=oi)
        assert _np(oi).tolist() == [1, 2, 6]


# ---- 4. user subclasses through the functions ---------------------------------------------------------------------
class MyTensor(torch.Tensor):
    pass


class Logged(torch.Tensor):
    calls: list = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.calls.append(func.__name__)
        return super().__torch_function__(func, types, args, kwargs or {})


class TestSubclassFunctions:
    def test_functions_return_the_subclass(self, device):
        x = torch.randn(2, 3, device=device)
        s = x.as_subclass(MyTensor)
        results = {
            "torch.add": torch.add(s, x), "torch.add_r": torch.add(x, s), "op": s + x, "rop": x * s,
            "F.relu": F.relu(s), "torch.cat": torch.cat([x, s]), "torch.stack": torch.stack((s, x)),
            "torch.where": torch.where(s > 0, s, x), "torch.matmul": torch.matmul(s, x.T),
            "linalg": torch.linalg.vector_norm(s), "special": torch.special.expit(s),
            "F.softmax": F.softmax(s, -1), "torch.sum": torch.sum(s), "nn.Linear": torch.nn.Linear(3, 2).to(device)(s),
        }
        assert {k: type(v) for k, v in results.items()} == {k: MyTensor for k in results}
        np.testing.assert_allclose(_np(torch.add(s, x)), 2 * _np(x), rtol=1e-6)
        # named tuples and tuples keep their container, their tensors become the subclass
        mx = torch.max(s, 1)
        assert type(mx).__name__ == "max" and type(mx.values) is MyTensor and type(mx.indices) is MyTensor
        assert all(type(t) is MyTensor for t in torch.split(s, 1))
        # non-tensor results stay as they are; plain tensors keep giving plain tensors
        assert torch.numel(s) == 6 and torch.is_tensor(s)
        assert type(torch.add(x, x)) is torch.Tensor and type(F.relu(x)) is torch.Tensor

    def test_autograd_through_functions(self, device):
        x = torch.randn(4, device=device, requires_grad=True)
        s = x.as_subclass(MyTensor)
        y = torch.mul(F.relu(s), 3).sum()
        assert type(y) is MyTensor
        y.backward()
        np.testing.assert_allclose(_np(x.grad), 3.0 * (_np(x) > 0))

    def test_custom_torch_function_sees_the_public_function(self, device):
        s = torch.ones(3, device=device).as_subclass(Logged)
        Logged.calls.clear()
        r = torch.add(s, 1)
        assert Logged.calls == ["add"] and type(r) is Logged   # one call: the op's insides do not dispatch again
        Logged.calls.clear()
        F.relu(s)
        assert Logged.calls == ["relu"]

    def test_parameter_and_disabled_classes_stay_plain(self, device):
        p = torch.nn.Parameter(torch.ones(2, device=device))
        assert type(torch.add(p, 1)) is torch.Tensor and type(F.relu(p)) is torch.Tensor
        # a dispatching subclass among the arguments wins
        s = torch.ones(2, device=device).as_subclass(MyTensor)
        assert type(torch.add(p, s)) is MyTensor

    def test_make_subclass_through_functions(self, device):
        class Wrapped(torch.Tensor):
            def __new__(cls, data):
                return torch.Tensor._make_subclass(cls, data, False)
        w = Wrapped(torch.arange(3.0, device=device))
        assert type(torch.exp(w)) is Wrapped and type(w.exp()) is Wrapped
        np.testing.assert_allclose(_np(torch.exp(w)), np.exp([0.0, 1.0, 2.0]), rtol=1e-6)


# ---- 3. masked_scatter broadcasts self ----------------------------------------------------------------------------
def test_masked_scatter_mask_larger_than_self(device):
    x = torch.zeros(3, device=device, requires_grad=True)
    m = torch.tensor([[True, False, True], [False, True, True]], device=device)
    src = torch.arange(10.0, device=device, requires_grad=True)
    r = torch.masked_scatter(x, m, src)
    assert tuple(r.shape) == (2, 3) and type(r.grad_fn).__name__ == "MaskedScatterBackward0"
    assert _np(r).tolist() == [[0, 0, 1], [0, 2, 3]]
    assert _np(x.detach().masked_scatter(m, src.detach())).tolist() == [[0, 0, 1], [0, 2, 3]]
    r.sum().backward()
    assert _np(x.grad).tolist() == [1, 1, 0]  # the unmasked places, summed over the broadcast rows
    assert _np(src.grad).tolist() == [1] * 4 + [0] * 6
    with pytest.raises(RuntimeError):  # in place, self cannot grow
        torch.zeros(3, device=device).masked_scatter_(m, src.detach())
    with pytest.raises(RuntimeError):  # shapes that do not broadcast
        torch.masked_scatter(torch.zeros(2, 3, device=device), torch.ones(4, 3, dtype=torch.bool, device=device), src)


# ---- 7. use_deterministic_algorithms --------------------------------------------------------------------------------
@pytest.fixture
def deterministic():
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(False)


def _seq_sum(n, idx, vals):
    """float32 sums in index order (what an ordered accumulation gives, bit for bit)."""
    out = np.zeros(n, np.float32)
    np.add.at(out, idx, vals)
    return out


class TestDeterministic:
    def test_accumulations_are_ordered(self, device, deterministic):
        rng = np.random.default_rng(1)
        idx = rng.integers(0, 7, 4000)
        vals = (rng.standard_normal(4000) * 1000).astype(np.float32)
        want = _seq_sum(7, idx, vals)
        i, v = torch.tensor(idx, device=device), torch.tensor(vals, device=device)
        z = torch.zeros(7, device=device)
        runs = [torch.zeros(7, device=device).index_add_(0, i, v), z.scatter_add(0, i, v),
                z.index_put((i,), v, accumulate=True), z.scatter_reduce(0, i, v, "sum"),
                z.clone().put_(i, v, accumulate=True), torch.bincount(i, v, minlength=7).float()]
        for r in runs:
            np.testing.assert_array_equal(_np(r), want)   # bitwise: summed in index order
        again = torch.zeros(7, device=device).index_add_(0, i, v)
        np.testing.assert_array_equal(_np(again), _np(runs[0]))

    def test_repeated_index_assignment_last_wins(self, device, deterministic):
        i = torch.tensor([1, 3, 1, 1, 3, 0], device=device)
        v = torch.arange(6.0, device=device)
        r = torch.zeros(4, device=device).index_put_((i,), v)
        assert _np(r).tolist() == [5.0, 3.0, 0.0, 4.0]

    def test_put_without_accumulate_raises_or_warns(self, device):
        x, i, v = torch.zeros(4, device=device), torch.tensor([0, 2], device=device), torch.ones(2, device=device)
        torch.use_deterministic_algorithms(True)
        try:
            with pytest.raises(RuntimeError, match=r"put_ does not have a deterministic implementation, but you set "
                                                   r"'torch.use_deterministic_algorithms\(True\)'"):
                x.clone().put_(i, v)
            assert _np(x.clone().put_(i, v, accumulate=True)).tolist() == [1, 0, 1, 0]
            torch.use_deterministic_algorithms(True, warn_only=True)
            assert torch.is_deterministic_algorithms_warn_only_enabled()
            with pytest.warns(UserWarning, match="put_ does not have a deterministic implementation"):
                r = x.clone().put_(i, v)
            assert _np(r).tolist() == [1, 0, 1, 0]
        finally:
            torch.use_deterministic_algorithms(False)
        assert not torch.are_deterministic_algorithms_enabled()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert _np(x.clone().put_(i, v)).tolist() == [1, 0, 1, 0]


# ---- 6. grad_fn names (checked against PyTorch 2.13) ------------------------------------------------------------
def test_grad_fn_names_of_composites(device):
    x = torch.randn(3, 3, device=device, dtype=torch.float64, requires_grad=True)
    v = torch.randn(3, device=device, dtype=torch.float64, requires_grad=True)
    b = torch.randn(2, 3, 3, device=device, dtype=torch.float64, requires_grad=True)
    i, s = torch.tensor([0, 4], device=device), torch.tensor([1.0, 2.0], device=device, dtype=torch.float64)
    cases = {
        "DiagonalBackward0_copy": [torch.diag(x), torch.diag(x, 1), x.diag(-1)],
        "DiagEmbedBackward0": [torch.diag(v)],
        "Rot90Backward0": [torch.rot90(x), torch.rot90(x, 2), torch.rot90(x, 0), torch.rot90(x, -1, (1, 0))],
        "RepeatBackward0": [torch.tile(x, (2,)), x.tile(2, 1)],
        "PutBackward0": [x.put(i, s), x.clone().put_(i, s), x.put(i, s, accumulate=True)],
        "BaddbmmBackward0": [torch.baddbmm(b, b, b), b.baddbmm(b, b, beta=0), b.clone().baddbmm_(b, b)],
        "AddbmmBackward0": [torch.addbmm(x, b, b), x.clone().addbmm_(b, b, alpha=2)],
        "AddmvBackward0": [torch.addmv(v, x, v), torch.addmv(v, x, v, beta=0), v.clone().addmv_(x, v)],
        "AddrBackward0": [torch.addr(x, v, v), x.addr(v, v, alpha=2), x.clone().addr_(v, v)],
    }
    got = {name: [type(t.grad_fn).__name__ for t in ts] for name, ts in cases.items()}
    assert got == {name: [name] * len(ts) for name, ts in cases.items()}
    # the backward is unchanged by the name
    assert torch.autograd.gradcheck(lambda a, c: torch.addr(a, c, c, beta=0.5, alpha=2), (x, v))
    assert torch.autograd.gradcheck(lambda a: torch.rot90(a, 3), (x,))
    assert torch.autograd.gradcheck(lambda a: torch.diag(a, 1), (x,))
    assert torch.autograd.gradcheck(lambda a, c: a.put(i, c), (x, s.clone().requires_grad_()))


# ---- 5. randperm drawn on the device ------------------------------------------------------------------------------
def test_randperm_uniform_over_permutations(device):
    stats = pytest.importorskip("scipy.stats")
    g = torch.Generator(device=device).manual_seed(7)
    perms = [tuple(_np(torch.randperm(3, generator=g, device=device)).tolist()) for _ in range(600)]
    counts = np.array([perms.count(p) for p in [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]])
    assert counts.sum() == 600  # every draw is a permutation
    chi2 = float(((counts - 100) ** 2 / 100).sum())
    assert chi2 < stats.chi2.ppf(1 - 1e-7, 5), counts
    big = _np(torch.randperm(100_000, generator=g, device=device))
    assert np.array_equal(np.sort(big), np.arange(100_000))


def test_randperm_seeding(device):
    """One generator call per randperm (as every sampler): the offset advances by one; same state, same draw."""
    g = torch.Generator(device=device).manual_seed(11)
    a = _np(torch.randperm(50, generator=g, device=device))
    st = g.get_state()
    b = _np(torch.randperm(50, generator=g, device=device))
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(_np(torch.randperm(50, generator=torch.Generator(device=device).manual_seed(11),
                                                     device=device)), a)
    assert np.array_equal(_np(torch.randperm(50, generator=torch.Generator(device=device).set_state(st),
                                             device=device)), b)
