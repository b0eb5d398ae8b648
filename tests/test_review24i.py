"""Review 24i: this session's new APIs (``torch.func``, ``torch.utils.checkpoint``, ``nn.utils.prune``) probed
adversarially against PyTorch 2.13: ``requires_grad`` of the ``aux`` outputs of the func transforms, and
``vmap(..., out_dims=None)`` over an output that differs per entry."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
from coretorch.func import grad, grad_and_value, jacfwd, jacrev, jvp, vjp, vmap


def _np(t):
    return t.detach().cpu().numpy()


def test_grad_aux_does_not_require_grad(device):
    """PyTorch unwraps ``aux`` from the transform's level: ``grad(f, has_aux=True)(x)``'s aux ``x * 2`` does not
    require grad (x itself does not). coretorch handed back the aux still attached to the call's fresh variable
    (``requires_grad=True``, a graph kept alive)."""
    x = torch.tensor([1., 2., 3.], device=device)
    g, aux = grad(lambda t: ((t ** 2).sum(), {"a": t * 2}), has_aux=True)(x)
    np.testing.assert_allclose(_np(g), [2., 4., 6.])
    np.testing.assert_allclose(_np(aux["a"]), [2., 4., 6.])
    assert not aux["a"].requires_grad and aux["a"].grad_fn is None
    _, (value, aux) = grad_and_value(lambda t: ((t ** 2).sum(), t * 2), has_aux=True)(x)
    assert not value.requires_grad and not aux.requires_grad


def test_vjp_jacrev_jacfwd_jvp_aux_do_not_require_grad(device):
    """PyTorch: the ``aux`` of ``vjp``, ``jacrev``, ``jacfwd`` and ``jvp`` does not require grad when it depends only
    on the transform's own inputs; coretorch's did (all four)."""
    x = torch.tensor([1., 2., 3.], device=device)

    def f(t):
        return t.sin(), t * 2
    auxes = [vjp(f, x, has_aux=True)[2], jacrev(f, has_aux=True)(x)[1], jacfwd(f, has_aux=True)(x)[1],
             jvp(f, (x,), (torch.ones(3, device=device),), has_aux=True)[2]]
    for aux in auxes:
        np.testing.assert_allclose(_np(aux), [2., 4., 6.])
        assert not aux.requires_grad


def test_aux_keeps_the_graph_through_an_outer_tensor(device):
    """An aux that depends on a tensor outside the transform that requires grad keeps its graph (PyTorch: True), and
    the gradient through it is the outer tensor's."""
    x = torch.tensor([1., 2., 3.], device=device)
    w = torch.tensor(2., device=device, requires_grad=True)
    _, aux = grad(lambda t: ((t ** 2).sum(), t * w), has_aux=True)(x)
    assert aux.requires_grad
    aux.sum().backward()
    np.testing.assert_allclose(_np(w.grad), 6.)
    # under no_grad nothing keeps a graph
    with torch.no_grad():
        _, aux = grad(lambda t: ((t ** 2).sum(), t * w), has_aux=True)(x)
    assert not aux.requires_grad


def test_vmap_out_dims_none_refuses_a_batched_output(device):
    """PyTorch: ``vmap(f, out_dims=None)`` where f's output depends on the mapped input raises ValueError ("can not
    return a BatchedTensor when out_dim is None"). coretorch silently returned the first entry's output."""
    x = torch.arange(6., device=device).reshape(2, 3)
    with pytest.raises(ValueError, match="can not return a BatchedTensor when out_dim is None"):
        vmap(lambda a: a * 2, out_dims=None)(x)
    with pytest.raises(ValueError, match="out_dim is None"):
        vmap(lambda a, b: (a.sum(), b + a), in_dims=(0, None), out_dims=(0, None))(x, torch.ones(3, device=device))


def test_vmap_out_dims_none_keeps_an_unbatched_output(device):
    """An output that does not depend on the mapped inputs (an unmapped input, a constant, NaNs included) is returned
    once, as PyTorch's."""
    x = torch.arange(6., device=device).reshape(2, 3)
    c = torch.tensor([1., float("nan")], device=device)
    s, u, k = vmap(lambda a, b: (a.sum(), b, b * 1), in_dims=(0, None), out_dims=(0, None, None))(x, c)
    np.testing.assert_allclose(_np(s), [3., 12.])
    assert u is c
    np.testing.assert_allclose(_np(k), [1., np.nan])


