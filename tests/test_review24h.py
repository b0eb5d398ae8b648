"""Review 24h: PyTorch's tutorials (github.com/pytorch/tutorials) ported by their imports and run side by side with
PyTorch 2.13 (basics, blitz, introyt, nlp, examples, intermediate): each test reproduces one divergence the ports
printed (a value, a grad_fn graph walk, an error message), fixed in coretorch."""
import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F


def _names(t):
    return [None if n is None else type(n).__name__ for n, _ in t.grad_fn.next_functions]


def test_broadcast_error_names_rightmost_mismatch(device):
    """tensors_deeper_tutorial: ``torch.rand(2, 3) * torch.rand(3, 2)``.  PyTorch's infer_size scans from the last
    dimension and reports "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension
    1"; coretorch named the first mismatch from the left (dimension 0, sizes 2 and 3)."""
    a, b = torch.ones(2, 3, device=device), torch.ones(3, 2, device=device)
    with pytest.raises(RuntimeError, match=r"size of tensor a \(3\) must match the size of tensor b \(2\) at "
                                           r"non-singleton dimension 1"):
        a * b
    x = torch.ones(4, 3, 2, device=device)
    for other in (torch.ones(4, 3, device=device), torch.ones(2, 3, device=device)):
        with pytest.raises(RuntimeError, match=r"tensor a \(2\) must match the size of tensor b \(3\) at "
                                               r"non-singleton dimension 2"):
            x * other


def test_scalar_operand_keeps_an_edge(device):
    """autogradyt_tutorial prints ``d.grad_fn.next_functions`` for ``d = 2 * sin(a) + 1``: PyTorch wraps the Python
    number into a tensor, so AddBackward0/MulBackward0 (and sub/div) have two edges, ``((MulBackward0, 0), (None,
    0))``; coretorch's had one.  Gradients are unchanged."""
    a = torch.linspace(0.0, 1.0, 5, device=device, requires_grad=True)
    b = torch.sin(a)
    c = 2 * b
    d = c + 1
    assert _names(d) == ["MulBackward0", None]
    assert _names(c) == ["SinBackward0", None]
    for y in (a - 1, a / 2, a.add(1, alpha=2), a.sub(1, alpha=3), torch.mul(a, 3.0), torch.true_divide(a, 2)):
        assert _names(y) == ["AccumulateGrad", None]
        assert len(y.grad_fn.next_functions) == 2
    assert _names(a ** 2) == ["AccumulateGrad"]  # pow.Tensor_Scalar: one edge, as PyTorch's
    (d.sum() + (a / 2).sum()).backward()
    np.testing.assert_allclose(a.grad.cpu().numpy(), 2 * np.cos(np.linspace(0, 1, 5)) + 0.5, rtol=1e-5)


def test_number_minus_tensor_is_rsub(device):
    """``1 - x`` and ``torch.rsub(x, 2.)``: PyTorch records rsub.Scalar's RsubBackward1 with one edge; coretorch
    recorded SubBackward0 with edges (None, x).  Values, gradients (alpha too) and double backward hold."""
    x = torch.tensor([1.0, 2.0], device=device, requires_grad=True)
    y = 1 - x
    assert y.grad_fn.name() == "RsubBackward1" and _names(y) == ["AccumulateGrad"]
    (y * torch.tensor([1.0, 3.0], device=device)).sum().backward()
    assert x.grad.tolist() == [-1.0, -3.0]
    z = torch.rsub(x, 2.0, alpha=3)
    assert z.grad_fn.name() == "RsubBackward1" and z.tolist() == [-1.0, -4.0]
    g, = torch.autograd.grad(z.sum(), x, create_graph=True)
    assert g.tolist() == [-3.0, -3.0]
    assert (1 - torch.tensor([1, 2], device=device)).tolist() == [0, -1]  # no graph: integers as before
    p = torch.nn.Parameter(torch.tensor([1.0], device=device))
    assert (2.5 - p).grad_fn.name() == "RsubBackward1"


