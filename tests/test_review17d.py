"""Review 17d: eager parity with PyTorch 2.13 for items earlier reviews left open: float -> integer casts of
out-of-range values, integer overflow in reductions and scans, storage offsets of detached views, the layout
(strides) of elementwise results.  Each test states what PyTorch gives and what coretorch gave before the fix."""
from __future__ import annotations

import pytest

import coretorch as torch

_BIG = [2147483653.0, -2147483653.0, 4294967303.0, 1e10 + 3, float("nan"), 300.0, -5.5, 1e19, -1e19, float("inf")]
_BIG_U8 = [5, 251, 7, 3, 0, 44, 251, 0, 0, 0]  # PyTorch 2.13 (x86): through int64, as c10's float -> uint8


def test_float64_to_uint8_goes_through_int64(device):
    """PyTorch casts float64 to uint8 through int64 (2**31 + 5 -> 5, -(2**31 + 5) -> 251); the cpu backend cast
    straight with numpy (through int32 on x86: 0 for every value of 2**31 or more).  The opencl backend agreed
    with PyTorch already.  Every route that casts: ``to``, ``copy_``, slice assignment, ``sum(dtype=)``."""
    x = torch.tensor(_BIG, dtype=torch.float64, device=device)
    assert x.to(torch.uint8).tolist() == _BIG_U8
    assert x.byte().tolist() == _BIG_U8
    assert torch.zeros(10, dtype=torch.uint8, device=device).copy_(x).tolist() == _BIG_U8
    u = torch.zeros(10, dtype=torch.uint8, device=device)
    u[:] = x
    assert u.tolist() == _BIG_U8
    assert x.reshape(2, 5).t().to(torch.uint8).t().reshape(-1).tolist() == _BIG_U8
    assert x[:1].sum(dtype=torch.uint8).item() == 5


def test_float_to_small_int_casts_match_pytorch(device):
    """The other float -> integer pairs of out-of-range values, as PyTorch 2.13 gives them (these agreed already:
    pinned so that a faster cast cannot bring a difference back)."""
    x = torch.tensor(_BIG, dtype=torch.float64, device=device)
    assert x.to(torch.int8).tolist() == [0, 0, 0, 0, 0, 44, -5, 0, 0, 0]
    assert x.to(torch.int16).tolist() == [0, 0, 0, 0, 0, 300, -5, 0, 0, 0]
    m = -2147483648
    assert x.to(torch.int32).tolist() == [m, m, m, m, m, 300, -5, m, m, m]
    L = -9223372036854775808
    assert x.to(torch.int64).tolist() == [2147483653, -2147483653, 4294967303, 10000000003, L, 300, -5, L, L, L]
    f = x.float()
    assert f.to(torch.uint8).tolist() == [0, 0, 0, 0, 0, 44, 251, 0, 0, 0]
    assert f.to(torch.int16).tolist() == [0, 0, 0, 0, 0, 300, -5, 0, 0, 0]


def test_float64_to_uint8_in_a_compiled_replay(device):
    """A compiled replay's planned cast (the cpu backend's ``compile_out`` variant, ``np.copyto``) gave 1, 1, 45
    from the second call where eager gives 6, 252, 45: it cast straight too."""
    x = torch.tensor([2147483653.0, -2147483653.0, 300.0], dtype=torch.float64, device=device)

    def f(x):
        return (x * 1).to(torch.uint8) + 1
    cf = torch.compile(f)
    for _ in range(3):
        assert cf(x).tolist() == [6, 252, 45]


