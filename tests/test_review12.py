"""Review of session 12's change: regressions found and fixed, pinned on every device with values checked against
PyTorch 2.13 by hand."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import coretorch as torch

_MIN32 = -2 ** 31


@pytest.mark.parametrize("dt, a, b, want", [
    # an operand equal to the dtype's minimum: |MIN| wraps to MIN and C's remainder keeps signs (PyTorch's calc_gcd)
    ("int8", [-128, -128, -128, -128, 0, 12], [-32, 96, -128, 0, -128, -18], [32, -32, -128, -128, -128, 6]),
    ("int32", [_MIN32, _MIN32, _MIN32, 7], [6, 2 ** 30, _MIN32, _MIN32], [-2, 2 ** 30, _MIN32, 1]),
])
def test_gcd_dtype_minimum_as_pytorch(device, dt, a, b, want):
    d = getattr(torch, dt)
    r = torch.gcd(torch.tensor(a, dtype=d, device=device), torch.tensor(b, dtype=d, device=device))
    assert r.dtype is d and r.tolist() == want


@pytest.mark.parametrize("dt, a, b, want", [
    # |a / gcd * b|: exact in int then wrapped for 8/16-bit dtypes; for wider ones the product wraps, then abs
    ("int8", [-128, 100, -100, 127], [5, 3, 7, -126], [-128, 44, -68, -126]),
    ("int16", [-32768, 30000, -30001], [3, 7, 11], [-32768, 13392, 2331]),
    ("int32", [100000, _MIN32], [99999, 6], [1409965408, _MIN32]),
    ("int64", [2 ** 40, -(2 ** 40)], [2 ** 40 - 1, 3], [2 ** 40, 3 * 2 ** 40]),
    ("uint8", [200, 255], [3, 254], [88, 2]),
])
def test_lcm_overflow_wraps_as_pytorch(device, dt, a, b, want):
    d = getattr(torch, dt)
    r = torch.lcm(torch.tensor(a, dtype=d, device=device), torch.tensor(b, dtype=d, device=device))
    assert r.dtype is d and r.tolist() == want


def test_lcm_minimum_by_minus_one_does_not_trap(device):
    # gcd(INT_MIN, 5) is -1 (PyTorch's), so a / gcd is INT_MIN / -1: PyTorch's CPU kernel dies of SIGFPE there;
    # here it wraps (and the process lives)
    x, five = (torch.tensor([v], dtype=torch.int32, device=device) for v in (_MIN32, 5))
    assert torch.gcd(x, five).tolist() == [-1]
    assert torch.lcm(x, five).tolist() == [_MIN32]


@pytest.mark.parametrize("make, offset", [
    (lambda x: x[1], 13), (lambda x: x[1], 1), (lambda x: x[1], None), (lambda x: x.transpose(0, 2), 1),
    (lambda x: x[:, 1:, ::2], 6),
])
def test_as_strided_scatter_addresses_the_storage_as_pytorch(device, make, offset):
    # PyTorch copies input's whole storage and keeps its layout: size/stride/storage_offset address the storage
    # (absolute, as as_strided's), and writes outside input's own elements are not seen in the result
    storage = np.arange(24.0)
    x = make(torch.arange(24.0, device=device).reshape(2, 3, 4))
    r = torch.as_strided_scatter(x, torch.full((2, 2), -1.0, device=device), (2, 2), (4, 1), offset)
    ref = storage.copy()
    off = x.storage_offset() if offset is None else offset
    ref[[off, off + 1, off + 4, off + 5]] = -1.0
    want = np.lib.stride_tricks.as_strided(ref[x.storage_offset():], x.shape, [8 * s for s in x.stride()])
    np.testing.assert_array_equal(r.cpu().numpy(), want)
    np.testing.assert_array_equal(x.cpu().numpy(), np.lib.stride_tricks.as_strided(
        storage[x.storage_offset():], x.shape, [8 * s for s in x.stride()]))   # input untouched


def test_deepcopy_of_a_detached_non_leaf_and_its_views(device):
    # (PyTorch copies them: they are leaves; the copy's memory is its own)
    x = torch.randn(3, 4, device=device, requires_grad=True)
    y = x * 2
    with torch.no_grad():
        nograd_view = y[1:]
    for t in (y.detach(), y.detach()[1:], y[1:].detach(), nograd_view, y.chunk(2)[0].detach()):
        c = copy.deepcopy(t)
        assert c.shape == t.shape and not c.requires_grad and c.is_leaf
        np.testing.assert_array_equal(c.cpu().numpy(), t.cpu().numpy())
        c.add_(1)
        np.testing.assert_array_equal(c.cpu().numpy(), t.cpu().numpy() + 1)


@pytest.mark.parametrize("call", [
    lambda x, y: torch.add(x, y, alpha=1j), lambda x, y: torch.sub(x, 2.0, alpha=1j),
    lambda x, y: x.add_(y, alpha=1j), lambda x, y: x.sub_(y, alpha=1j), lambda x, y: x.add_(2.0, alpha=1j),
])
def test_complex_alpha_raises_as_pytorch(device, call):
    # (sub_ with a tensor and alpha=1j used to return x unchanged: BLAS dropped the imaginary part)
    x, y = torch.ones(3, device=device), torch.ones(3, device=device)
    with pytest.raises(RuntimeError, match="alpha must not be a complex number"):
        call(x, y)
    assert x.tolist() == [1.0, 1.0, 1.0]


def test_histogram_dtype_checks_as_pytorch(device):
    x = torch.tensor([0.1, 0.5, 0.9], device=device)
    with pytest.raises(RuntimeError, match="bins tensors should have the same dtype"):
        torch.histogram(x, torch.tensor([0, 1], device=device))   # int64 edges against float32 input
    with pytest.raises(RuntimeError, match="bins tensors should have the same dtype"):
        torch.histogramdd(x.reshape(3, 1), [torch.tensor([0.0, 1.0], dtype=torch.float64, device=device)])
    with pytest.raises(RuntimeError, match="weight tensor should have the same dtype"):
        torch.histogram(x.double(), 2, weight=torch.ones(3, device=device))
    with pytest.raises(NotImplementedError, match="Long"):   # (a RuntimeError too, as in Python)
        torch.histc(torch.tensor([1, 2, 3], device=device), 3)
    h = torch.histogram(x, torch.tensor([0.0, 0.5, 1.0], device=device), weight=torch.tensor([1.0, 2.0, 4.0],
                                                                                           device=device))
    assert h.hist.tolist() == [1.0, 6.0]
