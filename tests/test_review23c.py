"""Review 23c (eager): the autograd API, second pass — hooks on views modified in place, ``requires_grad`` and
``.grad`` assignment checks, ``grad_dtype``, compared side by side with PyTorch 2.13's behaviour."""
import numpy as np
import pytest

import coretorch as torch

_T = torch.tensor


def test_hook_on_view_before_its_inplace_op_does_not_fire(device):
    """PyTorch: a hook registered on a view before an in-place op on that view is on the view's old node, which
    CopySlices does not run: it does not fire and its returned gradient is not used (a.grad == [1, 2, 2]).
    coretorch ran the old node on the base's path: the hook fired and scaled the gradient (a.grad [1, 20, 20])."""
    for root in ("base", "view", "base_through_op"):
        a = _T([1., 2., 3.], requires_grad=True, device=device)
        b = a * 1
        v = b[1:]
        calls = []
        v.register_hook(lambda g: calls.append(1) or g * 10)
        v.mul_(2)
        loss = {"base": b.sum, "view": (v * 1).sum, "base_through_op": (b * 1).sum}[root]()
        loss.backward()
        expected = [0., 2., 2.] if root == "view" else [1., 2., 2.]
        assert calls == [], root
        np.testing.assert_allclose(a.grad.cpu().numpy(), expected)


def test_hook_on_view_still_fires_for_ops_recorded_before_the_inplace_op(device):
    """PyTorch: the old view node stays in the graph of the ops that read the view before the in-place op: the
    hook fires there (once, with y's gradient 3) and scales that path only: a.grad == [1, 32, 32]."""
    a = _T([1., 2., 3.], requires_grad=True, device=device)
    b = a * 1
    v = b[1:]
    seen = []
    v.register_hook(lambda g: seen.append(g.cpu().numpy().tolist()) or g * 10)
    y = v * 3
    v.mul_(2)
    (b.sum() + y.sum()).backward()
    assert seen == [[3., 3.]]
    np.testing.assert_allclose(a.grad.cpu().numpy(), [1., 32., 32.])


def test_grad_fn_prehook_of_view_before_inplace_op_does_not_fire(device):
    """PyTorch: a pre-hook on the view's old grad_fn does not run after an in-place op on the view (the base's
    gradient goes through CopySlices); coretorch ran it."""
    a = _T([1., 2., 3.], requires_grad=True, device=device)
    b = a * 1
    v = b[1:]
    calls = []
    v.grad_fn.register_prehook(lambda go: calls.append(1))
    v.mul_(2)
    b.sum().backward()
    assert calls == []
    np.testing.assert_allclose(a.grad.cpu().numpy(), [1., 2., 2.])


@pytest.mark.parametrize("value", [1, 0, "x", None, 1.0, np.bool_(True)])
def test_requires_grad_attribute_takes_only_a_bool(device, value):
    """PyTorch: ``t.requires_grad = v`` raises RuntimeError('requires_grad must be a bool') for anything but a
    Python bool (an int, None, a numpy bool); coretorch took its truth value silently (1.0 -> True, None -> False)."""
    t = torch.zeros(2, device=device)
    with pytest.raises(RuntimeError, match="^requires_grad must be a bool$"):
        t.requires_grad = value
    assert t.requires_grad is False


@pytest.mark.parametrize("value", [1, "x", None, 1.0])
def test_requires_grad_method_takes_only_a_bool(device, value):
    """PyTorch: ``requires_grad_(1)`` raises TypeError("requires_grad_(): argument 'requires_grad' (position 1)
    must be bool, not int"); coretorch set requires_grad from the value's truth."""
    t = torch.zeros(2, device=device)
    with pytest.raises(TypeError, match=r"^requires_grad_\(\): argument 'requires_grad' \(position 1\) must be bool, "
                                        f"not {type(value).__name__}$"):
        t.requires_grad_(value)
    assert t.requires_grad is False
    assert t.requires_grad_(np.bool_(True)).requires_grad is True  # (a numpy bool is a bool to PyTorch's parser)


def test_requires_grad_of_non_leaf(device):
    """PyTorch: ``y.requires_grad = True`` on a non-leaf raises ('you can only change requires_grad flags of leaf
    variables.'), ``y.requires_grad_(True)`` does not; coretorch accepted both silently. False raises both ways."""
    a = torch.ones(2, device=device, requires_grad=True)
    y = a * 2
    with pytest.raises(RuntimeError, match=r"^you can only change requires_grad flags of leaf variables\.$"):
        y.requires_grad = True
    assert y.requires_grad_(True) is y and y.requires_grad
    for set_false in (lambda: setattr(y, "requires_grad", False), lambda: y.requires_grad_(False)):
        with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables. If you "
                                               "want to use a computed variable"):
            set_false()


