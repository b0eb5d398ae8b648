"""Review 18d: eager parity with PyTorch 2.13, side by side, in the ops compiled programs use most (indexing,
reductions, shape ops, creation and random ops): a compiled replay copies eager's results, so an eager divergence
is one everywhere.  Each test states what PyTorch gives (a documented fact or numpy's value) and what coretorch gave
before the fix."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch


def _np(t):
    return t.detach().cpu().numpy()


def test_advanced_index_results_of_a_row_major_tensor_are_row_major(device):
    """PyTorch lays an advanced-indexing result out as its TensorIterator orders the operands: a row-major source
    indexed by row-major index tensors gives a row-major result, so ``x[:, idx].view(-1)`` works.  The cpu backend
    kept numpy's fancy-indexing layout (the index dims outermost in memory): ``x[:, idx]`` of a (3, 4, 5) tensor had
    strides (5, 15, 1) and ``.view(-1)`` raised "view size is not compatible"."""
    a = np.arange(60.0).reshape(3, 4, 5)
    x = torch.tensor(a, device=device)
    i, m = [0, 2], [True, False, True, True]
    cases = [((slice(None), i), (slice(None), np.array(i))),
             ((slice(None), slice(None), i), (slice(None), slice(None), np.array(i))),
             ((None, Ellipsis, i), (None, Ellipsis, np.array(i))),
             ((1, slice(None), i), None),  # (numpy would take the int for an index array too)
             ((slice(None), m, [1, 0, 4]), (slice(None), np.array(m), np.array([1, 0, 4]))),
             ((slice(0, 2), i, slice(1, 4)), (slice(0, 2), np.array(i), slice(1, 4))),
             ((slice(None), [[1], [0]], i), (slice(None), np.array([[1], [0]]), np.array(i)))]
    for key, nkey in cases:
        tkey = tuple(torch.tensor(k, device=device) if isinstance(k, list) else k for k in key)
        r = x[tkey]
        assert r.is_contiguous(), key
        want = a[1][:, i] if key[0] == 1 else a[nkey]
        np.testing.assert_array_equal(_np(r.view(-1)), want.reshape(-1))


def test_advanced_index_result_of_a_transposed_tensor_keeps_its_order(device):
    """A non-row-major source gives its stride order to the result's slice dims (PyTorch: ``y[:, idx]`` of
    ``y = x.permute(2, 1, 0)``, x (5, 4, 3), has strides (1, 3, 6)); the opencl backend made every result row-major,
    the cpu backend numpy's (1, 15, 3)."""
    a = np.arange(60.0).reshape(5, 4, 3)
    y = torch.tensor(a, device=device).permute(2, 1, 0)
    idx = torch.tensor([0, 2], device=device)
    r = y[:, idx]
    assert r.stride() == (1, 3, 6)
    np.testing.assert_array_equal(_np(r), a.transpose(2, 1, 0)[:, [0, 2]])
    assert y[idx].stride() == (20, 1, 4)


def test_std_gradient_where_the_correction_exceeds_the_count(device):
    """PyTorch's std_backward is var_backward of ``grad / (2 std)``: with ``correction`` above the count (std inf,
    N - correction < 0) the gradient is 0 (``grad / inf`` times a finite ``2 / (N - correction)``).  coretorch's
    std went through the composite variance (a division by ``max(N - correction, 0)``) whose backward gave NaN."""
    x = torch.arange(12.0, dtype=torch.float64, device=device).reshape(3, 4).requires_grad_()
    with pytest.warns(UserWarning, match="degrees of freedom"):
        s = torch.std(x, dim=0, correction=5)
    assert torch.isinf(s).all()
    (g,) = torch.autograd.grad(s.sum(), x)
    assert g.tolist() == [[0.0] * 4] * 3
    with pytest.warns(UserWarning, match="degrees of freedom"):
        s, m = torch.std_mean(x, dim=0, correction=5)
    (g,) = torch.autograd.grad(s.sum() + m.sum(), x)
    np.testing.assert_allclose(_np(g), np.full((3, 4), 1 / 3))
    # the usual case keeps the usual gradient: (x - mean) / ((N - 1) std)
    y = torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64, device=device, requires_grad=True)
    (g,) = torch.autograd.grad(y.std(), y)
    a = np.array([1.0, 2.0, 4.0])
    np.testing.assert_allclose(_np(g), (a - a.mean()) / (2 * a.std(ddof=1)), rtol=1e-12)


