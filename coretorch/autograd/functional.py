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


def _validate_v(v: tuple, other: tuple, is_other_tuple: bool) -> None:
    """PyTorch's checks of ``v`` against the outputs (vjp) or the inputs (jvp, vhp, hvp)."""
    if len(v) != len(other):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, other)):
        if a.shape != b.shape:
            raise RuntimeError(f"{f'Entry {i} in ' if is_other_tuple else ''}v has invalid size: should be "
                               f"{b.shape} but got {a.shape}.")


def _input_v(v, ins: tuple, is_in_tuple: bool, fn_name: str) -> tuple:
    """The vector over the inputs of jvp/vhp/hvp: ``v`` checked against ``ins``, or ones for a single one-element
    input (PyTorch's default)."""
    if v is not None:
        _, vs = _as_tuple(v, "v", fn_name)
        _validate_v(vs, ins, is_in_tuple)
        return vs
    if len(ins) != 1 or ins[0].numel() != 1:
        raise RuntimeError("The vector v can only be None if the input to the user-provided function is a "
                           "single Tensor with a single element.")
    return (ins[0].new_ones(ins[0].shape),)


_STAGE_MSG = {  # PyTorch's _fill_in_zeros messages: a gradient of None in strict mode, by stage
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in strict "
            "mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when "
                  "using the double backward trick to compute forward mode gradients. This is not allowed in strict "
                  "mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed in "
                   "strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the "
                         "grad_jacobian. This is not allowed in strict mode as it prevents from using the double "
                         "backward trick to replace forward mode AD.",
}


def _fill(grads: tuple, refs: tuple, strict: bool, create_graph: bool, stage: str) -> tuple:
    """Zeros for the gradients of None (strict: PyTorch's error; with create_graph also for one that does not
    require grad)."""
    out = []
    for i, (g, r) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(_STAGE_MSG[stage].format(i=i))
            g = r.new_zeros(r.shape)
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. This is not "
                               "allowed in strict mode when create_graph=True.")
        out.append(g)
    return tuple(out)


_INDEPENDENT = {  # PyTorch's _check_requires_grad messages, by what is checked
    "hessian": "The hessian of the user-provided function with respect to input {i} is independent of the input. "
               "This is not allowed in strict mode. You should ensure that your function is thrice differentiable "
               "and that the hessian depends on the inputs.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided function with respect to "
                "input {i} is independent of the input. This is not allowed in strict mode. You should ensure that "
                "your function is twice differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example).",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the user-provided "
                   "function. This is not allowed in strict mode.",
    "outputs": "Output {i} of the user-provided function does not require gradients. The outputs must be computed in "
               "a differentiable manner from the input when running in strict mode.",
}


def _check_requires_grad(ts: tuple, what: str, strict: bool) -> None:
    """strict=True: every one of ``ts`` must require grad (PyTorch's checks of the outputs, the gradients, the
    Jacobian)."""
    if not strict:
        return
    for i, t in enumerate(ts):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This is not "
                               "allowed in strict mode.")
        if not t.requires_grad:
            raise RuntimeError(_INDEPENDENT[what].format(i=i))


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
        _check_requires_grad(outs, "outputs", strict)
        if v is not None:
            _, vs = _as_tuple(v, "v", "vjp")
            _validate_v(vs, outs, is_out_tuple)
        else:
            if len(outs) != 1 or outs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the user-provided function returns a single "
                                   "Tensor with a single element.")
            vs = None
        grads = _fill(_grad_or_none(outs, ins, vs, create_graph), ins, strict, create_graph, "back")
    return _unpack(_finish(outs, create_graph), is_out_tuple), _unpack(_finish(grads, create_graph), is_in_tuple)


def jvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), J v)``: the Jacobian-vector product (through the double-backward trick)."""
    with enable_grad():
        is_in_tuple, ins = _as_tuple(inputs, "inputs", "jvp")
        ins = _prepare(ins, create_graph, True)
        vs = _input_v(v, ins, is_in_tuple, "jvp")
        outputs = func(*ins)
        is_out_tuple, outs = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
        _check_requires_grad(outs, "outputs", strict)
        dummies = tuple(o.new_zeros(o.shape).requires_grad_(True) for o in outs)
        g_in = _grad_or_none(outs, ins, dummies, True)
        _check_requires_grad(g_in, "grad_inputs", strict)
        pairs = [(g, w) for g, w in zip(g_in, vs) if g is not None and g.requires_grad]
        if pairs:
            got = _grad(tuple(g for g, _ in pairs), dummies, tuple(w for _, w in pairs), create_graph=create_graph,
                        allow_unused=True)
        else:
            got = (None,) * len(outs)
        res = _fill(tuple(got), outs, strict, create_graph, "back_trick")
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
    if strategy == "forward-mode":  # (PyTorch's checks, in its order; coretorch computes either by reverse mode)
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` and `strategy="forward-'
                                      'mode"` are not supported together (yet). Please either set `create_graph=False` '
                                      'or `strategy="reverse-mode"`.')
        if strict:
            raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are '
                               'not supported together (yet). Please either set `strict=False` or '
                               '`strategy="reverse-mode"`.')
        _as_tuple(inputs, "inputs", "jacobian")
    if strategy == "forward-mode" and not vectorize:
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
        _check_requires_grad(outs, "outputs", strict)
        jac = []
        for i, out in enumerate(outs):
            flat = out.reshape(-1)
            rows: list[list[Any]] = [[] for _ in ins]
            for k in range(flat.shape[0]):
                g = _grad_or_none((flat[k],), ins, None, create_graph, retain_graph=True)
                for j, (gj, x) in enumerate(zip(g, ins)):
                    if gj is not None and strict and create_graph and not gj.requires_grad:
                        raise RuntimeError(f"The jacobian of the user-provided function is independent of input {i}. "
                                           "This is not allowed in strict mode when create_graph=True.")
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
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def single(*inp):
        out = func(*inp)
        is_tuple, t = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t, "outputs", strict)
        if is_tuple:
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return out.squeeze()

    def jac_func(*inp):
        jac = jacobian(single, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    res = jacobian(jac_func, ins, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _unpack(res, (is_in_tuple, is_in_tuple))


def _second_order(name: str, func: Callable, inputs, v, create_graph: bool, strict: bool):
    """vhp and hvp: ``v^T H`` (for the twice continuously differentiable functions autograd differentiates, whose
    Hessian is symmetric, ``H v`` too), with PyTorch's checks and messages of ``name``."""
    with enable_grad():
        is_in_tuple, ins = _as_tuple(inputs, "inputs", name)
        ins = _prepare(ins, create_graph, True)
        vs = _input_v(v, ins, is_in_tuple, name)
        outputs = func(*ins)
        is_out_tuple, outs = _as_tuple(outputs, "outputs of the user-provided function", name)
        _check_requires_grad(outs, "outputs", strict)
        if is_out_tuple:
            raise RuntimeError(f"The function given to {name} should return a single Tensor")
        if outs[0].numel() != 1:
            raise RuntimeError(f"The Tensor returned by the function given to {name} should contain a single element")
        jac = _grad_or_none(outs, ins, None, True)
        _check_requires_grad(jac, "jacobian", strict)
        pairs = [(g, x, w) for g, x, w in zip(jac, ins, vs) if g is not None and g.requires_grad]
        if pairs:
            got = _grad(tuple(g for g, _, _ in pairs), ins, tuple(w for _, _, w in pairs), create_graph=create_graph,
                        allow_unused=True)
        else:
            got = (None,) * len(ins)
        res = _fill(tuple(got), ins, strict, create_graph, "double_back" if name == "vhp" else "double_back_trick")
    return _finish(outs[0], create_graph), _unpack(_finish(res, create_graph), is_in_tuple)


def vhp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T H)``: the vector-Hessian product of the scalar function ``func``."""
    return _second_order("vhp", func, inputs, v, create_graph, strict)


def hvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), H v)``: the Hessian-vector product of the scalar function ``func``."""
    return _second_order("hvp", func, inputs, v, create_graph, strict)