def test_requires_grad_on_integer_messages(device):
    """PyTorch 2.13: requires_grad_() of an integer tensor says 'only Tensors of floating point dtype can require
    gradients', the attribute 'only Tensors of floating point and complex dtype ...'; False is no error."""
    t = torch.tensor([1, 2], device=device)
    with pytest.raises(RuntimeError, match="^only Tensors of floating point dtype can require gradients$"):
        t.requires_grad_()
    with pytest.raises(RuntimeError, match="^only Tensors of floating point and complex dtype can require gradients$"):
        t.requires_grad = True
    t.requires_grad = False
    assert t.requires_grad_(False).requires_grad is False


def test_grad_assigned_itself_raises(device):
    """PyTorch: ``a.grad = a`` raises RuntimeError("can't assign Variable as its own grad"); coretorch stored the
    tensor as its own gradient (the next backward added into the parameter's values)."""
    a = torch.ones(2, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="^can't assign Variable as its own grad$"):
        a.grad = a
    assert a.grad is None


def test_del_grad(device):
    """PyTorch: ``del a.grad`` clears the gradient (as ``a.grad = None``); coretorch raised AttributeError."""
    a = torch.ones(2, device=device, requires_grad=True)
    (a * 2).sum().backward()
    del a.grad
    assert a.grad is None


def test_grad_assignment_messages(device):
    """PyTorch 2.13's messages: 'attempting to assign a gradient of size '[3]' to a tensor of size '[2]'...', and
    for a dtype, 'attempting to assign a gradient with dtype 'double' to a tensor with grad_dtype 'Float'...'
    (the dtype is checked before the size); coretorch said 'assigned grad has data of a different size/type'."""
    a = torch.ones(2, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^attempting to assign a gradient of size '\[1, 2\]' to a tensor of size "
                                           r"'\[2\]'\. Please ensure that the gradient and the tensor are the same "
                                           "size$"):
        a.grad = torch.ones(1, 2, device=device)
    for dt, name in ((torch.float64, "double"), (torch.int64, "long int"), (torch.float16, "c10::Half"),
                     (torch.bfloat16, "c10::BFloat16"), (torch.uint8, "unsigned char"), (torch.bool, "bool")):
        with pytest.raises(RuntimeError, match=f"^attempting to assign a gradient with dtype '{name}' to a tensor "
                                               "with grad_dtype 'Float'. The gradient must match the tensor's "
                                               "grad_dtype"):
            a.grad = torch.ones(3, dtype=dt, device=device)
    with pytest.raises(TypeError, match="^assigned grad expected to be a Tensor or None but got grad of type list$"):
        a.grad = [1., 1.]
    assert a.grad is None


def test_grad_dtype_set_casts_the_backward_gradient(device):
    """PyTorch 2.13: ``p.grad_dtype = torch.float64`` makes backward (and autograd.grad, and the leaf's tensor hooks)
    give p a float64 gradient, and ``p.grad = g`` accept a float64 g; None accepts any dtype.  coretorch's
    grad_dtype was read-only (AttributeError) and the gradient kept p's dtype."""
    p = torch.tensor([1., 2.], device=device, requires_grad=True)
    assert p.grad_dtype is torch.float32
    p.grad_dtype = torch.float64
    assert p.grad_dtype is torch.float64
    seen = []
    p.register_hook(lambda g: seen.append(g.dtype))
    (p * 3).sum().backward()
    assert p.grad.dtype is torch.float64 and seen == [torch.float64]
    np.testing.assert_allclose(p.grad.cpu().numpy(), [3., 3.])
    (p * p).sum().backward()  # two edges: the queued path
    assert p.grad.dtype is torch.float64
    np.testing.assert_allclose(p.grad.cpu().numpy(), [5., 7.])
    g, = torch.autograd.grad((p * 2).sum(), p)
    assert g.dtype is torch.float64
    p.grad = torch.zeros(2, dtype=torch.float64, device=device)
    q = torch.tensor([1., 2.], device=device, requires_grad=True)
    q.grad_dtype = None
    assert q.grad_dtype is None
    q.grad = torch.ones(2, dtype=torch.float16, device=device)  # any dtype
    assert q.grad.dtype is torch.float16
    r = torch.tensor([1., 2.], device=device, requires_grad=True)
    r.grad_dtype = torch.float16
    r.sum().backward()  # the leaf's own AccumulateGrad as the graph's first node after the root
    assert r.grad.dtype is torch.float16


