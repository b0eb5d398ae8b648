"""``torch.distributed.algorithms.join``: training on uneven inputs (``Join``, ``Joinable``, ``JoinHook``).

The protocol is PyTorch's.  Inside ``with Join([joinables]):`` every rank that has not run out of inputs calls
``Join.notify_join_context(joinable)`` once per iteration (``DistributedDataParallel.forward`` does), which
all-reduces a 1.  A rank that has left the loop (``__exit__``) repeatedly all-reduces a 0: the sum is the
number of ranks still iterating; while it is positive, every joinable's ``JoinHook.main_hook()`` shadows the
collectives one iteration of the others makes; once it is zero, ``post_hook(is_last_joiner)`` runs on every
rank (``is_last_joiner``: this rank was among the last to run out).
"""
from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from typing import Any, NamedTuple

import coretorch

__all__ = ["JoinHook", "Joinable", "Join"]


class JoinHook:
    """The two entry points of a joinable in the join context manager: ``main_hook`` (called repeatedly while
    a rank has not joined) and ``post_hook`` (once all have)."""

    def main_hook(self) -> None:
        """Shadow the collectives of one training iteration of a rank that has not joined."""

    def post_hook(self, is_last_joiner: bool) -> None:
        """Called once every rank has joined; ``is_last_joiner`` tells whether this rank was among the last."""


class _JoinConfig(NamedTuple):
    enable: bool
    throw_on_early_termination: bool
    is_first_joinable: bool

    @staticmethod
    def construct_disabled_join_config() -> _JoinConfig:
        return _JoinConfig(enable=False, throw_on_early_termination=False, is_first_joinable=False)


class Joinable(ABC):
    """A class usable with ``Join``: ``join_hook(**kwargs)``, ``join_device`` and ``join_process_group``."""

    @abstractmethod
    def __init__(self) -> None:
        super().__init__()
        self._join_config = _JoinConfig.construct_disabled_join_config()

    @abstractmethod
    def join_hook(self, **kwargs) -> JoinHook:
        """The JoinHook that shadows this joinable's collectives (``kwargs``: those given to ``Join``)."""

    @property
    @abstractmethod
    def join_device(self):
        """The device of the join context manager's own collectives."""

    @property
    @abstractmethod
    def join_process_group(self) -> Any:
        """The process group of the join context manager's own collectives."""


class Join:
    """``with Join([ddp_model, ...]):`` around a per-rank training loop whose ranks may have different numbers
    of iterations.  ``throw_on_early_termination=True``: every rank raises RuntimeError as soon as one runs
    out, instead of shadowing.  Extra keyword arguments go to every ``join_hook``."""

    def __init__(self, joinables: list, enable: bool = True, throw_on_early_termination: bool = False,
                 **kwargs) -> None:
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        self._joinables = list(joinables)
        self._join_hooks = [j.join_hook(**kwargs) for j in self._joinables]
        self._enable = enable
        self._throw_on_early_termination = throw_on_early_termination
        self._set_joinable_configs(enable)
        self._extract_dist_info()

    def _set_joinable_configs(self, enable: bool) -> None:
        for i, j in enumerate(self._joinables):
            j._join_config = _JoinConfig(enable=enable, throw_on_early_termination=self._throw_on_early_termination,
                                         is_first_joinable=i == 0)

    def _extract_dist_info(self) -> None:
        pg = device = None
        for j in self._joinables:
            if pg is None:
                pg = j.join_process_group
            elif pg is not j.join_process_group:
                raise ValueError("Using join context manager with multiple process groups")
            device = j.join_device
        self._process_group = pg
        self._rank = coretorch.distributed.get_rank(pg)
        self._device = device

    def __enter__(self) -> Join:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if not self._enable or exc_type is not None:
                return      # an exception goes through as it is
            all_joined = False
            is_last_joiner = True
            i = 0
            while not all_joined:
                if i == 1000:
                    warnings.warn(f"Detected uneven input skew of greater than 1000. This means that rank "
                                  f"{self._rank} has at least 1000 fewer inputs than other currently-active ranks. "
                                  "This level of skew could lead to performance degradation during training.",
                                  stacklevel=2)
                if self._num_nonjoined() == 0:
                    all_joined = True
                else:
                    if self._throw_on_early_termination:
                        self._notify_procs_to_terminate()
                    for hook in self._join_hooks:
                        hook.main_hook()
                    is_last_joiner = False
                    i += 1
            for hook in self._join_hooks:
                hook.post_hook(is_last_joiner)
        finally:
            for j in self._joinables:   # outside the block the joinables communicate as without it
                j._join_config = _JoinConfig.construct_disabled_join_config()

    def _num_nonjoined(self) -> int:
        zeros = coretorch.zeros(1, device=self._device)
        coretorch.distributed.all_reduce(zeros, group=self._process_group)
        return int(zeros.item())

    def _notify_procs_to_terminate(self) -> None:
        ones = coretorch.ones(1, device=self._device)
        coretorch.distributed.all_reduce(ones, group=self._process_group)
        raise RuntimeError(f"Rank {self._rank} exhausted all inputs.")

    @staticmethod
    def notify_join_context(joinable: Joinable):
        """Called once per iteration by a joinable on a rank that has not joined: all-reduces a 1 (what the
        joined ranks count), and with ``throw_on_early_termination`` raises if a rank has joined.  Returns the
        async work of the all-reduce (its result: the number of ranks still iterating), or None when this
        joinable is not the first of an enabled join context."""
        cfg = getattr(joinable, "_join_config", None)
        if cfg is None:
            raise RuntimeError(f"Check that the {type(joinable).__name__} constructor calls the Joinable "
                               "constructor")
        if not cfg.is_first_joinable or not cfg.enable:
            return None
        device, pg = joinable.join_device, joinable.join_process_group
        ones = coretorch.ones(1, device=device)
        work = coretorch.distributed.all_reduce(ones, group=pg, async_op=True)
        if cfg.throw_on_early_termination:
            zeros = coretorch.zeros(1, device=device)
            coretorch.distributed.all_reduce(zeros, group=pg)
            if zeros.item():
                raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing across all ranks.")
        return work
