"""torch.func's autodiff transforms (``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``,
``hessian``, ``linearize``) on coretorch's reverse-mode autograd.

PyTorch's transforms keep a level per transform, so ``grad(grad(f))`` and a function closing over an outer
variable differentiate each level on its own.  Here each call differentiates fresh variables: an argument that does
not require grad becomes a new leaf; one that does (an outer transform's variable, or a tensor of the user's graph)
is aliased by a new view of it, so the inner gradient counts only the paths through this call's argument while the
outer level still sees through it (``grad(lambda x: x * grad(lambda y: x * y)(x))(2.)`` is 4, as PyTorch's).  The
gradients are taken with ``create_graph`` and keep a graph only where they depend on tensors outside this call's own
leaves, as PyTorch's results are differentiable exactly then.  ``jacfwd``/``jvp`` give forward mode's values through
reverse mode (the double-vjp for ``jvp``)."""
from __future__ import annotations

import functools
from typing import Any, Callable

from ..autograd.graph import AccumulateGrad
from ..autograd.grad_mode import state as _grad_state
from . import _tree


def _tensor_cls():
    from ..tensor import Tensor
    return Tensor


def _check_tensors(leaves: list, what: str = "Thing passed to transform API") -> None:
    T = _tensor_cls()
    for x in leaves:
        if not isinstance(x, T):
            raise ValueError(f"{what} must be Tensor, got {type(x)}")


def _variables(args: tuple, argnums: Any, fname: str) -> tuple[list, list, Any, list]:
    """The call's arguments with those at ``argnums`` replaced by fresh variables; the variables' flat list, the
    fresh leaves among them, and their structure (a tuple per argnum when ``argnums`` is a tuple)."""
    if isinstance(argnums, int):
        nums: tuple = (argnums,)
    elif isinstance(argnums, tuple) and argnums and all(isinstance(n, int) for n in argnums):
        nums = argnums
    else:
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    n = len(args)
    for a in nums:
        if not -n <= a < n:
            raise RuntimeError(f"Got argnum={a}, but only {n} positional inputs")
    if len({a % n for a in nums}) != len(nums):
        raise RuntimeError(f"argnums must be unique, got {argnums}")
    new = list(args)
    variables, fresh = [], []
    for a in nums:
        leaves, spec = _tree.flatten(args[a])
        _check_tensors(leaves)
        vs = []
        for x in leaves:
            if x.requires_grad and _grad_state.enabled:
                v = x.view_as(x)  # (an alias in the outer graph: see the module docstring)
            else:
                v = x.detach().requires_grad_()
                fresh.append(v)
            vs.append(v)
        new[a] = _tree.unflatten(vs, spec)
        variables.append((vs, spec))
    return new, [v for vs, _ in variables for v in vs], (variables, isinstance(argnums, tuple)), fresh


def _structured(grads: list, layout: Any) -> Any:
    variables, is_tuple = layout
    out, i = [], 0
    for vs, spec in variables:
        out.append(_tree.unflatten(grads[i:i + len(vs)], spec))
        i += len(vs)
    return tuple(out) if is_tuple else out[0]


def _outside(t: Any, fresh: set) -> bool:
    """Whether ``t``'s graph reaches a tensor that requires grad other than this call's fresh leaves."""
    stack = [t.grad_fn] if t.grad_fn is not None else []
    seen: set = set()
    while stack:
        n = stack.pop()
        if n is None or n in seen:
            continue
        seen.add(n)
        if n.__class__ is AccumulateGrad:
            if id(n.variable) not in fresh:
                return True
            continue
        stack.extend(f for f, _ in n.next_functions)
    return False


def _unwrap(obj: Any, fresh: list, keep_graph: bool) -> Any:
    """``obj`` (an output or ``aux``) as the transform hands it back: each tensor detached unless grad mode is on
    outside the call and its graph reaches tensors other than this call's fresh leaves (PyTorch unwraps a result from
    the transform's level: it requires grad only through an enclosing level)."""
    T = _tensor_cls()
    ids = {id(v) for v in fresh}
    return _tree.tree_map(lambda o: o if not isinstance(o, T) or (keep_graph and _outside(o, ids)) else o.detach(),
                          obj)