def test_jvp_tangent_keeps_the_graph_through_an_outer_tensor(device):
    """PyTorch: ``jvp(lambda a: (a * w).sin(), (x,), (v,))`` with ``w`` requiring grad gives a tangent output that
    requires grad, and its gradient with respect to ``w`` is that of ``cos(x w) w v``. coretorch detached the tangent
    (``requires_grad=False``: the gradient to ``w`` was lost). The values are PyTorch 2.13's."""
    x = torch.tensor([1., 2., 3.], device=device)
    v = torch.tensor([1., -1., 2.], device=device)
    w = torch.tensor(0.5, device=device, requires_grad=True)
    out, tan = jvp(lambda a: (a * w).sin(), (x,), (v,))
    assert out.requires_grad and tan.requires_grad
    xn, vn = _np(x), _np(v)
    np.testing.assert_allclose(_np(tan), np.cos(xn * 0.5) * 0.5 * vn, rtol=1e-5)
    tan.sum().backward()
    # d/dw sum(cos(x w) w v) = sum(v (cos(x w) - x w sin(x w)))
    np.testing.assert_allclose(_np(w.grad), (vn * (np.cos(xn * .5) - xn * .5 * np.sin(xn * .5))).sum(), rtol=1e-5)
    # without an outer tensor, nothing requires grad
    out, tan = jvp(lambda a: a.sin(), (x,), (v,))
    assert not out.requires_grad and not tan.requires_grad


def test_vjp_and_jvp_under_no_grad_keep_no_graph(device):
    """PyTorch: under ``no_grad`` the outputs of ``vjp``/``jvp`` do not require grad, even through an outer tensor
    that does; coretorch's vjp output did (``requires_grad=True``)."""
    x = torch.tensor([1., 2., 3.], device=device)
    w = torch.tensor(0.5, device=device, requires_grad=True)
    with torch.no_grad():
        out, fn = vjp(lambda a: a * w, x)
        o2, tan = jvp(lambda a: (a * w).sin(), (x,), (torch.ones(3, device=device),))
    assert not out.requires_grad and not o2.requires_grad and not tan.requires_grad
    np.testing.assert_allclose(_np(fn(torch.ones(3, device=device))[0]), [.5, .5, .5])


def test_profiler_schedule_skip_first_wait_shifts_every_cycle():
    """PyTorch's ``schedule(skip_first_wait=1)`` shifts every step by ``wait`` (only the first cycle's wait is
    skipped; later cycles keep their period). coretorch shifted only the steps of the first wait, so the second cycle
    came ``wait`` steps early (with ``repeat`` it recorded an extra cycle). Expected actions: PyTorch 2.13's."""
    from coretorch.profiler import ProfilerAction as A
    from coretorch.profiler import schedule
    with pytest.warns(UserWarning, match="warmup"):
        s = schedule(wait=2, warmup=0, active=1, repeat=1, skip_first_wait=1)
    assert [s(i) for i in range(6)] == [A.RECORD_AND_SAVE] + [A.NONE] * 5
    s = schedule(wait=3, warmup=1, active=2, repeat=2, skip_first_wait=1)
    cycle = [A.WARMUP, A.RECORD, A.RECORD_AND_SAVE, A.NONE, A.NONE, A.NONE]
    assert [s(i) for i in range(16)] == cycle + cycle + [A.NONE] * 4
    s = schedule(wait=3, warmup=1, active=2, skip_first=1, skip_first_wait=1)
    assert [s(i) for i in range(8)] == [A.NONE] + cycle + [A.WARMUP]


def test_profiler_schedule_errors_name_the_arguments():
    """PyTorch's AssertionError for bad schedule arguments names each one and its bound; a negative step says so."""
    from coretorch.profiler import schedule
    with pytest.raises(AssertionError, match=r"Got wait=-1 \(need >= 0\), warmup=0 \(need >= 0\), active=1 "
                                             r"\(need > 0\), repeat=0 \(need >= 0\), skip_first=0 \(need >= 0\)\."):
        schedule(wait=-1, warmup=0, active=1)
    with pytest.raises(AssertionError, match="Step must be non-negative. Got -1."):
        schedule(wait=0, warmup=1, active=1)(-1)


def test_prune_importance_scores_shape_error_names_both_shapes():
    """PyTorch's AssertionError for ``importance_scores`` of another shape ends with both shapes ("got
    torch.Size([12]) vs torch.Size([3, 4])"); coretorch's named neither."""
    m = torch.nn.Linear(4, 3)
    with pytest.raises(AssertionError, match=r"parameter weight of Linear\(.*\), got .*\[12\]\) vs .*\[3, 4\]\)"):
        torch.nn.utils.prune.l1_unstructured(m, "weight", amount=4, importance_scores=torch.arange(12.))


def test_vmap_out_dims_as_a_list(device):
    """PyTorch takes ``out_dims`` as any pytree matching the outputs (a list too); coretorch refused a list with
    ValueError."""
    x = torch.tensor([1., 2., 3.], device=device)
    a, b = vmap(lambda t: [t, t * 2], out_dims=[0, 0])(x)
    np.testing.assert_allclose(_np(a), [1., 2., 3.])
    np.testing.assert_allclose(_np(b), [2., 4., 6.])