@pytest.mark.parametrize("ord", [-1, -2, -0.5])
def test_negative_order_vector_norm_gradient_at_zeros(device, ord):
    """PyTorch's linalg_vector_norm_backward for ord < 1 masks the elements that are 0 and scales by
    ``norm ** (1 - ord)``: a row holding a 0 has norm 0 and gradient 0.  coretorch computed negative orders as the
    composite ``sum(|x| ** ord) ** (1 / ord)``, whose backward gave NaN there."""
    z = torch.tensor([[0.0, 0.0], [1.0, 0.0], [1.0, 2.0]], dtype=torch.float64, device=device, requires_grad=True)
    n = torch.linalg.vector_norm(z, ord=ord, dim=1)
    a = np.array([1.0, 2.0])
    want = (a ** ord).sum() ** (1 / ord)
    np.testing.assert_allclose(_np(n), [0.0, 0.0, want], rtol=1e-12)
    (g,) = torch.autograd.grad(n.sum(), z)
    gw = np.sign(a) * np.abs(a) ** (ord - 1) * want ** (1 - ord)
    np.testing.assert_allclose(_np(g), [[0.0, 0.0], [0.0, 0.0], gw], rtol=1e-12)


def test_zero_order_norm_has_no_gradient(device):
    """PyTorch's backward of the 0-"norm" (the count of non-zeros) returns no gradient: ``x.grad`` stays None after
    ``vector_norm(x, 0).backward()`` (an optimizer then skips the parameter).  coretorch gave a zero gradient."""
    z = torch.tensor([[0.0, 0.0], [1.0, 0.0]], device=device, requires_grad=True)
    n = torch.linalg.vector_norm(z, 0)
    assert n.item() == 1.0 and n.requires_grad
    n.backward()
    assert z.grad is None
    torch.norm(z, p=0, dim=1).sum().backward()
    assert z.grad is None
    (torch.linalg.vector_norm(z, 0) + z.sum()).backward()
    assert z.grad.tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_matrix_norm_of_order_none_is_a_type_error(device):
    """``linalg.matrix_norm(A, None)``: PyTorch's argument parser raises TypeError (ord is a number or a string);
    coretorch raised RuntimeError("Order None not supported")."""
    a = torch.ones(2, 3, device=device)
    with pytest.raises(TypeError):
        torch.linalg.matrix_norm(a, None)
    with pytest.raises(RuntimeError, match="not supported"):
        torch.linalg.matrix_norm(a, 3)


def test_repeat_interleave_checks_output_size(device):
    """PyTorch checks ``output_size`` against the repeats' sum ("allocated size does not match required size");
    coretorch returned a tensor of ``output_size`` rows repeated wrongly (``[[0, 1, 2], [3, 4, 5]]`` with repeats
    [1, 2] and output_size 4 gave four rows).  Float repeats: PyTorch's NotImplementedError (no kernel for Float)."""
    x = torch.arange(6.0, device=device).reshape(2, 3)
    r = torch.tensor([1, 2], device=device)
    assert x.repeat_interleave(r, dim=0, output_size=3).tolist() == [[0, 1, 2], [3, 4, 5], [3, 4, 5]]
    for size in (2, 4):
        with pytest.raises(RuntimeError, match="allocated size does not match required size"):
            x.repeat_interleave(r, dim=0, output_size=size).tolist()
    with pytest.raises(NotImplementedError):
        x.repeat_interleave(torch.tensor([1.0, 2.0], device=device), dim=0)


def test_cat_stack_and_roll_of_transposed_tensors_are_row_major(device):
    """PyTorch's cat (and stack) result is channels-last when every input is, else row-major; roll's is laid out as
    its input's suggested memory format.  The cpu backend kept numpy's concatenate layout: ``cat([a.t(), b.t()])``
    was column-major (``.view(-1)`` raised) and so were stack and roll of transposed tensors; roll of a
    channels-last tensor along C lost its layout."""
    a = np.arange(12.0).reshape(4, 3)
    t = torch.tensor(a, device=device).t()
    c = torch.cat([t, t])
    assert c.is_contiguous()
    np.testing.assert_array_equal(_np(c.view(-1)), np.concatenate([a.T, a.T]).reshape(-1))
    assert torch.stack([t, t]).is_contiguous() and torch.stack([t, t], 2).is_contiguous()
    for shifts, dims in ((1, 0), (1, 1), ((1, 2), (0, 1)), (0, 0)):
        r = torch.roll(t, shifts, dims)
        assert r.is_contiguous()
        np.testing.assert_array_equal(_np(r), np.roll(a.T, shifts, dims))
    cl = torch.randn(2, 3, 4, 5, device=device).to(memory_format=torch.channels_last)
    assert torch.cat([cl, cl]).is_contiguous(memory_format=torch.channels_last)
    assert torch.cat([cl, cl.contiguous()]).is_contiguous()
    for dims in (0, 1, 3):
        r = torch.roll(cl, 1, dims)
        assert r.is_contiguous(memory_format=torch.channels_last)
        torch.testing.assert_close(r.contiguous(), torch.roll(cl.contiguous(), 1, dims))


