"""Index range checks on 'opencl' stay on the device (the optional 'check_index' primitive): gather, index_select,
scatter_add, index_add, advanced indexing (x[idx], x[idx] = v) and F.embedding make no host read for a valid index;
an index out of range raises IndexError with the CPU's message at the next host read (as CUDA's device-side
asserts), the op itself touches no memory outside its tensors meanwhile, and the device is usable afterwards."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch
import coretorch.nn as nn
import coretorch.nn.functional as F
import coretorch_opencl
from coretorch.optim import SGD
from coretorch_opencl import STATS

_BE = coretorch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")

X = np.arange(20, dtype=np.float32).reshape(4, 5) - 7.5


def _i64atomics() -> bool:
    return _BE.device(0).i64atomics


def _setitem(x, i):
    y = x.clone()
    y[i] = -100.0
    return y


# op -> (fn(x (4, 5), index), the size the index is checked against, negative indices allowed)
OPS = {
    "gather": (lambda x, i: x.gather(1, i), 5, False),
    "scatter_add": (lambda x, i: x.scatter_add(1, i, coretorch.ones(tuple(i.shape), device=x.device)), 5, False),
    "index_select": (lambda x, i: x.index_select(1, i), 5, False),
    "index_add": (lambda x, i: x.index_add(0, i, coretorch.ones(i.numel(), 5, device=x.device)), 4, False),
    "getitem": (lambda x, i: x[i], 4, True),
    "getitem_dim1": (lambda x, i: x[1:, i], 5, True),
    "setitem": (_setitem, 4, True),
    "embedding": (lambda x, i: F.embedding(i, x), 4, False),
}
# a valid index per op (1-D for index_select / index_add, 2-D elsewhere)
VALID = {"gather": [[0, 4, 2], [1, 1, 3]], "scatter_add": [[0, 4, 2], [1, 1, 3]], "index_select": [4, 0, 2, 2],
         "index_add": [3, 0, 3], "getitem": [[3, 0], [1, 2]], "getitem_dim1": [[4, 0], [1, 2]],
         "setitem": [[3, 0], [1, 3]], "embedding": [[3, 0], [1, 2]]}
INT32_OK = ("gather", "scatter_add", "index_select", "index_add", "getitem", "getitem_dim1", "setitem",
            "embedding")  # PyTorch 2.13 takes int32 indices in gather/scatter too


def _with(op, pos, value):
    a = np.array(VALID[op], np.int64)
    a.flat[pos] = value
    return a


def _variants(op):
    """(id, index array) pairs: valid, too large, negative, far out of range, several out of range."""
    size = OPS[op][1]
    out = [("valid", np.array(VALID[op], np.int64)), ("size", _with(op, 1, size)), ("big", _with(op, 0, size + 7)),
           ("minus1", _with(op, 1, -1)), ("minus_size", _with(op, 2, -size)), ("below", _with(op, 2, -size - 1)),
           ("huge", _with(op, 1, 10 ** 12)), ("huge_neg", _with(op, 0, -10 ** 12))]
    several = _with(op, 0, size + 3)
    several.flat[1], several.flat[2] = -size - 9, size + 8     # the CPU check names the largest: size + 8
    below = _with(op, 0, -size - 2)
    below.flat[2] = -size - 5                                  # none too large: the smallest, -size - 5
    out += [("several", several), ("several_below", below)]
    return out


CASES = [pytest.param(op, vid, idx, id=f"{op}-{vid}") for op in OPS for vid, idx in _variants(op)]


def _cpu(op, idx):
    """-> (result, None) or (None, (the exception's class, its message)) on the cpu (which raises at the call):
    PyTorch's class, IndexError or RuntimeError (gather, scatter)."""
    fn = OPS[op][0]
    try:
        return fn(coretorch.tensor(X), coretorch.tensor(idx)).numpy(), None
    except (IndexError, RuntimeError) as e:
        return None, (type(e), str(e))


def _layouts(idx, dtype=np.int64):
    """The index on opencl: contiguous, a step-2 slice of a bigger array, a transposed copy, a broadcast view."""
    a = idx.astype(dtype)
    yield "c", coretorch.tensor(a, device="opencl")
    big = np.zeros((a.shape[0] * 2,) + a.shape[1:], dtype)
    big[::2] = a
    yield "s", coretorch.tensor(big, device="opencl")[::2]
    if a.ndim == 2:
        yield "t", coretorch.tensor(np.ascontiguousarray(a.T), device="opencl").t()
        row = a[:1]
        yield "e", coretorch.tensor(row, device="opencl").expand(a.shape[0], a.shape[1]), np.broadcast_to(row, a.shape)


def _check_like_cpu(op, idx, dt=np.int64):
    fn = OPS[op][0]
    for layout in _layouts(idx, dt):
        name, i = layout[0], layout[1]
        ref = layout[2] if len(layout) > 2 else idx
        want, msg = _cpu(op, ref)
        x = coretorch.tensor(X, device="opencl")
        before = STATS["to_host"]
        out = fn(x, i)                                             # never raises at the call
        assert STATS["to_host"] == before, f"{op} [{name}] read the host inside the op"
        if msg is None:
            np.testing.assert_array_equal(out.cpu().numpy(), want, err_msg=f"{op} [{name}]")
            assert STATS["to_host"] == before + 1
            continue
        with pytest.raises(msg[0]) as info:
            out.cpu()
        assert str(info.value) == msg[1], f"{op} [{name}]"
        assert STATS["to_host"] == before + 1, "the check took a read of its own"
        # reported once: the device is usable, the op's inputs are intact, the op works with a valid index
        assert np.array_equal(x.cpu().numpy(), X), "the failing op wrote outside its output"
        good = coretorch.tensor(np.array(VALID[op], dt), device="opencl")
        np.testing.assert_array_equal(fn(x, good).cpu().numpy(), _cpu(op, np.array(VALID[op]))[0])


@pytest.mark.parametrize("op, vid, idx", CASES)
def test_index_check_matches_cpu(op, vid, idx):
    if vid.startswith("several") and not _i64atomics():
        pytest.skip("without 64-bit atomics the device names one of the failing indices")
    _check_like_cpu(op, idx)


@pytest.mark.parametrize("op", INT32_OK)
def test_int32_indices(op):
    for vid, idx in _variants(op):
        if vid in ("huge", "huge_neg") or (vid.startswith("several") and not _i64atomics()):
            continue
        _check_like_cpu(op, idx, np.int32)


def test_narrow_integer_indices_in_advanced_indexing():
    """PyTorch indexes with long, int, byte or bool tensors only: int8/int16 index tensors are refused on every
    device, before any check is queued (review 18d)."""
    for dev in ("cpu", "opencl"):
        x = coretorch.tensor(X, device=dev)
        for dt in (np.int8, np.int16):
            with pytest.raises(IndexError, match="long, int, byte or bool"):
                x[coretorch.tensor(np.array([[3, 0], [1, 2]], dt), device=dev)]


def test_negative_indices_follow_cpu():
    """Advanced indexing takes -size..-1; gather, scatter_add, index_select, index_add and embedding take none."""
    x = coretorch.tensor(X, device="opencl")
    i = coretorch.tensor([-1, -4, 2], device="opencl")
    np.testing.assert_array_equal(x[i].cpu().numpy(), X[[-1, -4, 2]])
    np.testing.assert_array_equal(x[:, i].cpu().numpy(), X[:, [-1, -4, 2]])
    for call, exc, msg in ((lambda: x.index_select(0, i), IndexError, "index_select(): index -4 out of range in self"),
                           (lambda: x.gather(0, i.reshape(1, 3)), RuntimeError,
                            "gather(): index -4 is out of bounds for dimension 0 with size 4"),
                           (lambda: F.embedding(i, x), IndexError, "index out of range in self")):
        out = call()
        with pytest.raises(exc) as info:
            out.tolist()
        assert str(info.value) == msg


def test_valid_ops_make_no_host_read():
    x = coretorch.tensor(X, device="opencl", requires_grad=True)
    w = coretorch.tensor(X, device="opencl", requires_grad=True)
    idx = {op: coretorch.tensor(VALID[op], device="opencl") for op in OPS}
    before = STATS["to_host"]
    outs = [OPS[op][0](x if op != "embedding" else w, idx[op]) for op in OPS if op != "setitem"]
    total = sum(o.sum() for o in outs)
    total.backward()                      # the backward passes (scatter_add, index_add, gather...) check nothing
    assert STATS["to_host"] == before, "a valid index check read the host"
    assert np.isfinite(total.item()) and STATS["to_host"] == before + 1
    cx = coretorch.tensor(X, requires_grad=True)
    cw = coretorch.tensor(X, requires_grad=True)
    sum(OPS[op][0](cx if op != "embedding" else cw, coretorch.tensor(VALID[op])).sum()
        for op in OPS if op != "setitem").backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), cx.grad.numpy())
    np.testing.assert_allclose(w.grad.cpu().numpy(), cw.grad.numpy())


