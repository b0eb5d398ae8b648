"""A checkpoint's tensors load with the machine's native dtype objects, so every kernel takes the same path (and
gives the same bits) for a loaded tensor as for a fresh one: an explicit little-endian float32 is another numpy
dtype object, which kernels choosing their path by dtype identity (BLAS axpy, bfloat16's float32 op math) missed."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch


@pytest.mark.parametrize("mmap", [False, True])
def test_loaded_tensors_compute_as_fresh_ones(tmp_path, mmap):
    torch.manual_seed(0)
    fresh = {"w": torch.randn(300, 70), "g": torch.randn(300, 70), "h": torch.randn(64, 33).bfloat16()}
    torch.save(fresh, tmp_path / "ck.pt")
    loaded = torch.load(tmp_path / "ck.pt", mmap=mmap)
    for k, t in fresh.items():
        assert loaded[k]._data.dtype is t._data.dtype, k
    # SGD's update of a loaded parameter with a loaded gradient: bitwise the fresh one's
    a, b = fresh["w"].clone(), loaded["w"].clone()
    a.add_(fresh["g"], alpha=-0.0137)
    b.add_(loaded["g"], alpha=-0.0137)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    # bfloat16 arithmetic and reductions: the same op math for a loaded tensor
    for f in (lambda x: (x * 1.7 + x).float(), lambda x: x.sum(1).float(), lambda x: (x @ x.t()).float()):
        np.testing.assert_array_equal(f(fresh["h"]).numpy(), f(loaded["h"]).numpy())


def test_arrays_from_outside_get_native_dtype_objects():
    """A pickled array (a DataLoader worker's batch) or one with an explicit byte order: equal dtype, another
    object; from_numpy keeps sharing its memory."""
    import pickle

    for dt in (np.float32, np.float64, np.int64, np.float16):
        a = pickle.loads(pickle.dumps(np.arange(6, dtype=dt)))
        b = np.arange(6, dtype=np.dtype(dt).newbyteorder("<"))
        for arr in (a, b):
            for t in (torch.from_numpy(arr), torch.tensor(arr), torch.as_tensor(arr)):
                assert t._data.dtype is np.dtype(dt), (dt, arr.dtype)
        t = torch.from_numpy(a)
        t[0] = 7
        assert a[0] == 7  # still a view of the caller's array
    h = torch.arange(8.0).bfloat16()
    fresh = (h * 1.7 + h).float().numpy()
    back = torch.from_numpy(pickle.loads(pickle.dumps(h._data)))
    assert back._data.dtype is h._data.dtype
    np.testing.assert_array_equal((back * 1.7 + back).float().numpy(), fresh)


def test_big_endian_arrays_raise_pytorchs_value_error():
    for dt in (">f4", ">i8", ">f8"):
        a = np.arange(3, dtype=dt)
        for f in (torch.from_numpy, torch.tensor, torch.as_tensor):
            with pytest.raises(ValueError, match="byte order different from the native byte order"):
                f(a)
        assert torch.from_numpy(a.astype(a.dtype.newbyteorder("="))).tolist() == [0, 1, 2]