def test_scans_renorm_narrow_copy_layer_norm_results_are_row_major(device):
    """PyTorch gives row-major results for ``cummax``/``cummin``/``logcumsumexp``, ``renorm``, ``narrow_copy`` and
    ``layer_norm`` of a transposed tensor; the cpu backend kept the input's column-major order (``.view(-1)``
    raised)."""
    a = np.arange(12.0).reshape(4, 3) / 7
    t = torch.tensor(a, device=device).t()
    outs = {"cummax": torch.cummax(t, 1)[0], "cummax_i": torch.cummax(t, 1)[1], "cummin": torch.cummin(t, 0)[0],
            "logcumsumexp": torch.logcumsumexp(t, 1), "renorm": torch.renorm(t, 2, 0, 1.0),
            "narrow_copy": t.narrow_copy(0, 1, 2), "layer_norm": torch.nn.functional.layer_norm(t, (4,))}
    for name, r in outs.items():
        assert r.is_contiguous(), name
        r.view(-1)
    np.testing.assert_allclose(_np(outs["logcumsumexp"]), np.logaddexp.accumulate(a.T, axis=1), rtol=1e-6)
    np.testing.assert_array_equal(_np(outs["cummax"]), np.maximum.accumulate(a.T, axis=1))
    np.testing.assert_array_equal(_np(outs["narrow_copy"]), a.T[1:3])
    assert t.narrow_copy(0, 0, 3).data_ptr() != t.data_ptr()


def test_integer_linspace_and_logspace_convert_their_bounds_first(device):
    """PyTorch's integer linspace/logspace convert ``start``/``end`` to the dtype first (c10's checked Scalar
    conversion: truncated, PyTorch's overflow error): ``linspace(0.5, 3.5, 7, dtype=int64)`` spans 0 to 3 and is
    [0, 0, 1, 1, 2, 2, 3]; ``logspace(0.5, 3.5, 7, dtype=int64)`` is 10 ** linspace(0, 3, 7) truncated.  coretorch
    spaced the float bounds and truncated after ([0, 1, 1, 2, 2, 3, 3] and [3, 10, ...]) and raised nothing for
    ``linspace(-1.0, 5, 3, dtype=uint8)``."""
    assert torch.linspace(0.5, 3.5, 7, dtype=torch.int64, device=device).tolist() == [0, 0, 1, 1, 2, 2, 3]
    assert torch.logspace(0.5, 3.5, 7, dtype=torch.int64, device=device).tolist() == [1, 3, 10, 31, 100, 316, 1000]
    assert torch.linspace(-3.7, 8.2, 5, dtype=torch.int32, device=device).tolist() == [-3, 0, 2, 5, 8]
    assert torch.linspace(-1, 5, 3, dtype=torch.uint8, device=device).tolist() == [255, 130, 5]  # (an int wraps)
    for args in ((-1.0, 5, 3), (0, 256, 3), (0, 255.5, 3), (-3.7, 8, 1)):
        with pytest.raises(RuntimeError, match="cannot be converted to type uint8_t without overflow"):
            torch.linspace(*args, dtype=torch.uint8, device=device)
    with pytest.raises(RuntimeError, match="int8_t"):
        torch.logspace(-128.9, 0, 3, dtype=torch.int8, device=device)
    assert torch.linspace(-3.7, 8, 0, dtype=torch.uint8, device=device).tolist() == []
    assert torch.logspace(-0.37, 0.82, 1, base=3, dtype=torch.uint8, device=device).tolist() == [0]
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.logspace(25, 3, 1, dtype=torch.int64, device=device)
    with pytest.raises(RuntimeError, match="non-negative"):
        torch.logspace(0, 1, -1, device=device)


