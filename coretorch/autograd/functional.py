"""coretorch.autograd.functional: Jacobians, Hessians and their products with vectors (PyTorch's
torch.autograd.functional), built on ``autograd.grad``.

``jacobian`` and ``hessian`` take one reverse pass per output element (``vectorize`` is accepted: there is no
vmap); ``jvp`` and ``hvp`` use the double-backward trick, so the function's backward must be differentiable (every
coretorch op's is).  ``strategy="forward-mode"`` is accepted and gives the same values.
"""
from __future__ import annotations

from typing import Any, Callable

from . import grad as _grad  # autograd.grad, defined before this module is imported
from .grad_mode import enable_grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _tensor_cls():
    from ..tensor import Tensor  # the tensor module imports autograd: resolved at call time
    return Tensor


def _as_tuple(inp, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    Tensor = _tensor_cls()
    is_tuple = isinstance(inp, tuple)
    t = inp if is_tuple else (inp,)
    for i, el in enumerate(t):
        if not isinstance(el, Tensor):
            if is_tuple:
                raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                                f"the value at index {i} has type {type(el)}.")
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                            f"the given {arg_name} has type {type(el)}.")
    return is_tuple, t


def _unpack(res, to_unpack):
    """Tuples back to single tensors where the caller passed single tensors (``to_unpack``: a bool or a pair)."""
    if isinstance(to_unpack, bool):
        return res if to_unpack else res[0]
    if not to_unpack[1]:
        res = tuple(r[0] for r in res)
    return res if to_unpack[0] else res[0]


def _prepare(inputs: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """Fresh leaves (or, with create_graph, views that keep the caller's graph) that require grad."""
    out = []
    for x in inputs:
        if create_graph and x.requires_grad:
            out.append(x.view_as(x))
        else:
            out.append(x.detach().requires_grad_(need_graph))
    return tuple(out)


def _finish(res, create_graph: bool):
    Tensor = _tensor_cls()
    if isinstance(res, Tensor):
        return res if create_graph else res.detach()
    return tuple(_finish(r, create_graph) for r in res)


def _check_v(v: tuple, other: tuple, fn_name: str, other_name: str) -> None:
    if len(v) != len(other):
        raise RuntimeError(f"The given v should contain {len(other)} Tensors but contains {len(v)}.")
    for i, (a, b) in enumerate(zip(v, other)):
        if a.shape != b.shape:
            raise RuntimeError(f"Entry {i} in v has invalid size: should be {tuple(b.shape)} but got "
                               f"{tuple(a.shape)}.")


def _input_v(v, ins: tuple, fn_name: str) -> tuple:
    """The vector over the inputs of jvp/vhp: ``v`` checked against ``ins``, or ones for a single one-element
    input (PyTorch's default)."""
    if v is not None:
        _, vs = _as_tuple(v, "v", fn_name)
        _check_v(vs, ins, fn_name, "inputs")
        return vs
    if len(ins) != 1 or ins[0].numel() != 1:
        raise RuntimeError("The vector v can only be None if the input to the user-provided function is a "
                           "single Tensor with a single element.")
    return (ins[0].new_ones(ins[0].shape),)


def _fill(grads: tuple, refs: tuple, strict: bool, what: str, create_graph: bool) -> tuple:
    out = []
    for i, (g, r) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(f"The {what} for input {i} is independent of the input in strict mode.")
            g = r.new_zeros(r.shape)
        out.append(g)
    return tuple(out)


def _check_outputs_differentiable(outs: tuple) -> None:
    """strict=True: every output of the function must require grad (PyTorch's first strict check)."""
    for i, o in enumerate(outs):
        if not o.requires_grad:
            raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The outputs "
                               "must be computed in a differentiable manner from the input when running in strict "
                               "mode.")


def _grad_or_none(outputs, inputs, grad_outputs, create_graph: bool, retain_graph: bool | None = None) -> tuple:
    outs = tuple(o for o in outputs if o.requires_grad)
    gos = None if grad_outputs is None else tuple(g for o, g in zip(outputs, grad_outputs) if o.requires_grad)
    ins = tuple(x for x in inputs if x.requires_grad)
    if not outs or not ins:
        return (None,) * len(inputs)
    got = iter(_grad(outs, ins, gos, retain_graph=retain_graph, create_graph=create_graph, allow_unused=True))
    return tuple(next(got) if x.requires_grad else None for x in inputs)


