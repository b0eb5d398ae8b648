"""torch.func.vmap / torch.vmap: ``func`` mapped over a dimension of its inputs.

PyTorch runs the function once on batched tensors through a batching rule per op, and falls back to a loop over
the batch for ops without one.  coretorch has no batching rules: it always takes that fallback, for the whole
function: ``func`` runs once per batch entry on the entries (``select`` views of the inputs) and the results are
stacked along ``out_dims``.  For the functions vmap is for (no side effects beyond their outputs) that is PyTorch's
result, composes with ``grad``/``jacrev``/``functional_call`` (per-sample gradients, model ensembles), and costs one
call of ``func`` per entry.  ``randomness``: ``"error"`` (the default) raises PyTorch's error when the function
draws from a default generator; ``"different"`` lets each entry draw its own numbers; ``"same"`` starts every entry
from the same generator states (each entry draws the same numbers)."""
from __future__ import annotations

import functools
from typing import Any, Callable

from ..ops.random import defaults_in_use
from . import _tree

_RANDOMNESS = ("error", "different", "same")


def _name(func: Any) -> str:
    return getattr(func, "__name__", type(func).__name__)


def _states(gens: list) -> list:
    return [g.get_state()._data.tobytes() for g in gens]


def vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """``func`` vectorised over dimension ``in_dims`` of its inputs (an int, None, or a nested tuple matching the
    arguments; None: not mapped), its outputs stacked along ``out_dims``.

    Args:
        func: a function of tensors (or containers of tensors) returning tensors.
        in_dims: the mapped dimension of each input (default 0 for every tensor).
        out_dims: where the mapped dimension goes in each output (None: an output that is the same for every entry).
        randomness (str): ``"error"``, ``"different"`` or ``"same"``.
        chunk_size (int): accepted (coretorch runs one entry at a time).

    Example:
        >>> torch.vmap(torch.dot)(torch.ones(3, 2), torch.ones(3, 2))
        tensor([2., 2., 2.])
    """
    if randomness not in _RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return _vmap_call(func, in_dims, out_dims, randomness, args, kwargs)
    return wrapped


def _flat_in_dims(func: Any, in_dims: Any, args: tuple) -> tuple[list, Any, list]:
    """The flattened arguments, their structure and each leaf's mapped dimension (None: not mapped)."""
    leaves, spec = _tree.flatten(args)
    head = f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>)"
    if isinstance(in_dims, int):
        dims: list = [in_dims] * len(leaves)
    elif isinstance(in_dims, tuple):
        if len(in_dims) != len(args):
            raise ValueError(f"{head}: in_dims is not compatible with the structure of `inputs`. in_dims has "
                             f"structure {_tree.spec_str(_tree.flatten(in_dims)[1])} but inputs has structure "
                             f"{_tree.spec_str(spec)}.")
        dims = []
        for a, d in zip(args, in_dims):
            n = _tree.num_leaves(_tree.flatten(a)[1])
            if d is None or isinstance(d, int):
                dims += [d] * n
            else:
                dl, dspec = _tree.flatten(d)
                if len(dl) != n:
                    raise ValueError(f"{head}: in_dims is not compatible with the structure of `inputs`. in_dims "
                                     f"has structure {_tree.spec_str(dspec)} but inputs has structure "
                                     f"{_tree.spec_str(_tree.flatten(a)[1])}.")
                dims += dl
    else:
        raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    from ..tensor import Tensor
    for x, d in zip(leaves, dims):
        if d is None:
            continue
        if not isinstance(d, int):
            raise ValueError(f"{head}: in_dims must be a (nested) tuple of ints and Nones, got {type(d)}.")
        if not isinstance(x, Tensor):
            raise ValueError(f"{head}: Got in_dim={d} for an input but the input is of type {type(x)}. We cannot "
                             "vmap over non-Tensor arguments, please use None as the respective in_dim")
        if not -x.dim() <= d < x.dim():
            raise ValueError(f"{head}: Got in_dim={d} for some input, but that input is a Tensor of dimensionality "
                             f"{x.dim()} so expected in_dim to satisfy -{x.dim()} <= in_dim < {x.dim()}.")
    return leaves, spec, dims


def _same(a: Any, b: Any) -> bool:
    """Whether two entries' outputs are the same values (NaN equal to NaN)."""
    from ..tensor import Tensor
    if a is b:
        return True
    if not isinstance(b, Tensor) or a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.equal(b):
        return True
    return bool(((a == b) | (a.isnan() & b.isnan())).all()) if a.is_floating_point() else False


def _passed_through(leaves: list, dims: list, entries: list, outs: list, out_dim: int) -> Any:
    """A mapped input that the function returned as is (every entry's output is that entry of it): the input itself
    (its mapped dimension moved to ``out_dim``, a view), as PyTorch's, which shares its data; else None."""
    for j, (x, d) in enumerate(zip(leaves, dims)):
        if d is not None and all(o is e[j] for o, e in zip(outs, entries)):
            d, od = d % x.dim(), out_dim % x.dim()
            return x if d == od else x.movedim(d, od)
    return None


