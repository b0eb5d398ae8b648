"""Review 18g: determinism of opencl's eager results and the robustness of its tests on another machine's PoCL
build (compute units, vector width, the order of float atomics, the accuracy of OpenCL's builtins).

README's claim: under ``torch.use_deterministic_algorithms(True)`` opencl's accumulating index writes run in index
order.  On the machine the suite was written on (2 compute units) PoCL ran the atomic kernels' work-groups nearly in
order, so a test comparing their float sums with numpy's ``add.at`` bit for bit passed there and varied on CI.  The
tests below check the claim itself: values of mixed magnitudes (so that every order of the additions rounds
differently), many per target, every op that accumulates through an index, compared bit for bit with the cpu
backend (numpy's ``ufunc.at``, in index order), at sizes that spread the work over many work-groups."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch

_BE = torch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")


@pytest.fixture
def deterministic():
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    yield
    torch.use_deterministic_algorithms(before)


def _values(g, *shape):
    """Normal values scaled by 1e-4 .. 1e4: a float32 sum of them rounds differently in almost every order."""
    return (g.standard_normal(shape) * 10.0 ** g.integers(-4, 5, shape)).astype(np.float32)


def _getitem_backward(x, idx, v):
    x = x.clone().requires_grad_()
    (x[idx] * v).sum().backward()
    return x.grad


def _gather_backward(x, idx, v):
    x = x.clone().requires_grad_()
    (x.gather(0, idx) * v).sum().backward()
    return x.grad


_OPS = {   # name -> (target shape, value shape, fn(x, idx, v)); idx indexes dim 0 of x, len(idx) = value's dim 0
    "index_put_accumulate": ((3,), None, lambda x, i, v: x.index_put_((i,), v, accumulate=True)),
    "put_accumulate": ((3,), None, lambda x, i, v: x.put_(i, v, accumulate=True)),
    "scatter_add": ((3,), None, lambda x, i, v: x.scatter_add(0, i, v)),
    "index_add_vector": ((3,), None, lambda x, i, v: x.index_add(0, i, v)),
    "index_add_narrow_rows": ((3, 3), (3,), lambda x, i, v: x.index_add(0, i, v)),   # rows narrower than VW
    "index_add_wide_rows": ((3, 19), (19,), lambda x, i, v: x.index_add(0, i, v)),   # VW columns and a tail
    "index_add_dim1": ((5, 3), None, lambda x, i, v: x.index_add(1, i, v.reshape(1, -1).expand(5, -1) * 1.0)),
    "scatter_reduce_sum": ((3,), None, lambda x, i, v: x.scatter_reduce(0, i, v, "sum")),
    "scatter_reduce_mean": ((3,), None, lambda x, i, v: x.scatter_reduce(0, i, v, "mean", include_self=False)),
    "scatter_reduce_prod": ((3,), None, lambda x, i, v: x.scatter_reduce(0, i, 1 + v * 1e-4, "prod")),
    "index_reduce_prod": ((3,), None, lambda x, i, v: x.index_reduce(0, i, 1 + v * 1e-4, "prod")),
    "index_reduce_mean": ((3,), None, lambda x, i, v: x.index_reduce(0, i, v, "mean")),
    "getitem_backward": ((3,), None, _getitem_backward),
    "gather_backward": ((3,), None, _gather_backward),
}


@pytest.mark.parametrize("n", [37, 20_000])
@pytest.mark.parametrize("op", sorted(_OPS))
def test_accumulating_index_writes_run_in_index_order(op, n, deterministic):
    """``use_deterministic_algorithms(True)``: the opencl result is the cpu backend's (numpy's ``ufunc.at``, in
    index order) bit for bit, the same on every call, whatever the device's compute units and work-group sizes."""
    shape, vshape, fn = _OPS[op]
    g = np.random.default_rng(n + len(op))
    idx = g.integers(0, 3, n)
    v = _values(g, n, *(vshape or ()))
    if op == "index_add_dim1":
        v = v.reshape(n)
    base = _values(g, *shape)
    want = fn(torch.tensor(base), torch.tensor(idx), torch.tensor(v)).numpy()
    for _ in range(3):
        got = fn(torch.tensor(base, device="opencl"), torch.tensor(idx, device="opencl"),
                 torch.tensor(v, device="opencl"))
        np.testing.assert_array_equal(got.cpu().numpy(), want, err_msg=op)


@pytest.mark.parametrize("D", [3, 5, 64, 128, 131])
def test_layer_norm_of_equal_values_is_the_bias(D):
    """A row of equal values has mean that value and variance 0, so PyTorch's layer_norm gives the bias exactly.  The
    kernels summed the row straight: the float32 mean rounded (how much depended on the order, so on the device's
    vector width: D >= VW took the vector kernel, D < VW the scalar one), and 1 / sqrt(eps) ~ 316 amplified that:
    y was off by up to 5.6e-3 of its scale in the scalar kernel, 1.1e-3 at VW 4, 4e-4 at VW 16 (the suite's
    tolerance).  They sum x - x[0] now (exact for equal values, and for an offset row no longer rounded at the
    offset's scale)."""
    g = np.random.default_rng(D)
    xa = np.repeat(g.normal(size=(40, 1)) * 5, D, 1).astype(np.float32)
    wa, ba = g.normal(size=D).astype(np.float32), g.normal(size=D).astype(np.float32)
    x = torch.tensor(xa, device="opencl", requires_grad=True)
    y = torch.nn.functional.layer_norm(x, (D,), torch.tensor(wa, device="opencl"), torch.tensor(ba, device="opencl"))
    np.testing.assert_array_equal(y.detach().cpu().numpy(), np.broadcast_to(ba, xa.shape))
    # the compiled residual + layer_norm (coretorch_opencl/prologue.py's fused kernel) too
    ln = torch.nn.LayerNorm(D).to("opencl")
    with torch.no_grad():
        ln.bias.copy_(torch.tensor(ba))
    f = torch.compile(lambda a, c: ln(a + c))
    half = torch.tensor(xa / 2, device="opencl")
    for _ in range(3):
        np.testing.assert_array_equal(f(half, half).detach().cpu().numpy(), np.broadcast_to(ba, xa.shape))
