"""The numpy kernel table itself: the contract of coretorch._backend.PRIMITIVES on device 'cpu'."""
from __future__ import annotations

import numpy as np
import pytest

from coretorch import _backend
from coretorch_cpu import CPUBackend

OPTIONAL = {name for name, sig in _backend.PRIMITIVES.items() if sig.startswith("optional")}


@pytest.fixture(scope="module")
def k():
    return CPUBackend().kernels(0)


def test_table_implements_every_primitive(k):
    missing = sorted(set(_backend.PRIMITIVES) - set(k) - OPTIONAL)
    assert missing == [], f"cpu backend lacks {missing}"
    assert {"iadd", "isub", "imul", "idiv"} <= set(k)  # the optional fast in-place kernels too


def test_views_share_memory_and_copies_do_not(k):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for v in (k["view"](x, (6, 4)), k["permute"](x, (2, 0, 1)), k["basic_index"](x, (slice(None), 1)),
              k["expand"](x[:, :1], (2, 5, 4))):
        assert np.shares_memory(v, x)
    for c in (k["contiguous"](x), k["flip"](x, (0,)), k["cast"](x, np.float32), k["tile"](x, (1, 1, 2)),
              k["index"](x, (np.array([0, 1]),))):
        assert not np.shares_memory(c, x)
    assert k["view"](x.transpose(0, 2, 1), (24,)) is None  # needs a copy: view refuses, as PyTorch's view


def test_expand_is_read_only_and_matches_broadcast_to(k):
    rng = np.random.default_rng(0)
    for shape, target in [((3, 1), (3, 4)), ((1,), (2, 3, 1)), ((), (2, 2)), ((2, 1, 3), (5, 2, 4, 3))]:
        x = rng.standard_normal(shape).astype(np.float32)
        e = k["expand"](x, target)
        np.testing.assert_array_equal(e, np.broadcast_to(x, target))
        assert not e.flags.writeable
    x = rng.standard_normal((4, 3))[:, :1]  # non-contiguous source
    np.testing.assert_array_equal(k["expand"](x, (4, 5)), np.broadcast_to(x, (4, 5)))
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        k["assign_"](k["expand"](np.ones((3, 1), np.float32), (3, 4)), 0.0)


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_where_bit_masking_is_exact(k, dt):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((80, 90)).astype(dt)
    y = rng.standard_normal((80, 90)).astype(dt)
    c = rng.random((80, 90)) > 0.5
    x[0, 0], y[1, 1], x[2, 2], y[3, 3] = np.nan, np.inf, -0.0, -np.inf
    for a, b in ((x, y), (x, 0.0), (0.0, x), (x, 0), (x, -0.0), (x, 2.5)):
        r = k["where"](c, a, b)
        e = np.where(c, a, b)
        assert r.dtype == e.dtype
        np.testing.assert_array_equal(r, e)
        np.testing.assert_array_equal(np.signbit(r), np.signbit(e))  # -0.0 kept


def test_zero_dim_results_are_writable_arrays(k):
    a = np.array(2.0, np.float32)
    for r in (k["add"](a, a), k["sum"](np.ones(3, np.float32), None, False), k["exp"](a),
              k["amax"](np.ones((2, 2), np.float32), None, False), k["where"](np.array(True), a, a)):
        assert isinstance(r, np.ndarray) and r.ndim == 0
        k["assign_"](r, 5.0)
        assert r == 5.0


def test_inplace_kernels_write_into_the_buffer(k):
    x = np.ones(4, np.float32)
    before = x.__array_interface__["data"][0]
    k["iadd"](x, np.full(4, 2.0, np.float32))
    k["imul"](x, 3.0)
    k["isub"](x, 1.0)
    k["idiv"](x, 2.0)
    np.testing.assert_allclose(x, [4.0] * 4)
    assert x.__array_interface__["data"][0] == before


def test_no_numpy_warnings_for_ieee_edge_cases(k):
    with np.errstate(all="raise"):  # kernels must not depend on the caller's numpy error state
        assert np.isneginf(k["log"](np.zeros(1, np.float32)))[0]
        assert np.isinf(k["div"](np.ones(1, np.float32), np.zeros(1, np.float32)))[0]
        assert np.isnan(k["sqrt"](-np.ones(1, np.float32)))[0]


def _powi_ref(a, e, dt):
    """PyTorch's powi by its rule, element by element in Python ints, wrapped to ``dt``."""
    info = np.iinfo(dt)
    span, lo = int(info.max) - int(info.min) + 1, int(info.min)
    a, e = np.broadcast_arrays(np.asarray(a, np.int64), np.asarray(e, np.int64))
    out = [(1 if x == 1 else ((-1 if y % 2 else 1) if x == -1 else 0)) if y < 0 else (x ** y - lo) % span + lo
           for x, y in zip(a.ravel().tolist(), e.ravel().tolist())]
    return np.array(out, np.int64).astype(dt).reshape(a.shape)


