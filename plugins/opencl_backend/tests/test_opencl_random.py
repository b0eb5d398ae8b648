"""The opencl sampling kernels (coretorch_opencl/sampling.py): Philox4x32-10 against Random123's known answer, the
(seed, offset) state, samples that stay on the device (no host transfer, except multinomial's one check read as in
PyTorch and randperm's upload), float16 rounding, in-place fills of strided views, the Poisson and multinomial
kernels on many rows, and independence between neighbouring elements."""
from __future__ import annotations

import math

import numpy as np
import pytest

import coretorch as torch
from coretorch_opencl import STATS

_BE = torch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")

D = "opencl"


def _gen(seed: int):
    return torch.Generator(device=D).manual_seed(seed)


def _transfers():
    return STATS["to_host"], STATS["to_device"]


def test_philox_known_answer():
    # Random123's kat_vectors: philox4x32-10, counter 0 and key 0 -> 6627e8d5 e169c58d bc57ac4c 9b00dbd8; element 0
    # of the first call of seed 0 is that counter, and rng_int takes its 64 bits (words 0, 1) over the full range
    # (random_(from, None): the full int64 range, as PyTorch; randint's high of 2**63 is PyTorch's ValueError)
    t = torch.empty(3, dtype=torch.int64, device=D).random_(-2 ** 63, None, generator=_gen(0))
    assert (t[0].item() + 2 ** 63) % 2 ** 64 == 0x6627e8d5e169c58d


def test_state_is_seed_and_offset():
    g = _gen(5)
    assert g.get_state().numpy().tolist() == list((5).to_bytes(8, "little")) + [0] * 8
    torch.rand(10, generator=g, device=D)
    torch.empty(3, device=D).exponential_(generator=g)
    state = g.get_state().numpy()
    assert int.from_bytes(state[8:].tobytes(), "little") == 2  # one offset per sampling call
    want = torch.randn(6, generator=g, device=D).cpu().numpy()
    crafted = np.frombuffer((5).to_bytes(8, "little") + (2).to_bytes(8, "little"), np.uint8).copy()
    got = torch.randn(6, generator=torch.Generator(device=D).set_state(torch.from_numpy(crafted)), device=D)
    np.testing.assert_array_equal(got.cpu().numpy(), want)
    assert torch.Generator(device=D).set_state(torch.from_numpy(crafted)).initial_seed() == 5


def test_samples_stay_on_the_device():
    g = _gen(1)
    p = torch.full((100,), 0.5, device=D)
    rates = torch.full((100,), 3.0, device=D)
    std = torch.ones(100, device=D)
    before = _transfers()
    outs = [torch.rand(100, generator=g, device=D), torch.randn(100, generator=g, device=D),
            torch.randint(0, 9, (100,), generator=g, device=D), torch.bernoulli(p, generator=g),
            torch.poisson(rates, generator=g), torch.normal(p, 2.0, generator=g),
            torch.empty(100, device=D).uniform_(generator=g), torch.empty(100, device=D).cauchy_(generator=g),
            torch.empty(100, device=D).geometric_(0.5, generator=g), torch.empty(100, device=D).log_normal_(),
            torch.empty(100, device=D, dtype=torch.int32).random_(generator=g), torch.empty(100, device=D).normal_(),
            torch.empty(100, device=D).bernoulli_(p, generator=g), torch.rand_like(p), torch.randn_like(p)]
    assert _transfers() == before and all(o.device.type == D for o in outs)
    torch.multinomial(p.reshape(10, 10), 3, generator=g)  # PyTorch reads back its probability check (one read)
    torch.normal(p, std, generator=g)  # and its std >= 0 check
    assert _transfers() == (before[0] + 2, before[1])
    r = torch.randperm(50, generator=g, device=D)  # random keys and the device sort: no transfer either
    assert _transfers() == (before[0] + 2, before[1])
    assert sorted(r.cpu().tolist()) == list(range(50))