def test_mse_loss_node_edges(device):
    """neural_networks_tutorial walks ``loss.grad_fn.next_functions[0][0]`` from an MSELoss to the last Linear's
    AddmmBackward0 and on to ``AccumulateGrad``.  PyTorch's MseLossBackward0 has edges (input, target); coretorch's
    mse_loss was a renamed composite (MulBackward0 -> SubBackward0 inside).  Gradients (also of the target, and
    second order) are 2 (x - y) g, over numel for 'mean'."""
    x0 = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 7.0]], np.float32)
    y0 = np.array([[0.5, 2.0, 1.0], [1.0, 1.0, 1.0]], np.float32)
    for red, scale in (("mean", 2.0 / 6), ("sum", 2.0), ("none", 2.0)):
        x = torch.tensor(x0, device=device, requires_grad=True)
        y = torch.tensor(y0, device=device, requires_grad=True)
        loss = F.mse_loss(x, y, reduction=red)
        assert loss.grad_fn.name() == "MseLossBackward0"
        assert _names(loss) == ["AccumulateGrad", "AccumulateGrad"]
        expect = (x0 - y0) ** 2
        np.testing.assert_allclose(loss.detach().cpu().numpy(),
                                   expect if red == "none" else expect.mean() if red == "mean" else expect.sum(),
                                   rtol=1e-6)
        gx, gy = torch.autograd.grad(loss.sum(), (x, y), create_graph=True)
        assert gx.grad_fn.name() == gy.grad_fn.name() == "MseLossBackwardBackward0"
        np.testing.assert_allclose(gx.detach().cpu().numpy(), scale * (x0 - y0), rtol=1e-6)
        np.testing.assert_allclose(gy.detach().cpu().numpy(), -scale * (x0 - y0), rtol=1e-6)
        ggx, = torch.autograd.grad((gx * gx).sum(), x)  # d/dx sum((s (x - y))^2) = 2 s^2 (x - y)
        np.testing.assert_allclose(ggx.cpu().numpy(), 2 * scale ** 2 * (x0 - y0), rtol=1e-5)
    lin = torch.nn.Linear(3, 2).to(device)
    out = lin(torch.relu(torch.ones(4, 3, device=device, requires_grad=True)))
    loss = torch.nn.MSELoss()(out, torch.zeros(4, 2, device=device))
    assert _names(loss) == ["AddmmBackward0", None]
    e = torch.zeros(0, device=device, requires_grad=True)
    le = F.mse_loss(e, torch.zeros(0, device=device))
    le.backward()
    assert np.isnan(le.item()) and e.grad.shape == (0,)


def test_linear_node_edges_in_addmm_order(device):
    """PyTorch's Linear is addmm(bias, input, weight.t()): ``next_functions`` is (bias, input, weight) and the
    tutorial's ``...next_functions[0][0]`` is the bias's AccumulateGrad; coretorch's order was (input, weight,
    bias).  The gradients still reach each parameter (the hook's grad_inputs come in that order too)."""
    lin = torch.nn.Linear(3, 2).to(device)
    x = torch.ones(4, 3, device=device, requires_grad=True)
    h = torch.relu(x)
    out = lin(h)
    fns = out.grad_fn.next_functions
    assert type(out.grad_fn).__name__ == "AddmmBackward0"
    assert fns[0][0].variable is lin.bias and type(fns[1][0]).__name__ == "ReluBackward0"
    assert fns[2][0].variable is lin.weight
    seen = []
    out.grad_fn.register_hook(lambda gi, go: seen.append([None if g is None else tuple(g.shape) for g in gi]))
    out.sum().backward()
    assert seen == [[(2,), (4, 3), (2, 3)]]
    assert lin.bias.grad.tolist() == [4.0, 4.0]
    np.testing.assert_allclose(lin.weight.grad.cpu().numpy(), np.full((2, 3), 4.0))
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.tile(lin.weight.detach().cpu().numpy().sum(0), (4, 1)),
                               rtol=1e-6)
    nb = torch.nn.Linear(3, 2, bias=False).to(device)
    y = nb(x)
    assert type(y.grad_fn).__name__ == "MmBackward0" and y.grad_fn.next_functions[1][0].variable is nb.weight
    y.sum().backward()
    np.testing.assert_allclose(nb.weight.grad.cpu().numpy(), np.full((2, 3), 4.0))