@pytest.mark.parametrize("dt", [np.int8, np.int16, np.int32, np.int64, np.uint8])
def test_integer_pow_is_powi(k, dt):
    """A negative integer exponent gives PyTorch's truncated integral powi (numpy's np.power raises ValueError);
    positive powers wrap; broadcasting, 0-d and non-contiguous operands; the dtype is kept."""
    signed = np.dtype(dt).kind == "i"
    base = (np.arange(-2, 3) if signed else np.array([0, 1, 2, 3, 255])).astype(dt)[:, None]
    exp = (np.arange(-3, 4) if signed else np.arange(0, 4)).astype(dt)
    bits = np.iinfo(dt).bits
    big = np.array([bits - 1, bits, bits + 1], dt)
    for a, e in ((base, exp), (base, np.repeat(exp, 2)[::2]), (base.T.copy().T, exp[::-1]),
                 (np.array(dt(-1 if signed else 2)), exp), (base, np.array(exp[0])), (np.array(dt(3)), big),
                 (base, big), (np.zeros((0, 3), dt), exp[:3])):
        r = k["pow"](a, e)
        assert isinstance(r, np.ndarray) and r.dtype == np.dtype(dt)
        np.testing.assert_array_equal(r, _powi_ref(a, e, dt))
    r = k["pow"](np.array(dt(2)), np.array(dt(-1 if signed else 1)))
    assert isinstance(r, np.ndarray) and r.ndim == 0 and r == (0 if signed else 2)
    for s in (0, 1, 2, 5):                                # a Python-int exponent: numpy's results (fast path)
        np.testing.assert_array_equal(k["pow"](base, s), np.power(base, s))
    if signed:                                            # the kernel itself on a negative Python int (the core
        np.testing.assert_array_equal(k["pow"](base, -3), _powi_ref(base, -3, dt))   # raises before it)


def test_float_pow_is_numpy(k):
    x = np.array([0.5, 2.0, -2.0, 0.0], np.float32)
    e = np.array([-1.0, -2.0, 3.0, -1.0], np.float32)
    with np.errstate(all="raise"):                      # the kernel is quiet (IEEE inf for 0 ** -1)
        r, r2 = k["pow"](x, e), k["pow"](x, -2)
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(r, np.power(x, e))
        np.testing.assert_array_equal(r2, np.power(x, -2.0))


def test_random_is_reproducible_per_seed():
    a, b = CPUBackend(), CPUBackend()
    a.manual_seed(7)
    b.manual_seed(7)
    for name, args in (("rand", ((3, 4), np.float32)), ("randn", ((5,), np.float64)),
                       ("randint", (0, 10, (6,), np.int64))):
        np.testing.assert_array_equal(a.kernels()[name](*args), b.kernels()[name](*args))
    r = a.kernels()["rand"]((1000,), np.float16)
    assert r.dtype == np.float16 and (r >= 0).all() and (r <= 1).all()
    n = a.kernels()["randn"]((20000,), np.float32)
    assert abs(n.mean()) < 0.05 and abs(n.std() - 1) < 0.05


def test_reductions_gather_scatter(k):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(k["sum"](x, (1,), True), x.sum(1, keepdims=True), rtol=1e-6)
    np.testing.assert_array_equal(k["argmax"](x, 1, False), x.argmax(1))
    idx = rng.integers(0, 4, (3, 2))
    np.testing.assert_array_equal(k["gather"](x, 1, idx), np.take_along_axis(x, idx, 1))
    out = k["scatter_add"](np.zeros((3, 4), np.float32), 1, idx, np.ones((3, 2), np.float32))
    expected = np.zeros((3, 4), np.float32)
    for i in range(3):
        for j in range(2):
            expected[i, idx[i, j]] += 1
    np.testing.assert_array_equal(out, expected)
    src = np.ones((2, 4), np.float32)
    np.testing.assert_array_equal(k["index_add"](np.zeros((3, 4), np.float32), 0, np.array([2, 2]), src),
                                  np.array([[0] * 4, [0] * 4, [2] * 4], np.float32))


def test_registered_through_the_entry_point():
    import coretorch
    rows = {r["name"]: r for r in coretorch.plugins.report()}
    assert rows["cpu"]["status"] == "loaded" and rows["cpu"]["distribution"] == "coretorch-cpu"
    cpu = [d for d in coretorch.devices() if d["type"] == "cpu"]
    assert cpu and cpu[0]["available"] and cpu[0]["count"] == 1
