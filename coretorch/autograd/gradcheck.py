"""gradcheck / gradgradcheck: analytical vs central-difference Jacobians (PyTorch's signature)."""
from __future__ import annotations

import numpy as np


class GradcheckError(RuntimeError):
    pass


def _as_tuple(x):
    from ..tensor import Tensor
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _fail(msg: str, raise_exception: bool) -> bool:
    if raise_exception:
        raise GradcheckError(msg)
    return False


def _outputs(func, inputs):
    from ..tensor import Tensor
    out = func(*inputs)
    outs = _as_tuple(out)
    return [o for o in outs if isinstance(o, Tensor) and o.dtype.is_floating_point]


def _numerical(func, inputs, idx, eps):
    """Columns of d(outputs)/d(inputs[idx]) by central differences (one row per input element)."""
    from ..ops.creation import tensor
    from .grad_mode import enable_grad
    x = inputs[idx]
    base = x.detach()._host().astype(np.float64).copy()
    flat = base.reshape(-1)
    rows = []
    # PyTorch perturbs the input itself (its ``.data``, in place), so a function that reads it another way (a
    # module's parameter passed as an input, a closure) sees the perturbation; an input with overlapping memory (an
    # expanded one) cannot be written element by element: a fresh tensor is passed in its place
    in_place = all(st != 0 for st, n in zip(x.stride(), x.shape) if n > 1)
    orig = x.detach().clone() if in_place else None
    # like torch, ``func`` runs with grad enabled on inputs that keep requires_grad: gradgradcheck's
    # function is itself a vjp that differentiates through them
    try:
        with enable_grad():
            for k in range(flat.size):
                vals = []
                for sign in (1, -1):
                    pert = flat.copy()
                    pert[k] += sign * eps
                    args = list(inputs)
                    if in_place:
                        x.data.copy_(tensor(pert.reshape(base.shape), dtype=x.dtype, device=x.device))
                    else:
                        args[idx] = tensor(pert.reshape(base.shape), dtype=x.dtype, device=x.device,
                                           requires_grad=x.requires_grad)
                    vals.append([o.detach()._host().astype(np.float64).reshape(-1) for o in _outputs(func, args)])
                rows.append(np.concatenate([(p - m) / (2 * eps) for p, m in zip(*vals)]) if vals[0] else
                            np.zeros(0))
    finally:
        if in_place:
            x.data.copy_(orig)
    return np.array(rows)  # (n_in, n_out)


def _analytical(func, inputs, diff_idx):
    from . import grad as _grad
    outs = _outputs(func, inputs)
    sizes = [o.numel() for o in outs]
    total = sum(sizes)
    jac = {i: np.zeros((inputs[i].numel(), total)) for i in diff_idx}
    col = 0
    for o, n in zip(outs, sizes):
        if not o._rg:
            col += n
            continue
        for k in range(n):
            gh = np.zeros(n)
            gh[k] = 1.0
            from ..ops.creation import tensor
            g = tensor(gh.reshape(tuple(o.shape)), dtype=o.dtype, device=o.device)
            res = _grad(o, [inputs[i] for i in diff_idx], g, retain_graph=True, allow_unused=True)
            for i, r in zip(diff_idx, res):
                if r is not None:
                    jac[i][:, col + k] = r.detach()._host().astype(np.float64).reshape(-1)
        col += n
    return jac


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0, check_undefined_grad: bool = True,
              check_grad_dtypes: bool = False, check_batched_grad: bool = False,
              check_batched_forward_grad: bool = False, check_forward_ad: bool = False,
              check_backward_ad: bool = True, fast_mode: bool = False, masked=None) -> bool:
    """Compare the analytical Jacobian from backward with central differences, as torch does."""
    from ..tensor import Tensor
    inputs = _as_tuple(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the "
                         "them have requires_grad=True.")
    for i in diff_idx:
        if inputs[i].dtype.name != "float64":
            import warnings
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point. This "
                          "check will likely fail if all the inputs are not of double precision floating point.")
    if not _outputs(func, inputs):
        return True  # nothing to check (PyTorch's gradcheck of a function returning no tensor passes)
    analytical = _analytical(func, inputs, diff_idx)
    for i in diff_idx:
        num = _numerical(func, inputs, i, eps)
        ana = analytical[i]
        if num.size == 0 and ana.size == 0:
            continue  # an input or the outputs without elements (e.g. gradgradcheck's grad_output of an empty output)
        if num.shape != ana.shape:
            return _fail(f"Jacobian shape mismatch for input {i}: numerical {num.shape}, analytical "
                         f"{ana.shape}", raise_exception)
        if not np.allclose(ana, num, rtol=rtol, atol=atol):
            return _fail(f"Jacobian mismatch for output 0 with respect to input {i},\nnumerical:{num}\n"
                         f"analytical:{ana}\n", raise_exception)
    # gradients must come back on the inputs' dtype and device, and repeated backward must agree
    again = _analytical(func, inputs, diff_idx)
    for i in diff_idx:
        if not np.allclose(again[i], analytical[i], rtol=0, atol=nondet_tol):
            return _fail(f"Backward is not reentrant, i.e., running backward with same input and grad_output "
                         f"multiple times gives different values (input {i})", raise_exception)
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, gen_non_contig_grad_outputs: bool = False, raise_exception: bool = True,
                  nondet_tol: float = 0.0, check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
                  check_batched_grad: bool = False, check_fwd_over_rev: bool = False,
                  check_rev_over_rev: bool = True, fast_mode: bool = False, masked: bool = False) -> bool:
    """gradcheck of the vector-Jacobian product itself (second derivatives, via create_graph=True)."""
    from ..tensor import Tensor
    from ..ops.creation import randn_like
    from . import grad as _grad
    inputs = _as_tuple(inputs)
    outs = [o for o in _outputs(func, inputs) if o.requires_grad]  # PyTorch's differentiable outputs
    if grad_outputs is None:
        from ..ops.creation import manual_seed  # noqa: F401  (reproducible via the caller's seed)
        grad_outputs = tuple(randn_like(o).requires_grad_(True) for o in outs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]

    def vjp(*args):
        xs, gos = args[:n_in], args[n_in:]
        os = [o for o in _outputs(func, xs) if o.requires_grad]
        res = _grad(os, [xs[i] for i in diff_idx], gos, create_graph=True, allow_unused=True)
        return tuple(r for r in res if r is not None)
    return gradcheck(vjp, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol)