def test_integer_sum_and_prod_with_a_small_dtype_wrap(device):
    """``sum``/``prod``/``cumsum``/``cumprod`` with ``dtype=int32``/``int8``/``uint8`` wrap in that dtype
    (PyTorch: [2**31 - 1, 1, 7, 2**31 - 1].sum(dtype=int32) == 6).  The cpu backend's numpy reductions and scans
    accumulate small integers in int64 and kept that array under an int32 tensor: 4294967302 in an "int32" tensor
    (and 200 in an "int8" one)."""
    y = torch.tensor([2**31 - 1, 1, 7, 2**31 - 1], dtype=torch.int32, device=device)
    assert y.sum().item() == 4294967302 and y.sum().dtype is torch.int64
    r = y.sum(dtype=torch.int32)
    assert r.dtype is torch.int32 and r.item() == 6
    assert y.cumsum(0, dtype=torch.int32).tolist() == [2147483647, -2147483648, -2147483641, 6]
    assert y.prod(dtype=torch.int32).item() == 7
    assert y.cumprod(0, dtype=torch.int32).tolist() == [2147483647, 2147483647, 2147483641, 7]
    z = torch.tensor([100, 100, 100, -100], dtype=torch.int8, device=device)
    assert z.sum(dtype=torch.int8).item() == -56
    assert z.cumsum(0, dtype=torch.int8).tolist() == [100, -56, 44, -56]
    assert z.prod(dtype=torch.int8).item() == 0
    u = torch.tensor([200, 100, 3], dtype=torch.uint8, device=device)
    assert u.sum(dtype=torch.uint8).item() == 47
    assert u.cumprod(0, dtype=torch.uint8).tolist() == [200, 32, 96]
    w = torch.full((200, 5), 2**30, dtype=torch.int32, device=device)   # (the cpu's transposed short-row path)
    assert w.sum(-1, dtype=torch.int32).tolist() == [2**30] * 200
    assert w.sum(-1, keepdim=True, dtype=torch.int32).tolist() == [[2**30]] * 200


def test_int64_sum_prod_and_scans_wrap(device):
    """int64 overflow wraps as two's complement (PyTorch); the opencl kernels added in signed C types (undefined
    behaviour on overflow: PoCL happened to wrap) and now add unsigned."""
    M = 2**63 - 1
    x = torch.tensor([M, 1, 5, M, M, -3], device=device)
    assert x.sum().item() == -(2**63)
    assert x.reshape(2, 3).sum(0).tolist() == [-2, -(2**63), 2]
    assert x.cumsum(0).tolist() == [M, -(2**63), -(2**63) + 5, 4, -(2**63) + 3, -(2**63)]
    assert x.prod().item() == -9223372036854775793
    assert x.cumprod(0).tolist()[-1] == -9223372036854775793
    big = torch.full((10000,), M, dtype=torch.int64, device=device)
    assert big.sum().item() == -10000
    assert big.cumsum(0)[-3:].tolist() == [-9998, 9223372036854765809, -10000]


def test_a_parameter_of_a_detached_view_keeps_its_storage(device):
    """``nn.Parameter(a[1:5].detach())`` shares a's storage at offset 1 (PyTorch: ``storage_offset() == 1``, the
    storage a's 40 bytes, ``data_ptr`` 4 bytes past a's); coretorch's parameter had lost the view's root: offset 0 and
    a 16-byte storage of its own (``as_strided`` from the storage's start read the wrong elements)."""
    a = torch.arange(10.0, device=device)
    for p in (torch.nn.Parameter(a[1:5].detach()), torch.nn.Parameter(a[1:5]), a[1:5].detach().requires_grad_()):
        assert p.storage_offset() == 1
        assert p.untyped_storage().nbytes() == 40
        assert p.untyped_storage().data_ptr() == a.untyped_storage().data_ptr()
        assert p.data_ptr() - a.data_ptr() == 4
        assert p._base is None and not p._is_view() and p.is_leaf
        assert torch.as_strided(p, (2,), (2,), 0).tolist() == [0.0, 2.0]
    p = torch.nn.Parameter(a[1:5].detach())
    assert p[1:].storage_offset() == 2 and p[1:]._base is p
    assert p.data.storage_offset() == 1 and p.data._base is None
    with torch.no_grad():
        p.mul_(10)
    assert a.tolist()[:6] == [0.0, 10.0, 20.0, 30.0, 40.0, 5.0]
    (p * 2).sum().backward()
    assert p.grad.tolist() == [2.0] * 4 and p.grad_fn is None


