"""Integer ``div(rounding_mode="trunc")`` and ``fmod`` are exact at every magnitude on every available device (C's
division toward zero, wrapping as two's complement): they used to divide in float32 and lost digits past 2**24."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch
from coretorch.testing import available_devices

DEVICES = available_devices()


def _trunc_ref(a, b, dt):
    """Division toward zero in Python ints, wrapped to ``dt``."""
    info = np.iinfo(dt)
    span = int(info.max) - int(info.min) + 1
    out = []
    for x, y in zip(np.ravel(a).tolist(), np.ravel(b).tolist()):
        q = abs(x) // abs(y)
        q = q if (x < 0) == (y < 0) else -q
        out.append((q - int(info.min)) % span + int(info.min))
    return np.array(out, dtype=dt).reshape(np.shape(a))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", [np.int32, np.int64, np.int16, np.uint8])
def test_trunc_division_and_fmod_are_exact(device, dt):
    info = np.iinfo(dt)
    rng = np.random.default_rng(0)
    a = rng.integers(info.min, info.max, 64, dtype=dt, endpoint=True)
    b = rng.integers(1, 50, 64).astype(dt)
    if info.min < 0:
        b = b * rng.choice(np.array([-1, 1], dt), 64)
        a[:6] = (info.min, info.min, info.max, -7, 7, 0)
        b[:6] = (-1, 2, 3, 2, -2, -5)
    a[6:8] = (info.max, info.max - 1)
    b[6:8] = (1, 1)
    x, y = coretorch.tensor(a, device=device), coretorch.tensor(b, device=device)
    q = x.div(y, rounding_mode="trunc")
    assert q.dtype == x.dtype
    np.testing.assert_array_equal(q.cpu().numpy(), _trunc_ref(a, b, dt))
    np.testing.assert_array_equal(x.fmod(y).cpu().numpy(), np.fmod(a, b))
    # a Python-int divisor, and a 0-d tensor one
    np.testing.assert_array_equal(x.div(3, rounding_mode="trunc").cpu().numpy(), _trunc_ref(a, np.full(64, 3), dt))
    d0 = coretorch.tensor(3, dtype=x.dtype, device=device)
    np.testing.assert_array_equal(x.div(d0, rounding_mode="trunc").cpu().numpy(), _trunc_ref(a, np.full(64, 3), dt))


def test_trunc_division_past_float_digits_on_cpu():
    a = coretorch.tensor([2 ** 24 + 1, 2 ** 40 + 3, -(2 ** 53) - 1])
    assert a.div(1, rounding_mode="trunc").tolist() == [2 ** 24 + 1, 2 ** 40 + 3, -(2 ** 53) - 1]
    assert a.div(2, rounding_mode="trunc").tolist() == [2 ** 23, 2 ** 39 + 1, -(2 ** 52)]
    assert a.fmod(2).tolist() == [1, 1, -1]
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a.div(coretorch.tensor([1, 0, 1]), rounding_mode="trunc")