def test_bernoulli_checks_its_probabilities_on_every_device(device):
    """PyTorch raises "Expected p_in >= 0 && p_in <= 1" for a probability outside [0, 1] or NaN.  coretorch's
    check ran in host memory only and let NaN through: ``bernoulli(tensor([nan]))`` gave 0 on the cpu, and on opencl
    ``bernoulli(tensor([1.5]))`` gave 1."""
    assert torch.bernoulli(torch.tensor([0.0, 1.0], device=device)).tolist() == [0.0, 1.0]
    for p in ([1.5], [float("nan")], [-0.1, 0.5]):
        with pytest.raises(RuntimeError, match="p_in >= 0"):
            torch.bernoulli(torch.tensor(p, device=device)).tolist()


def test_index_fill_wraps_negative_indices(device):
    """PyTorch's index_fill takes an index in [-size, size) (-1 is the last); coretorch raised IndexError for any
    negative index.  The gradients stay index_fill's (0 at the filled places; the value's the count filled)."""
    x = torch.zeros(3, 4, dtype=torch.float64, device=device, requires_grad=True)
    v = torch.tensor(2.0, dtype=torch.float64, device=device, requires_grad=True)
    y = x.index_fill(1, torch.tensor([-1, 0], device=device), v)
    assert y.tolist() == [[2.0, 0.0, 0.0, 2.0]] * 3
    y.sum().backward()
    assert x.grad.tolist() == [[0.0, 1.0, 1.0, 0.0]] * 3 and v.grad.item() == 6.0
    assert torch.zeros(3, device=device).index_fill_(0, torch.tensor([-3], device=device), 1.0).tolist() == [1, 0, 0]
    with pytest.raises(IndexError, match="-5 is out of bounds"):
        torch.zeros(3, 4, device=device).index_fill(1, torch.tensor([-5], device=device), 1.0).tolist()


def test_integer_index_add_truncates_a_float_alpha(device):
    """PyTorch's index_add on an integer tensor converts ``alpha`` to an integer first (0.5 -> 0, 1.7 -> 1):
    ``zeros(3, int64).index_add(0, [0, 0], [3, 3], alpha=1.7)`` is [6, 0, 0]; coretorch multiplied by 1.7 and
    truncated the products ([10, 0, 0])."""
    x = torch.zeros(3, dtype=torch.int64, device=device)
    i = torch.tensor([0, 0], device=device)
    assert x.index_add(0, i, torch.tensor([3, 3], device=device), alpha=1.7).tolist() == [6, 0, 0]
    assert x.index_add(0, i, torch.tensor([1, 2], device=device), alpha=0.5).tolist() == [0, 0, 0]
    assert x.index_add(0, i, torch.tensor([3, 3], device=device), alpha=-1.7).tolist() == [-6, 0, 0]


@pytest.mark.parametrize("dtype", ["int16", "int8"])
def test_index_tensors_of_int16_or_int8_are_refused(device, dtype):
    """PyTorch indexes with long, int, byte or bool tensors only: ``x[int16 tensor]`` (and setitem, index_put_)
    raise IndexError("tensors used as indices must be long, int, byte or bool tensors"); coretorch indexed."""
    x = torch.zeros(3, device=device)
    i = torch.tensor([1], dtype=getattr(torch, dtype), device=device)
    one = torch.tensor(1.0, device=device)
    for f in (lambda: x[i], lambda: x.__setitem__(i, 1.0), lambda: x.index_put_((i,), one)):
        with pytest.raises(IndexError, match="long, int, byte or bool"):
            f()


