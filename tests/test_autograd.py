"""Autograd engine, grad modes, hooks, autograd.grad, higher-order gradients and in-place semantics.

Every expected value is computed independently (numpy, hand derivation or finite differences); the
behaviour to match is PyTorch's.
"""
import re

import numpy as np
import pytest

import coretorch as torch
from coretorch.autograd import Function, Variable, gradcheck, gradgradcheck
from coretorch.testing import available_devices

SECOND_TIME = "Trying to backward through the graph a second time"


def arr(t):
    return t.detach().numpy()


def close(t, expected, **kw):
    np.testing.assert_allclose(arr(t), np.asarray(expected, dtype=np.float64), rtol=1e-5, atol=1e-6, **kw)


def leaf(values, dtype=torch.float64):
    return torch.tensor(values, dtype=dtype, requires_grad=True)


def numgrad(f, x0, eps=1e-6):
    """Central-difference gradient of a scalar numpy function."""
    x0 = np.asarray(x0, dtype=np.float64)
    g = np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        p, m = x0.copy(), x0.copy()
        p[i] += eps
        m[i] -= eps
        g[i] = (f(p) - f(m)) / (2 * eps)
    return g


# ---------------------------------------------------------------------------------------------
# the engine
# ---------------------------------------------------------------------------------------------
class TestEngine:
    def test_simple_chain_matches_numpy(self):
        xv = np.array([0.3, -1.2, 2.5])
        x = leaf(xv)
        y = (x.sin() * x).exp().sum()
        y.backward()
        expected = np.exp(np.sin(xv) * xv) * (np.cos(xv) * xv + np.sin(xv))
        close(x.grad, expected)
        close(x.grad, numgrad(lambda v: np.exp(np.sin(v) * v).sum(), xv))

    def test_diamond_graph(self):
        # a -> b -> (c, d) -> e : b's gradient must be the sum over both paths before it flows on
        a = leaf(2.0)
        b = a * 3
        c = b.exp()
        d = b * b
        e = c + d
        e.backward()
        # de/da = 3 * (exp(3a) + 2 * 3a)
        close(a.grad, 3 * (np.exp(6.0) + 2 * 6.0))

    def test_topological_order_runs_shared_node_once_with_summed_grad(self):
        calls = []

        class Probe(Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                calls.append(arr(g).copy())
                return g

        x = leaf([1.0, 2.0])
        b = Probe.apply(x)
        # four paths of different depths out of b, joined again at the end
        p1 = b * 2
        p2 = (b * 3).exp().log()
        p3 = b.sin().sin() * 0 + b
        p4 = b.neg().neg().neg()
        (p1 + p2 + p3 + p4).sum().backward()
        assert len(calls) == 1, "a node must run once, after all its consumers"
        close(torch.tensor(calls[0]), [2 + 3 + 1 - 1] * 2)
        close(x.grad, [5.0, 5.0])

    def test_deep_chain_no_recursion_limit(self):
        x = leaf([1.0])
        y = x
        for _ in range(3000):
            y = y * 1.0001
        y.sum().backward()
        close(x.grad, [1.0001 ** 3000])

    def test_accumulates_across_backward_calls(self):
        x = leaf([1.0, -2.0, 3.0])
        (x * x).sum().backward()
        close(x.grad, [2.0, -4.0, 6.0])
        (x * 4).sum().backward()
        close(x.grad, [6.0, 0.0, 10.0])
        x.grad = None
        (x ** 3).sum().backward()
        close(x.grad, 3 * np.array([1.0, 4.0, 9.0]))

    def test_grad_zero_then_accumulate_in_place(self):
        x = leaf([1.0, 2.0])
        (x * 2).sum().backward()
        g = x.grad
        x.grad.zero_()
        (x * 3).sum().backward()
        close(x.grad, [3.0, 3.0])
        assert g is x.grad  # accumulation happens in the existing buffer

    def test_leaf_used_twice(self):
        x = leaf([1.5, -0.5])
        (x * x + x).sum().backward()
        close(x.grad, 2 * np.array([1.5, -0.5]) + 1)

    def test_broadcast_gradients_reduced_to_input_shapes(self):
        av, bv = np.arange(6.0).reshape(2, 3), np.array([1.0, -2.0, 0.5])
        a, b = leaf(av), leaf(bv)
        (a * b).sum().backward()
        close(a.grad, np.broadcast_to(bv, (2, 3)))
        close(b.grad, av.sum(0))

    def test_retain_graph_allows_second_backward(self):
        x = leaf([1.0, 2.0])
        y = (x.exp() * x).sum()
        y.backward(retain_graph=True)
        first = arr(x.grad).copy()
        y.backward()
        close(x.grad, 2 * first)
        close(torch.tensor(first), np.exp([1.0, 2.0]) * (1 + np.array([1.0, 2.0])))

    def test_second_backward_without_retain_graph_raises(self):
        x = leaf([1.0, 2.0])
        y = (x.exp() * x).sum()
        y.backward()
        with pytest.raises(RuntimeError, match=SECOND_TIME):
            y.backward()

    def test_autograd_grad_frees_graph_too(self):
        x = leaf([1.0, 2.0])
        y = (x * x).sum()
        torch.autograd.grad(y, x)
        with pytest.raises(RuntimeError, match=SECOND_TIME):
            torch.autograd.grad(y, x)

    def test_backward_with_gradient_for_non_scalar(self):
        xv = np.array([1.0, 2.0, 3.0])
        x = leaf(xv)
        y = x * x
        v = torch.tensor([1.0, 0.5, 2.0], dtype=torch.float64)
        y.backward(v)
        close(x.grad, 2 * xv * arr(v))
        assert v.tolist() == [1.0, 0.5, 2.0]

    def test_backward_gradient_is_not_aliased_into_grad(self):
        x = leaf([1.0, 2.0])
        g = torch.tensor([1.0, 1.0], dtype=torch.float64)
        x.backward(g)
        close(x.grad, [1.0, 1.0])
        g.mul_(10)
        close(x.grad, [1.0, 1.0])

    def test_non_scalar_without_gradient_raises(self):
        x = leaf([1.0, 2.0])
        with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
            (x * 2).backward()

    def test_backward_on_tensor_without_grad_raises(self):
        with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
            torch.ones(2).sum().backward()

    def test_backward_gradient_shape_mismatch(self):
        x = leaf([1.0, 2.0])
        with pytest.raises(RuntimeError, match="Mismatch in shape"):
            (x * 2).backward(torch.ones(3, dtype=torch.float64))

    def test_backward_inputs_restricts_accumulation(self):
        x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
        (x * w).sum().backward(inputs=[x])
        close(x.grad, [3.0, 4.0])
        assert w.grad is None

    def test_autograd_backward_several_roots(self):
        x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
        torch.autograd.backward([(x * w).sum(), (x * x).sum()],
                                [torch.tensor(1.0, dtype=torch.float64), torch.tensor(2.0, dtype=torch.float64)])
        close(x.grad, np.array([3.0, 4.0]) + 4 * np.array([1.0, 2.0]))
        close(w.grad, [1.0, 2.0])

    def test_root_reachable_from_another_root(self):
        x = leaf([1.0, 2.0])
        y = x * x
        z = (y * 3).sum()
        torch.autograd.backward([y, z], [torch.ones(2, dtype=torch.float64), None])
        close(x.grad, 8 * np.array([1.0, 2.0]))  # 2x from y, 6x from z

    def test_same_root_twice(self):
        x = leaf([1.0, 2.0])
        y = (x * x).sum()
        (g,) = torch.autograd.grad([y, y], x, retain_graph=True)
        close(g, 4 * np.array([1.0, 2.0]))
        torch.autograd.backward([y, y])
        close(x.grad, 4 * np.array([1.0, 2.0]))

    def test_function_returning_none_grad_blocks_that_path(self):
        class FirstNoGrad(Function):
            @staticmethod
            def forward(ctx, a, b):
                return a * 2 + b

            @staticmethod
            def backward(ctx, g):
                return None, g

        a, b = leaf([1.0]), leaf([1.0])
        FirstNoGrad.apply(a * 3, b).sum().backward()
        assert a.grad is None
        close(b.grad, [1.0])

    def test_backward_inside_no_grad(self):
        x = leaf([1.0, 2.0])
        y = (x * x).sum()
        with torch.no_grad():
            y.backward()
            assert not torch.is_grad_enabled()
        close(x.grad, [2.0, 4.0])

    def test_error_in_backward_restores_grad_mode(self):
        class Boom(Function):
            @staticmethod
            def forward(ctx, a):
                return a * 1

            @staticmethod
            def backward(ctx, g):
                raise ValueError("boom")

        with pytest.raises(ValueError, match="boom"):
            Boom.apply(leaf([1.0])).sum().backward(create_graph=True)
        assert torch.is_grad_enabled()
        y = Boom.apply(leaf([1.0])).sum()
        with torch.no_grad():
            with pytest.raises(ValueError, match="boom"):
                y.backward(create_graph=True)
            assert not torch.is_grad_enabled()

    def test_leaf_that_does_not_require_grad_gets_none(self):
        x = leaf([1.0, 2.0])
        c = torch.tensor([3.0, 4.0], dtype=torch.float64)
        (x * c).sum().backward()
        assert c.grad is None
        close(x.grad, [3.0, 4.0])

    def test_unused_branch_does_not_block(self):
        x, y = leaf([1.0]), leaf([2.0])
        a = x * 2
        _unused = a * y  # noqa: F841  a consumer of ``a`` that the loss does not reach
        (a * 5).sum().backward()
        close(x.grad, [10.0])
        assert y.grad is None


# ---------------------------------------------------------------------------------------------
# grad modes
# ---------------------------------------------------------------------------------------------
class TestGradMode:
    def test_no_grad_context(self):
        x = leaf([1.0])
        with torch.no_grad():
            assert not torch.is_grad_enabled()
            y = x * 2
        assert torch.is_grad_enabled()
        assert not y.requires_grad and y.grad_fn is None and y.is_leaf

    def test_no_grad_decorator_with_and_without_parentheses(self):
        x = leaf([1.0])

        @torch.no_grad()
        def f(t):
            return t * 2

        @torch.no_grad
        def g(t):
            return t * 2

        assert not f(x).requires_grad
        assert not g(x).requires_grad
        assert g.__name__ == "g"
        assert torch.is_grad_enabled()

    def test_enable_grad_inside_no_grad(self):
        x = leaf([1.0])

        @torch.enable_grad()
        def f(t):
            return t * 2

        @torch.enable_grad
        def g(t):
            return t * 2

        with torch.no_grad():
            with torch.enable_grad():
                assert torch.is_grad_enabled()
                y = x * 3
            assert not torch.is_grad_enabled()
            assert f(x).requires_grad and g(x).requires_grad
        assert y.requires_grad
        y.sum().backward()
        close(x.grad, [3.0])

    def test_set_grad_enabled_context_manager(self):
        x = leaf([1.0])
        with torch.set_grad_enabled(False):
            assert not (x * 2).requires_grad
            with torch.set_grad_enabled(True):
                assert (x * 2).requires_grad
            assert not torch.is_grad_enabled()
        assert torch.is_grad_enabled()

    def test_set_grad_enabled_plain_call(self):
        x = leaf([1.0])
        try:
            torch.set_grad_enabled(False)
            assert not torch.is_grad_enabled()
            assert not (x * 2).requires_grad
        finally:
            torch.set_grad_enabled(True)
        assert torch.is_grad_enabled()
        assert (x * 2).requires_grad

    def test_set_grad_enabled_decorator(self):
        x = leaf([1.0])

        @torch.set_grad_enabled(False)
        def f(t):
            assert not torch.is_grad_enabled()
            return t * 2

        assert torch.is_grad_enabled()  # decorating does not switch the mode
        assert not f(x).requires_grad
        assert torch.is_grad_enabled()

    def test_mode_restored_after_exception(self):
        with pytest.raises(ValueError):
            with torch.no_grad():
                raise ValueError
        assert torch.is_grad_enabled()

        @torch.no_grad()
        def boom():
            raise KeyError

        with pytest.raises(KeyError):
            boom()
        assert torch.is_grad_enabled()

    def test_autograd_namespace_aliases(self):
        assert torch.autograd.no_grad is torch.no_grad
        assert torch.autograd.set_grad_enabled is torch.set_grad_enabled


# ---------------------------------------------------------------------------------------------
# detach, is_leaf, requires_grad, grad_fn, next_functions
# ---------------------------------------------------------------------------------------------
class TestGraphAttributes:
    def test_is_leaf_and_requires_grad(self):
        x = leaf([1.0])
        c = torch.ones(1)
        y = x * 2
        assert x.is_leaf and x.requires_grad and x.grad_fn is None
        assert c.is_leaf and not c.requires_grad
        assert not y.is_leaf and y.requires_grad
        assert (c * 2).is_leaf and not (c * 2).requires_grad
        assert (x * c).requires_grad

    def test_requires_grad_on_non_leaf_cannot_be_cleared(self):
        y = leaf([1.0]) * 2
        with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
            y.requires_grad_(False)

    def test_integer_tensor_cannot_require_grad(self):
        with pytest.raises(RuntimeError, match="floating point"):
            torch.tensor([1, 2]).requires_grad_()

    def test_detach(self):
        x = leaf([1.0, 2.0])
        y = x * 2
        d = y.detach()
        assert not d.requires_grad and d.is_leaf and d.grad_fn is None
        d[0] = 100.0  # shares storage
        assert y.tolist() == [100.0, 4.0]
        z = x.detach().requires_grad_()
        (z * 3).sum().backward()
        close(z.grad, [3.0, 3.0])
        assert x.grad is None

    def test_grad_fn_names(self):
        x, y = leaf([[1.0, 2.0], [3.0, 4.0]]), leaf([[0.5, 1.5], [2.5, 3.5]])
        names = {
            "AddBackward0": x + y, "SubBackward0": x - y, "MulBackward0": x * y, "DivBackward0": x / y,
            "PowBackward0": x ** 2, "SumBackward0": x.sum(), "ExpBackward0": x.exp(), "SinBackward0": x.sin(),
            "NegBackward0": -x, "MmBackward0": x.mm(y), "ReluBackward0": x.relu(), "CloneBackward0": x.clone(),
            "TanhBackward0": x.tanh(), "SigmoidBackward0": x.sigmoid(), "WhereBackward0": torch.where(x > 2, x, y),
            "PermuteBackward0": x.permute(1, 0), "ViewBackward0": x.view(-1), "CatBackward0": torch.cat([x, y]),
            "ExpandBackward0": x[:1].expand(3, 2), "LogBackward0": x.log(), "SqrtBackward0": x.sqrt(),
            "MeanBackward0": x.mean(),
        }
        for name, t in names.items():
            assert type(t.grad_fn).__name__ == name
            assert t.grad_fn.name() == name
            assert name in repr(t)

    def test_next_functions_structure(self):
        x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
        c = torch.tensor([5.0, 6.0], dtype=torch.float64)
        h = x * w
        z = (h + c).sum()
        assert type(z.grad_fn).__name__ == "SumBackward0"
        ((add, add_nr),) = z.grad_fn.next_functions
        assert type(add).__name__ == "AddBackward0" and add_nr == 0
        (mul, _), (none, _) = add.next_functions
        assert mul is h.grad_fn
        assert none is None  # c does not require grad
        (acc_x, nx), (acc_w, nw) = mul.next_functions
        assert type(acc_x).__name__ == "AccumulateGrad" and type(acc_w).__name__ == "AccumulateGrad"
        assert acc_x.variable is x and acc_w.variable is w
        assert (nx, nw) == (0, 0)
        assert acc_x.next_functions == ()
        # the same leaf always has the same AccumulateGrad node
        assert (x * 3).grad_fn.next_functions[0][0] is acc_x

    def test_next_functions_output_nr_of_multi_output_function(self):
        class Split(Function):
            @staticmethod
            def forward(ctx, t):
                return t * 1, t * 2

            @staticmethod
            def backward(ctx, g1, g2):
                return g1 + 2 * g2

        x = leaf([1.0])
        a, b = Split.apply(x)
        s = a * b
        assert [nr for _, nr in s.grad_fn.next_functions] == [0, 1]
        assert s.grad_fn.next_functions[0][0] is s.grad_fn.next_functions[1][0] is a.grad_fn


# ---------------------------------------------------------------------------------------------
# retain_grad and hooks
# ---------------------------------------------------------------------------------------------
class TestHooks:
    def test_retain_grad(self):
        xv = np.array([1.0, 2.0])
        x = leaf(xv)
        h = x * 3
        h.retain_grad()
        assert h.retains_grad
        (h * h).sum().backward()
        close(h.grad, 2 * 3 * xv)
        close(x.grad, 18 * xv)

    def test_non_leaf_grad_is_none_without_retain_grad(self):
        x = leaf([1.0])
        h = x * 3
        (h * h).sum().backward()
        assert h.grad is None and not h.retains_grad

    def test_retain_grad_accumulates(self):
        x = leaf([1.0, 2.0])
        h = x * 3
        h.retain_grad()
        y = (h * 2).sum()
        y.backward(retain_graph=True)
        y.backward()
        close(h.grad, [4.0, 4.0])

    def test_retain_grad_runs_after_other_hooks(self):
        x = leaf([1.0, 2.0])
        h = x * 3
        h.retain_grad()
        h.register_hook(lambda g: g * 2)  # registered later, still runs before .grad is filled
        h.sum().backward()
        close(h.grad, [2.0, 2.0])
        close(x.grad, [6.0, 6.0])

    def test_retain_grad_follows_inplace_modification(self):
        xv = np.array([1.0, 2.0])
        x = leaf(xv)
        h = x * 3
        h.retain_grad()
        seen = []
        h.register_hook(lambda g: seen.append(g.tolist()))  # stays with the pre-in-place value
        h.mul_(2)  # h = 6 x
        (h * h).sum().backward()
        close(h.grad, 2 * 6 * xv)  # gradient w.r.t. the current (post in-place) h
        assert seen == [(2 * 6 * xv * 2).tolist()]
        close(x.grad, 72 * xv)

    def test_retain_grad_errors(self):
        with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
            torch.ones(2).retain_grad()

    def test_hook_replaces_grad_and_handle_removes_it(self):
        x = leaf([1.0, 2.0])
        h = x * 2
        seen = []

        def hook(g):
            seen.append(arr(g).copy())
            return g * 10

        handle = h.register_hook(hook)
        h.sum().backward(retain_graph=True)
        close(x.grad, [20.0, 20.0])
        close(torch.tensor(seen[0]), [1.0, 1.0])
        handle.remove()
        x.grad = None
        h.sum().backward()  # same graph, hook removed
        close(x.grad, [2.0, 2.0])
        assert len(seen) == 1
        x.grad = None
        h2 = x * 2
        h2.register_hook(lambda g: None)  # returning None keeps the gradient
        h2.sum().backward()
        close(x.grad, [2.0, 2.0])

    def test_removed_hook_on_same_tensor_no_longer_fires(self):
        x = leaf([1.0, 2.0])
        h = x * 2
        handle = h.register_hook(lambda g: g * 10)
        handle.remove()
        h.sum().backward()
        close(x.grad, [2.0, 2.0])

    def test_leaf_hook_sees_grad_before_accumulation_in_order(self):
        x = leaf([1.0, 2.0])
        calls = []
        x.register_hook(lambda g: calls.append(("a", g.tolist())))
        x.register_hook(lambda g: g * 2)
        x.register_hook(lambda g: calls.append(("c", g.tolist())))
        (x * x).sum().backward()
        assert calls == [("a", [2.0, 4.0]), ("c", [4.0, 8.0])]
        close(x.grad, [4.0, 8.0])

    def test_hook_handle_as_context_manager(self):
        x = leaf([1.0])
        with x.register_hook(lambda g: g * 3):
            (x * 1).sum().backward()
        close(x.grad, [3.0])
        (x * 1).sum().backward()
        close(x.grad, [4.0])

    def test_hook_on_tensor_without_grad_raises(self):
        with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
            torch.ones(2).register_hook(lambda g: g)

    def test_node_hook_and_prehook(self):
        x = leaf([1.0, 2.0])
        y = x * 3
        seen = []
        y.grad_fn.register_hook(lambda gi, go: seen.append((gi[0].tolist(), go[0].tolist())))
        y.grad_fn.register_prehook(lambda go: (go[0] * 2,))
        y.sum().backward()
        assert seen == [([6.0, 6.0], [2.0, 2.0])]
        close(x.grad, [6.0, 6.0])


# ---------------------------------------------------------------------------------------------
# autograd.grad
# ---------------------------------------------------------------------------------------------
class TestAutogradGrad:
    def test_returns_grads_and_leaves_dot_grad_alone(self):
        x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
        x.grad = torch.tensor([100.0, 100.0], dtype=torch.float64)
        out = (x * w).sum()
        gx, gw = torch.autograd.grad(out, [x, w])
        close(gx, [3.0, 4.0])
        close(gw, [1.0, 2.0])
        close(x.grad, [100.0, 100.0])
        assert w.grad is None
        assert not gx.requires_grad

    def test_single_tensor_input_returns_tuple(self):
        x = leaf([1.0, 2.0])
        res = torch.autograd.grad((x * x).sum(), x)
        assert isinstance(res, tuple) and len(res) == 1
        close(res[0], [2.0, 4.0])

    def test_grad_outputs(self):
        x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
        (gx,) = torch.autograd.grad(x * w, x, grad_outputs=torch.tensor([1.0, 2.0], dtype=torch.float64))
        close(gx, [3.0, 8.0])
        with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
            torch.autograd.grad(x * w, x)

    def test_several_outputs(self):
        x = leaf([1.0, 2.0])
        one = torch.tensor(1.0, dtype=torch.float64)
        (g,) = torch.autograd.grad([(x * x).sum(), (3 * x).sum()], [x], [one, one * 2])
        close(g, 2 * np.array([1.0, 2.0]) + 6)

    def test_grad_wrt_intermediate(self):
        x = leaf([1.0, 2.0])
        h = x * 3
        out = (h ** 2).sum()
        gh, gx = torch.autograd.grad(out, [h, x])
        close(gh, 2 * 3 * np.array([1.0, 2.0]))
        close(gx, 18 * np.array([1.0, 2.0]))
        assert x.grad is None

    def test_retain_graph(self):
        x = leaf([1.0, 2.0])
        y = (x.exp()).sum()
        (g1,) = torch.autograd.grad(y, x, retain_graph=True)
        (g2,) = torch.autograd.grad(y, x)
        close(g1, np.exp([1.0, 2.0]))
        close(g2, np.exp([1.0, 2.0]))

    def test_allow_unused(self):
        x, u = leaf([1.0, 2.0]), leaf([3.0])
        out = (x * 2).sum()
        with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
            torch.autograd.grad(out, [x, u], retain_graph=True)
        gx, gu = torch.autograd.grad(out, [x, u], allow_unused=True, retain_graph=True)
        close(gx, [2.0, 2.0])
        assert gu is None
        gx, gu = torch.autograd.grad(out, [x, u], allow_unused=True, materialize_grads=True)
        close(gu, [0.0])
        assert x.grad is None and u.grad is None

    def test_input_that_does_not_require_grad(self):
        x = leaf([1.0])
        with pytest.raises(RuntimeError, match="does not require grad"):
            torch.autograd.grad((x * 2).sum(), [torch.ones(1)])

    def test_create_graph_false_gives_constant(self):
        x = leaf([1.0, 2.0])
        (g,) = torch.autograd.grad((x ** 3).sum(), x)
        assert not g.requires_grad and g.grad_fn is None


# ---------------------------------------------------------------------------------------------
# higher-order gradients
# ---------------------------------------------------------------------------------------------
class TestHigherOrder:
    def test_second_derivative_of_cube(self):
        xv = np.array([0.5, 1.5, -2.0])
        x = leaf(xv)
        (g,) = torch.autograd.grad((x ** 3).sum(), x, create_graph=True)
        assert g.requires_grad and g.grad_fn is not None
        close(g, 3 * xv ** 2)
        (g2,) = torch.autograd.grad(g.sum(), x)
        close(g2, 6 * xv)

    def test_third_derivative(self):
        xv = np.array([0.5, 1.5])
        x = leaf(xv)
        (g,) = torch.autograd.grad((x ** 4).sum(), x, create_graph=True)
        (g2,) = torch.autograd.grad(g.sum(), x, create_graph=True)
        (g3,) = torch.autograd.grad(g2.sum(), x)
        close(g3, 24 * xv)

    @pytest.mark.parametrize("f, d2", [
        (torch.sin, lambda v: -np.sin(v)),
        (torch.cos, lambda v: -np.cos(v)),
        (torch.tanh, lambda v: -2 * np.tanh(v) * (1 - np.tanh(v) ** 2)),
        (torch.exp, np.exp),
        (torch.log, lambda v: -1 / v ** 2),
        (torch.sqrt, lambda v: -0.25 * v ** -1.5),
        (torch.sigmoid, lambda v: (1 / (1 + np.exp(-v))) * (1 - 1 / (1 + np.exp(-v))) * (1 - 2 / (1 + np.exp(-v)))),
    ])
    def test_second_derivative_unary(self, f, d2):
        xv = np.array([0.5, 1.5, 2.0])
        x = leaf(xv)
        (g,) = torch.autograd.grad(f(x).sum(), x, create_graph=True)
        (g2,) = torch.autograd.grad(g.sum(), x)
        close(g2, d2(xv))

    def test_mixed_partials(self):
        xv, yv = 1.5, -0.7
        x, y = leaf(xv), leaf(yv)
        z = x * x * y + torch.sin(x * y)
        gx, gy = torch.autograd.grad(z, (x, y), create_graph=True)
        close(gx, 2 * xv * yv + yv * np.cos(xv * yv))
        close(gy, xv * xv + xv * np.cos(xv * yv))
        (gxy,) = torch.autograd.grad(gx, y, retain_graph=True)
        (gyx,) = torch.autograd.grad(gy, x, retain_graph=True)
        expected = 2 * xv + np.cos(xv * yv) - xv * yv * np.sin(xv * yv)
        close(gxy, expected)
        close(gyx, expected)
        (gxx,) = torch.autograd.grad(gx, x)
        close(gxx, 2 * yv - yv * yv * np.sin(xv * yv))

    def test_hessian_vector_product(self):
        xv = np.array([0.3, -0.4, 1.1])
        v = np.array([1.0, 2.0, -1.0])
        x = leaf(xv)
        f = (x ** 2).sum() * x.exp().sum()
        (g,) = torch.autograd.grad(f, x, create_graph=True)
        (hv,) = torch.autograd.grad((g * torch.tensor(v)).sum(), x)
        s2, se = (xv ** 2).sum(), np.exp(xv).sum()
        ex = np.exp(xv)
        hess = 2 * np.eye(3) * se + np.outer(2 * xv, ex) + np.outer(ex, 2 * xv) + np.diag(ex) * s2
        close(hv, hess @ v)

    def test_grad_of_grad_norm_penalty(self):
        w = leaf([[1.0, 2.0], [3.0, 4.0]])
        iv = np.array([[0.5, -1.0], [2.0, 0.3]])
        inp = torch.tensor(iv)
        loss = (inp.mm(w) ** 2).sum()
        (g,) = torch.autograd.grad(loss, w, create_graph=True)
        a = iv.T @ iv
        wv = arr(w)
        close(g, 2 * a @ wv)
        (g ** 2).sum().backward()  # = 4 |A W|^2  -> d/dW = 8 A A W
        close(w.grad, 8 * a @ a @ wv)

    def test_backward_create_graph_then_backward_through_grad(self):
        x = leaf(2.0)
        (x ** 3).backward(create_graph=True)
        g = x.grad
        assert g.requires_grad
        close(g, 12.0)
        x.grad = None
        g.backward()
        close(x.grad, 12.0)

    def test_gradgradcheck(self):
        torch.manual_seed(0)
        a = torch.rand(2, 3, dtype=torch.float64, requires_grad=True)
        b = torch.rand(3, 2, dtype=torch.float64, requires_grad=True)
        assert gradgradcheck(torch.mm, (a, b))
        assert gradgradcheck(lambda p, q: p / (q.t() + 1), (a, b))
        for f in (torch.sin, torch.tanh, torch.exp, lambda t: t * t, lambda t: t.pow(3), torch.sigmoid):
            assert gradgradcheck(f, (a,))
        go = torch.tensor([[1.0, -2.0, 0.5], [0.0, 3.0, 1.0]], dtype=torch.float64)
        assert gradgradcheck(torch.sin, (a,), (go,))
        assert gradgradcheck(torch.sin, (a,), (go.clone().requires_grad_(),))

    def test_gradgradcheck_detects_wrong_double_backward(self):
        class Square(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * 2 * x.detach()  # right value, but not differentiable w.r.t. x

        x = leaf([0.5, 1.5])
        assert gradcheck(Square.apply, (x,))
        assert not gradgradcheck(Square.apply, (x,), raise_exception=False)
        with pytest.raises(torch.autograd.GradcheckError):
            gradgradcheck(Square.apply, (x,))


# ---------------------------------------------------------------------------------------------
# in-place semantics
# ---------------------------------------------------------------------------------------------
class TestInplace:
    def test_inplace_on_leaf_requiring_grad_raises(self):
        x = leaf([1.0, 2.0])
        for op in (lambda: x.add_(1), lambda: x.mul_(2), lambda: x.zero_()):
            with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
                op()
        assert x.tolist() == [1.0, 2.0]

    def test_inplace_on_leaf_inside_no_grad(self):
        x = leaf([1.0, 2.0])
        with torch.no_grad():
            x.add_(1)
            x.mul_(2)
        assert x.tolist() == [4.0, 6.0]
        assert x.is_leaf and x.requires_grad and x.grad_fn is None
        (x * x).sum().backward()
        close(x.grad, [8.0, 12.0])

    def test_sgd_style_update(self):
        x = leaf([1.0, -2.0])
        for _ in range(3):
            loss = (x * x).sum()
            loss.backward()
            with torch.no_grad():
                x -= 0.25 * x.grad
            x.grad = None
        close(x, np.array([1.0, -2.0]) * 0.5 ** 3)

    def test_modified_saved_input_detected(self):
        x = leaf([1.0, 2.0])
        h = x * 2
        w = h * h  # saves h
        h.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            w.sum().backward()

    def test_modified_saved_output_detected(self):
        x = leaf([1.0, 2.0])
        y = x.exp()  # saves its output
        y.mul_(3)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()

    def test_modification_through_detach_detected(self):
        x = leaf([1.0, 2.0])
        y = x * x  # saves x
        x.detach().add_(1)  # detach shares the version counter
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()

    def test_modification_through_data_not_detected(self):
        x = leaf([1.0, 2.0])
        y = x * x
        x.data.add_(1)  # .data does not share the version counter (silently wrong in torch too)
        y.sum().backward()
        close(x.grad, 2 * np.array([2.0, 3.0]))

    def test_inplace_on_non_leaf(self):
        xv = np.array([1.0, 2.0])
        x = leaf(xv)
        h = x * 2
        h.add_(1)
        assert type(h.grad_fn).__name__ == "AddBackward0" and not h.is_leaf
        h.sum().backward()
        close(x.grad, [2.0, 2.0])
        x.grad = None
        h = x * 2
        h.add_(1)
        (h * h).sum().backward()
        close(x.grad, 4 * (2 * xv + 1))

    def test_inplace_chain_on_non_leaf(self):
        xv = np.array([1.0, 2.0])
        x = leaf(xv)
        h = x * 1
        h += x
        h *= x  # h = 2 x^2
        h.sum().backward()
        close(x.grad, 4 * xv)
        x.grad = None
        h = x.sin()
        h.mul_(3)
        h.sum().backward()
        close(x.grad, 3 * np.cos(xv))

    def test_inplace_with_grad_requiring_other_on_plain_tensor(self):
        x = leaf([1.0, 2.0])
        b = torch.zeros(2, dtype=torch.float64)
        b.add_(x * 3)
        assert b.requires_grad and not b.is_leaf
        (b * b).sum().backward()
        close(x.grad, 18 * np.array([1.0, 2.0]))

    def test_setitem_on_non_leaf(self):
        x = leaf([1.0, 2.0, 3.0])
        h = x * 2
        h[0] = 0.0
        h.sum().backward()
        close(x.grad, [0.0, 2.0, 2.0])

    def test_data_and_detach_share_storage(self):
        x = leaf([1.0, 2.0])
        d = x.data
        assert not d.requires_grad and d.is_leaf
        d.mul_(2)
        assert x.tolist() == [2.0, 4.0]
        x.detach()[1] = 7.0
        assert x.tolist() == [2.0, 7.0]
        assert x.requires_grad and x.is_leaf

    def test_data_setter(self):
        x = leaf([1.0, 2.0])
        x.data = torch.tensor([5.0, 6.0], dtype=torch.float64)
        (x * x).sum().backward()
        close(x.grad, [10.0, 12.0])


# ---------------------------------------------------------------------------------------------
# the legacy Variable API
# ---------------------------------------------------------------------------------------------
class TestVariable:
    def test_legacy_program(self):
        x = Variable(torch.ones(2, 2), requires_grad=True)
        y = x + 2
        y.backward(torch.ones(2, 2))
        assert x.grad.tolist() == [[1.0, 1.0], [1.0, 1.0]]
        assert x.is_leaf and type(y.grad_fn).__name__ == "AddBackward0"
        assert y.tolist() == [[3.0, 3.0], [3.0, 3.0]]

    def test_variable_defaults_and_storage(self):
        base = torch.ones(2)
        v = Variable(base, requires_grad=True)
        assert v.requires_grad and v.is_leaf
        with torch.no_grad():
            v.mul_(3)
        assert base.tolist() == [3.0, 3.0]
        assert not Variable(torch.ones(2)).requires_grad


def test_second_backward_through_a_graph_that_saved_nothing_accumulates_as_in_pytorch():
    x = torch.ones(2, requires_grad=True)
    y = (x + 1).sum()  # AddBackward0 and SumBackward0 save no tensors: nothing is freed
    y.backward()
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])
    z = (x * x).sum()  # MulBackward0 saves its inputs: the second backward needs retain_graph
    z.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        z.backward()