def vjp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T J)``: the vector-Jacobian product of ``func`` at ``inputs`` (``v`` may be omitted when
    ``func`` returns one element)."""
    with enable_grad():
        is_in_tuple, ins = _as_tuple(inputs, "inputs", "vjp")
        ins = _prepare(ins, create_graph, True)
        outputs = func(*ins)
        is_out_tuple, outs = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        if v is not None:
            _, vs = _as_tuple(v, "v", "vjp")
            _check_v(vs, outs, "vjp", "outputs")
        else:
            if len(outs) != 1 or outs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the user-provided function returns a single "
                                   "Tensor with a single element.")
            vs = None
        if strict:
            _check_outputs_differentiable(outs)
        grads = _fill(_grad_or_none(outs, ins, vs, create_graph), ins, strict, "output", create_graph)
    return _unpack(_finish(outs, create_graph), is_out_tuple), _unpack(_finish(grads, create_graph), is_in_tuple)


def jvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), J v)``: the Jacobian-vector product (through the double-backward trick)."""
    with enable_grad():
        is_in_tuple, ins = _as_tuple(inputs, "inputs", "jvp")
        ins = _prepare(ins, create_graph, True)
        vs = _input_v(v, ins, "jvp")
        outputs = func(*ins)
        is_out_tuple, outs = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
        if strict:
            _check_outputs_differentiable(outs)
        dummies = tuple(o.new_zeros(o.shape).requires_grad_(True) for o in outs)
        g_in = _grad_or_none(outs, ins, dummies, True)
        pairs = [(g, w) for g, w in zip(g_in, vs) if g is not None and g.requires_grad]
        if pairs:
            got = _grad(tuple(g for g, _ in pairs), dummies, tuple(w for _, w in pairs), create_graph=create_graph,
                        allow_unused=True)
        else:
            got = (None,) * len(outs)
        res = _fill(tuple(got), outs, strict, "jvp", create_graph)
    return _unpack(_finish(outs, create_graph), is_out_tuple), _unpack(_finish(res, create_graph), is_out_tuple)


def jacobian(func: Callable, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: for output ``i`` and input ``j`` a tensor of shape
    ``outputs[i].shape + inputs[j].shape`` (a tensor, a tuple, or a tuple of tuples, following the structure of
    the outputs and inputs)."""
    if strategy not in ("reverse-mode", "forward-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                             'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                             'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode" and not vectorize:  # (PyTorch's checks; coretorch computes either by reverse mode)
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian isonly "
                                  "implemented for `vectorize=True`.")
    if strict and vectorize:
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
                           "supported together. Please either set `strict=False` or `vectorize=False`.")
    from ..ops import shape as _S  # ops import autograd: resolved at call time
    with enable_grad():
        is_in_tuple, ins = _as_tuple(inputs, "inputs", "jacobian")
        ins = _prepare(ins, create_graph, True)
        outputs = func(*ins)
        is_out_tuple, outs = _as_tuple(outputs, "outputs of the user-provided function", "jacobian")
        jac = []
        for i, out in enumerate(outs):
            if strict and not out.requires_grad:
                raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The outputs "
                                   "must be computed in a differentiable manner from the input when running in strict "
                                   "mode.")
            flat = out.reshape(-1)
            rows: list[list[Any]] = [[] for _ in ins]
            for k in range(flat.shape[0]):
                g = _grad_or_none((flat[k],), ins, None, create_graph, retain_graph=True)
                for j, (gj, x) in enumerate(zip(g, ins)):
                    if gj is None:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is independent of input "
                                               f"{j}. This is not allowed in strict mode.")
                        gj = x.new_zeros(x.shape)
                    rows[j].append(gj)
            per_input = []
            for j, x in enumerate(ins):
                if rows[j]:
                    block = _S.stack(rows[j], 0)
                else:
                    block = x.new_zeros((0,) + tuple(x.shape))
                per_input.append(block.reshape(tuple(out.shape) + tuple(x.shape)))
            jac.append(tuple(per_input))
        res = _finish(tuple(jac), create_graph)
    return _unpack(res, (is_out_tuple, is_in_tuple))


def hessian(func: Callable, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode"):
    """The Hessian of the scalar function ``func`` at ``inputs`` (a tensor of shape ``inputs.shape * 2``; a tuple of
    tuples for several inputs)."""
    is_in_tuple, ins = _as_tuple(inputs, "inputs", "hessian")

    def single(*inp):
        out = func(*inp)
        is_tuple, t = _as_tuple(out, "outputs of the user-provided function", "hessian")
        if is_tuple:
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return out.squeeze()

    def jac_func(*inp):
        return jacobian(single, inp, create_graph=True, strict=strict)

    res = jacobian(jac_func, ins, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _unpack(res, (is_in_tuple, is_in_tuple))


def vhp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T H)``: the vector-Hessian product of the scalar function ``func``."""
    with enable_grad():
        is_in_tuple, ins = _as_tuple(inputs, "inputs", "vhp")
        ins = _prepare(ins, create_graph, True)
        vs = _input_v(v, ins, "vhp")
        outputs = func(*ins)
        is_out_tuple, outs = _as_tuple(outputs, "outputs of the user-provided function", "vhp")
        if is_out_tuple or outs[0].numel() != 1:
            raise RuntimeError("The function given to vhp should return a single Tensor with a single element" if
                               not is_out_tuple else "The function given to vhp should return a single Tensor")
        jac = _grad_or_none(outs, ins, None, True)
        pairs = [(g, x, w) for g, x, w in zip(jac, ins, vs) if g is not None and g.requires_grad]
        if pairs:
            got = _grad(tuple(g for g, _, _ in pairs), ins, tuple(w for _, _, w in pairs), create_graph=create_graph,
                        allow_unused=True)
        else:
            got = (None,) * len(ins)
        res = _fill(tuple(got), ins, strict, "vhp", create_graph)
    return _finish(outs[0], create_graph), _unpack(_finish(res, create_graph), is_in_tuple)


def hvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), H v)``: the Hessian-vector product of the scalar function ``func`` (equal to ``vhp`` for a
    twice continuously differentiable ``func``, whose Hessian is symmetric)."""
    return vhp(func, inputs, v, create_graph, strict)
