"""opencl-only checks for issue 17's fusion work: ``torch.accelerator.synchronize`` takes a device string (as
PyTorch does; "opencl" used to be taken as an index and waited for nothing, so the benchmarks' opencl steps were not
synchronised)."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch


X = np.arange(10, dtype=np.float32).reshape(2, 5)


@pytest.mark.parametrize("dev", ["opencl", "opencl:0", coretorch.device("opencl"), 0])
def test_accelerator_synchronize_takes_a_device_string(dev):
    x = coretorch.tensor(X, device="opencl")
    x.gather(1, coretorch.tensor([[0, 7]], device="opencl"))   # a device-side check, reported when waited for
    with pytest.raises(RuntimeError, match=r"^gather\(\): index 7 is out of bounds"):
        coretorch.accelerator.synchronize(dev)
    coretorch.accelerator.synchronize(dev)                     # reported once


@pytest.mark.parametrize("pack", [True, False])
def test_k_chunked_matmul_is_bitwise_the_unchunked_one(monkeypatch, pack, dt=np.float32):
    """The blocked kernel for a long k (matmul.chunked_src) adds the same products in the same order: A read in
    place transposed (x.T @ g) or by rows, a shifted last row block (n % rows), the last columns (m % width),
    batches, and nn.Linear's bias in the stores, A read transposed packed first or not; k chunks of 16 here so
    that small products have several."""
    from coretorch_opencl import matmul as mm
    monkeypatch.setattr(mm, "_PACK", pack)
    rng = np.random.default_rng(0)
    cases = [((70, 37), (70, 40), True, None), ((37, 70), (70, 65), False, None), ((3, 29, 50), (3, 50, 24), False,
             None), ((64, 50), (40, 50), False, "linear")]
    for sa, sb, at, how in cases:
        a_np = rng.standard_normal(sa).astype(dt)
        b_np = rng.standard_normal(sb).astype(dt)
        a = coretorch.tensor(a_np, device="opencl")
        b = coretorch.tensor(b_np, device="opencl")
        bias = coretorch.tensor(rng.standard_normal(sb[0]).astype(dt), device="opencl")

        def run():
            if how == "linear":
                return coretorch.nn.functional.linear(a, b, bias).cpu().numpy()
            return coretorch.matmul(a.t() if at else a, b).cpu().numpy()
        monkeypatch.setattr(mm, "_KC_MIN_K", 1 << 30)
        ref = run()
        monkeypatch.setattr(mm, "_KC_MIN_K", 1)
        monkeypatch.setattr(mm, "_KC", 16)
        monkeypatch.setattr(mm, "_KC_MIN_GROUPS", 0)
        got = run()
        np.testing.assert_array_equal(got, ref)
        expect = a_np @ b_np.T + bias.cpu().numpy() if how == "linear" else (a_np.T if at else a_np) @ b_np
        np.testing.assert_allclose(got, expect, rtol=1e-4, atol=1e-4)


def test_small_upload_does_not_wait_for_the_queue_and_keeps_its_data():
    """A small host array (the positions' arange a compiled step uploads each replay) is copied to the device
    without draining the queue first; the caller's array may change at once."""
    a = coretorch.randn(512, 512, device="opencl")
    for _ in range(40):                                           # queued work the upload must not wait for
        a = (a * 0.5).tanh()
    host = np.arange(64, dtype=np.int64)
    dev = coretorch._backend.get_table(coretorch.device("opencl")).backend.device(0)
    t = coretorch.tensor(host, device="opencl")
    host[:] = -1                                                  # the upload holds its own copy
    assert len(dev._uploads) == 1 and dev.queue is not None
    assert t.tolist() == list(range(64))
    assert not dev._uploads                                       # a host read ran every earlier copy


def test_residual_add_runs_inside_the_layer_norm_kernel():
    """``layer_norm(x + y)`` compiles to one launch (coretorch_opencl/prologue.py), bitwise the two launches'
    results; a weight replaced by a strided view afterwards runs the two launches again."""
    import coretorch.nn.functional as F
    rng = np.random.default_rng(2)
    x, y = (coretorch.tensor(rng.standard_normal((3, 5, 20)).astype(np.float32), device="opencl") for _ in "xy")
    w, b = (coretorch.tensor(rng.standard_normal(20).astype(np.float32), device="opencl") for _ in "wb")

    def f(x, y):
        s = x + y
        return s, F.layer_norm(s, (20,), w, b)

    coretorch.compiler.reset()
    c = coretorch.compile(f)
    c(x, y)
    out = c(x, y)
    assert (c.launches, c.launches_before_fusion) == (1, 2)
    for e, o in zip(f(x, y), out):
        np.testing.assert_array_equal(e.cpu().numpy(), o.cpu().numpy())
    w.data = coretorch.tensor(rng.standard_normal((20, 2)).astype(np.float32), device="opencl")[:, 0]
    for e, o in zip(f(x, y), c(x, y)):
        np.testing.assert_array_equal(e.cpu().numpy(), o.cpu().numpy())
    coretorch.compiler.reset()