def test_detach_and_data_have_no_base(device):
    """``x.detach()._base`` and ``x.data._base`` are None in PyTorch (a detached tensor is no view), of a view too;
    coretorch gave the root they share memory with.  Their storage offsets and data pointers stay the root's."""
    a = torch.arange(10.0, device=device)
    v = a[1:5]
    assert v._base is a and v._is_view()
    for d in (v.detach(), v.data, a.detach(), v.detach().detach()):
        assert d._base is None and not d._is_view()
        assert d.untyped_storage().nbytes() == 40
    assert v.detach().storage_offset() == 1 and v.detach().data_ptr() - a.data_ptr() == 4
    w = v.detach()[1:]
    assert w._base is not None and w._base is not a and w.storage_offset() == 2
    x = torch.arange(6.0, device=device).reshape(2, 3).t().detach()
    assert x._base is None and x.stride() == (1, 3)


def test_assigning_data_takes_the_new_storage(device):
    """``p.data = y[5:7]`` gives p y's storage at offset 5 (PyTorch); coretorch kept counting from p's old root."""
    x, y = torch.arange(10.0, device=device), torch.arange(20.0, device=device)
    p = torch.nn.Parameter(x[1:3])
    p.data = y[5:7]
    assert p.storage_offset() == 5 and p.untyped_storage().nbytes() == 80 and p._base is None
    p.data = torch.zeros(3, device=device)
    assert p.storage_offset() == 0 and p.untyped_storage().nbytes() == 12


_CL4 = (60, 1, 15, 3)   # PyTorch 2.13: the channels-last strides of a (2, 3, 4, 5) tensor


def test_is_contiguous_takes_a_memory_format(device):
    """``x.is_contiguous(memory_format=torch.channels_last)`` answers PyTorch's channels-last test (c10's
    compute_channels_last_contiguous_2d/3d); coretorch raised TypeError (no such keyword)."""
    x = torch.zeros(2, 3, 4, 5, device=device)
    assert x.is_contiguous(memory_format=torch.contiguous_format)
    assert x.is_contiguous(memory_format=torch.preserve_format)
    assert not x.is_contiguous(memory_format=torch.channels_last)
    assert not torch.zeros(2, 3, 4, device=device).is_contiguous(memory_format=torch.channels_last)
    assert torch.zeros(2, 1, 4, 5, device=device).permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2) \
        .is_contiguous(memory_format=torch.channels_last)
    assert not torch.zeros(2, 3, 4, 5, 6, device=device).is_contiguous(memory_format=torch.channels_last_3d)


def test_channels_last_requests_lay_memory_out_so(device):
    """``contiguous``/``clone``/``to``/``empty``/``*_like`` with ``memory_format=torch.channels_last`` give PyTorch's
    channels-last strides (60, 1, 15, 3) for a (2, 3, 4, 5) tensor, and ``view(-1)`` of the result raises as
    PyTorch's; coretorch accepted the keyword and returned row-major (60, 20, 5, 1) tensors."""
    cl = torch.channels_last
    x = torch.arange(120.0, device=device).reshape(2, 3, 4, 5)
    for y in (x.contiguous(memory_format=cl), x.clone(memory_format=cl), x.to(memory_format=cl),
              x.to(torch.float64, memory_format=cl), x.float(memory_format=cl)):
        assert y.stride() == _CL4 and y.is_contiguous(memory_format=cl) and not y.is_contiguous()
        assert torch.equal(y.to(x.dtype), x) and y._base is None
    y = x.contiguous(memory_format=cl)
    assert y.contiguous(memory_format=cl) is y and y.contiguous().stride() == (60, 20, 5, 1)
    for z in (torch.empty(2, 3, 4, 5, memory_format=cl, device=device), torch.empty_like(x, memory_format=cl),
              torch.zeros_like(x, memory_format=cl), torch.ones_like(x, memory_format=cl),
              torch.full_like(x, 7.0, memory_format=cl)):
        assert z.stride() == _CL4
    assert torch.ones_like(x, memory_format=cl).sum().item() == 120
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        y.view(-1)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        torch.zeros(2, 3, 4, device=device).contiguous(memory_format=cl)
    with pytest.raises(RuntimeError, match="preserve memory format is unsupported by the contiguous operator"):
        x.transpose(0, 1).contiguous(memory_format=torch.preserve_format)
    v = torch.zeros(1, 2, 3, 4, 5, device=device).contiguous(memory_format=torch.channels_last_3d)
    assert v.stride() == (120, 1, 40, 10, 2)
    w = x.clone().requires_grad_()
    y = w.contiguous(memory_format=cl)
    assert type(y.grad_fn).__name__ == "CloneBackward0"
    (y * x).sum().backward()
    assert torch.equal(w.grad, x)