def _grads(output: Any, variables: list, fresh: list, grad_outputs: Any = None, retain: bool = False) -> list:
    from ..autograd import grad as _autograd_grad
    from ..ops.creation import zeros_like
    outs = [o for o in _tree.flatten(output)[0]]
    gos = None if grad_outputs is None else _tree.flatten(grad_outputs)[0]
    pairs = [(o, g) for o, g in zip(outs, gos or [None] * len(outs)) if o.requires_grad]
    if pairs and variables:
        gs = _autograd_grad([o for o, _ in pairs], variables, [g for _, g in pairs] if gos is not None else None,
                            retain_graph=retain or _grad_state.enabled, create_graph=_grad_state.enabled,
                            allow_unused=True)
    else:
        gs = (None,) * len(variables)
    fresh_ids = {id(v) for v in fresh}
    res = []
    for g, v in zip(gs, variables):
        if g is None:
            g = zeros_like(v)
        elif g.requires_grad and not _outside(g, fresh_ids):
            g = g.detach()
        res.append(g)
    return res


def grad_and_value(func: Callable, argnums: Any = 0, has_aux: bool = False) -> Callable:
    """``func``'s gradient with respect to the arguments at ``argnums`` and its value: ``(grad, value)`` (``(grad,
    (value, aux))`` with ``has_aux``); ``func`` returns a one-element tensor."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        from ..autograd.grad_mode import enable_grad
        prev = _grad_state.enabled
        with enable_grad():  # (the variables need a graph even under no_grad)
            new, variables, layout, fresh = _variables(args, argnums, "grad")
            out = func(*new, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError("grad_and_value(f)(*args): output of function f should be a tuple: "
                                       "(output, aux) if has_aux is True")
                out, aux = out
                for a in _tree.flatten(aux)[0]:
                    if not isinstance(a, _tensor_cls()):
                        raise RuntimeError(f"Expected tensors, got unsupported type {type(a)}")
            T = _tensor_cls()
            if not isinstance(out, T):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(out)}")
            if out.dim() != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor "
                                   f"with {out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
            _grad_state.enabled = prev  # (the gradients keep a graph only for an enclosing grad mode)
            gs = _grads(out, variables, fresh)
        value = _unwrap(out, fresh, prev)
        g = _structured(gs, layout)
        return (g, (value, _unwrap(aux, fresh, prev))) if has_aux else (g, value)
    return wrapper


def grad(func: Callable, argnums: Any = 0, has_aux: bool = False) -> Callable:
    """``func``'s gradient with respect to the arguments at ``argnums`` (``(grad, aux)`` with ``has_aux``)."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def vjp(func: Callable, *primals, has_aux: bool = False):
    """``(func(*primals), vjp_fn)`` (and ``aux``): ``vjp_fn(cotangents)`` gives a tuple with the vector-Jacobian
    product for each primal."""
    shown, vjp_fn, aux, _ = _vjp(func, primals, has_aux, _grad_state.enabled)
    return (shown, vjp_fn, aux) if has_aux else (shown, vjp_fn)


def _vjp(func: Callable, primals: tuple, has_aux: bool, prev: bool) -> tuple:
    """vjp's ``(output, vjp_fn, aux, fresh leaves)``; ``prev``: whether grad mode is on outside the transform."""
    from ..autograd.grad_mode import enable_grad
    with enable_grad():
        new, variables, layout, fresh = _variables(primals, tuple(range(len(primals))), "vjp") if primals else \
            ([], [], ([], True), [])
        out = func(*new)
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError("vjp(f, *primals): output of function f should be a tuple: (output, aux) if "
                                   "has_aux is True")
            out, aux = out
    for o in _tree.flatten(out)[0]:
        if not isinstance(o, _tensor_cls()):  # (PyTorch's error: a RuntimeError, unlike its inputs' ValueError)
            raise RuntimeError(f"vjp(f, *primals): expected f(*primals) to return only tensors, got unsupported type "
                               f"{type(o)}")

    def vjp_fn(cotangents, *, retain_graph: bool = True, create_graph: bool | None = None):
        gs = _grads(out, variables, fresh, cotangents, retain=True)
        return tuple(_structured(gs, layout))

    return _unwrap(out, fresh, prev), vjp_fn, _unwrap(aux, fresh, prev), fresh