@pytest.mark.parametrize("float_mask", [False, True])
def test_attention_rows_with_every_key_masked_are_zero(device, float_mask):
    """PyTorch's scaled_dot_product_attention (its _safe_softmax) gives 0 for a query row whose every key is
    masked (a padding mask), with zero gradients there; coretorch's softmax gave NaN for the row (and NaN gradients
    for q, k and v).  Rows with a visible key are unchanged."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(*s, generator=g, dtype=torch.float64).to(device).requires_grad_()
               for s in ((1, 1, 2, 4), (1, 1, 3, 4), (1, 1, 3, 2)))
    keep = torch.tensor([[False, False, False], [True, False, True]], device=device)
    mask = torch.where(keep, 0.0, float("-inf")).to(torch.float64) if float_mask else keep
    o = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert o[0, 0, 0].tolist() == [0.0, 0.0]
    w = torch.softmax((q[0, 0, 1] @ k[0, 0].t() / 2).masked_fill(~keep[1], float("-inf")), -1)
    torch.testing.assert_close(o[0, 0, 1], w @ v[0, 0])
    gq, gk, gv = torch.autograd.grad(o.sum(), (q, k, v))
    assert gq[0, 0, 0].tolist() == [0.0] * 4
    assert gk[0, 0, 1].tolist() == [0.0] * 4 and gv[0, 0, 1].tolist() == [0.0] * 2
    assert not any(torch.isnan(t).any() for t in (gq, gk, gv))
    m2 = mask.clone().requires_grad_() if float_mask else mask  # (the composite path: a mask with a gradient)
    o2 = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m2)
    torch.testing.assert_close(o2, o)
    assert not torch.isnan(torch.autograd.grad(o2.sum(), q)[0]).any()


def test_multihead_attention_without_weights_zeroes_fully_masked_rows(device):
    """``nn.MultiheadAttention(..., need_weights=False)``: PyTorch runs scaled_dot_product_attention, whose fully
    masked rows are zeros (the output is the out-projection's bias there); with ``need_weights=True`` it computes
    softmax and returns NaN.  coretorch gave NaN for both."""
    torch.manual_seed(0)
    m = torch.nn.MultiheadAttention(4, 2, batch_first=True).to(device)
    x = torch.randn(2, 3, 4, device=device)
    kpm = torch.tensor([[True, True, True], [False, True, False]], device=device)
    o, w = m(x, x, x, key_padding_mask=kpm, need_weights=False)
    assert w is None and not torch.isnan(o).any()
    torch.testing.assert_close(o[0], m.out_proj.bias.detach().expand(3, 4))
    o2, w2 = m(x, x, x, key_padding_mask=kpm, need_weights=True)
    assert torch.isnan(o2[0]).all() and torch.isnan(w2[0]).all()
    torch.testing.assert_close(o2[1], o[1])


def test_ctc_loss_gradient_of_free_log_probs_is_pytorchs(device):
    """PyTorch's ctc_loss backward returns ``(exp(log_probs) - posterior) * grad`` for t < input_length (0 after):
    the gradient of the logits of a log_softmax, also when ``log_probs`` is a leaf.  coretorch's composite gave the
    plain ``-posterior * grad``, so a leaf's ``.grad`` differed by ``exp(log_probs)`` (through log_softmax both
    agree).  The loss is unchanged, and a sample's gradient sums to 0 over the classes at each step only in
    PyTorch's form when log_probs is normalised."""
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(6, 2, 4, generator=g, dtype=torch.float64).to(device)
    lp = torch.log_softmax(logits, 2).detach().requires_grad_()
    x = logits.clone().requires_grad_()
    args = (torch.tensor([[1, 2], [3, 3]]), torch.tensor([6, 5]), torch.tensor([2, 2]))
    loss = torch.nn.functional.ctc_loss(lp, *args, reduction="sum")
    (glp,) = torch.autograd.grad(loss, lp)
    loss2 = torch.nn.functional.ctc_loss(torch.log_softmax(x, 2), *args, reduction="sum")
    (gx,) = torch.autograd.grad(loss2, x)
    torch.testing.assert_close(loss, loss2)
    torch.testing.assert_close(glp[:, 0], gx[:, 0])  # PyTorch's leaf gradient is the logits' one
    torch.testing.assert_close(glp[:5, 1], gx[:5, 1])
    assert glp[5, 1].tolist() == [0.0] * 4  # past the input length
    torch.testing.assert_close(glp.sum(2)[:5], torch.zeros(5, 2, dtype=torch.float64, device=device))


def test_view_as_its_own_dtype(device):
    """``x.view(x.dtype)``: PyTorch returns a tensor sharing x's memory, neither a view nor in the graph (no
    grad_fn, requires_grad False); coretorch raised NotImplementedError (view(dtype) of another dtype: see
    test_review19f)."""
    x = torch.ones(2, 3, device=device, requires_grad=True)
    y = x.view(x.dtype)
    assert not y.requires_grad and y.grad_fn is None and y._base is None
    assert y.data_ptr() == x.data_ptr() and y.shape == x.shape
    z = torch.zeros(3, device=device)
    z.view(torch.float32).add_(1)
    assert z.tolist() == [1.0, 1.0, 1.0]
    assert z.view(torch.int32).tolist() == [1065353216] * 3  # (1.0's bits)