def _layouts(device):
    x = torch.arange(12.0, device=device).reshape(3, 4)
    t = x.t()
    p = torch.arange(24.0, device=device).reshape(2, 3, 4).permute(2, 0, 1)
    return x, t, p


def test_elementwise_results_keep_their_operands_layout(device):
    """PyTorch's TensorIterator lays an elementwise result out in its operands' stride order: ``(x.t() + 1).stride()``
    is (1, 4) for a (3, 4) x, a permuted (2, 3, 4).permute(2, 0, 1) operand gives (1, 12, 4).  The opencl kernels
    wrote every result row-major ((3, 1), (6, 3, 1)); cpu (numpy's K order) already agreed.  Values unchanged."""
    x, t, p = _layouts(device)
    ones3 = torch.ones(3, device=device)
    cases = {
        "t+1": (lambda: t + 1, (1, 4)), "exp": (lambda: t.exp(), (1, 4)), "neg": (lambda: -t, (1, 4)),
        "t*t": (lambda: t * t, (1, 4)), "t+row": (lambda: t + ones3, (1, 4)), "row+t": (lambda: ones3 + t, (1, 4)),
        "t+col": (lambda: t + torch.ones(4, 1, device=device), (1, 4)), "gt": (lambda: t > 1, (1, 4)),
        "where": (lambda: torch.where(t > 2, t, 0.0), (1, 4)), "clamp": (lambda: t.clamp(1, 5), (1, 4)),
        "double": (lambda: t.double(), (1, 4)), "long": (lambda: t.long(), (1, 4)),
        "sigmoid": (lambda: t.sigmoid(), (1, 4)), "sign": (lambda: t.sign(), (1, 4)),   # (cpu: row-major before)
        "p+1": (lambda: p + 1, (1, 12, 4)), "p*p": (lambda: p * p, (1, 12, 4)), "p.exp": (lambda: p.exp(), (1, 12, 4)),
        "slice": (lambda: t[::2] + 1, (1, 2)), "x+1": (lambda: x + 1, (4, 1)),
        "contig+t": (lambda: x.t().contiguous() + t, (3, 1)),
        "masked_fill": (lambda: t.masked_fill(t > 3, 0.0), (3, 1)),   # (PyTorch fills a contiguous clone)
        # row-major whatever the input's layout in PyTorch (cpu followed numpy's K order before)
        "softmax": (lambda: t.softmax(0), (3, 1)), "log_softmax": (lambda: t.log_softmax(1), (3, 1)),
        "cumsum": (lambda: t.cumsum(0), (3, 1)), "cumprod": (lambda: t.cumprod(1), (3, 1)),
        "logcumsumexp": (lambda: t.logcumsumexp(0), (3, 1)),
    }
    for name, (f, want) in cases.items():
        r = f()
        assert r.stride() == want, name
    assert (t + 1).tolist() == (t.contiguous() + 1).tolist()
    assert torch.equal(p * p, p.contiguous() * p.contiguous())
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        (t + 1).view(-1)


def test_compiled_elementwise_results_keep_eager_layout(device):
    """A compiled replay of ``(x.t() + 1) * 2`` returns eager's layout: on opencl the fused kernel (which writes
    row-major) takes no launch whose eager result kept a transposed layout, so replays gave (4, 1) where eager
    gives (1, 3) once eager kept layouts."""
    def f(x):
        return (x.t() + 1) * 2
    cf = torch.compile(f)
    x = torch.arange(12.0, device=device).reshape(4, 3)
    for _ in range(3):
        r = cf(x)
        assert r.stride() == f(x).stride() == (1, 3) and torch.equal(r, f(x))