def jacrev(func: Callable, argnums: Any = 0, *, has_aux: bool = False, chunk_size: int | None = None,
           _preallocate_and_copy: bool = False) -> Callable:
    """The Jacobian of ``func`` with respect to the arguments at ``argnums`` by reverse mode: one vjp per output
    element, shaped ``output.shape + input.shape``."""
    if chunk_size is not None and chunk_size <= 0:
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args):
        return _jacobian(func, args, argnums, has_aux, "jacrev")
    return wrapper


def jacfwd(func: Callable, argnums: Any = 0, has_aux: bool = False, *, randomness: str = "error") -> Callable:
    """The Jacobian of ``func`` (PyTorch computes it in forward mode; coretorch, which has no forward-mode AD,
    computes the same values in reverse mode)."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")

    @functools.wraps(func)
    def wrapper(*args):
        return _jacobian(func, args, argnums, has_aux, "jacfwd")
    return wrapper


def _jacobian(func: Callable, args: tuple, argnums: Any, has_aux: bool, name: str) -> Any:
    from ..autograd.grad_mode import enable_grad
    from ..ops.shape import stack
    prev = _grad_state.enabled
    with enable_grad():
        new, variables, layout, fresh = _variables(args, argnums, name)
        out = func(*new)
        aux = None
        if has_aux:
            out, aux = out
        outs, ospec = _tree.flatten(out)
        _check_tensors(outs, f"{name}(f, ...)(*args): Expected f(*args) to return only tensors. Output")
        per_out = []
        for o in outs:
            flat = o.reshape(-1)
            rows = []
            for i in range(flat.numel()):
                rows.append(_grads(flat[i], variables, fresh, retain=True))
            jac = []
            for k, v in enumerate(variables):
                col = [r[k] for r in rows]
                j = stack(col) if col else v.new_zeros((0, *v.shape))
                jac.append(j.reshape(tuple(o.shape) + tuple(v.shape)))
            per_out.append(_structured(jac, layout))
    result = _tree.unflatten(per_out, ospec)
    if has_aux:
        return result, _unwrap(aux, fresh, prev)
    return result


def hessian(func: Callable, argnums: Any = 0) -> Callable:
    """The Hessian of a function of one-element output: ``jacfwd(jacrev(func, argnums), argnums)``."""
    return jacfwd(jacrev(func, argnums), argnums)


def jvp(func: Callable, primals: Any, tangents: Any, *, strict: bool = False, has_aux: bool = False):
    """``(func(*primals), J @ tangents)``: the Jacobian-vector product (by the double-vjp trick, no forward mode)."""
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it should be valid to "
                           "call f(*primals).")
    if not isinstance(tangents, tuple) or len(tangents) != len(primals):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           "structure. For example, if primals is a tuple of 3 tensors, tangents also must be.")
    for p, t in zip(_tree.flatten(primals)[0], _tree.flatten(tangents)[0]):
        if hasattr(p, "shape") and hasattr(t, "shape") and tuple(p.shape) != tuple(t.shape):
            raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                               f"Tensor, this is not supported. Tensor is of size {list(p.shape)} while the given "
                               f"forward gradient is of size {list(t.shape)}.")
    from ..autograd.grad_mode import enable_grad
    from ..ops.creation import zeros_like
    prev = _grad_state.enabled
    with enable_grad():
        out, fn, aux, fresh = _vjp(func, primals, has_aux, prev)
        outs, ospec = _tree.flatten(out)
        us = [zeros_like(o).requires_grad_() for o in outs]
        g = fn(_tree.unflatten(us, ospec))
        gl = _tree.flatten(g)[0]
        tl = _tree.flatten(tangents)[0]
        from ..autograd import grad as _autograd_grad
        pairs = [(a, b) for a, b in zip(gl, tl) if a.requires_grad]
        # (with a graph where grad mode is on outside: the tangent output depends on tensors outside the call, as
        # PyTorch's does, when the function reads one that requires grad)
        jv = _autograd_grad([a for a, _ in pairs], us, [b for _, b in pairs], allow_unused=True,
                            create_graph=prev) if pairs else (None,) * len(us)
    jv_out = _unwrap(_tree.unflatten([zeros_like(o) if j is None else j for j, o in zip(jv, outs)], ospec),
                     fresh + us, prev)
    return (out, jv_out, aux) if has_aux else (out, jv_out)


def linearize(func: Callable, *primals) -> tuple:
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is the Jacobian-vector product at ``primals``."""
    out = func(*primals)

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]
    return out, jvp_fn
