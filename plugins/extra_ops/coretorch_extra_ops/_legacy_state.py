"""``__setstate__`` of the plugin's optimizers, as PyTorch's: what ``load_state_dict`` does with an older layout.

A state dict written by an older PyTorch (or coretorch) may lack a param group's newer flags (``maximize``,
``foreach``, ``decoupled_weight_decay``, ...) and hold a Python number for ``step`` (and NAdam's ``mu_product``,
ASGD's ``eta`` and ``mu``).  PyTorch's ``__setstate__`` of each optimizer sets those flags to fixed values (not the
constructor's) and turns the numbers into 0-d tensors of the default scalar dtype; ``step`` then counts on.
"""
from __future__ import annotations

from typing import Any

import coretorch
from coretorch.optim import Optimizer

__all__ = ["legacy_setstate"]


def legacy_setstate(group_defaults: dict, scalar_keys: tuple = ("step",), forced: dict | None = None) -> Any:
    """An ``__setstate__`` that ``setdefault``s ``group_defaults`` in every param group, sets ``forced`` (AdamW's
    ``decoupled_weight_decay=True``) and turns each number of ``scalar_keys`` in a parameter's state into a 0-d
    tensor.  (Typed ``Any``: a class attribute that mypy takes for the method it is.)"""
    items, forced_items = tuple(group_defaults.items()), tuple((forced or {}).items())

    def __setstate__(self: Optimizer, state: dict) -> None:
        Optimizer.__setstate__(self, state)
        for group in self.param_groups:
            for k, v in items:
                group.setdefault(k, v)
            for k, v in forced_items:
                group[k] = v
            for p in group["params"]:
                p_state = self.state.get(p)
                if not p_state:
                    continue
                for k in scalar_keys:
                    if k in p_state and not isinstance(p_state[k], coretorch.Tensor):
                        p_state[k] = coretorch.tensor(float(p_state[k]))

    return __setstate__
