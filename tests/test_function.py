"""autograd.Function written exactly as PyTorch users write it, and gradcheck itself."""
import warnings

import numpy as np
import pytest

import coretorch as torch
from coretorch.autograd import Function, gradcheck, gradgradcheck
from coretorch.autograd.gradcheck import GradcheckError

SECOND_TIME = "Trying to backward through the graph a second time"


def arr(t):
    return t.detach().numpy()


def close(t, expected):
    np.testing.assert_allclose(arr(t), np.asarray(expected, dtype=np.float64), rtol=1e-6, atol=1e-8)


def leaf(values, dtype=torch.float64):
    return torch.tensor(values, dtype=dtype, requires_grad=True)


# ---------------------------------------------------------------------------------------------
# the PyTorch docs' examples ("Extending torch.autograd"), verbatim apart from the import
# ---------------------------------------------------------------------------------------------
class LinearFunction(Function):

    # Note that forward, setup_context, and backward are @staticmethods
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight, bias)
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    # This function has only a single output, so it gets only one gradient
    @staticmethod
    def backward(ctx, grad_output):
        # This is a pattern that is very convenient - at the top of backward
        # unpack saved_tensors and initialize all gradients w.r.t. inputs to
        # None. Thanks to the fact that additional trailing Nones are
        # ignored, the return statement is simple even when the function has
        # optional inputs.
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None

        # These needs_input_grad checks are optional and there only to
        # improve efficiency. If you want to make your code simpler, you can
        # skip them. Returning gradients for inputs that don't require it is
        # not an error.
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)

        return grad_input, grad_weight, grad_bias


class LinearFunctionSetupContext(Function):
    """The same function in the ``setup_context`` form."""

    @staticmethod
    def forward(input, weight, bias=None):
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    # inputs is a Tuple of all of the inputs passed to forward.
    # output is the output of the forward().
    def setup_context(ctx, inputs, output):
        input, weight, bias = inputs
        ctx.save_for_backward(input, weight, bias)

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


class MulConstant(Function):
    @staticmethod
    def forward(ctx, tensor, constant):
        # ctx is a context object that can be used to stash information
        # for backward computation
        ctx.constant = constant
        return tensor * constant

    @staticmethod
    def backward(ctx, grad_output):
        # We return as many input gradients as there were arguments.
        # Gradients of non-Tensor arguments to forward must be None.
        return grad_output * ctx.constant, None