def test_leaf_that_is_also_a_root_sums_both_gradients():
    # the engine accumulates a leaf reached by a single edge at once; a leaf that is also a root keeps its
    # root gradient and gets the edge's added to it (one accumulation, as in PyTorch)
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    torch.autograd.backward([y, x], [torch.ones(2), torch.tensor([10.0, 20.0])])
    assert x.grad.tolist() == [13.0, 23.0]
    calls = []
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    w.register_hook(lambda g: calls.append(g.tolist()))
    (w * 2).sum().backward()
    assert calls == [[2.0, 2.0]] and w.grad.tolist() == [2.0, 2.0]
    z = torch.tensor([1.0], requires_grad=True)
    (z * 2 + z * 5).sum().backward()  # two edges into one leaf: summed before the single accumulation
    assert z.grad.tolist() == [7.0]


def test_saved_tensors_are_freed_as_soon_as_their_node_has_run():
    # as PyTorch's engine (retain_graph=False): a node's saved tensors go right after its backward, so later
    # nodes of the same pass run with less memory held; retain_graph=True keeps them to the end
    import weakref
    for retain, freed in ((False, [True]), (True, [False])):
        x = torch.randn(3, requires_grad=True)
        out = x.exp()  # saved by ExpBackward (its result) and by MulBackward (its input)
        ref = weakref.ref(out)
        loss = (out * 2).sum()
        del out
        seen = []
        x.register_hook(lambda g: seen.append(ref() is None))
        loss.backward(retain_graph=retain)
        assert seen == freed
        np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(x.detach().numpy()), rtol=1e-6)