def test_check_is_one_launch_and_registers_one_message_per_loop():
    dev = _BE.device(0)
    x = coretorch.tensor(X, device="opencl")
    i = coretorch.tensor([[0, 4], [1, 2]], device="opencl")
    x.gather(1, i)                                           # builds the kernels
    before = STATS["launches"]
    x.gather(1, i)
    assert STATS["launches"] == before + 2, "gather is the check and the take kernel"
    for _ in range(50):
        x.gather(1, i)
    assert len(dev._codes) == 1, "a loop's checks register one message"
    x.sum().item()
    assert not dev._codes and not dev.check_pending, "a host read starts afresh"


def test_reported_at_synchronize_and_first_failure_wins():
    x = coretorch.tensor(X, device="opencl")
    x.gather(1, coretorch.tensor([[0, 7]], device="opencl"))
    with pytest.raises(RuntimeError, match=r"^gather\(\): index 7 is out of bounds for dimension 1 with size 5$"):
        coretorch_opencl.synchronize()
    coretorch_opencl.synchronize()                           # reported once
    # two failing ops with the same message but for the index: the first one's index is named
    x.gather(1, coretorch.tensor([[7, 0]], device="opencl"))
    x.gather(1, coretorch.tensor([[0, 9]], device="opencl"))
    x[coretorch.tensor([0, 1], device="opencl")]             # a passing check in between changes nothing
    with pytest.raises(RuntimeError, match=r"index 7 is out"):
        x.sum().item()
    # an index check before nll_loss's target check, and the other way round
    logits = coretorch.randn(2, 3, device="opencl")
    x.index_select(0, coretorch.tensor([5], device="opencl"))
    F.nll_loss(logits, coretorch.tensor([0, 3], device="opencl"))
    with pytest.raises(IndexError, match=r"^index_select\(\): index 5 out of range in self"):
        _BE.synchronize(0)
    F.nll_loss(logits, coretorch.tensor([0, 3], device="opencl"))
    F.embedding(coretorch.tensor([4], device="opencl"), x)
    with pytest.raises(IndexError, match=r"^Target 3 is out of bounds"):
        logits.tolist()
    assert x.tolist() == X.tolist()