def test_fill_with_a_tensor_value_casts_it(device):
    """``u8.fill_(torch.tensor(300.0))`` copies the value as a cast (PyTorch: 44; -1.0 -> 255, float64
    2**31 + 5 -> 5, NaN -> 0; float16 from 1e6: inf); coretorch ran a Python number's range check on the value
    and raised "value cannot be converted to type uint8_t without overflow".  A Python number still raises."""
    def u():
        return torch.zeros(2, dtype=torch.uint8, device=device)
    assert u().fill_(torch.tensor(300.0)).tolist() == [44, 44]
    assert u().fill_(torch.tensor(300.0, device=device)).tolist() == [44, 44]
    assert u().fill_(torch.tensor(-1.0)).tolist() == [255, 255]
    assert u().fill_(torch.tensor(2147483653.0, dtype=torch.float64)).tolist() == [5, 5]
    assert u().fill_(torch.tensor(float("nan"))).tolist() == [0, 0]
    assert torch.zeros(2, dtype=torch.int8, device=device).fill_(torch.tensor(200)).tolist() == [-56, -56]
    assert torch.zeros(2, dtype=torch.float16, device=device).fill_(torch.tensor(1e6)).tolist() == [float("inf")] * 2
    with pytest.raises(RuntimeError, match="without overflow"):
        u().fill_(300)


def test_clone_and_like_preserve_a_transposed_layout(device):
    """PyTorch: ``x.t().clone().stride()`` and ``torch.zeros_like(x.t()).stride()`` are (1, 4) for a (3, 4) x
    (preserve_format keeps a dense input's strides, a sliced one's stride order); coretorch gave row-major (3, 1).
    ``contiguous()`` and ``memory_format=torch.contiguous_format`` stay row-major."""
    x = torch.arange(12.0, device=device).reshape(3, 4)
    t = x.t()
    for r in (t.clone(), t.clone(memory_format=torch.preserve_format), torch.zeros_like(t), torch.empty_like(t),
              torch.ones_like(t), torch.full_like(t, 2.0), torch.rand_like(t), torch.randn_like(t),
              torch.randint_like(t, 5)):
        assert r.stride() == (1, 4) and r._base is None
    assert torch.equal(t.clone(), t) and torch.ones_like(t).sum().item() == 12
    assert t[::2].clone().stride() == (1, 2)                 # (a sliced input: its stride order, dense)
    assert t.contiguous().stride() == (3, 1) and t.clone(memory_format=torch.contiguous_format).stride() == (3, 1)
    w = t.clone().requires_grad_()
    (w * 2).sum().backward()
    assert w.grad.tolist() == [[2.0] * 3] * 4
    p = torch.arange(24.0, device=device).reshape(2, 3, 4).permute(2, 0, 1)
    assert p.clone().stride() == (1, 12, 4) and torch.zeros_like(p).stride() == (1, 12, 4)


def test_nonzero_of_a_transposed_tensor(device):
    """``x.t().nonzero()``: the opencl kernel viewed its (now transposed) flags flat and failed once elementwise
    results kept their operands' layout; PyTorch's row-major indices."""
    x = torch.tensor([[1, 0, 2], [0, 3, 0]], device=device).t()
    assert x.nonzero().tolist() == [[0, 0], [1, 1], [2, 0]]
    assert (x.float() * 2 > 1).nonzero().tolist() == [[0, 0], [1, 1], [2, 0]]


def test_module_to_channels_last(device):
    """``model.to(memory_format=torch.channels_last)`` lays the 4-D parameters out channels-last (PyTorch: a
    Conv2d(3, 4, 3) weight's strides (27, 1, 9, 3), the bias untouched; a 5-D parameter raises PyTorch's rank
    error); coretorch ignored the keyword.  Training on such a model gives the row-major model's values."""
    def model():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten(), torch.nn.Linear(4 * 36, 2)).to(device)
    m, ref = model().to(memory_format=torch.channels_last), model()
    w = m[0].weight
    assert isinstance(w, torch.nn.Parameter) and w.stride() == (27, 1, 9, 3) and m[0].bias.stride() == (1,)
    assert w.is_contiguous(memory_format=torch.channels_last)
    for net in (m, ref):
        opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        for i in range(2):
            x = torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(i)).to(device)
            opt.zero_grad()
            net(x.to(memory_format=torch.channels_last) if net is m else x).square().sum().backward()
            opt.step()
    for a, b in zip(m.parameters(), ref.parameters()):
        assert torch.allclose(a, b, atol=1e-5)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        torch.nn.Conv3d(1, 1, 1).to(device).to(memory_format=torch.channels_last)