def _penalty_ops(device):
    """Losses whose op under test receives a gradient that does not require grad (a constant factor c)."""
    import coretorch.nn.functional as F
    y = torch.tensor([1, 0, 2, 1], device=device)
    c = torch.tensor(np.linspace(-1, 1, 12).reshape(4, 3), device=device)
    return {
        "linear": lambda x, w, b: (F.linear(x, w, b) * c).sum(),
        "addmm": lambda x, w, b: (torch.addmm(b, x, w.t()) * c).sum(),
        "log_softmax": lambda x, w, b: (F.log_softmax(x @ w.t() + b, 1) * c).sum(),
        "cross_entropy": lambda x, w, b: F.cross_entropy(x @ w.t() + b, y),
    }


@pytest.mark.parametrize("device", available_devices())
@pytest.mark.parametrize("op", ["linear", "addmm", "log_softmax", "cross_entropy"])
def test_gradient_penalty_with_an_implicit_output_gradient(device, op):
    """autograd.grad(loss, x, create_graph=True) on a scalar loss: the incoming gradient (1) needs no grad, yet
    dloss/dx depends on the weights, so it must carry a graph (the plain kernel-level backward paths used to
    return it detached and the second backward raised)."""
    f = _penalty_ops(device)[op]
    rng = np.random.default_rng(3)
    xv, wv, bv = rng.standard_normal((4, 3)), rng.standard_normal((3, 3)), rng.standard_normal(3)

    def penalty(xa, wa, ba, create_graph):
        x = torch.tensor(xa, device=device, requires_grad=True)
        w = torch.tensor(wa, device=device, requires_grad=True)
        b = torch.tensor(ba, device=device, requires_grad=True)
        (gx,) = torch.autograd.grad(f(x, w, b), x, create_graph=create_graph)
        return (gx * gx).sum(), (x, w, b)

    p, leaves = penalty(xv, wv, bv, True)
    assert p.requires_grad
    p.backward()
    for i, v in enumerate((xv, wv, bv)):
        def pf(vi, i=i):
            args = [xv, wv, bv]
            args[i] = vi
            return penalty(*args, False)[0].item()
        got = leaves[i].grad  # None where the penalty does not depend on the leaf (its gradient is 0)
        got = np.zeros_like(v) if got is None else got.cpu().numpy()
        np.testing.assert_allclose(got, numgrad(pf, v), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("used_twice", [False, True])
def test_function_gradients_of_the_wrong_shape_or_dtype(used_twice):
    """A Function's gradient that does not broadcast to its input raises PyTorch's error (a (5,) or a (6,)
    gradient for a (2, 3) input: the latter used to be reshaped silently), whether its leaf takes the engine's
    one-edge path or is queued; a gradient of another dtype is cast to the leaf's."""
    def fn(grad):
        class F(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return grad(g)
        return F

    for bad in (lambda g: torch.ones(5), lambda g: torch.ones(6)):
        x = torch.ones(2, 3, requires_grad=True)
        y = fn(bad).apply(x)
        with pytest.raises(RuntimeError, match=r"returned an invalid gradient at index 0 - got \[\d\] but expected "
                                               r"shape compatible with \[2, 3\]"):
            (y + x * 3 if used_twice else y).sum().backward()
    x = torch.ones(2, 3, requires_grad=True)
    y = fn(lambda g: (g * 2).double()).apply(x)
    (y + x * 3 if used_twice else y).sum().backward()
    assert x.grad.dtype is torch.float32
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 5.0 if used_twice else 2.0))