def test_grad_dtype_errors(device):
    """PyTorch 2.13: grad_dtype of a non-leaf raises (read: 'can only be accessed on leaf tensors.', set: 'can only
    be set on leaf tensors.'), a non-dtype raises, and changing it while a gradient of another dtype is there
    raises; coretorch had no setter (AttributeError) and returned a non-leaf's dtype."""
    a = torch.tensor([1., 2.], device=device, requires_grad=True)
    y = a * 2
    with pytest.raises(RuntimeError, match=r"^grad_dtype can only be accessed on leaf tensors\.$"):
        y.grad_dtype
    with pytest.raises(RuntimeError, match=r"^grad_dtype can only be set on leaf tensors\.$"):
        y.grad_dtype = torch.float64
    with pytest.raises(RuntimeError, match="^grad_dtype must be a torch.dtype or None, but got str$"):
        a.grad_dtype = "float64"
    a.grad = torch.ones(2, device=device)
    with pytest.raises(RuntimeError, match="^Cannot set grad_dtype to 'Double' because there is already a gradient "
                                           "with dtype 'float'. Please clear the gradient"):
        a.grad_dtype = torch.float64
    a.grad_dtype = torch.float32
    a.grad_dtype = None  # (None: always allowed)
    assert a.grad_dtype is None and a.detach().grad_dtype is torch.float32  # (a new tensor: its own dtype)


def _anomaly_forward(a):
    return (a / a).sum()


def test_detect_anomaly_warns_with_the_forward_traceback(device):
    """PyTorch: a backward that fails in anomaly mode warns 'Error detected in DivBackward0. Traceback of forward
    call that caused the error:' followed by the user's frames of the forward call (here _anomaly_forward's line),
    then raises the NaN error; coretorch raised without the warning (it recorded no forward traceback)."""
    a = torch.tensor([0., 1.], device=device, requires_grad=True)
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        ctx = torch.autograd.detect_anomaly()
    with ctx:
        y = _anomaly_forward(a)
        with pytest.warns(UserWarning) as rec:
            with pytest.raises(RuntimeError, match=r"^Function 'DivBackward0' returned nan values in its 1th "
                                                   r"output\.$"):
                y.backward()
    msgs = [str(w.message) for w in rec if "Error detected" in str(w.message)]
    assert len(msgs) == 1
    head, _, trace = msgs[0].partition("\n")
    assert head == "Error detected in DivBackward0. Traceback of forward call that caused the error:"
    assert "in _anomaly_forward" in trace and "return (a / a).sum()" in trace
    assert "coretorch" + __import__("os").sep not in trace  # (the user's frames, not the op's internals)


def test_detect_anomaly_warns_without_forward_info(device):
    """PyTorch: a node made while anomaly mode was off has no traceback: 'Error detected in DivBackward0. No forward
    pass information available. Enable detect anomaly during forward pass for more information.'"""
    a = torch.tensor([0., 1.], device=device, requires_grad=True)
    y = _anomaly_forward(a)
    with torch.autograd.set_detect_anomaly(True):
        with pytest.warns(UserWarning, match="^Error detected in DivBackward0. No forward pass information available. "
                                             "Enable detect anomaly during forward pass for more information.$"):
            with pytest.raises(RuntimeError, match="returned nan values"):
                y.backward()
    assert not torch.is_anomaly_enabled()