def test_indices_from_the_host_are_checked_at_once():
    """A list, numpy array or cpu tensor used as an index is checked in host memory before it moves: no wait."""
    x = coretorch.tensor(X, device="opencl")
    for key in ([0, 9], np.array([0, 9]), coretorch.tensor([0, 9]), (slice(None), [-6])):
        with pytest.raises(IndexError) as info:
            x[key]
        with pytest.raises(IndexError) as ref:
            coretorch.tensor(X)[key]
        assert str(info.value) == str(ref.value)
    before = STATS["to_host"]
    np.testing.assert_array_equal(x[[3, -1]].cpu().numpy(), X[[3, -1]])
    assert STATS["to_host"] == before + 1


def test_gradient_of_a_failed_gather_is_harmless():
    x = coretorch.tensor(X, device="opencl", requires_grad=True)
    y = x.gather(1, coretorch.tensor([[0, 5], [1, -3]], device="opencl"))
    y.sum().backward()                                        # scatter_add of the gradient skips index 5
    with pytest.raises(RuntimeError, match=r"^gather\(\): index 5 is out of bounds"):
        x.grad.cpu()
    g = x.grad.cpu().numpy()
    assert g.shape == (4, 5) and set(np.unique(g)) <= {0.0, 1.0} and g[0, 0] == 1.0 and g[1, 1] == 1.0