class TestDocsExamples:
    def test_linear_function_gradcheck(self):
        torch.manual_seed(0)
        linear = LinearFunction.apply
        # gradcheck takes a tuple of tensors as input, check if your gradient
        # evaluated with these tensors are close enough to numerical
        # approximations and returns True if they all verify this condition.
        input = (torch.randn(20, 20, dtype=torch.double, requires_grad=True),
                 torch.randn(30, 20, dtype=torch.double, requires_grad=True))
        test = gradcheck(linear, input, eps=1e-6, atol=1e-4)
        assert test is True

    def test_linear_function_with_bias_gradcheck(self):
        torch.manual_seed(1)
        inputs = (torch.randn(4, 5, dtype=torch.double, requires_grad=True),
                  torch.randn(3, 5, dtype=torch.double, requires_grad=True),
                  torch.randn(3, dtype=torch.double, requires_grad=True))
        assert gradcheck(LinearFunction.apply, inputs, eps=1e-6, atol=1e-4)
        assert gradcheck(LinearFunctionSetupContext.apply, inputs, eps=1e-6, atol=1e-4)

    def test_linear_function_values_and_grads(self):
        rng = np.random.default_rng(0)
        xv, wv, bv = rng.standard_normal((4, 3)), rng.standard_normal((2, 3)), rng.standard_normal(2)
        for fn in (LinearFunction, LinearFunctionSetupContext):
            x, w, b = leaf(xv), leaf(wv), leaf(bv)
            out = fn.apply(x, w, b)
            assert type(out.grad_fn).__name__ == fn.__name__ + "Backward"
            close(out, xv @ wv.T + bv)
            gv = rng.standard_normal((4, 2))
            out.backward(torch.tensor(gv))
            close(x.grad, gv @ wv)
            close(w.grad, gv.T @ xv)
            close(b.grad, gv.sum(0))

    def test_linear_function_needs_input_grad_skips_work(self):
        seen = []

        class Probe(LinearFunction):
            @staticmethod
            def backward(ctx, grad_output):
                seen.append(ctx.needs_input_grad)
                return LinearFunction.backward(ctx, grad_output)

        x = torch.randn(4, 3, dtype=torch.double)
        w = torch.randn(2, 3, dtype=torch.double, requires_grad=True)
        Probe.apply(x, w).sum().backward()  # bias left at its default
        assert seen == [(False, True)]
        assert x.grad is None
        close(w.grad, np.broadcast_to(arr(x).sum(0), (2, 3)))

    def test_mul_constant(self):
        a = torch.randn(3, 4, dtype=torch.double, requires_grad=True)
        assert gradcheck(MulConstant.apply, (a, 2.5))
        y = MulConstant.apply(a, 3.0)
        close(y, 3.0 * arr(a))
        assert type(y.grad_fn).__name__ == "MulConstantBackward"
        y.sum().backward()
        close(a.grad, np.full((3, 4), 3.0))

    def test_mul_constant_second_backward_keeps_ctx_attributes(self):
        # only saved tensors are freed by backward: plain ctx attributes survive, as in torch
        a = leaf([1.0, 2.0])
        y = MulConstant.apply(a, 3.0)
        y.backward(torch.ones(2, dtype=torch.double))
        y.backward(torch.ones(2, dtype=torch.double))
        close(a.grad, [6.0, 6.0])


# ---------------------------------------------------------------------------------------------
# the ctx API
# ---------------------------------------------------------------------------------------------
class Exp(Function):
    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * result