def test_a_0d_integer_tensor_or_numpy_int_as_dim(device):
    """PyTorch takes anything with ``__index__`` for an int ``dim``: ``x.sum(torch.tensor(1))``,
    ``x.prod(np.int64(0))``, ``torch.roll(x, torch.tensor(1), torch.tensor(1))``.  coretorch iterated the 0-d
    tensor ("iteration over a 0-d tensor") and refused a numpy int in prod."""
    x = torch.arange(6.0, device=device).reshape(2, 3)
    one = torch.tensor(1)
    assert x.sum(one).tolist() == [3.0, 12.0] and x.mean(one).tolist() == [1.0, 4.0]
    assert x.amax(one).tolist() == [2.0, 5.0] and x.std(one).tolist() == [1.0, 1.0]
    assert x.logsumexp(np.int64(0)).shape == (3,) and torch.count_nonzero(x, one).tolist() == [2, 3]
    assert x.prod(np.int64(0)).tolist() == [0.0, 4.0, 10.0] and x.prod(torch.tensor(1)).tolist() == [0.0, 60.0]
    assert torch.roll(x, one, one).tolist() == [[2.0, 0.0, 1.0], [5.0, 3.0, 4.0]]
    with pytest.raises(TypeError):
        x.prod(1.0)


def test_tensor_of_a_list_keeps_numpy_scalar_and_tensor_dtypes(device):
    """PyTorch infers ``torch.tensor(list)``'s dtype element by element: a numpy scalar or a tensor keeps its own
    dtype, a Python float is the default dtype, and the dtypes promote.  ``torch.tensor([a.mean(), a.std()])`` of a
    float64 array is float64 (coretorch: float32, the values rounded), ``[np.int16(3)]`` int16 (coretorch: int64),
    ``[np.float16(2.5)]`` float16, ``[np.int8(1), np.uint8(2)]`` int16."""
    a = np.array([0.1, 0.2, 0.7])
    t = torch.tensor([a.mean(), a.std()], device=device)
    assert t.dtype == torch.float64 and t.tolist() == [a.mean(), a.std()]
    cases = [([np.float16(2.5)], torch.float16), ([np.float16(2.5), 1.0], torch.float32), ([np.int16(3)], torch.int16),
             ([np.uint8(3)], torch.uint8), ([np.int8(1), np.uint8(2)], torch.int16), ([np.int8(1), 2], torch.int64),
             ([[np.float64(1.0)], [2.5]], torch.float64), ([np.int32(1), 2.5], torch.float32),
             ([torch.tensor(1.5, dtype=torch.float64), 2.0], torch.float64), ([torch.tensor(True), 2], torch.int64),
             ([1, 2.5, True], torch.float32), ([True, False], torch.bool)]
    for data, want in cases:
        assert torch.tensor(data, device=device).dtype == want, data


def test_mean_gradient_is_dense_and_writable(device):
    """PyTorch's mean backward is ``grad.expand(...) / n``: a dense tensor, so a hook may scale it in place
    (``g.mul_(3)`` reaches .grad) and ``autograd.grad(x.mean(), x)[0]`` is writable.  coretorch's was a broadcast
    view (stride 0): the in-place write raised "more than one element ... refers to a single memory location".
    (sum's gradient is the broadcast view in PyTorch too.)"""
    x = torch.ones(2, 3, dtype=torch.float64, device=device, requires_grad=True)
    (g,) = torch.autograd.grad(x.mean(), x)
    assert g.is_contiguous()
    g.add_(1)
    assert g.tolist() == [[1 + 1 / 6] * 3] * 2
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g.mul_(3))
    y.mean(1).sum().backward()
    assert y.grad.tolist() == [[1.0] * 3] * 2 and x.grad.tolist() == [[2.0] * 3] * 2


def test_reductions_of_a_permuted_tensor_are_row_major(device):
    """PyTorch's reduction results are row-major: ``x.sum(0)`` of a (3, 3, 2) view of a (3, 2, 3) tensor has
    strides (2, 1).  The cpu backend kept numpy's layout of the input's order ((1, 3): ``.view(-1)`` raised), for
    sum, mean, amax, prod, std, var, logsumexp, all, any, count_nonzero."""
    a = np.arange(18.0).reshape(3, 2, 3)
    x = torch.tensor(a, device=device).transpose(1, 2)
    outs = [x.sum(0), x.mean(0), x.amax(0), x.prod(0), x.std(0), x.var(0, keepdim=True), x.logsumexp(0),
            (x > 3).all(0), (x > 3).any(0), torch.count_nonzero(x, 0), x.nansum(0), x.norm(dim=0)]
    for r in outs:
        assert r.is_contiguous()
        r.view(-1)
    np.testing.assert_array_equal(_np(outs[0]), a.transpose(0, 2, 1).sum(0))