def _strided(table, a):
    """``a`` on the device as a non-contiguous view (its axes reversed in memory)."""
    rev = tuple(range(a.ndim))[::-1]
    return table.permute(table.from_numpy(np.ascontiguousarray(np.transpose(a, rev))), rev)


def test_kernel_many_dims_dtypes_and_layouts():
    """The primitive itself: any rank (beyond the 4 dims the kernel is padded to), non-contiguous views, every
    integer dtype the core indexes with, empty indices (no launch)."""
    table = coretorch.ones(1, device="opencl")._be
    assert table.has("check_index")
    rng = np.random.default_rng(0)
    for dt in (np.int64, np.int32, np.int16, np.int8, np.uint8):
        a = rng.integers(0, 7, (3, 2, 4, 2, 3, 2)).astype(dt)
        arr = table.basic_index(_strided(table, a), (slice(None),) * 3 + (slice(None, None, 2),))
        assert not table.is_contiguous(arr)
        before = STATS["launches"]
        table.check_index(arr, 7, False, "bad {}")
        assert STATS["launches"] == before + 1
        _BE.synchronize()
        bad = a.copy()
        bad[1, 0, 3, 1, 2, 0] = 9 if dt != np.uint8 else 200
        table.check_index(_strided(table, bad), 7, dt != np.uint8, "bad {} of 7")
        with pytest.raises(IndexError, match=rf"^bad {9 if dt != np.uint8 else 200} of 7$"):
            _BE.synchronize()
        if dt != np.uint8:
            neg = _strided(table, np.array([[-7, 3], [2, -1]], dt))
            table.check_index(neg, 7, True, "bad {}")                  # -size..-1 allowed
            _BE.synchronize()
            table.check_index(neg, 7, False, "bad {}")
            with pytest.raises(IndexError, match=r"^bad -7$"):
                _BE.synchronize()
    before = STATS["launches"]
    table.check_index(table.from_numpy(np.zeros((0, 3), np.int64)), 0, False, "bad {}")
    assert STATS["launches"] == before
    table.check_index(table.from_numpy(np.zeros((2, 3), np.int64)), 0, True, "nothing is in [-0, 0): {}")
    with pytest.raises(IndexError, match=r"^nothing is in \[-0, 0\): 0$"):
        _BE.synchronize()


def test_embedding_training_step_makes_no_host_read():
    coretorch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(10, 6, padding_idx=0), nn.Flatten(), nn.Linear(18, 3)).to("opencl")
    opt = SGD(model.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(2)
    batches = [(coretorch.tensor(rng.integers(0, 10, (8, 3)), device="opencl"),
                coretorch.tensor(rng.integers(0, 3, 8), device="opencl")) for _ in range(4)]

    def step(xb, yb):
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    first = step(*batches[0]).item()
    before = STATS["to_host"]
    for _ in range(5):
        for xb, yb in batches:
            loss = step(xb, yb)
    assert STATS["to_host"] == before, "a host read happened inside an embedding training step"
    assert loss.item() < first
    # a bad token surfaces at the next read, with the CPU's message
    step(coretorch.tensor([[1, 2, 10]] * 8, device="opencl"), batches[0][1])
    with pytest.raises(IndexError, match=r"^index out of range in self$"):
        model[0].weight.sum().item()