def test_vjp_non_tensor_output_raises_runtime_error():
    """PyTorch: ``vjp`` of a function returning a non-tensor raises RuntimeError ("expected f(*primals) to return only
    tensors, got unsupported type <class 'int'>"); coretorch raised ValueError."""
    with pytest.raises(RuntimeError, match=r"expected f\(\*primals\) to return only tensors, got unsupported type"):
        vjp(lambda a: (a, 3), torch.tensor([1., 2.]))


def test_vmap_refuses_in_place_writes_to_an_unmapped_input(device):
    """PyTorch: ``vmap(lambda x, y: y.mul_(x), in_dims=(0, None))`` raises RuntimeError ("vmap: inplace
    arithmetic(self, *extra_args) is not possible ..."): ``y`` is not batched. coretorch's per-entry loop wrote to
    ``y`` once per entry (here ``y`` ended [2, 2, 2] after ``add_`` over two entries: silently wrong). Writes to
    mapped inputs still go through, as PyTorch's."""
    b = torch.zeros(3, device=device)
    with pytest.raises(RuntimeError, match=r"vmap: inplace arithmetic\(self, \*extra_args\) is not possible"):
        vmap(lambda x, y: y.add_(x), in_dims=(0, None))(torch.ones(2, 3, device=device), b)
    x = torch.ones(2, 3, device=device)
    r = vmap(lambda t, y: t.mul_(y), in_dims=(0, None))(x, torch.full((3,), 2., device=device))
    np.testing.assert_allclose(_np(x), np.full((2, 3), 2.))
    np.testing.assert_allclose(_np(r), np.full((2, 3), 2.))


def test_checkpoint_context_fn_recompute_context_is_entered(device):
    """PyTorch: ``checkpoint(fn, x, use_reentrant=False, context_fn=lambda: (fwd_ctx, recompute_ctx))`` runs the
    forward inside ``fwd_ctx`` and the backward's recomputation inside ``recompute_ctx`` (what selective
    checkpointing builds on). coretorch dropped ``recompute_ctx``: the recomputation ran outside it."""
    import contextlib
    from coretorch.utils.checkpoint import checkpoint
    state = {"ctx": None}
    seen = []

    @contextlib.contextmanager
    def ctx(tag):
        prev, state["ctx"] = state["ctx"], tag
        try:
            yield
        finally:
            state["ctx"] = prev

    def fn(t):
        seen.append(state["ctx"])
        return t.exp()
    x = torch.tensor([1., 2.], device=device, requires_grad=True)
    y = checkpoint(fn, x, use_reentrant=False, context_fn=lambda: (ctx("forward"), ctx("recompute")))
    assert seen == ["forward"]
    y.sum().backward()
    assert seen == ["forward", "recompute"] and state["ctx"] is None
    np.testing.assert_allclose(_np(x.grad), np.exp([1., 2.]), rtol=1e-6)


def test_vmap_returning_an_input_shares_its_data(device):
    """PyTorch: ``vmap(lambda t: t)(x)`` is ``x`` itself, and with ``out_dims=1`` a view of it (a write through the
    result changes ``x``). coretorch stacked the entries into a new tensor (the write was lost on ``x``). Other
    outputs are still stacked copies."""
    x = torch.ones(2, 3, device=device)
    assert vmap(lambda t: t)(x) is x
    r = vmap(lambda t: t, out_dims=1)(x)
    assert tuple(r.shape) == (3, 2)
    r[0, 1] = 5.
    assert _np(x)[1, 0] == 5.
    y = torch.zeros(3, 2, device=device)
    a, b = vmap(lambda t, u: (u, t * 1), in_dims=(0, 1))(x, y)
    assert tuple(a.shape) == (2, 3) and b is not x
    a[0, 0] = 7.
    assert _np(y)[0, 0] == 7.


def test_jvp_tangent_of_another_shape_raises_pytorchs_error():
    """PyTorch: a tangent whose shape differs from its primal's raises RuntimeError "Trying to set a forward gradient
    that has a different size than that of the original Tensor ... Tensor is of size [3] while the given forward
    gradient is of size [2]."; coretorch's error spoke of a grad_output of the double-vjp it runs."""
    with pytest.raises(RuntimeError, match=r"different size than that of the original Tensor, this is not "
                                           r"supported\. Tensor is of size \[3\] while the given forward gradient "
                                           r"is of size \[2\]"):
        jvp(lambda a: a * 2, (torch.ones(3),), (torch.ones(2),))