def test_float16_is_the_rounded_float32_stream():
    u32 = torch.rand(50000, generator=_gen(3), device=D).cpu().numpy()
    u16 = torch.rand(50000, generator=_gen(3), device=D, dtype=torch.float16).cpu().numpy()
    np.testing.assert_array_equal(u16, np.minimum(u32, np.float32(0.99951171875)).astype(np.float16))
    assert u16.max() < 1
    u64 = torch.rand(50000, generator=_gen(3), device=D, dtype=torch.float64).cpu().numpy()
    # a Philox call gives four float32 samples (a word each) or two float64 ones (two words each, 53 bits): the
    # float64 samples start with the bits of every other float32 sample
    calls = u32.size // 4
    np.testing.assert_allclose(u64[0:2 * calls:2], u32[0::4], atol=2 ** -23)
    np.testing.assert_allclose(u64[1:2 * calls:2], u32[2::4], atol=2 ** -23)
    assert np.mean((u64 * 2 ** 24) % 1 != 0) > 0.99  # finer than float32's 24 bits


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64])
def test_in_place_fill_of_a_strided_view(dtype):
    base = torch.full((8, 6), -7.0, device=D, dtype=dtype)
    view = base.t()[::2]  # a (3, 8) view with strides (2, 6): every other column of base
    view.uniform_(1, 2, generator=_gen(4))
    h = base.cpu().numpy()
    assert (h[:, ::2] >= 1).all() and (h[:, ::2] < 2).all() and (h[:, 1::2] == -7).all()
    want = torch.empty(3, 8, device=D, dtype=dtype).uniform_(1, 2, generator=_gen(4)).cpu().numpy()
    np.testing.assert_array_equal(view.cpu().numpy(), want)  # the same samples as a contiguous fill, in C order


def test_poisson_kernel_in_float16_and_float64():
    for dt in (torch.float16, torch.float64):
        x = torch.poisson(torch.full((40000,), 12.0, device=D, dtype=dt), generator=_gen(5))
        assert x.dtype is dt
        h = x.cpu().numpy().astype(np.float64)
        assert abs(h.mean() - 12) < 6 * math.sqrt(12 / h.size) and abs(h.var() - 12) < 6 * math.sqrt(
            12 * (1 + 36) / h.size)
    # a negative rate raises as on the cpu backend (review 23g; it gave NaN): the device's queued value check,
    # reported at the next host read
    with pytest.raises(RuntimeError, match="invalid Poisson rate"):
        torch.poisson(torch.tensor([0.0, -1.0, 2.0], device=D)).cpu()
    assert torch.poisson(torch.tensor([0.0, 0.0], device=D)).cpu().numpy().tolist() == [0.0, 0.0]


def test_multinomial_without_replacement_on_many_rows():
    w = torch.rand(300, 40, generator=_gen(6), device=D) + 0.01
    s = torch.multinomial(w, 40, generator=_gen(7)).cpu().numpy()
    assert s.shape == (300, 40) and all(sorted(r) == list(range(40)) for r in s)
    s1 = torch.multinomial(w, 1, generator=_gen(7)).cpu().numpy()
    np.testing.assert_array_equal(s1[:, 0], s[:, 0])  # the same keys: the first draw is the largest key
    heavy = torch.tensor([[1.0, 1000.0, 1.0]] * 200, dtype=torch.float64, device=D)
    first = torch.multinomial(heavy, 2, generator=_gen(8)).cpu().numpy()[:, 0]
    assert (first == 1).mean() > 0.97


def test_neighbouring_elements_are_independent():
    n = 200000
    x = torch.randn(n, generator=_gen(9), device=D).cpu().numpy().astype(np.float64)
    for lag in (1, 2, 4, 1024):
        r = np.corrcoef(x[:-lag], x[lag:])[0, 1]
        assert abs(r) < 6 / math.sqrt(n), (lag, r)
    a = torch.rand(n, generator=_gen(10), device=D).cpu().numpy().astype(np.float64)
    b = torch.rand(n, generator=_gen(11), device=D).cpu().numpy().astype(np.float64)
    assert abs(np.corrcoef(a, b)[0, 1]) < 6 / math.sqrt(n)  # different seeds: unrelated streams


def test_sampling_survives_rebuilt_kernel_tables():
    """Registering a plugin rebuilds every device's kernel table: the default and user generators keep their
    state and keep sampling on the device."""
    g = _gen(14)
    torch.manual_seed(3)
    want = (torch.rand(4, device=D).cpu().numpy(), torch.rand(4, generator=g, device=D).cpu().numpy())
    torch.manual_seed(3)
    g.manual_seed(14)
    torch._backend._tables.clear()  # what plugins.register does
    before = _transfers()
    got = (torch.rand(4, device=D), torch.rand(4, generator=g, device=D))
    assert _transfers() == before
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.cpu().numpy(), b)