def test_engine_validates_node_gradients_for_queued_leaves():
    """A graph node (below the Function layer) whose gradient for a leaf has the wrong shape raises, and one of
    another dtype is cast, also when the leaf is used twice (its gradients are summed in the queue first)."""
    from coretorch.autograd.graph import Node
    from coretorch.tensor import _make

    class Twice(Node):
        def backward(self, g):
            return (self.out_grad(g),)

    for out_grad, expect in ((lambda g: torch.ones(4), "invalid gradient at index 0 - got [4]"),
                             (lambda g: torch.full((3,), 2.0, dtype=torch.float64), None)):
        x = torch.ones(3, requires_grad=True)
        node = Twice()
        node.out_grad = out_grad
        node.next_functions = ((x._get_accum(), 0),)
        y = _make(x._data * 2, x.dtype, x._be, node)
        loss = (y + x).sum()
        if expect:
            with pytest.raises(RuntimeError, match=re.escape(expect)):
                loss.backward()
        else:
            loss.backward()
            assert x.grad.dtype is torch.float32 and x.grad.tolist() == [3.0, 3.0, 3.0]


def test_enable_grad_inside_inference_mode_records_nothing():
    """PyTorch: inside ``inference_mode`` nothing is recorded even under ``enable_grad``/``set_grad_enabled(True)``,
    though ``is_grad_enabled()`` says True; leaving inference mode gives back the mode before it. Before, the
    multiplication recorded a MulBackward0 node and its result required grad."""
    w = torch.ones(2, requires_grad=True)
    with torch.inference_mode():
        with torch.enable_grad():
            y = w * 2
            assert torch.is_grad_enabled() and torch.is_inference_mode_enabled()
            assert not y.requires_grad and y.grad_fn is None
        assert not torch.is_grad_enabled()
        torch.set_grad_enabled(True)
        assert torch.is_grad_enabled() and not (w * 2).requires_grad
    assert torch.is_grad_enabled() and (w * 2).requires_grad
    with torch.no_grad(), torch.inference_mode(False):  # (PyTorch's InferenceMode(false) turns grad mode on)
        assert torch.is_grad_enabled() and (w * 2).requires_grad
