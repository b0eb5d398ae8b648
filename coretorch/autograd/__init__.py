"""coretorch.autograd: backward, grad, Function, gradcheck, grad-mode switches."""
from __future__ import annotations

import warnings

from .. import tensor as _tensor_mod  # resolved at call time (tensor imports autograd)
from . import anomaly_mode as _anomaly
from .anomaly_mode import detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly
from .engine import run_backward as _engine_run_backward
from .function import Function, FunctionCtx, InplaceFunction, NestedIOFunction, once_differentiable
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .graph import Node, RemovableHandle
from . import function, graph  # noqa: F401  (torch.autograd.function, as scripts import it)

__all__ = ["backward", "grad", "Function", "FunctionCtx", "Variable", "gradcheck", "gradgradcheck",
           "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled", "Node",
           "once_differentiable", "InplaceFunction", "NestedIOFunction", "RemovableHandle", "detect_anomaly",
           "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "set_multithreading_enabled",
           "is_multithreading_enabled", "is_view_replay_enabled"]


def run_backward(tensors, grads, *args, **kwargs):
    """The engine, with anomaly mode's NaN checks on the graph's nodes while it is enabled."""
    handles = _anomaly.watch([t.grad_fn for t in tensors])
    try:
        return _engine_run_backward(tensors, grads, *args, **kwargs)
    finally:
        for h in handles:
            h.remove()


def _make_grads(outputs, grad_outputs, create_graph: bool, batched: bool = False):
    Tensor, _make = _tensor_mod.Tensor, _tensor_mod._make
    if len(grad_outputs) < len(outputs):  # (PyTorch pairs them up: gradients past the last output are not read)
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grad_outputs)} gradients")
    grads: list = []
    for out, g in zip(outputs, grad_outputs):
        if g is None:
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not out.dtype.is_floating_point:
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got "
                                   f"{out.dtype}")
            g = _make(out._be.full(out._data.shape, 1, out.dtype.np), out.dtype, out._be)
        elif not isinstance(g, Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        else:
            if tuple(g.shape[1:] if batched else g.shape) != tuple(out.shape):
                i = len(grads)
                if batched:
                    raise RuntimeError(f"If `is_grads_batched=True`, we interpret the first dimension of each "
                                       f"grad_output as the batch dimension. The sizes of the remaining dimensions "
                                       f"are expected to match the shape of corresponding output, but a mismatch "
                                       f"was detected: grad_output[{i}] has a shape of torch.Size({list(g.shape)}) "
                                       f"and output[{i}] has a shape of torch.Size({list(out.shape)}). If you only "
                                       f"want some tensors in `grad_output` to be considered batched, consider "
                                       f"using vmap.")
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of torch.Size({list(g.shape)}) "
                                   f"and output[{i}] has a shape of torch.Size({list(out.shape)}).")
            if g.device != out.device:
                raise RuntimeError(f"grad_output is on {g.device} but the output is on {out.device}")
            if g.dtype is not out.dtype:
                g = g.to(out.dtype)
            if not create_graph:
                g = g.detach()
        grads.append(g)
    return grads


_CYCLE_WARNED = [False]


def _seq(x):
    Tensor = _tensor_mod.Tensor
    if x is None:
        return None
    if isinstance(x, (Tensor, graph.GradientEdge)):
        return (x,)
    if type(x) is dict:  # (PyTorch's ``inputs`` as a dict: its values; grad answers with a dict)
        return tuple(x.values())
    return tuple(x)


