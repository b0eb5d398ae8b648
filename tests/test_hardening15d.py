"""Issue 15, what the previous stop left open: classes of random programs where coretorch differed from PyTorch 2.13
(each expected value checked by hand against PyTorch 2.13), on every installed device."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import coretorch as torch

ROOT = Path(__file__).resolve().parents[1]


def arr(t):
    return t.detach().cpu().numpy()


# ---- fill_ / zero_ write an expanded tensor's memory; every other in-place write into it is refused ----
def test_fill_and_zero_on_an_expanded_tensor_write_its_memory(device):
    base = torch.tensor([1.0, 2.0], device=device)
    y = base.expand(3, 2)
    assert y.zero_() is y
    assert arr(base).tolist() == [0.0, 0.0] and arr(y).tolist() == [[0.0, 0.0]] * 3
    y.fill_(3.5)
    assert arr(base).tolist() == [3.5, 3.5]
    col = torch.zeros(3, 1, dtype=torch.int32, device=device)
    col.expand(3, 4).fill_(7)  # a broadcast last dim
    assert arr(col).tolist() == [[7]] * 3
    s = torch.tensor(2.0, device=device)
    s.expand(4).zero_()  # a 0-d base
    assert s.item() == 0.0
    for write in (lambda t: t.add_(1), lambda t: t.copy_(torch.ones(3, 2, device=device)), lambda t: t.neg_(),
                  lambda t: t.fill_(torch.tensor(2.0)), lambda t: t.normal_(), lambda t: t.uniform_()):
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            write(base.expand(3, 2))
    assert arr(base).tolist() == [3.5, 3.5]


def test_views_of_an_expanded_tensor_that_do_not_overlap_are_writable(device):
    base = torch.tensor([1.0, 2.0], device=device)
    y = base.expand(3, 2)
    y[0] = 5.0  # y[0] is base itself (strides (1,)): PyTorch writes it
    assert arr(base).tolist() == [5.0, 5.0]
    y[1, 0] = -1.0
    assert arr(base).tolist() == [-1.0, 5.0]
    y[2].add_(1)
    assert arr(base).tolist() == [0.0, 6.0]
    with pytest.raises(RuntimeError, match="more than one element"):
        y[...] = 5.0  # (a copy of a value tensor into the whole expanded tensor)
    with pytest.raises(RuntimeError, match="more than one element"):
        y[:, 0] = 1.0  # a column: stride 0 over 3 elements
    assert arr(base).tolist() == [0.0, 6.0]


# ---- einsum / matmul on bool raise PyTorch's exceptions (bmm has no bool kernel; its dtype check) ----
def test_einsum_and_batched_matmul_on_bool(device):
    b = torch.tensor([[True, False], [True, True]], device=device)
    i = b.to(torch.int32)
    r = torch.einsum("ij->i", b)
    assert r.dtype is torch.int64 and arr(r).tolist() == [1, 2]
    assert arr(torch.einsum("ij,ij->ij", b, b)).tolist() == [[True, False], [True, True]]
    assert arr(torch.einsum("ii->i", b)).tolist() == [True, True]
    for x, y in ((b, b), (b, i), (b, b.float())):
        with pytest.raises(NotImplementedError, match="\"bmm\" not implemented for 'Bool'"):
            torch.einsum("ij,jk->ik", x, y)
    with pytest.raises(RuntimeError, match="expected scalar type Int but found Bool"):
        torch.einsum("ij,jk->ik", i, b)
    with pytest.raises(NotImplementedError, match="bmm"):
        torch.matmul(b, i[None])  # a batched right operand: bmm's rules
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):
        torch.matmul(b[None], i)  # folded into mm


# ---- addcmul keeps the integer result type of its three tensors ----
def test_integer_addcmul_with_bool_factors_keeps_the_result_type(device):
    bb = torch.tensor([True, False], device=device)
    i32 = torch.tensor([1, 2], dtype=torch.int32, device=device)
    u8 = torch.tensor([1, 2], dtype=torch.uint8, device=device)
    r = torch.addcmul(i32, bb, bb, value=2)
    assert r.dtype is torch.int32 and arr(r).tolist() == [3, 2]
    r = torch.addcmul(u8, bb, bb, value=3)
    assert r.dtype is torch.uint8 and arr(r).tolist() == [4, 2]
    r = torch.addcmul(u8, bb, bb, value=-1)
    assert r.dtype is torch.uint8 and arr(r).tolist() == [0, 2]
    with pytest.raises(NotImplementedError, match="addcmul"):
        torch.addcmul(bb, bb, bb)


# ---- median / nanmedian of an empty integer tensor: PyTorch's NaN converted to the dtype ----
@pytest.mark.parametrize("op", ["median", "nanmedian"])
def test_median_of_an_empty_integer_tensor(device, op):
    want = {torch.int8: 0, torch.int16: 0, torch.uint8: 0, torch.int32: -2 ** 31, torch.int64: -2 ** 63,
            torch.bool: True}
    for dt, v in want.items():
        r = getattr(torch.zeros((0, 3), dtype=dt, device=device), op)()
        assert r.dtype is dt and r.shape == () and r.item() == v, dt
    with pytest.raises(IndexError, match="non-zero size"):
        getattr(torch.zeros(0, dtype=torch.int64, device=device), op)(0)
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        getattr(torch.tensor([True, False], device=device), op)()
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        getattr(torch.tensor([True, False], device=device), op)(0)


# ---- Python numbers stored into an integer dtype: each converted by its own type ----
def test_ints_in_a_float_list_wrap_into_unsigned_dtypes(device):
    u = torch.tensor([1, 2], dtype=torch.uint8, device=device)
    r = u.new_tensor([2.0, -1])
    assert r.dtype is torch.uint8 and arr(r).tolist() == [2, 255]
    r = torch.tensor([[1, 2.5], [-1, 3]], dtype=torch.uint8, device=device)
    assert arr(r).tolist() == [[1, 2], [255, 3]]
    for bad in ([-1.0], [2.5, 256], [1, -256], [float("nan"), 1]):
        with pytest.raises(RuntimeError, match="value cannot be converted to type uint8 without overflow"):
            torch.tensor(bad, dtype=torch.uint8, device=device)
    assert arr(torch.tensor([2 ** 64], dtype=torch.float32, device=device)).tolist() == [2.0 ** 64]
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        torch.tensor([2 ** 63], device=device)


# ---- number ** tensor: PowBackward2 saves the exponent and the result ----
def test_number_to_tensor_power_saves_exponent_and_result(device):
    x = torch.tensor([1.0, -2.0], device=device, requires_grad=True).clone()
    y = 0.25 ** x
    assert type(y.grad_fn).__name__ == "PowBackward2"
    x.abs_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    x = torch.tensor([1.0, -2.0], device=device, requires_grad=True).clone()
    y = 2 ** x
    y.abs_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_tensor_to_tensor_power_saves_its_result(device):
    x = torch.tensor([[1.0, 0.5]], device=device, requires_grad=True)
    y = x ** torch.tensor(0.016, device=device)  # PowBackward1: the result is saved even when only x needs grad
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    e = torch.tensor([2.0, 3.0], device=device, requires_grad=True)
    (x ** e).sum().backward()
    np.testing.assert_allclose(arr(e.grad), [0.0, 0.5 ** 3 * np.log(0.5)], rtol=1e-6)
    np.testing.assert_allclose(arr(x.grad), [[2.0, 0.75]], rtol=1e-6)


@pytest.mark.parametrize("base", [0.25, 3, 0.0, -2.0])
def test_number_to_tensor_power_gradient(device, base):
    e = np.array([1.0, -2.0, 0.0, 0.5], np.float64)
    x = torch.tensor(e, device=device, requires_grad=True)
    (base ** x).sum().backward()
    with np.errstate(all="ignore"):
        out = np.power(np.float64(base), e)
        want = out * np.log(np.float64(base))
    if base == 0.0:
        want = np.where(e >= 0, 0.0, want)
    np.testing.assert_allclose(arr(x.grad), want, rtol=1e-12)


def test_integer_base_tensor_power_gradient_is_computed_in_the_result_dtype(device):
    a = torch.tensor([[2, 4]], dtype=torch.int64, device=device)
    e = np.array([[-1.0, 2.5], [2.586, 2.205]])
    x = torch.tensor(e, device=device, requires_grad=True)
    torch.pow(a, x).sum().backward()
    b = np.array([[2.0, 4.0]])
    np.testing.assert_allclose(arr(x.grad), b ** e * np.log(b), rtol=1e-13)  # (float32's log: 1e-7 off)


# ---- torch.eq(2, x) & co. raise; two numbers only for add/sub/mul/div/floor_divide ----
def test_number_first_and_two_numbers(device):
    x = torch.tensor([1.5, -2.0], device=device)
    for fn in (torch.eq, torch.ne, torch.lt, torch.ge, torch.greater, torch.not_equal, torch.copysign, torch.fmod):
        with pytest.raises(TypeError, match="invalid combination of arguments"):
            fn(2, x)
        assert fn(x, 2).shape == (2,)
    assert arr(2 == x).tolist() == [False, False] and arr(torch.remainder(2, x)).tolist() == [0.5, 0.0]
    r = torch.add(2, 3)
    assert r.dtype is torch.int64 and r.shape == () and r.item() == 5
    assert torch.mul(True, 2).item() == 2 and torch.floor_divide(7, 2).item() == 3
    assert torch.div(2, 4).dtype is torch.float32 and torch.div(2, 4).item() == 0.5
    for fn in (torch.pow, torch.remainder, torch.bitwise_and, torch.xlogy):
        with pytest.raises(TypeError, match="invalid combination of arguments"):
            fn(2, 3)


# ---- the in-place forms PyTorch has: the result cast to the tensor's dtype ----
def test_comparison_logical_bitwise_and_scan_inplace_forms(device):
    def f():
        return torch.tensor([1.5, 0.0, -2.0], device=device)

    def i():
        return torch.tensor([3, 0, -4], device=device)

    x = f()
    assert x.eq_(torch.tensor([1.5, 1.0, -2.0], device=device)) is x and arr(x).tolist() == [1.0, 0.0, 1.0]
    assert arr(f().lt_(0)).tolist() == [0.0, 0.0, 1.0] and arr(f().greater_equal_(0)).tolist() == [1.0, 1.0, 0.0]
    assert arr(f().logical_and_(i())).tolist() == [1.0, 0.0, 1.0]
    assert arr(i().logical_xor_(f())).tolist() == [0, 0, 0] and arr(f().logical_not_()).tolist() == [0.0, 1.0, 0.0]
    assert arr(i().bitwise_and_(6)).tolist() == [2, 0, 4] and arr(i().bitwise_not_()).tolist() == [-4, -1, 3]
    assert arr(i().cumsum_(0)).tolist() == [3, 3, -1] and arr(f().cumprod_(0)).tolist() == [1.5, 0.0, -0.0]
    np.testing.assert_allclose(arr(f().expm1_()), np.expm1([1.5, 0.0, -2.0]), rtol=1e-6)
    assert arr(f().divide_(2)).tolist() == [0.75, 0.0, -1.0] and arr(i().subtract_(1, alpha=2)).tolist() == [1, -2, -6]
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        i().bitwise_and_(f())
    with pytest.raises(RuntimeError, match="can't be cast"):
        i().log1p_()
    with pytest.raises(NotImplementedError, match="cumsum_out_cpu"):
        torch.tensor([True], device=device).cumsum_(0)
    with pytest.raises(TypeError, match="must be Tensor"):
        f().logical_and_(2)


# ---- no numpy RuntimeWarning from a forward op (PyTorch prints none) ----
def test_ieee_edge_cases_print_no_numpy_warning():
    # one fresh interpreter for every device (pytest's own warning capture would hide what a user sees; ~5 s, most
    # of it the start-up), every warning shown: the ops' IEEE results (inf - inf, overflow) warn about nothing
    code = textwrap.dedent("""
        import coretorch as torch
        from coretorch.testing import available_devices
        inf = float("inf")
        for dev in available_devices():
            a = torch.tensor([inf, 3e38, 3.0], device=dev)
            b = torch.tensor([inf, 3e38, 0.0], device=dev)
            r = [a - b, a + (-b), a * b, a * 0, a.clone().sub_(b), a @ b, a.reshape(1, 3) @ b.reshape(3, 1),
                 a.sum(), torch.tensor([3e38, 3e38], device=dev).sum(), a.var(), torch.lerp(a, b, 0.5),
                 torch.tensor([6e4], dtype=torch.float16, device=dev) * 2]
            print(dev, [float(t.flatten()[0]) for t in r])
    """)
    p = subprocess.run([sys.executable, "-W", "always", "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert "RuntimeWarning" not in p.stderr, p.stderr
    lines = p.stdout.splitlines()
    assert lines and all(line.split(" ", 1)[1].startswith("[nan, nan, inf, nan, nan") for line in lines), p.stdout


def test_user_numpy_code_still_warns():
    # coretorch's filter names its own modules only: a user's numpy keeps its error state and its warnings
    with pytest.warns(RuntimeWarning, match="invalid value"):
        np.subtract(np.array([np.inf]), np.array([np.inf]))
    assert np.geterr()["invalid"] == "warn"


# ---- Ctrl-C while `import coretorch` runs in the console command ----
def test_ctrl_c_during_import_prints_the_short_message():
    # a real SIGINT, sent by the process to itself while numpy is being imported by `import coretorch`
    code = textwrap.dedent("""
        import os, signal, sys
        class Interrupt:
            def find_spec(self, name, path=None, target=None):
                if name == "numpy":
                    os.kill(os.getpid(), signal.SIGINT)
                return None
        sys.meta_path.insert(0, Interrupt())
        import coretorch_launcher
        sys.exit(coretorch_launcher.main(["demo", "--epochs", "1"]))
    """)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 130, p.stderr
    assert "Traceback" not in p.stderr
    assert p.stderr.strip() == "interrupted after 0 complete epoch(s): no epoch was completed, nothing was saved"


def test_console_command_runs_through_the_launcher(capsys):
    import json

    import coretorch_launcher
    assert coretorch_launcher.main(["info", "--json"]) == 0
    assert "cpu" in json.dumps(json.loads(capsys.readouterr().out))


# ---- kthvalue's index among equal values: the one PyTorch's quickselect leaves at k ----
@pytest.mark.parametrize("row, k, want", [
    ([1.0, 1.0, 1.0, 2.0], 2, 0), ([2.0, 1.0, 1.0, 1.0, 3.0], 2, 3), ([2.0, 1.0, 1.0, 1.0, 3.0], 3, 1),
    ([2.0, 1.0, 1.0, 1.0, 3.0], 1, 2), ([0.0, 5.0, 0.0, 5.0, 0.0], 2, 0), ([1.0] * 5, 4, 1),
    ([float("nan"), 1.0, float("nan"), 0.0], 3, 2), ([3.0, 3.0], 1, 0)])
def test_kthvalue_index_among_ties(device, row, k, want):
    has_nan = any(v != v for v in row)
    for dt in (torch.float64,) if has_nan else (torch.float32, torch.int64):
        x = torch.tensor(row, dtype=dt, device=device)
        r = torch.kthvalue(x, k)
        assert r.values.item() == np.sort(np.array(row))[k - 1] or has_nan
        r2 = torch.kthvalue(torch.stack([x, x], 1), k, 0)  # along dim 0 of a 2-D tensor
        if device == "cpu":  # PyTorch's CPU choice; a device (opencl, like CUDA) keeps its kernel's: any equal one
            assert r.indices.item() == want, dt
            assert r2.indices.cpu().tolist() == [want, want]
        else:
            for got in [r.indices.item()] + r2.indices.cpu().tolist():
                assert row[got] == row[want] or (has_nan and row[got] != row[got])


# ---- topk returns equal values in PyTorch's CPU order (its nth_element, then a sort of the first k - 1) ----
@pytest.mark.parametrize("row, k, largest, want", [
    ([-0.25, 2.75, -0.623, -0.25], 3, True, [1, 3, 0]), ([-0.25, 2.75, -0.623, -0.25], 3, False, [2, 3, 0]),
    ([1.0, 1.0, 1.0, 1.0, 2.0], 3, True, [4, 2, 3]), ([1.0, 1.0, 1.0, 1.0, 2.0, 0.0, 1.0], 4, True, [4, 3, 6, 2]),
    ([3.0, 1.0, 1.0, 1.0, 1.0, 2.0, 0.0, 1.0], 4, False, [6, 4, 7, 3])])
def test_topk_order_among_equal_values(device, row, k, largest, want):
    x = torch.tensor(row, device=device, requires_grad=True)
    r = torch.topk(x, k, largest=largest)
    np.testing.assert_array_equal(arr(r.values), np.float32(row)[want])
    if device != "cpu":  # a device (opencl, like CUDA) keeps its kernel's order among equal values
        want = r.indices.cpu().tolist()
        assert len(set(want)) == k
    assert r.indices.cpu().tolist() == want
    np.testing.assert_array_equal(arr(r.values), np.float32(row)[want])
    r.values.backward(torch.arange(1.0, k + 1, device=device))  # each position's gradient to its own index
    g = np.zeros(len(row))
    g[want] = np.arange(1.0, k + 1)
    np.testing.assert_array_equal(arr(x.grad), g)
    r2 = torch.topk(torch.tensor([row, row], device=device).t(), k, 0, largest)  # along dim 0
    if device == "cpu":
        assert r2.indices.cpu().tolist() == [[w, w] for w in want]


# ---- median along a dim: equal values ordered by index (PyTorch's comparator), the one at the median's rank ----
def test_median_index_among_equal_values(device):
    rows = [[1.0, -1.0, 0.0, 1.0, -1.0, 1.0, -1.0, 0.0, 1.0, -1.0, 0.0],
            [1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0]]
    want = []
    for r in rows:  # rank 5 of a stable sort
        want.append(int(np.argsort(np.array(r), kind="stable")[5]))
    assert want == [7, 1]
    for dt in (torch.float32, torch.int64):
        x = torch.tensor(rows, dtype=dt, device=device)
        for op in (torch.median, torch.nanmedian):
            r = op(x, 1)
            assert r.indices.cpu().tolist() == want and r.values.cpu().tolist() == [0, 1]
            assert op(x.t(), 0).indices.cpu().tolist() == want
    x = torch.tensor(rows, device=device, requires_grad=True)
    torch.median(x, 1, keepdim=True).values.sum().backward()
    g = np.zeros((2, 11))
    g[0, 7] = g[1, 1] = 1.0
    np.testing.assert_array_equal(arr(x.grad), g)