def test_nonleaf_grad_warning_text():
    """The warning on reading a non-leaf's ``.grad`` ends "for more information." in PyTorch (coretorch:
    "informations")."""
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    with pytest.warns(UserWarning, match=r"for more information\.$"):
        y.grad


def test_torch_functional_namespace():
    """modelsyt_tutorial: ``import torch.functional as F``.  PyTorch has the module (einsum, norm, split, unique,
    ...); coretorch raised ModuleNotFoundError.  Its names are the package's functions; stft needs complex."""
    import coretorch.functional as Fn
    from coretorch.functional import einsum, split
    assert torch.functional is Fn and einsum is torch.einsum and split is torch.split
    assert Fn.norm is torch.norm and Fn.unique is torch.unique and Fn.broadcast_shapes((2, 1), (3,)) == (2, 3)
    assert "einsum" in dir(Fn) and not hasattr(Fn, "max_pool2d")  # (not in PyTorch's torch.functional either)
    with pytest.raises(AttributeError, match="complex"):
        Fn.stft


def _chain(t):
    names, n = [], t.grad_fn
    while n is not None:
        names.append(type(n).__name__)
        nxt = [m for m, _ in n.next_functions if m is not None]
        n = nxt[0] if nxt else None
    return names


def test_inplace_op_edges_to_the_old_node(device):
    """custom_function_double_backward_tutorial draws the graph of a backward that does ``grad_input += ...``:
    PyTorch's in-place node edges straight to the tensor's old node (``y = x * 2; y += 1``: AddBackward0 ->
    MulBackward0); coretorch put a CloneBackward0 between them.  Gradients, saved-input semantics (``mul_`` saves the
    old value) and the version check of a saved output are unchanged."""
    x = torch.tensor([0.5, 1.0], device=device, requires_grad=True)
    y = x * 2
    y += 1
    assert _chain(y) == ["AddBackward0", "MulBackward0", "AccumulateGrad"]
    z = x * 3
    z.mul_(x)  # d(3x * x)/dx = 6x: mul_ read z's old value
    z -= x
    assert _chain(z) == ["SubBackward0", "MulBackward0", "MulBackward0", "AccumulateGrad"]
    z.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), [6 * 0.5 - 1, 6 * 1.0 - 1])
    e = x.exp()
    e.add_(1)  # exp saved its result: the backward must refuse the changed value
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        e.sum().backward()

    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * 2

        @staticmethod
        def backward(ctx, go):
            t, = ctx.saved_tensors
            gi = go * t / 2
            gi += go * t
            return gi

    w = torch.tensor([0.5, 1.0], device=device, requires_grad=True)
    g, = torch.autograd.grad(Twice.apply(w).sum(), w, create_graph=True)
    assert _chain(g) == ["AddBackward0", "DivBackward0", "MulBackward0", "AccumulateGrad"]
    gg, = torch.autograd.grad(g.sum(), w)
    assert gg.tolist() == [1.5, 1.5]


def test_sdpa_output_follows_the_query_layout():
    """scaled_dot_product_attention_tutorial's CausalSelfAttention: ``q = proj.chunk(3, -1)[0].view(B, L, H, E)
    .transpose(1, 2)``, then ``y.transpose(1, 2).view(B, L, H * E)``.  PyTorch's CPU flash kernel writes its output in
    the query's stride order, so the view works (strides (256, 8, 32, 1) for (2, 4, 8, 8)); coretorch returned a
    row-major output and the view raised.  The math backend (sdpa_kernel(MATH)) stays row-major, as PyTorch's."""
    from coretorch.nn.attention import SDPBackend, sdpa_kernel
    rs = np.random.RandomState(0)
    x = torch.tensor(rs.rand(2, 8, 96).astype(np.float32), requires_grad=True)
    q, k, v = (t.view(2, 8, 4, 8).transpose(1, 2) for t in x.chunk(3, -1))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert y.stride() == (256, 8, 32, 1) and y.grad_fn.name() == "ScaledDotProductFlashAttentionForCpuBackward0"
    flat = y.transpose(1, 2).view(2, 8, 32)
    ref = F.scaled_dot_product_attention(q.contiguous(), k.contiguous(), v.contiguous(), is_causal=True)
    assert ref.is_contiguous()
    np.testing.assert_allclose(flat.detach().numpy(), ref.transpose(1, 2).reshape(2, 8, 32).detach().numpy(),
                               rtol=1e-6)
    flat.sum().backward()
    assert x.grad.shape == (2, 8, 96) and np.isfinite(x.grad.numpy()).all()
    h = F.scaled_dot_product_attention(q.half(), k.half(), v.half())
    assert h.dtype == torch.float16 and h.stride() == (256, 8, 32, 1)
    with sdpa_kernel(SDPBackend.MATH):
        assert F.scaled_dot_product_attention(q, k, v).is_contiguous()
    assert F.scaled_dot_product_attention(q, k, v, dropout_p=0.0, scale=0.3).stride() == (256, 8, 32, 1)