def _vmap_call(func: Callable, in_dims: Any, out_dims: Any, randomness: str, args: tuple, kwargs: dict) -> Any:
    from ..ops.shape import stack
    leaves, spec, dims = _flat_in_dims(func, in_dims, args)
    sizes = [x.shape[d] for x, d in zip(leaves, dims) if d is not None]
    if not sizes:
        raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got all in_dims=None, but at least "
                         "one input must be mapped over.")
    if len(set(sizes)) != 1:
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    n = sizes[0]
    if n == 0:
        return _empty_batch(func, leaves, spec, dims, out_dims, kwargs)
    gens = defaults_in_use() if randomness != "different" else []
    start = [g.get_state() for g in gens] if randomness == "same" else None
    from ..tensor import Tensor
    # an input not mapped over is shared by every entry: an in-place write to it would run once per entry (PyTorch's
    # batched op writes once, or refuses a batched operand), so the loop refuses it (below) instead of a silently
    # wrong value
    fixed = [x for x, d in zip(leaves, dims) if d is None and isinstance(x, Tensor)]
    versions = [x._vc[0] for x in fixed]
    results, entries = [], []
    for i in range(n):
        if start is not None:
            for g, s in zip(gens, start):
                g.set_state(s)
        before = _states(gens) if randomness == "error" else None
        entry = [x if d is None else x.select(d, i) for x, d in zip(leaves, dims)]
        r = func(*_tree.unflatten(entry, spec), **kwargs)
        if before is not None and _states(gens) != before:
            raise RuntimeError("vmap: called random operation while in randomness error mode. Please either use the "
                               "'same' or 'different' randomness flags on vmap or perform the randomness operation "
                               "out of vmap")
        if any(x._vc[0] != v for x, v in zip(fixed, versions)):
            raise RuntimeError("vmap: inplace arithmetic(self, *extra_args) is not possible because `self` is not "
                               "vmapped over (in_dims=None): coretorch's vmap runs the function once per entry and "
                               "cannot write to an input that is not mapped over. Please try to use the out-of-place "
                               "version of the operation or map over `self` too.")
        results.append(r)
        entries.append(entry)
    outs0, ospec = _tree.flatten(results[0])
    odims: list | None
    if isinstance(out_dims, (int, type(None))):
        odims = [out_dims] * len(outs0)
    else:
        odims = _tree.flatten(out_dims)[0] if isinstance(out_dims, (tuple, list)) else None  # (a pytree, as PyTorch)
        if odims is None or len(odims) != len(outs0):
            raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible "
                             "with the structure of `outputs`.")
    flat = [_tree.flatten(r)[0] for r in results]
    stacked = []
    for k, (o, d) in enumerate(zip(outs0, odims)):
        if d is None:
            # PyTorch refuses an output that depends on the mapped inputs here; the loop cannot see dependence, but
            # entries that differ are batched for sure (returning the first entry's would be silently wrong)
            if isinstance(o, Tensor) and not all(_same(o, f[k]) for f in flat[1:]):
                raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` can not return a BatchedTensor when "
                                 "out_dim is None")
            stacked.append(o)
            continue
        if not isinstance(o, Tensor):
            raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` must only return Tensors, got type "
                             f"{type(o)}. Did you mean to set out_dims= to None for output?")
        same = _passed_through(leaves, dims, entries, [f[k] for f in flat], d)
        stacked.append(stack([f[k] for f in flat], d) if same is None else same)
    return _tree.unflatten(stacked, ospec)


def _empty_batch(func: Callable, leaves: list, spec: Any, dims: list, out_dims: Any, kwargs: dict) -> Any:
    """A mapped dimension of size 0: the function runs once on zero entries of the inputs' entry shapes (the
    generators set back after it) for the outputs' shapes, each returned with a mapped dimension of size 0."""
    from ..ops.creation import zeros
    gens = defaults_in_use()
    start = [g.get_state() for g in gens]
    entry = [x if d is None else zeros(tuple(x.shape[:d % x.dim()]) + tuple(x.shape[d % x.dim() + 1:]),
                                       dtype=x.dtype, device=x.device) for x, d in zip(leaves, dims)]
    try:
        r = func(*_tree.unflatten(entry, spec), **kwargs)
    finally:
        for g, s in zip(gens, start):
            g.set_state(s)
    outs, ospec = _tree.flatten(r)
    odims = [out_dims] * len(outs) if isinstance(out_dims, (int, type(None))) else _tree.flatten(out_dims)[0]
    return _tree.unflatten([o if d is None else o.unsqueeze(d).narrow(d, 0, 0).clone()
                            for o, d in zip(outs, odims)], ospec)