def test_scatter_reduce_takes_max_and_min(device):
    """PyTorch 2.13's scatter_reduce takes ``"max"``/``"min"`` as ``"amax"``/``"amin"`` (its error message lists
    only the five names); coretorch raised "reduce argument must be either ...".  An unknown name still raises."""
    x = torch.tensor([5.0, 1.0, 3.0], device=device)
    i = torch.tensor([0, 0, 1], device=device)
    s = torch.tensor([2.0, 4.0, 7.0], device=device)
    assert x.scatter_reduce(0, i, s, "max").tolist() == [5.0, 7.0, 3.0]
    assert x.scatter_reduce(0, i, s, "max", include_self=False).tolist() == [4.0, 7.0, 3.0]
    assert x.clone().scatter_reduce_(0, i, s, "min").tolist() == [2.0, 1.0, 3.0]
    with pytest.raises(RuntimeError, match="reduce argument must be"):
        x.scatter_reduce(0, i, s, "foo")


def test_scatter_takes_a_numpy_number(device):
    """``x.scatter(0, idx, np.float32(2.7))``: PyTorch takes a numpy number as the value (its Python number);
    coretorch raised "argument 'src' must be Tensor or Number"."""
    x = torch.zeros(3, device=device)
    i = torch.tensor([1], device=device)
    torch.testing.assert_close(x.scatter(0, i, np.float32(2.7)), torch.tensor([0.0, 2.7, 0.0], device=device))
    assert torch.zeros(3, dtype=torch.int64, device=device).scatter(0, i, np.int64(3)).tolist() == [0, 3, 0]
    with pytest.raises(TypeError):
        x.scatter(0, i, "a")


def test_gather_with_a_transposed_index_is_row_major(device):
    """PyTorch's gather (and take_along_dim) allocates its result row-major whatever the index's layout; the cpu
    backend's numpy fancy indexing followed a transposed index ((1, 4) strides for a (4, 3) result: ``.view(-1)``
    raised)."""
    a = np.arange(12.0).reshape(4, 3)
    x = torch.tensor(a, device=device)
    idx = torch.tensor([[0, 2, 1, 1], [2, 2, 0, 1], [1, 0, 0, 2]], device=device).t()
    for r in (torch.gather(x, 1, idx), torch.take_along_dim(x, idx, 1)):
        assert r.is_contiguous()
        np.testing.assert_array_equal(_np(r.view(-1)), np.take_along_axis(a, _np(idx), 1).reshape(-1))


def test_repeat_interleave_never_aliases_its_input(device):
    """PyTorch's repeat_interleave returns a new tensor.  coretorch's int-repeats path (unsqueeze, expand,
    reshape) returned a view of the input where the reshape could view it: ``b = a.repeat_interleave(1);
    b.add_(10)`` changed ``a``, and ``x.repeat_interleave(2, 0)`` of a (1, 4) tensor had stride 0 (an in-place
    write raised)."""
    a = torch.arange(3.0, device=device)
    b = a.repeat_interleave(1)
    b.add_(10)
    assert a.tolist() == [0.0, 1.0, 2.0] and b.tolist() == [10.0, 11.0, 12.0]
    x = torch.arange(4.0, device=device).reshape(1, 4)
    y = x.repeat_interleave(2, 0)
    assert y.is_contiguous() and y.data_ptr() != x.data_ptr()
    y.add_(1)
    assert x.tolist() == [[0.0, 1.0, 2.0, 3.0]] and y.tolist() == [[1.0, 2.0, 3.0, 4.0]] * 2
    w = torch.ones(2, 3, device=device, requires_grad=True)
    w.repeat_interleave(1, 0).sum().backward()
    assert w.grad.tolist() == [[1.0] * 3] * 2


def test_tril_triu_of_a_permuted_batch_are_row_major(device):
    """PyTorch's tril/triu results are row-major: ``tril`` of a (3, 4, 2) tensor permuted (2, 1, 0) has strides
    (12, 4, 1).  The cpu backend's np.tril kept numpy's order of the input ((1, 8, 2): ``.view(-1)``
    raised)."""
    a = np.arange(24.0).reshape(4, 3, 2)
    x = torch.tensor(a, device=device).permute(2, 1, 0)
    b = a.transpose(2, 1, 0)
    for r, want in ((torch.tril(x), np.tril(b)), (torch.triu(x, 1), np.triu(b, 1))):
        assert r.is_contiguous()
        np.testing.assert_array_equal(_np(r.view(-1)), want.reshape(-1))


