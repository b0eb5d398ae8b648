"""Issue 15, closing wave: an ``out=`` of the wrong shape (resized inside its storage) is checked for memory overlap
with the inputs as PyTorch 2.13's kernels check it (before the resize for TensorIterator's ops, after it for the
structured ones); a plain out tensor shrunk by the resize keeps its storage (its views see the result); a view whose
storage is too small warns that it takes a buffer of its own (a deliberate difference: PyTorch grows the shared
storage); the oracle recognises the deliberate mode / var_mean differences.  Expected values checked by hand against
PyTorch 2.13."""
from __future__ import annotations

import importlib.util
import math
import pathlib
import warnings

import numpy as np
import pytest

import coretorch as torch
from coretorch.testing_fuzz import Result, Step

_OVERLAP = "single memory location"


def _x(device):
    return torch.arange(12.0, device=device)


def _ok(fn, device) -> list:
    x = _x(device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn(x)
    return x.tolist()


def _raises(fn, device) -> None:
    x = _x(device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match=_OVERLAP):
            fn(x)


def test_pointwise_out_is_checked_as_given_before_its_resize(device):
    # the out x[:4] partly overlaps the input x[3:9] as given: refused (also an input it will cover exactly)
    _raises(lambda x: torch.add(x[3:9], 1, out=x[:4]), device)
    _raises(lambda x: torch.add(x[0:6], 1, out=x[:4]), device)
    _raises(lambda x: torch.exp(x[6:12], out=x[:9]), device)
    _raises(lambda x: torch.index_select(x[6:12], 0, torch.arange(6, device=device), out=x[:9]), device)
    # as given x[:5] does not overlap x[5:11]: allowed, though the resized out reaches x[5]
    assert _ok(lambda x: torch.add(x[5:11], 1, out=x[:5]), device) == [6, 7, 8, 9, 10, 11, 6, 7, 8, 9, 10, 11]
    idx = torch.arange(6, device=device)
    assert _ok(lambda x: torch.index_select(x[5:11], 0, idx, out=x[:5]), device)[:6] == [5, 6, 7, 8, 9, 10]


def test_structured_ops_check_the_resized_out(device):
    six = torch.arange(6, device=device)
    # cat / gather / cross: any overlap of the resized out (x[:6]) with an input is refused
    _raises(lambda x: torch.cat([x[5:11]], out=x[:5]), device)
    _raises(lambda x: torch.gather(x[5:11], 0, six, out=x[:5]), device)
    _raises(lambda x: torch.cross(x[0:6].view(2, 3), x[6:12].view(2, 3), dim=1, out=x[:5]), device)
    _raises(lambda x: torch.median(x[1:7].view(2, 3), 1, out=(x[:1], torch.empty(0, dtype=torch.long,
                                                                                  device=device))), device)
    # as given x[:9] overlaps x[6:12], resized to x[:6] it does not: allowed
    assert _ok(lambda x: torch.cat([x[6:12]], out=x[:9]), device)[:6] == [6, 7, 8, 9, 10, 11]
    assert _ok(lambda x: torch.gather(x[6:12], 0, six, out=x[:9]), device)[:6] == [6, 7, 8, 9, 10, 11]
    # scans and sort: a partial overlap of the resized out is refused, an exact cover allowed
    _raises(lambda x: torch.cumsum(x[5:11], 0, out=x[:5]), device)
    _raises(lambda x: torch.sort(x[5:11], out=(x[:5], torch.empty(0, dtype=torch.long, device=device))), device)
    assert _ok(lambda x: torch.cumsum(x[0:6], 0, out=x[0:3]), device)[:6] == [0, 1, 3, 6, 10, 15]
    assert _ok(lambda x: torch.cumsum(x[6:12], 0, out=x[:9]), device)[:6] == [6, 13, 21, 30, 40, 51]


def test_sort_out_overlapping_its_input(device):
    x = _x(device)
    with pytest.raises(RuntimeError, match=_OVERLAP):
        torch.sort(x[0:6], out=(x[1:7], torch.empty(6, dtype=torch.long, device=device)))
    b = torch.tensor([True, False, True], device=device)
    with pytest.raises(RuntimeError, match=_OVERLAP):
        torch.sort(b[0:2], out=(b[1:3], torch.empty(2, dtype=torch.long, device=device)))
    y = torch.tensor([3.0, 1.0, 2.0], device=device)
    torch.sort(y, out=(y, torch.empty(3, dtype=torch.long, device=device)))  # the input itself: allowed
    assert y.tolist() == [1.0, 2.0, 3.0]


def test_a_plain_out_shrunk_by_the_resize_keeps_its_storage(device):
    x = torch.zeros(6, device=device)
    v = x[:2]
    with pytest.warns(UserWarning, match="was resized since it had shape"):
        r = torch.add(torch.ones(3, device=device), 1, out=x)
    assert r is x and x.shape == (3,) and x.tolist() == [2.0, 2.0, 2.0]
    assert v.tolist() == [2.0, 2.0]   # as PyTorch's resize_: the view of the old storage sees the result
    e = torch.empty(0, device=device)  # growing: a buffer of its own, no warning of coretorch's
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.neg(torch.ones(4, device=device), out=e)
    assert e.tolist() == [-1.0] * 4


def test_a_view_whose_storage_is_too_small_warns_and_takes_a_buffer(device):
    x = torch.arange(4.0, device=device)
    o = x[2:4]
    with pytest.warns(UserWarning) as rec:
        torch.add(torch.ones(6, device=device), 1, out=o)
    msgs = [str(w.message) for w in rec]
    assert any("was resized since it had shape [2]" in m for m in msgs)      # PyTorch's own warning
    assert any("add(): the out= view needs more memory than its storage holds" in m for m in msgs)
    assert o.tolist() == [2.0] * 6 and x.tolist() == [0.0, 1.0, 2.0, 3.0]   # (PyTorch: x == [0, 1, 2, 2])
    z = torch.arange(4.0, device=device)
    with pytest.warns(UserWarning, match="the out= view is empty: coretorch gives it a buffer of its own"):
        torch.add(torch.ones(3, device=device), 1, out=z[2:2])  # (PyTorch writes z[2:]; the offset is lost here)
    assert z.tolist() == [0.0, 1.0, 2.0, 3.0]   # never written at a wrong place


# ---- the oracle recognises the deliberate differences of the README's table ----
def _oracle():
    path = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "torch_oracle.py"
    spec = importlib.util.spec_from_file_location("_torch_oracle_a15", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _mode_program(n: int, grad_at: int):
    vals = [1.0] * n
    src = f"x0 = torch.tensor({vals!r}, dtype=torch.float32, requires_grad=True)"
    g = np.zeros(n, np.float32)
    g[grad_at] = 1.0
    return Result(seed=0, steps=[Step(src, "input", "float32[%d]" % n, dtype="float32", shape=(n,),
                                      value=np.array(vals, np.float32)),
                                 Step("x1 = torch.mode(x0, 0).values", "mode", "float32", dtype="float32", shape=(),
                                      value=np.array(1.0, np.float32))], grads={"x0": g})


def test_oracle_counts_mode_ties_and_long_var_mean_rows_as_deliberate():
    orc = _oracle()
    want, got = _mode_program(20, 3), _mode_program(20, 19)   # the gradient at another of 20 equal values
    assert "mode's index among equal values" in orc._deliberate(want, got, (-1, "backward", "", "gradient"), "cpu")
    short_w, short_g = _mode_program(8, 3), _mode_program(8, 7)   # up to 16 elements coretorch agrees: a bug
    assert orc._deliberate(short_w, short_g, (-1, "backward", "", "gradient"), "cpu") is None
    big = np.ones(40000, np.float32)
    big[5], big[30000] = np.inf, np.nan
    inp = Step("x0 = torch.randn(40000)", "input", "float32[40000]", dtype="float32", shape=(40000,), value=big)
    vm_w = Step("x1 = torch.var_mean(x0, dim=0)[1]", "var_mean", "float32", dtype="float32", shape=(),
                value=np.array(np.inf, np.float32))
    vm_g = Step(vm_w.src, "var_mean", "float32", dtype="float32", shape=(), value=np.array(np.nan, np.float32))
    w, g = Result(seed=1, steps=[inp, vm_w]), Result(seed=1, steps=[inp, vm_g])
    assert "32,768+" in orc._deliberate(w, g, (1, "var_mean", "float32", "value"), "cpu")
    small = Step("x0 = torch.randn(100)", "input", "float32[100]", dtype="float32", shape=(100,), value=big[:100])
    assert orc._deliberate(Result(seed=2, steps=[small, vm_w]), Result(seed=2, steps=[small, vm_g]),
                           (1, "var_mean", "float32", "value"), "cpu") is None


def test_reduced_float_overflow_messages_name_pytorchs_types(device):
    x = torch.zeros(2, dtype=torch.float16, device=device)
    with pytest.raises(RuntimeError, match="value cannot be converted to type c10::Half without overflow"):
        x.fill_(70000.0)
    h = torch.zeros(2, dtype=torch.float16, device=device)
    h[...] = 70000.0   # setitem rounds to inf as PyTorch (fill_ raises)
    assert h.tolist() == [float("inf")] * 2


def test_too_many_indices_is_checked_before_the_index_device(device):
    # oracle seed 890154: a cpu 0-d tensor read with an index tensor on the device is PyTorch's IndexError (the
    # count comes first), not the one-device RuntimeError
    x = torch.tensor(8)
    with pytest.raises(IndexError):
        x[torch.tensor([-2, -1], device=device)]
    y = torch.ones(3)
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 1"):
        y[0, torch.tensor([0], device=device)]
    if device != "cpu":
        with pytest.raises(RuntimeError, match="indices should be either on cpu or on the same device"):
            y[torch.tensor([0], device=device)]
    else:
        assert y[torch.tensor([0, 2])].tolist() == [1.0, 1.0]


def test_einsum_integer_and_bool_sums_and_size_one_contractions(device):
    # oracle seed 874778: only size-1 dims contracted is a product (no bmm): bool works; a label summed on its own
    # is PyTorch's plain sum (int64 for integers and bools), then a bmm with an int32 operand raises as PyTorch
    b = torch.ones(2, 1, dtype=torch.bool, device=device)
    r = torch.einsum("ij,kj->ik", b, torch.ones(3, 1, dtype=torch.bool, device=device))
    assert r.dtype is torch.bool and r.shape == (2, 3) and r.all().item()
    r = torch.einsum("ij,kj->k", b, torch.ones(3, 1, dtype=torch.bool, device=device))
    assert r.dtype is torch.int64 and r.tolist() == [2, 2, 2]
    i32 = torch.ones(2, 1, dtype=torch.int32, device=device)
    r = torch.einsum("ij,kj->ik", i32, torch.ones(3, 4, dtype=torch.int32, device=device))
    assert r.dtype is torch.int64 and r.tolist() == [[4] * 3] * 2
    r = torch.einsum("i,j->j", torch.ones(2, dtype=torch.uint8, device=device),
                     torch.ones(3, dtype=torch.uint8, device=device))
    assert r.dtype is torch.int64 and r.tolist() == [2, 2, 2]
    with pytest.raises(RuntimeError, match="expected scalar type Long but found Int"):
        torch.einsum("ij,jk->k", torch.ones(2, 3, dtype=torch.int32, device=device),
                     torch.ones(3, 4, dtype=torch.int32, device=device))
    r = torch.einsum("ij,jk->ik", torch.ones(2, 3, dtype=torch.int32, device=device),
                     torch.ones(3, 4, dtype=torch.int32, device=device))
    assert r.dtype is torch.int32 and r.tolist() == [[3] * 4] * 2


def test_bfloat16_views_and_memory_queries_reach_the_tensor(device):
    # oracle seed 891552: on cpu the bfloat16 kernels ran as_strided / storage_offset / same_storage on a float32
    # copy, so diag, diag_embed, diagonal() writes and strided views of bfloat16 lost their writes
    bf = torch.bfloat16
    y = torch.tensor([1.0, 2.0, 3.0], dtype=bf, device=device)
    eye = np.diag([1.0, 2.0, 3.0]).tolist()
    assert torch.diag(y).tolist() == eye and torch.diag_embed(y).tolist() == eye
    x = torch.zeros(4, dtype=bf, device=device)
    x.as_strided((2,), (2,), 1).fill_(7)
    assert x.tolist() == [0.0, 7.0, 0.0, 7.0]
    m = torch.zeros(3, 3, dtype=bf, device=device)
    m.diagonal().fill_(5)
    assert m.tolist() == np.diag([5.0] * 3).tolist()
    a = torch.arange(6.0, device=device).to(bf)
    assert a[2:].storage_offset() == 2
    with pytest.raises(RuntimeError, match=_OVERLAP):
        torch.add(a[:-1], 1, out=a[1:])


def test_oracle_counts_a_fill_of_an_expanded_tensor_as_deliberate():
    orc = _oracle()
    src = ["x0 = torch.tensor([[1, 2]], dtype=torch.int64)", "x1 = x0.expand((2, 2))",
           "x2 = x1; x2.masked_fill_(x2 > 1, 0)"]
    ok = Step(src[2], "masked_fill_", "int64[2, 2]", dtype="int64", shape=(2, 2), value=np.zeros((2, 2)))
    bad = Step(src[2], "masked_fill_", "int64[2, 2]", error="RuntimeError")
    head = [Step(src[0], "input", "int64[1, 2]"), Step(src[1], "expand", "int64[1, 2]")]
    want, got = Result(seed=3, steps=head + [ok]), Result(seed=3, steps=head + [bad])
    assert "expanded tensor" in orc._deliberate(want, got, (2, "masked_fill_", "int", "error None vs RuntimeError"),
                                                "cpu")


def test_median_of_all_elements_keeps_a_nan_gradient_on_the_selected_elements(device):
    # oracle seed 896763: x ** x.median() with negative bases gives a NaN gradient through the exponent; PyTorch's
    # (CPU) evenly_distribute_backward writes it only at the median's elements, the others keep their own gradient
    x = torch.tensor([2.0, 3.0, -1.0], dtype=torch.float64, device=device, requires_grad=True)
    (x ** x.median()).sum().backward()   # median 2.0 (at index 0)
    g = x.grad.tolist()
    assert math.isnan(g[0]) and g[1:] == [6.0, -2.0]   # d/dx x**2 = 2x; log(-1) reaches only the median
    y = torch.tensor([1.0, float("nan"), 2.0], device=device, requires_grad=True)
    (y.nanmedian() * float("nan")).backward()
    assert math.isnan(y.grad[0].item()) and y.grad[1:].tolist() == [0.0, 0.0]
    z = torch.tensor([1.0, 2.0, 2.0, 3.0], device=device, requires_grad=True)
    z.median().backward()
    assert z.grad.tolist() == [0.0, 0.5, 0.5, 0.0]


def test_flip_and_roll_take_no_out(device):
    x = torch.arange(4.0, device=device)   # PyTorch 2.13's flip and roll have no out= (a TypeError)
    with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
        torch.flip(x, [0], out=torch.empty(4, device=device))
    with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
        torch.roll(x, 1, out=torch.empty(4, device=device))


def test_oracle_counts_the_sign_of_a_made_nan_read_by_copysign_as_deliberate():
    orc = _oracle()
    x = np.array([1.25, -1.25])
    y = np.array([2.0, np.nan])
    head = [Step("x0 = torch.tensor([1.25, -1.25], dtype=torch.float64)", "input", "float64[2]", dtype="float64",
                 shape=(2,), value=x),
            Step("x1 = torch.pow(x0, x0)", "pow", "float64", dtype="float64", shape=(2,), value=y)]
    src = "x2 = torch.copysign(x0, x1)"
    want = Result(seed=4, steps=head + [Step(src, "copysign", "float64", dtype="float64", shape=(2,),
                                             value=np.array([1.25, 1.25]))])
    got = Result(seed=4, steps=head + [Step(src, "copysign", "float64", dtype="float64", shape=(2,),
                                            value=np.array([1.25, -1.25]))])
    assert "sign bit of a NaN" in orc._deliberate(want, got, (2, "copysign", "float64", "value"), "cpu")
    wrong = Result(seed=4, steps=head + [Step(src, "copysign", "float64", dtype="float64", shape=(2,),
                                              value=np.array([-1.25, 1.25]))])   # a finite sign read wrongly
    assert orc._deliberate(want, wrong, (2, "copysign", "float64", "value"), "cpu") is None


def test_hypot_saves_only_the_operands_its_gradients_read(device):
    # oracle seed 907520: hypot(a, b) with only a requiring grad; b changed in place before the backward
    a = torch.tensor([-1.5], device=device, requires_grad=True)
    b = torch.tensor([[-0.5, 2.0], [0.36, 2.0]], device=device)
    y = torch.hypot(a, b)
    b.clamp_(min=-1, max=1.5)
    y.sum().backward()
    want = float(np.sum(-1.5 / np.hypot(-1.5, np.array([-0.5, 2.0, 0.36, 2.0], np.float32))))
    assert a.grad.item() == pytest.approx(want, rel=1e-5)
    e = torch.tensor([3.0], device=device, requires_grad=True)
    d = torch.tensor([4.0], device=device)
    f = torch.hypot(e, d)
    d.add_(1)   # d does not require grad: not saved
    f.backward()
    assert e.grad.item() == pytest.approx(0.6)
    e.grad = None
    f = torch.hypot(e, d)
    e.data.add_(0)
    with torch.no_grad():
        e.add_(1)   # e's gradient reads e: saved, so the backward raises as PyTorch's
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        f.backward()


def test_nan_to_num_gradient_is_pytorchs_grad_times_isfinite(device):
    # oracle seed 908385: zero (signed) at the replaced elements, NaN where the incoming gradient is infinite
    x = torch.tensor([1e30, -math.inf, math.nan, -1.5], device=device, requires_grad=True)
    (torch.nan_to_num(x, nan=0.5, posinf=9.0) * torch.tensor([1.0, -2.0, -1.0, 3.0], device=device)).sum().backward()
    g = x.grad.tolist()
    assert g == [1.0, 0.0, 0.0, 3.0] and math.copysign(1, g[1]) == -1.0
    x.grad = None
    y = torch.nan_to_num(x, nan=0.5)
    torch.autograd.backward(y, torch.tensor([1.0, -math.inf, 2.0, 2.0], device=device))
    g = x.grad.tolist()
    assert g[0] == 1.0 and math.isnan(g[1]) and g[2] == 0.0 and g[3] == 2.0
    assert type(y.grad_fn).__name__ == "NanToNumBackward0"
    w = torch.tensor([0.5, -1.25], dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: torch.nan_to_num(t) ** 2, (w,))


def test_oracle_counts_an_opencl_mode_of_a_row_with_nan_as_deliberate():
    orc = _oracle()
    src = "x0 = torch.tensor([nan, 1.25, -1.75, 2.103], dtype=torch.float32)"
    head = [Step(src, "input", "float32[4]", dtype="float32", shape=(4,))]
    mode = "x1 = torch.mode(x0, -1).values"
    want = Result(seed=5, steps=head + [Step(mode, "mode", "float32", dtype="float32", shape=(),
                                             value=np.array(np.nan, np.float32))])
    got = Result(seed=5, steps=head + [Step(mode, "mode", "float32", dtype="float32", shape=(),
                                            value=np.array(-1.75, np.float32))])
    diff = (1, "mode", "float32", "value")
    assert "mode's index among equal values" in orc._deliberate(want, got, diff, "opencl")
    assert orc._deliberate(want, got, diff, "cpu") is None   # on cpu coretorch replays PyTorch's sort: a bug


def test_pow_by_a_tensor_exponent_of_one_half_is_cs_pow(device):
    # oracle seed 915927: PyTorch takes sqrt only for a Python number 0.5; a tensor exponent is pow: (-inf)**0.5 inf
    x = torch.tensor([-math.inf, -0.0, 4.0, math.inf, -1.0], device=device)
    for e in (torch.tensor(0.5, device=device), torch.tensor([0.5], device=device)):
        r = (x ** e).tolist()
        assert r[:4] == [math.inf, 0.0, 2.0, math.inf] and math.copysign(1, r[1]) == 1.0 and math.isnan(r[4])
    r = (x ** 0.5).tolist()   # a Python number: sqrt, as PyTorch
    assert math.isnan(r[0]) and math.copysign(1, r[1]) == -1.0 and r[2:4] == [2.0, math.inf]


def test_copysign_gradient_is_grad_times_the_masked_ratio(device):
    # oracle seed 922177: at self == 0 PyTorch multiplies the gradient by 0 (a NaN or inf gradient gives NaN)
    x = torch.tensor([0.0, 2.0, -0.0, -3.0], dtype=torch.float64, device=device, requires_grad=True)
    y = torch.copysign(x, torch.tensor([-1.0, -1.0, 1.0, 1.0], dtype=torch.float64, device=device))
    torch.autograd.backward(y, torch.tensor([math.nan, 1.0, math.inf, 2.0], dtype=torch.float64, device=device))
    g = x.grad.tolist()
    assert math.isnan(g[0]) and g[1] == -1.0 and math.isnan(g[2]) and g[3] == -2.0
    x.grad = None
    torch.copysign(x, -1.0).sum().backward()
    assert x.grad.tolist() == [0.0, -1.0, 0.0, 1.0]


def _layer_norm_program(row: list):
    v = np.array([row], np.float32)
    inp = Step(f"x0 = torch.tensor([{row!r}])", "input", "float32[1, 3]", dtype="float32", shape=(1, 3), value=v)
    ln = Step("x1 = F.layer_norm(x0, (3,))", "layer_norm", "float32", dtype="float32", shape=(1, 3),
              value=np.full((1, 3), np.nan, np.float32))
    return Result(seed=3, steps=[inp, ln])


def test_layer_norm_of_a_row_with_a_mean_past_2_64_is_the_finite_limit(device):
    # deliberate (README): PyTorch's CPU kernel squares the mean (NaN for three 2e19), coretorch normalises to 0;
    # below 2^64 both give 0 (three 1.8e19: a zero variance)
    for row in ([2e19] * 3, [1.8e19] * 3, [0.0, -0.75, 1e30]):
        y = torch.nn.functional.layer_norm(torch.tensor([row], device=device), (3,))
        assert np.isfinite(y.cpu().numpy()).all() and (y.cpu().numpy() == 0).all()
    orc = _oracle()
    diff = (1, "layer_norm", "float32", "value")
    assert "2^64" in orc._deliberate(_layer_norm_program([0.0, -0.75, 1e30]), _layer_norm_program([0.0, 0, 0]),
                                     diff, "cpu")
    assert orc._deliberate(_layer_norm_program([1e19, 0, 0]), _layer_norm_program([0.0, 0, 0]), diff, "cpu") is None


def test_argsort_out_needs_the_stable_keyword_as_in_pytorch(device):
    x, o = torch.tensor([3.0, 1.0, 2.0], device=device), torch.empty(3, dtype=torch.long, device=device)
    for call in (lambda: torch.argsort(x, out=o), lambda: torch.argsort(x, 0, stable=True, out=o),
                 lambda: torch.argsort(x, dim=0, out=o)):
        with pytest.raises(TypeError, match=r"argsort\(\) received an invalid combination of arguments"):
            call()
    assert torch.argsort(x, stable=True, out=o) is o and o.tolist() == [1, 2, 0]
    assert torch.argsort(x, dim=0, descending=True, stable=False, out=o).tolist() == [0, 2, 1]


def test_indexing_a_0d_tensor_gives_pytorchs_message_for_each_key(device):
    t = torch.tensor(5.0, device=device)
    for key in (0, -1):
        for op in (lambda k: t[k], lambda k: t.__setitem__(k, 1.0)):
            with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):
                op(key)
    for op in (lambda k: t[k], lambda k: t.__setitem__(k, 1.0)):
        with pytest.raises(IndexError, match=r"slice\(\) cannot be applied to a 0-dim tensor"):
            op(slice(None))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for key in ((0,), torch.tensor(0, device=device), torch.tensor([0], device=device), [0], (0, 0), (None, 0),
                    (Ellipsis, 0), (slice(None),)):
            with pytest.raises(IndexError, match="too many indices for tensor of dimension 0"):
                t[key]
    assert t[None].shape == (1,) and t[True].shape == (1,) and t[...].shape == ()


def test_where_out_takes_tensor_operands_only_as_pytorch(device):
    c = torch.tensor([True, False], device=device)
    x, o = torch.tensor([1.0, 2.0], device=device), torch.empty(2, device=device)
    with pytest.raises(TypeError, match=r"where\(\): argument 'other' \(position 3\) must be Tensor, not float"):
        torch.where(c, x, 0.0, out=o)
    with pytest.raises(TypeError, match=r"where\(\): argument 'input' \(position 2\) must be Tensor, not float"):
        torch.where(c, 1.0, 0.0, out=o)
    assert torch.where(c, x, torch.tensor(0.0, device=device), out=o) is o and o.tolist() == [1.0, 0.0]
    assert torch.where(c, x, 0.0).tolist() == [1.0, 0.0]   # without out= a scalar is fine