class TestCtx:
    def test_save_for_backward_output(self):
        xv = np.array([0.1, 1.0, -2.0])
        x = leaf(xv)
        y = Exp.apply(x)
        close(y, np.exp(xv))
        assert not y.is_leaf and y.requires_grad
        (y * y).sum().backward()
        close(x.grad, 2 * np.exp(2 * xv))
        assert gradcheck(Exp.apply, (leaf(xv),))

    def test_saved_tensors_freed_after_backward(self):
        x = leaf([1.0, 2.0])
        y = Exp.apply(x)
        y.sum().backward()
        with pytest.raises(RuntimeError, match=SECOND_TIME):
            y.sum().backward()
        with pytest.raises(RuntimeError, match=SECOND_TIME):
            y.grad_fn.saved_tensors

    def test_retain_graph_keeps_saved_tensors(self):
        x = leaf([1.0, 2.0])
        y = Exp.apply(x).sum()
        y.backward(retain_graph=True)
        y.backward()
        close(x.grad, 2 * np.exp([1.0, 2.0]))

    def test_saved_tensor_modified_in_place_is_detected(self):
        x = leaf([1.0, 2.0])
        y = Exp.apply(x)
        y.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()

    def test_save_for_backward_rejects_non_tensors(self):
        class Bad(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, 3)
                return x * 1

            @staticmethod
            def backward(ctx, g):
                return g

        with pytest.raises(TypeError, match="save_for_backward can only save variables"):
            Bad.apply(leaf([1.0]))

    def test_needs_input_grad(self):
        seen = []

        class F(Function):
            @staticmethod
            def forward(ctx, a, b, c, k):
                seen.append(("fwd", ctx.needs_input_grad))
                return a * b + c * k

            @staticmethod
            def backward(ctx, g):
                seen.append(("bwd", ctx.needs_input_grad))
                return g * 2, None, g * 3 if ctx.needs_input_grad[2] else None, None

        a, c = leaf([1.0]), leaf([2.0])
        b = torch.tensor([2.0], dtype=torch.float64)
        F.apply(a, b, c, 5).sum().backward()
        assert seen == [("fwd", (True, False, True, False)), ("bwd", (True, False, True, False))]
        close(a.grad, [2.0])
        close(c.grad, [3.0])
        assert b.grad is None

    def test_non_tensor_arguments_get_none_gradient(self):
        class Scale(Function):
            @staticmethod
            def forward(ctx, x, factor, name, shift=0.0):
                ctx.factor = factor
                assert name == "hello"
                return x * factor + shift

            @staticmethod
            def backward(ctx, g):
                return g * ctx.factor, None, None, None

        x = leaf([1.0, 2.0])
        y = Scale.apply(x, 4.0, "hello", 1.0)
        close(y, [5.0, 9.0])
        y.sum().backward()
        close(x.grad, [4.0, 4.0])

    def test_gradient_for_non_tensor_argument_raises(self):
        class F(Function):
            @staticmethod
            def forward(ctx, x, k):
                return x * k

            @staticmethod
            def backward(ctx, g):
                return g, torch.ones(1)

        with pytest.raises(RuntimeError, match="returned a gradient different than None at position 2"):
            F.apply(leaf([1.0]), 3.0).sum().backward()

    def test_gradient_for_tensor_not_requiring_grad_is_ignored(self):
        class F(Function):
            @staticmethod
            def forward(ctx, x, y):
                return x * y

            @staticmethod
            def backward(ctx, g):
                return g * 2, g * 3

        x, y = leaf([1.0]), torch.tensor([5.0], dtype=torch.float64)
        F.apply(x, y).sum().backward()
        close(x.grad, [2.0])
        assert y.grad is None

    @pytest.mark.parametrize("returned", [1, 3])
    def test_wrong_number_of_gradients(self, returned):
        class F(Function):
            @staticmethod
            def forward(ctx, x, y):
                return x * y

            @staticmethod
            def backward(ctx, g):
                return (g,) * returned

        with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
            F.apply(leaf([1.0]), leaf([2.0])).sum().backward()

    def test_trailing_none_gradients_are_ignored(self):
        class F(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2, None, None

        x = leaf([1.0])
        F.apply(x).sum().backward()
        close(x.grad, [2.0])

    def test_several_outputs(self):
        class SinCos(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x.sin(), x.cos()

            @staticmethod
            def backward(ctx, gs, gc):
                (x,) = ctx.saved_tensors
                return gs * x.cos() - gc * x.sin()

        xv = np.array([0.2, 1.3])
        x = leaf(xv)
        s, c = SinCos.apply(x)
        assert s.grad_fn is c.grad_fn
        (2 * s + 3 * c).sum().backward()
        close(x.grad, 2 * np.cos(xv) - 3 * np.sin(xv))
        assert gradcheck(SinCos.apply, (leaf(xv),))

    def test_unused_output_grad_is_materialized_as_zeros(self):
        seen = []

        class Two(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                seen.append((g1.tolist(), g2.tolist()))
                return g1 * 2 + g2 * 3

        x = leaf([1.0, 2.0])
        _, b = Two.apply(x)
        b.sum().backward()
        assert seen == [([0.0, 0.0], [1.0, 1.0])]
        close(x.grad, [3.0, 3.0])

    def test_set_materialize_grads_false(self):
        seen = []

        class Two(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(False)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                seen.append((g1 is None, g2 is None))
                r = None
                if g1 is not None:
                    r = g1 * 2
                if g2 is not None:
                    r = g2 * 3 if r is None else r + g2 * 3
                return r

        x = leaf([1.0, 2.0])
        a, _ = Two.apply(x)
        a.sum().backward()
        assert seen == [(False, True)]
        close(x.grad, [2.0, 2.0])

    def test_mark_non_differentiable(self):
        class SortF(Function):
            @staticmethod
            def forward(ctx, x):
                idx = torch.tensor(np.argsort(x.detach().numpy()))
                ctx.mark_non_differentiable(idx)
                ctx.save_for_backward(idx)
                return x[idx], idx

            @staticmethod
            def backward(ctx, g, g_idx):
                (idx,) = ctx.saved_tensors
                out = torch.zeros_like(g)
                out[idx] = g
                return out

        x = leaf([3.0, 1.0, 2.0])
        v, i = SortF.apply(x)
        assert v.tolist() == [1.0, 2.0, 3.0] and i.tolist() == [1, 2, 0]
        assert v.requires_grad and not i.requires_grad
        (v * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum().backward()
        close(x.grad, [3.0, 1.0, 2.0])

    def test_mark_non_differentiable_float_output(self):
        class F(Function):
            @staticmethod
            def forward(ctx, x):
                mask = (x > 0).to(x.dtype)
                ctx.mark_non_differentiable(mask)
                return x * 2, mask

            @staticmethod
            def backward(ctx, g, g_mask):
                return g * 2

        y, m = F.apply(leaf([1.0, -1.0]))
        assert y.requires_grad and not m.requires_grad and m.grad_fn is None

    def test_mark_dirty(self):
        class AddOne_(Function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g

        x = leaf([1.0, 2.0])
        h = x * 2
        earlier = h * h  # saves h before the in-place Function
        out = AddOne_.apply(h)
        assert out is h
        assert h.tolist() == [3.0, 5.0]
        assert type(h.grad_fn).__name__ == "AddOne_Backward"
        (h * h).sum().backward()
        close(x.grad, 2 * 2 * np.array([3.0, 5.0]))
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            earlier.sum().backward()  # the version counter saw the in-place change

    def test_mark_dirty_moves_retain_grad(self):
        class Double_(Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2

        x = leaf([1.0, 2.0])
        h = x * 1
        h.retain_grad()
        Double_.apply(h)
        (h * h).sum().backward()
        close(h.grad, 2 * np.array([2.0, 4.0]))
        close(x.grad, 8 * np.array([1.0, 2.0]))

    def test_mark_dirty_on_leaf_requiring_grad_raises(self):
        class AddOne_(Function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g

        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            AddOne_.apply(leaf([1.0]))

    def test_input_returned_unchanged_gets_its_own_identity(self):
        class Ident(Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 5

        x = leaf([1.0, 2.0])
        y = Ident.apply(x)
        assert y is not x and x.is_leaf and x.grad_fn is None
        assert type(y.grad_fn).__name__ == "IdentBackward"
        y.sum().backward()
        close(x.grad, [5.0, 5.0])

    def test_no_graph_when_nothing_requires_grad_or_under_no_grad(self):
        y = MulConstant.apply(torch.ones(2), 3.0)
        assert not y.requires_grad and y.grad_fn is None
        x = leaf([1.0])
        with torch.no_grad():
            y = MulConstant.apply(x, 3.0)
        assert not y.requires_grad and y.grad_fn is None

    def test_forward_runs_without_recording(self):
        seen = []

        class F(Function):
            @staticmethod
            def forward(ctx, x):
                seen.append(torch.is_grad_enabled())
                y = x * 2
                seen.append(y.requires_grad)
                return y

            @staticmethod
            def backward(ctx, g):
                return g * 2

        F.apply(leaf([1.0]))
        assert seen == [False, False]

    def test_setup_context_form(self):
        class Scale(Function):
            @staticmethod
            def forward(x, k=2.0):
                return x * k

            @staticmethod
            def setup_context(ctx, inputs, output):
                x, k = inputs  # defaults are bound, as in torch
                ctx.k = k
                ctx.save_for_backward(x)

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * ctx.k, None

        x = leaf([1.0, 2.0])
        Scale.apply(x).sum().backward()
        close(x.grad, [2.0, 2.0])
        x.grad = None
        Scale.apply(x, 4.0).sum().backward()
        close(x.grad, [4.0, 4.0])

    def test_double_backward_through_function(self):
        xv = np.array([1.0, 2.0])
        x = leaf(xv)
        (g,) = torch.autograd.grad(Exp.apply(x).sum(), x, create_graph=True)
        assert g.requires_grad
        close(g, np.exp(xv))
        (g2,) = torch.autograd.grad(g.sum(), x)
        close(g2, np.exp(xv))
        assert gradgradcheck(Exp.apply, (leaf(xv),))

    def test_once_differentiable_backward_builds_no_graph(self):
        from coretorch.autograd import once_differentiable

        class Sq(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            @once_differentiable
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * x * g

        x = leaf([3.0])
        (g,) = torch.autograd.grad(Sq.apply(x).sum(), x, create_graph=True)
        close(g, [6.0])
        assert not g.requires_grad  # the incoming grad did not require grad: nothing to guard
        y = Sq.apply(x)
        (g,) = torch.autograd.grad((y * y).sum(), x, create_graph=True)
        close(g, [4 * 27.0])
        assert g.requires_grad
        with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was marked with "
                                               "@once_differentiable"):
            g.sum().backward()

    def test_calling_an_instance_is_an_error(self):
        with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward method"):
            MulConstant()(leaf([1.0]), 2.0)

    def test_hooks_on_function_outputs(self):
        x = leaf([1.0, 2.0])
        y = Exp.apply(x)
        y.register_hook(lambda g: g * 10)
        y.retain_grad()
        y.sum().backward()
        close(x.grad, 10 * np.exp([1.0, 2.0]))


# ---------------------------------------------------------------------------------------------
# gradcheck itself
# ---------------------------------------------------------------------------------------------
class WrongSquare(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x  # should be 2 * x * g


class TestGradcheck:
    def test_true_on_builtin_ops(self):
        torch.manual_seed(0)
        a = torch.rand(3, 2, dtype=torch.float64, requires_grad=True)
        b = torch.rand(2, 4, dtype=torch.float64, requires_grad=True)
        assert gradcheck(torch.mm, (a, b)) is True
        assert gradcheck(lambda t: (t.sin() * t).sum(0), (a,)) is True
        # a single tensor is accepted as inputs
        assert gradcheck(torch.tanh, a) is True

    def test_wrong_backward_raises(self):
        x = leaf([0.5, -1.0, 2.0])
        with pytest.raises(GradcheckError, match="Jacobian mismatch"):
            gradcheck(WrongSquare.apply, (x,))
        assert issubclass(GradcheckError, RuntimeError)
        assert torch.autograd.GradcheckError is GradcheckError
        with pytest.raises(RuntimeError):
            gradcheck(WrongSquare.apply, (x,))

    def test_wrong_backward_returns_false_without_raising(self):
        x = leaf([0.5, -1.0, 2.0])
        assert gradcheck(WrongSquare.apply, (x,), raise_exception=False) is False

    def test_wrong_grad_for_second_input_detected(self):
        class Mul(Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a * b

            @staticmethod
            def backward(ctx, g):
                a, b = ctx.saved_tensors
                return g * b, g * b  # second one should be g * a

        a, b = leaf([1.0, 2.0]), leaf([3.0, 5.0])
        assert gradcheck(Mul.apply, (a, b.detach())) is True  # only a is checked
        assert gradcheck(Mul.apply, (a, b), raise_exception=False) is False

    def test_non_tensor_inputs_pass_through(self):
        assert gradcheck(MulConstant.apply, (leaf([1.0, 2.0]), 7.0)) is True

    def test_requires_an_input_requiring_grad(self):
        with pytest.raises(ValueError, match="requires_grad=True"):
            gradcheck(torch.sin, (torch.ones(2, dtype=torch.float64),))

    def test_float32_inputs_warn(self):
        x = torch.tensor([0.5, 1.0], requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            gradcheck(torch.sin, (x,), eps=1e-3, atol=1e-2, rtol=1e-2)
        assert any("double precision" in str(m.message) for m in w)