def test_grad_of_a_transposed_leaf_takes_its_layout(device):
    """PyTorch's gradient layout contract: a leaf of strides (1, 3) (``zeros(4, 3).t()``) gets a ``.grad`` of
    strides (1, 3) (also through a matmul's and an expand's backward, and after accumulating), a channels-last conv
    weight a channels-last gradient (27, 1, 9, 3); coretorch's .grad was row-major ((4, 1), (27, 9, 3, 1))."""
    w = torch.zeros(4, 3, device=device).t().requires_grad_()
    (w * 2).sum().backward()
    assert w.grad.stride() == (1, 3) and w.grad.tolist() == [[2.0] * 4] * 3
    w.grad = None
    (w.exp() @ torch.ones(4, 2, device=device)).sum().backward()
    assert w.grad.stride() == (1, 3) and w.grad.tolist() == [[2.0] * 4] * 3
    w.grad = None
    w.sum(0).sum().backward()
    w.sum(0).sum().backward()
    assert w.grad.stride() == (1, 3) and w.grad.tolist() == [[2.0] * 4] * 3
    m = torch.nn.Conv2d(3, 4, 3).to(device).to(memory_format=torch.channels_last)
    m(torch.randn(2, 3, 8, 8, device=device)).sum().backward()
    assert m.weight.grad.stride() == (27, 1, 9, 3) and m.bias.grad.stride() == (1,)
    v = torch.zeros(3, 4, device=device).requires_grad_()
    (v.t() * 2).sum().backward()                                    # (a row-major leaf: a row-major .grad)
    assert v.grad.stride() == (4, 1)


def test_as_subclass_of_a_view_has_the_root_as_base(device):
    """``a[1:5].as_subclass(M)._base`` is ``a`` in PyTorch (a view of a view points at the root); coretorch's was
    the view ``a[1:5]``."""
    class M(torch.Tensor):
        pass
    a = torch.arange(10.0, device=device)
    s = a[1:5].as_subclass(M)
    assert type(s) is M and s._base is a and s._is_view() and s.storage_offset() == 1
    d = a[1:5].detach()
    assert d.as_subclass(M)._base is d


def test_dropout_of_a_transposed_tensor_keeps_its_layout(device):
    """``F.dropout(x.t(), 0.5).stride()`` is (1, 4) in PyTorch (its noise is an empty_like of the input); cpu gave
    row-major (numpy multiplies two layouts into a row-major result).  The same elements are dropped as for the
    row-major input under one seed."""
    t = torch.arange(12.0, device=device).reshape(3, 4).t()
    torch.manual_seed(0)
    a = torch.nn.functional.dropout(t, 0.5)
    torch.manual_seed(0)
    b = torch.nn.functional.dropout(t.contiguous(), 0.5)
    assert a.stride() == (1, 4) and b.stride() == (3, 1) and torch.equal(a, b)


def test_tensor_of_a_float64_array_to_uint8(device):
    """``torch.tensor(np_float64_array, dtype=torch.uint8)`` casts as PyTorch's cast (2**31 + 5 -> 5, -(2**31 + 5)
    -> 251), silently; coretorch's numpy conversion gave 0 and warned "invalid value encountered in cast"."""
    import warnings

    import numpy as np
    a = np.array([2147483653.0, -2147483653.0, 300.7, -1.5, float("nan")])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert torch.tensor(a, dtype=torch.uint8, device=device).tolist() == [5, 251, 44, 255, 0]
        assert torch.as_tensor(a, dtype=torch.uint8, device=device).tolist() == [5, 251, 44, 255, 0]
        assert torch.tensor(a, dtype=torch.int8, device=device).tolist() == [0, 0, 44, -1, 0]