def test_detect_anomaly_warns_for_an_error_in_a_custom_backward(device):
    """PyTorch: any error raised by a node's backward in anomaly mode gets the warning (here a custom Function's
    ValueError, re-raised as is)."""
    class Boom(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom")

    a = torch.tensor([0., 1.], device=device, requires_grad=True)
    with torch.autograd.set_detect_anomaly(True):
        y = Boom.apply(a).sum()
        with pytest.warns(UserWarning, match="^Error detected in BoomBackward. Traceback of forward call"):
            with pytest.raises(ValueError, match="^boom$"):
                y.backward()


def test_extra_grad_outputs_are_ignored(device):
    """PyTorch: autograd.grad / autograd.backward pair each output with its gradient; gradients past the last
    output are not read (grad([y], a, grad_outputs=[g, h]) is grad(y, a, g)); fewer gradients than outputs raise
    'got 2 tensors and 1 gradients'.  coretorch raised for more gradients too."""
    a = torch.tensor([1., 2.], device=device, requires_grad=True)
    g, = torch.autograd.grad([a * 2], a, grad_outputs=[torch.tensor([1., 3.], device=device),
                                                       torch.ones(5, device=device)])
    np.testing.assert_allclose(g.cpu().numpy(), [2., 6.])
    torch.autograd.backward([a * 3], grad_tensors=[torch.tensor([1., 2.], device=device), None])
    np.testing.assert_allclose(a.grad.cpu().numpy(), [3., 6.])
    with pytest.raises(RuntimeError, match="^got 2 tensors and 1 gradients$"):
        torch.autograd.grad([a * 2, a * 3], a, grad_outputs=[torch.ones(2, device=device)])


def _version_message(run) -> str:
    with pytest.raises(RuntimeError) as e:
        run()
    return str(e.value)


def test_saved_tensor_version_error_message(device):
    """PyTorch 2.13's message: "one of the variables needed for gradient computation has been modified by an inplace
    operation: [torch.FloatTensor [2]], which is output 0 of Add, is at version 1; expected version 0 instead. Hint:
    enable anomaly detection ... with torch.autograd.set_detect_anomaly(True, check_nan=False)." -- the tensor's
    node named as its forward op, no node for a leaf, the saved output of a custom Function named as the Function.
    coretorch said '[FloatTensor [2]] ... output 0 of AddBackward0' ('of a leaf' for a leaf) with a hint of its own."""
    head = "^one of the variables needed for gradient computation has been modified by an inplace operation: "
    hint = (" Hint: enable anomaly detection to find the operation that failed to compute its gradient, with "
            "torch.autograd.set_detect_anomaly(True, check_nan=False).")

    def non_leaf():
        a = torch.tensor([1., 2.], device=device, requires_grad=True)
        b = a.sigmoid()
        y = b * b
        b.add_(1)
        y.sum().backward()
    msg = _version_message(non_leaf)
    assert msg.startswith(head[1:] + "[torch.FloatTensor [2]], which is output 0 of Add, is at version 1; expected "
                          "version 0 instead.")
    assert msg.endswith(hint)

    def leaf():
        a = torch.tensor([1., 2.], device=device, requires_grad=True)
        b = torch.tensor([1., 2.], device=device)
        y = a * b
        b.add_(1)
        y.sum().backward()
    assert _version_message(leaf) == head[1:] + "[torch.FloatTensor [2]] is at version 1; expected version 0 " \
        "instead." + hint

    class Exp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            o = x.exp()
            ctx.save_for_backward(o)
            return o

        @staticmethod
        def backward(ctx, g):
            o, = ctx.saved_tensors
            return g * o

    def custom_output():
        a = torch.tensor([0., 1.], device=device, requires_grad=True, dtype=torch.float64)
        y = Exp.apply(a)
        y.mul_(3)
        y.sum().backward()
    assert _version_message(custom_output).startswith(
        head[1:] + "[torch.DoubleTensor [2]], which is output 0 of Exp, is at version 1; expected version 0 instead.")

    def builtin_output():
        a = torch.tensor([1., 2.], device=device, requires_grad=True)
        y = a.exp()
        y.mul_(2)
        y.sum().backward()
    assert _version_message(builtin_output).startswith(
        head[1:] + "[torch.FloatTensor [2]], which is output 0 of Exp, is at version 1; expected version 0 instead.")

    def in_anomaly_mode():
        with torch.autograd.set_detect_anomaly(True, check_nan=False):
            with pytest.warns(UserWarning, match="Error detected in MulBackward0"):
                non_leaf()
    assert _version_message(in_anomaly_mode).endswith(
        " Hint: the backtrace further above shows the operation that failed to compute its gradient. The variable in "
        "question was changed in there or anywhere later. Good luck!")


def test_mark_dirty_of_a_non_input_warns(device):
    """PyTorch: ctx.mark_dirty(t) of a tensor that is no input warns "ctx.mark_dirty() received a tensor that was not
    an input. Only input Tensors that have been mutated should be passed to ctx.mark_dirty()." (and goes on);
    coretorch was silent."""
    class F(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            o = x * 2
            ctx.mark_dirty(o)
            return o

        @staticmethod
        def backward(ctx, g):
            return g * 2

    a = torch.tensor([1., 2.], device=device, requires_grad=True)
    with pytest.warns(UserWarning, match=r"^ctx\.mark_dirty\(\) received a tensor that was not an input\. Only input "
                                         r"Tensors that have been mutated should be passed to ctx\.mark_dirty\(\)\.$"):
        y = F.apply(a)
    y.sum().backward()
    np.testing.assert_allclose(a.grad.cpu().numpy(), [2., 2.])


@pytest.mark.parametrize("kind", ["post", "pre"])
def test_node_hook_must_return_a_tuple(device, kind):
    """PyTorch: a grad_fn hook (register_hook / register_prehook) that returns something other than None or a tuple
    raises TypeError("expected tuple, but hook returned 'Tensor'") ('list' for a list); coretorch iterated a
    returned tensor as a sequence of gradients (RuntimeError about the number of values) and took a list."""
    for ret, name in ((lambda g: g[0], "Tensor"), (lambda g: list(g), "list")):
        a = torch.tensor([1., 2.], device=device, requires_grad=True)
        y = a * 2
        if kind == "post":
            y.grad_fn.register_hook(lambda gi, go: ret(gi))
        else:
            y.grad_fn.register_prehook(lambda go: ret(go))
        with pytest.raises(TypeError, match=f"^expected tuple, but hook returned '{name}'$"):
            y.sum().backward()
    a = torch.tensor([1., 2.], device=device, requires_grad=True)
    y = a * 2
    y.grad_fn.register_prehook(lambda go: (go[0] * 3,))
    y.sum().backward()
    np.testing.assert_allclose(a.grad.cpu().numpy(), [6., 6.])


def test_calling_a_grad_fn_of_one_input_returns_the_gradient(device):
    """PyTorch: ``y.grad_fn(g)`` returns the gradient itself for a node with one input (ExpBackward0,
    SumBackward0, SelectBackward0), a tuple for several (MulBackward0 of two tensors); coretorch always returned a
    tuple (a 1-tuple here)."""
    a = torch.tensor([1., 2.], device=device, requires_grad=True)
    b = torch.tensor([3., 4.], device=device, requires_grad=True)
    y = a.exp()
    r = y.grad_fn(torch.ones(2, device=device))
    assert isinstance(r, torch.Tensor)
    np.testing.assert_allclose(r.detach().cpu().numpy(), np.exp([1., 2.]), rtol=1e-6)
    r = a.sum().grad_fn(torch.tensor(2., device=device))
    assert isinstance(r, torch.Tensor) and r.tolist() == [2., 2.]
    ga, gb = (a * b).grad_fn(torch.ones(2, device=device))
    assert ga.tolist() == [3., 4.] and gb.tolist() == [1., 2.]


def test_unary_grad_fn_saved_attributes(device):
    """PyTorch exposes a node's saved tensor: ``x.sin().grad_fn._saved_self`` (the input), ``x.exp().grad_fn.
    _saved_result`` (the output) -- version-checked, and after the backward freed it the 'backward through the graph
    a second time' error; coretorch's nodes had no such attribute (AttributeError)."""
    a = torch.tensor([1., 2.], device=device, requires_grad=True)
    for op, attr in (("log", "_saved_self"), ("sin", "_saved_self"), ("abs", "_saved_self"),
                     ("exp", "_saved_result"), ("sigmoid", "_saved_result"), ("tanh", "_saved_result"),
                     ("relu", "_saved_result")):
        y = getattr(a, op)()
        other = "_saved_result" if attr == "_saved_self" else "_saved_self"
        assert not hasattr(y.grad_fn, other), op
        saved = getattr(y.grad_fn, attr)
        expected = a if attr == "_saved_self" else y
        np.testing.assert_allclose(saved.detach().cpu().numpy(), expected.detach().cpu().numpy())
    y = a.exp()
    y.sum().backward()
    with pytest.raises(RuntimeError, match="^Trying to backward through the graph a second time"):
        y.grad_fn._saved_result
    b = a * 1
    y = b.sin()
    b.add_(1)
    with pytest.raises(RuntimeError, match="^one of the variables needed for gradient computation has been modified"):
        y.grad_fn._saved_self


def test_saved_tensors_are_empty_while_forward_runs(device):
    """PyTorch: inside forward (and setup_context), ``ctx.saved_tensors`` is () -- tensors are saved when forward
    returns; afterwards ``y.grad_fn.saved_tensors`` holds them.  coretorch returned them already in forward."""
    seen = []

    class F(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            seen.append(ctx.saved_tensors)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            a, = ctx.saved_tensors
            return g * a

    a = torch.tensor([1., 2.], device=device, requires_grad=True)
    y = F.apply(a)
    assert seen == [()]
    assert len(y.grad_fn.saved_tensors) == 1 and y.grad_fn.saved_tensors[0] is a
    y.sum().backward()
    np.testing.assert_allclose(a.grad.cpu().numpy(), [1., 2.])  # (backward's g * a)
