"""Edge cases of the cpu sorting fast paths (and the same calls on every device): one-byte integers sorted by numpy's
counting sort, zero signs restored row by row after the packed sort, the small-call topk / kthvalue paths (one fancy
gather, the short tie check), sizes around the small-array threshold; all against numpy's stable order or PyTorch's
tie choices checked by hand."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
from _sort_reference import ref_sort_indices

NAN = float("nan")


def _np(t):
    return t.detach().cpu().numpy()


def _check_sort(x, a, dim, descending):
    v, i = torch.sort(x, dim=dim, descending=descending, stable=True)
    want = ref_sort_indices(a, dim, descending)
    np.testing.assert_array_equal(_np(i), want)
    exp = np.take_along_axis(a, want, dim)
    np.testing.assert_array_equal(_np(v), exp)
    if a.dtype.kind == "f":  # -0.0 and 0.0 tie and each keeps its sign
        assert (np.signbit(_np(v)) == np.signbit(exp))[~np.isnan(exp)].all()


@pytest.mark.parametrize("dtype", ["int8", "uint8", "bool"])
def test_one_byte_sorts_are_stable_around_the_small_threshold(device, dtype):
    rng = np.random.default_rng(7)
    for shape, dim in [((1024,), 0), ((1025,), 0), ((3, 500), 1), ((500, 3), 0), ((2, 3, 200), 2)]:
        if dtype == "bool":
            a = rng.random(shape) < 0.5
        else:
            info = np.iinfo(dtype)
            a = rng.integers(info.min, int(info.max) + 1, shape).astype(dtype)
            a.flat[:2] = [info.max, info.min]
            a[a > (info.min + info.max) // 2] = info.max  # many ties
        x = torch.tensor(a, device=device)
        for descending in (False, True):
            _check_sort(x, a, dim, descending)


def test_zero_signs_come_back_in_every_row_of_a_packed_sort(device):
    rng = np.random.default_rng(3)
    a = rng.integers(-2, 3, (3, 400)).astype(np.float32)  # > 1,024 elements: the packed sort on cpu
    a[rng.random(a.shape) < 0.3] = -0.0
    a[0, :5] = [NAN, -0.0, 0.0, NAN, -0.0]
    a[2] = np.where(a[2] == 0, -0.0, a[2])  # a row whose zeros are all -0.0
    x = torch.tensor(a, device=device)
    for dim in (1, 0):
        for descending in (False, True):
            _check_sort(x, a, dim, descending)
    _check_sort(x.t(), a.T.copy(), 0, False)  # a non-contiguous input


@pytest.mark.parametrize("n", [1023, 1024, 1025])
@pytest.mark.parametrize("dtype", ["float32", "int32", "int16"])
def test_sizes_around_the_small_threshold(device, n, dtype):
    rng = np.random.default_rng(n)
    a = rng.integers(-40, 40, n).astype(dtype)
    if dtype == "float32":
        a[::17] = NAN
        a[::13] = -0.0
    x = torch.tensor(a, device=device)
    for descending in (False, True):
        _check_sort(x, a, 0, descending)


# ---- small topk / kthvalue: the fast gathers and the short tie check (PyTorch's CPU choices, checked by hand) ----
@pytest.mark.parametrize("row, k, largest, want", [
    ([1.0, 2.0, 9.0, 2.0, 8.0, 2.0], 3, True, [2, 4, 5]),  # distinct selected values; the boundary one occurs
    ([1.0, 2.0, 9.0, 2.0, 8.0, 2.0], 2, False, [0, 3]),    # again outside the selection (not the stable choice)
    ([0.0, 1.0, 1.0, 1.0, 7.0], 2, True, [4, 2]),
    ([3.0, 7.0, 3.0, 7.0, 0.0], 3, True, [1, 3, 2]),    # ties inside the selection and at its boundary
    ([NAN, 1.0, NAN, 2.0], 1, True, [0]),               # NaN the largest, two of them, k = 1
    ([2.0, NAN, 0.0, NAN], 3, False, [2, 0, 3]),
    ([4.0] * 6, 3, True, [3, 5, 4]),
    ([0.0, -0.0, 1.0, -0.0, 0.0], 2, False, [1, 4])])  # -0.0 equals 0.0
def test_small_topk_ties(device, row, k, largest, want):
    x = torch.tensor(row, device=device)
    r = torch.topk(x, k, largest=largest)
    got = r.indices.cpu().tolist()
    assert len(set(got)) == k
    np.testing.assert_array_equal(_np(r.values), np.float32(row)[got])
    ref = np.sort(np.float32(row))  # NaN last: the largest
    np.testing.assert_array_equal(_np(r.values), ref[::-1][:k] if largest else ref[:k])
    if device == "cpu":  # a device keeps its kernel's order among equal values (PyTorch's CUDA too)
        assert got == want


@pytest.mark.parametrize("row, k, want", [
    ([5.0, 3.0, 3.0, 1.0], 2, 1), ([3.0, 7.0, 3.0, 7.0, 0.0], 4, 1), ([NAN, 1.0, NAN, 2.0], 3, 2),
    ([0.0, -0.0, 1.0, -0.0, 0.0], 2, 4)])
def test_small_kthvalue_ties(device, row, k, want):
    x = torch.tensor(row, device=device)
    r = torch.kthvalue(x, k)
    got = r.indices.item()
    assert row[got] == row[want] or (row[want] != row[want] and row[got] != row[got])
    if device == "cpu":
        assert got == want


def test_small_selections_by_row_and_along_any_dim(device):
    # one tied row among untied ones (each row decided alone); PyTorch's choices checked by hand
    a = np.array([[9.0, 1.0, 5.0, 5.0, 2.0], [4.0, 8.0, 6.0, 7.0, 3.0]], np.float32)
    x = torch.tensor(a, device=device)
    r = torch.topk(x, 2)
    np.testing.assert_array_equal(_np(r.values), [[9, 5], [8, 7]])
    kv = torch.kthvalue(x, 3)
    np.testing.assert_array_equal(_np(kv.values), [5, 6])
    if device == "cpu":
        assert r.indices.cpu().tolist() == [[0, 3], [1, 3]]
        assert torch.topk(x.t(), 2, 0).indices.cpu().tolist() == [[0, 1], [3, 3]]
        assert kv.indices.cpu().tolist() == [2, 2]
    # no ties: every dim of a 3-D tensor against numpy (the fancy-gather and the take_along_axis paths)
    b = np.random.default_rng(0).permutation(120).reshape(4, 5, 6).astype(np.float32)
    y = torch.tensor(b, device=device)
    for d in (0, 1, 2, -1):
        for k in (1, 2):
            for largest in (True, False):
                v, i = torch.topk(y, k, d, largest)
                s = np.sort(b, axis=d)
                want = np.flip(s, d) if largest else s
                np.testing.assert_array_equal(_np(v), np.take(want, range(k), axis=d))
                np.testing.assert_array_equal(np.take_along_axis(b, _np(i), d), _np(v))
        kv = torch.kthvalue(y, 2, d, keepdim=True)
        np.testing.assert_array_equal(_np(kv.values), np.take(np.sort(b, axis=d), [1], axis=d))
        np.testing.assert_array_equal(np.take_along_axis(b, _np(kv.indices), d), _np(kv.values))