def test_asarray_copy_argument_and_scalar_conversion_errors(device):
    """``torch.asarray(obj, copy=...)``: PyTorch copies always (True), never (False: ValueError "can't alias ..."
    where it must) or where needed (None); coretorch's asarray was as_tensor and refused ``copy``.  ``int(t)`` /
    ``float(t)`` of a tensor of several elements: PyTorch's ValueError (coretorch: item()'s RuntimeError)."""
    x = torch.arange(3.0, device=device)
    assert torch.asarray(x, copy=False).data_ptr() == x.data_ptr()
    y = torch.asarray(x, copy=True)
    y[0] = 7
    assert x.tolist() == [0.0, 1.0, 2.0] and y.tolist() == [7.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="can't alias tensor"):
        torch.asarray(x, dtype=torch.int64, copy=False)
    with pytest.raises(ValueError, match="can't alias arbitrary sequence"):
        torch.asarray([1, 2], copy=False)
    assert torch.asarray([1, 2.5], device=device).tolist() == [1.0, 2.5]
    for f in (int, float, complex):
        with pytest.raises(ValueError, match="only one element tensors"):
            f(x)
    assert int(x[1:2]) == 1 and float(x[2]) == 2.0


def test_python_types_as_dtypes(device):
    """PyTorch's argument parser takes the Python types float, int and bool for ``dtype`` (float64, int64, bool):
    ``torch.zeros(2, dtype=bool)``, ``x.to(float)``, ``torch.arange(3, dtype=float)``.  coretorch raised TypeError
    ("argument 'dtype' must be coretorch.dtype") or AttributeError (arange, to(dtype=int))."""
    x = torch.ones(2, device=device)
    cases = [(lambda: x.to(float), torch.float64), (lambda: x.to(dtype=int), torch.int64),
             (lambda: torch.zeros(2, dtype=bool, device=device), torch.bool),
             (lambda: torch.full((2,), 1, dtype=int, device=device), torch.int64),
             (lambda: torch.arange(3, dtype=float, device=device), torch.float64),
             (lambda: torch.linspace(0, 1, 3, dtype=float, device=device), torch.float64),
             (lambda: torch.tensor([1], dtype=float, device=device), torch.float64),
             (lambda: torch.randn(2, dtype=float, device=device), torch.float64),
             (lambda: torch.zeros_like(x, dtype=int), torch.int64), (lambda: x.new_zeros(2, dtype=bool), torch.bool),
             (lambda: x.new_full((2,), 3, dtype=int), torch.int64), (lambda: x.to(device, float), torch.float64),
             (lambda: x.sum(dtype=float), torch.float64), (lambda: x.mean(dtype=float), torch.float64),
             (lambda: x.prod(dtype=int), torch.int64), (lambda: x.cumsum(0, dtype=float), torch.float64)]
    for f, want in cases:
        assert f().dtype == want


def test_arange_of_non_finite_bounds_raises_pytorchs_error(device):
    """``torch.arange(0, inf)``: PyTorch's RuntimeError "unsupported range: 0 -> inf" (a NaN step: "step must be
    nonzero"); coretorch raised Python's OverflowError / ValueError from its length computation."""
    for args, msg in (((0, float("inf")), "unsupported range: 0 -> inf"), ((float("-inf"), 0), "-inf -> 0"),
                      ((0, float("nan")), "0 -> nan"), ((0, 1, float("nan")), "step must be nonzero")):
        with pytest.raises(RuntimeError, match=msg):
            torch.arange(*args, device=device)
    assert torch.arange(0, 1, float("inf"), device=device).tolist() == []


def test_a_uint8_mask_warns_as_pytorch(device):
    """A uint8 index tensor is a mask with PyTorch's deprecation warning ("indexing with dtype torch.uint8 is now
    deprecated"), attributed to the caller's line; coretorch was silent."""
    x = torch.arange(3.0, device=device)
    m = torch.tensor([1, 0, 1], dtype=torch.uint8, device=device)
    with pytest.warns(UserWarning, match="uint8 is now deprecated") as rec:
        assert x[m].tolist() == [0.0, 2.0]
    assert rec[0].filename == __file__
    with pytest.warns(UserWarning, match="uint8 is now deprecated"):
        x[m] = torch.tensor([5.0, 6.0], device=device)  # (a one-element value is masked_fill_: refused, 22)
    assert x.tolist() == [5.0, 1.0, 6.0]