def test_sdpa_no_viable_cpu_backend():
    """The tutorial tries ``sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION)`` on CPU and catches RuntimeError: PyTorch's
    CPU has only the flash and math kernels and raises "No viable backend for scaled_dot_product_attention was
    found."; coretorch computed the result.  FLASH alone works for 4-D inputs without dropout, not for 3-D ones."""
    from coretorch.nn.attention import SDPBackend, sdpa_kernel
    q = torch.ones(2, 3, 4, 8)
    with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
        with pytest.raises(RuntimeError, match="No viable backend for scaled_dot_product_attention"):
            F.scaled_dot_product_attention(q, q, q)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        assert F.scaled_dot_product_attention(q, q, q).shape == (2, 3, 4, 8)
        with pytest.raises(RuntimeError, match="No viable backend"):
            F.scaled_dot_product_attention(q[0], q[0], q[0])
    assert F.scaled_dot_product_attention(q[0], q[0], q[0]).shape == (3, 4, 8)


def test_torch_profiler_namespace():
    """scaled_dot_product_attention_tutorial: ``from torch.profiler import profile, record_function,
    ProfilerActivity`` then ``prof.key_averages().table(sort_by="cuda_time_total", row_limit=10)``.  coretorch had
    only ``torch.autograd.profiler`` (ModuleNotFoundError); its ranges are the host wall-clock ones."""
    from coretorch.profiler import ProfilerActivity, profile, record_function, schedule, supported_activities
    seen = []
    with profile(activities=[ProfilerActivity.CPU], record_shapes=False, on_trace_ready=seen.append) as prof:
        with record_function(" Non-Compiled Causal Attention"):
            torch.ones(3) * 2
        prof.step()
    table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=10)
    assert "Non-Compiled Causal Attention" in table and seen == [prof] and prof.step_num == 1
    assert ProfilerActivity.CPU in supported_activities() and torch.profiler.profile is profile
    s = schedule(wait=1, warmup=1, active=2, repeat=1)
    assert [s(i).name for i in range(5)] == ["NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE", "NONE"]


def test_utils_benchmark_timer():
    """The SDPA tutorial times with ``torch.utils.benchmark.Timer(stmt="f(*args, **kwargs)", globals=...)
    .blocked_autorange().mean`` (seconds, a float); coretorch had no ``torch.utils.benchmark``."""
    import coretorch.utils.benchmark as benchmark
    x = torch.ones(8)
    t0 = benchmark.Timer(stmt="f(*args, **kwargs)", globals={"args": (x,), "kwargs": {}, "f": torch.exp})
    m = t0.blocked_autorange(min_run_time=0.01)
    assert isinstance(m.mean, float) and 0 < m.mean < 0.01 and m.number_per_run >= 1 and len(m.times) >= 1
    assert m.median > 0 and "Median" in repr(m)
    assert t0.timeit(number=10).number_per_run == 10


def test_loss_size_warning_points_at_the_caller():
    """``F.mse_loss(x, target_of_another_size)``: PyTorch's "Using a target size ..." UserWarning names the line that
    called the loss; coretorch's named its own grad_fn-naming wrapper (coretorch/nn/_grad_fn_names.py)."""
    x = torch.ones(2, 3)
    for fn in (F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss):
        with pytest.warns(UserWarning, match="Using a target size") as rec:
            fn(x, torch.ones(3))
        assert rec[0].filename == __file__
