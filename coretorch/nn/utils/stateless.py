"""nn.utils.stateless.functional_call: call a module with other tensors in place of its parameters and buffers
(PyTorch's deprecated path of ``torch.func.functional_call``)."""
from __future__ import annotations

import warnings
from typing import Any

from ..modules.module import Module

__all__ = ["functional_call"]


def _owner(module: Module, name: str):
    *path, leaf = name.split(".")
    for p in path:
        module = getattr(module, p)
    return module, leaf


def functional_call(module: Module, parameters_and_buffers: dict, args: Any = None, kwargs: dict | None = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with the named parameters and buffers replaced by the given tensors for the call
    (restored afterwards; gradients reach the given tensors).  With ``tie_weights``, a tensor given for one of
    several tied names is used for all of them; ``strict`` requires exactly the module's names."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed in "
                  "a future version of PyTorch. Please use `torch.func.functional_call` instead which is a drop-in "
                  "replacement.", FutureWarning, stacklevel=2)
    own = dict(module.named_parameters(remove_duplicate=False))
    own.update(dict(module.named_buffers(remove_duplicate=False)))
    given = dict(parameters_and_buffers)
    if tie_weights:  # every name of a tied tensor gets the value given for one of them (before the strict check)
        by_id: dict = {}
        for name, t in own.items():
            by_id.setdefault(id(t), []).append(name)
        for names in by_id.values():
            src = [n for n in names if n in given]
            if len(names) < 2 or not src:
                continue
            if len({id(given[n]) for n in src}) > 1:
                raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, which are tied. "
                                 "Consider using tie_weights=False")
            for n in names:
                given[n] = given[src[0]]
    if strict:
        missing = sorted(set(own) - set(given))
        unexpected = sorted(set(given) - set(own))
        msgs = ([f"Unexpected key(s): {', '.join(map(repr, unexpected))}."] if unexpected else []) + \
            ([f"Missing key(s): {', '.join(map(repr, missing))}."] if missing else [])
        if msgs:  # (as PyTorch: only the kinds of key that are wrong)
            raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:\n\t" + "\n\t".join(msgs))
    saved = []
    try:
        for name, t in given.items():
            owner, leaf = _owner(module, name)
            table = owner._parameters if leaf in owner._parameters else owner._buffers \
                if leaf in owner._buffers else None
            if table is None:
                saved.append((owner, leaf, None, owner.__dict__.get(leaf, _MISSING)))
                owner.__dict__[leaf] = t
            else:
                saved.append((owner, leaf, table, table[leaf]))
                table[leaf] = t
        if args is None:
            args = ()
        elif not isinstance(args, tuple):
            args = (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for owner, leaf, table, old in reversed(saved):
            if table is not None:
                table[leaf] = old
            elif old is _MISSING:
                owner.__dict__.pop(leaf, None)
            else:
                owner.__dict__[leaf] = old


_MISSING = object()