def _check_requires_grad(tensors) -> None:
    for i, t in enumerate(tensors):
        if not t._rg:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph: bool = False, grad_variables=None,
             inputs=None) -> None:
    """Compute and accumulate gradients of ``tensors`` into the leaves' ``.grad``."""
    if grad_variables is not None:
        if grad_tensors is not None:
            raise RuntimeError("`grad_tensors` and `grad_variables` (deprecated) arguments both passed to "
                               "`backward()`. Please only use `grad_tensors`.")
        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.", FutureWarning, stacklevel=2)
        grad_tensors = grad_variables
    if create_graph and not _CYCLE_WARNED[0]:  # (PyTorch's engine warns once a process)
        _CYCLE_WARNED[0] = True
        warnings.warn("Using backward() with create_graph=True will create a reference cycle between the parameter "
                      "and its gradient which can cause a memory leak. We recommend using autograd.grad when "
                      "creating the graph to avoid this. If you have to use this function, make sure to reset the "
                      ".grad fields of your parameters to None after use to break the cycle and avoid the leak.",
                      UserWarning, stacklevel=2)
    tensors = _seq(tensors)
    grad_tensors = _seq(grad_tensors)
    if grad_tensors is None:
        grad_tensors = (None,) * len(tensors)
    if inputs is not None:
        inputs = _seq(inputs)
        if not inputs:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        for t in inputs:  # as PyTorch: a non-leaf input keeps its .grad from now on (its retain hook stores it)
            if not isinstance(t, graph.GradientEdge):
                t.retain_grad()
    _check_requires_grad(tensors)
    if retain_graph is None:
        retain_graph = create_graph
    grads = _make_grads(tensors, grad_tensors, create_graph)
    if inputs is not None:
        res = run_backward(tensors, grads, retain_graph, create_graph, inputs=inputs, allow_unused=True)
        seen: set = set()
        for t, g in zip(inputs, res):
            if g is not None and id(t) not in seen and not isinstance(t, graph.GradientEdge) and t.grad_fn is None:
                # (a non-leaf's retain hook stored its gradient)
                seen.add(id(t))  # (an input named twice gets its gradient once)
                t._get_accum().apply(g.detach().clone() if not create_graph else g)
        return
    run_backward(tensors, grads, retain_graph, create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph: bool = False,
         only_inputs: bool = True, allow_unused=None, is_grads_batched: bool = False, materialize_grads=False):
    """Return the gradients of ``outputs`` with respect to ``inputs`` (``.grad`` is left untouched)."""
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                         "allow_unused=False.")
    keys = list(inputs) if type(inputs) is dict else None
    outputs = _seq(outputs)
    inputs = _seq(inputs)
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
                      "gradient for other parts of the graph, please use torch.autograd.backward.", FutureWarning,
                      stacklevel=2)
    grad_outputs = _seq(grad_outputs)
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    if allow_unused is None:
        allow_unused = materialize_grads
    _check_requires_grad(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    grads = _make_grads(outputs, grad_outputs, create_graph, is_grads_batched)
    if is_grads_batched:
        res = _grad_batched(outputs, inputs, grads, retain_graph, create_graph, allow_unused)
    else:
        res = run_backward(outputs, grads, retain_graph, create_graph, inputs=inputs, allow_unused=allow_unused)
    if materialize_grads:
        if any(r is None and isinstance(i, graph.GradientEdge) for i, r in zip(inputs, res)):
            raise RuntimeError("materialize_grads cannot be used when the given input is a GradientEdge")
        from ..ops.creation import zeros_like
        res = tuple(zeros_like(i, requires_grad=create_graph) if r is None else r for i, r in zip(inputs, res))
    return dict(zip(keys, res)) if keys is not None else res


def _grad_batched(outputs, inputs, grads, retain_graph: bool, create_graph: bool, allow_unused: bool) -> tuple:
    """``grad(is_grads_batched=True)``: one backward per row of the grad_outputs' first dimension (PyTorch vmaps
    the backward), the results stacked along a new first dimension."""
    from ..ops.shape import stack
    n = {g.shape[0] for g in grads if g.dim() > 0}
    if len(n) != 1:
        raise RuntimeError("is_grads_batched=True: every grad_output needs the same batch size as its first "
                           "dimension")
    rows = []
    b = n.pop()
    for i in range(b):
        rows.append(run_backward(outputs, [g[i] for g in grads], retain_graph or i < b - 1, create_graph,
                                 inputs=inputs, allow_unused=allow_unused))
    if not rows:
        raise RuntimeError("is_grads_batched=True with a batch of size 0 is not supported by coretorch")
    return tuple(None if col[0] is None else stack(list(col)) for col in zip(*rows))


class _VariableMeta(type):
    """``isinstance(x, Variable)`` is true for every Tensor, as in PyTorch (Variable and Tensor merged in 0.4)."""

    def __instancecheck__(cls, other) -> bool:
        return isinstance(other, _tensor_mod.Tensor)


class Variable(metaclass=_VariableMeta):
    """Legacy wrapper: ``Variable(data, requires_grad=False)`` returns a leaf Tensor sharing ``data``'s storage.

    ``volatile`` was removed in PyTorch 0.4: passing ``volatile=True`` warns and has no effect."""

    def __new__(cls, data=None, requires_grad: bool = False, volatile: bool = False):
        Tensor = _tensor_mod.Tensor
        if volatile:
            warnings.warn(VOLATILE_WARNING, UserWarning, stacklevel=2)
        if data is None:
            data = Tensor()
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        t = data.detach()
        t._vc = [0]
        t._vbase = None
        t.requires_grad_(requires_grad)
        return t


from .engine import _ExecutionEngine  # noqa: E402
Variable._execution_engine = _ExecutionEngine()  # type: ignore[attr-defined]

VOLATILE_WARNING = "volatile was removed and now has no effect. Use `with torch.no_grad():` instead."


from .gradcheck import gradcheck, gradgradcheck, GradcheckError  # noqa: E402
from . import variable  # noqa: E402,F401  (torch.autograd.variable.Variable, as old scripts import it)
from . import functional, profiler  # noqa: E402,F401  (torch.autograd.functional: jacobian & co; .profiler)
from ._flags import is_multithreading_enabled, is_view_replay_enabled, set_multithreading_enabled  # noqa: E402
