"""torch.random: the default generators' seeds and states, and ``fork_rng``."""
from __future__ import annotations

import contextlib
import warnings
from typing import Iterator

from . import _backend
from .ops.random import (Generator, default_for as _default_for, default_generator, get_rng_state,
                         initial_seed, manual_seed, seed, set_rng_state)

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng", "Generator",
           "default_generator"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled: bool = True, _caller: str = "fork_rng", _devices_kw: str = "devices",
             device_type: str = "opencl") -> Iterator[None]:
    """Run the block with the generators' states forked: on exit the cpu default generator and the default
    generators of ``devices`` (device indices or names of ``device_type``; None: every ``device_type`` device
    in use, whose kernel table is made: its default generator too where the block is its first use) get back the
    states they had on entry."""
    if not enabled:
        yield
        return
    from .ops import random as _r
    if device_type in ("cuda", "mps", "xpu"):  # PyTorch's default; no such devices here
        if devices:
            warnings.warn(f"coretorch has no '{device_type}' devices: fork_rng forks the cpu generator only",
                          stacklevel=3)
        gens = []
    elif devices is None:  # (those whose kernel table is made too: a generator first used inside the block)
        tables = {t.device: t for t in list(_backend._tables.values()) if t.device.type == device_type}
        gens = [_default_for(t) for t in tables.values()]
        gens += [g for d, g in list(_r._defaults.items()) if d.type == device_type and d not in tables]
    else:
        gens = [_default_for(d if not isinstance(d, int) else f"{device_type}:{d}") for d in devices]
    cpu = _default_for()
    saved = [(g, g.get_state()) for g in [cpu] + [g for g in gens if g is not cpu]]
    try:
        yield
    finally:
        for g, state in saved:
            g.set_state(state)
