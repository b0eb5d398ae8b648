"""The scheduler base class ``LRScheduler`` and its helpers: below ``lr_scheduler`` and ``_lr_cyclic``, which both
build on them (``lr_scheduler`` re-exports every name; each keeps its ``__module__`` there)."""
from __future__ import annotations

import warnings
import weakref
from copy import copy as _copy

from ..tensor import Tensor
from .optimizer import Optimizer, note_born as _note_born

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. "
    "Please use `scheduler.step()` to step the scheduler. During the deprecation, if epoch is different from "
    "None, the closed form is used instead of the new chainable form, where available. Please open an issue if "
    "you are unable to replicate your use case: https://github.com/pytorch/pytorch/issues/new/choose.")


def _check_verbose_deprecated_warning(verbose):
    """``verbose`` is accepted (with PyTorch's old deprecation warning) but not stored: PyTorch 2.13's schedulers
    have no ``verbose`` attribute, so it is no part of a state_dict."""
    if verbose != "deprecated":
        warnings.warn("The verbose parameter is deprecated. Please use get_last_lr() to access the learning "
                      "rate.", UserWarning)


def _load_compat(state_dict: dict) -> dict:
    """A state_dict saved by an older coretorch carries ``verbose`` (now dropped) and lacks ``_is_initial`` (the
    class default, False, then applies)."""
    return {k: v for k, v in state_dict.items() if k != "verbose"} if "verbose" in state_dict else state_dict


def _param_groups_val_list(optimizer: Optimizer, key: str) -> list:
    """``group[key]`` of every param group, a tensor (a tensor lr) cloned, as PyTorch's (no aliasing)."""
    return [g[key].clone() if isinstance(g[key], Tensor) else g[key] for g in optimizer.param_groups]


def _update_param_group_val(param_group: dict, key: str, val) -> None:
    """Set ``param_group[key]``; a tensor there (a tensor lr) is filled in place, as PyTorch's: it stays the
    tensor the optimizer (and a captured step) holds."""
    cur = param_group[key]
    if isinstance(cur, Tensor):
        cur.fill_(val.squeeze() if isinstance(val, Tensor) and val.dim() else val)
    else:
        param_group[key] = val


def _format_param(name: str, optimizer: Optimizer, param) -> list:
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. {name} has "
                             f"{len(param)} values, param_groups has {len(optimizer.param_groups)}.")
    else:
        param = [param] * len(optimizer.param_groups)
    return list(map(_copy, param))


def _python_state_read(what: str) -> None:
    """The caller reads a scheduler's or an optimizer's Python numbers (``state_dict()``, ``get_lr()``), which its
    ``step()`` changes: inside a ``coretorch.compile`` capture a graph break (a replay would return, or compute with,
    the capture's numbers); nothing while the step itself runs (an eager segment of the replay)."""
    from .._compile.capture import varying_read  # (imported on use: compile imports optim)
    varying_read(f"{what} reads Python numbers its step() changes (a replay would reuse the capture's)")


def _warn_get_lr_called_within_step(scheduler) -> None:
    if not scheduler._get_lr_called_within_step:
        _python_state_read(f"{type(scheduler).__name__}.get_lr()")
        warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                      UserWarning, stacklevel=2)


class _enable_get_lr_call:
    def __init__(self, o):
        self.o = o

    def __enter__(self):
        self.o._get_lr_called_within_step = True
        return self

    def __exit__(self, *exc):
        self.o._get_lr_called_within_step = False


class _initial_mode:
    """Marks the construction-time step (``_is_initial``; it appears in the state_dict, as in PyTorch)."""

    def __init__(self, o):
        self.o = o

    def __enter__(self):
        self.o._is_initial = True

    def __exit__(self, *exc):
        self.o._is_initial = False


# every scheduler made (coretorch.compile: a step that steps one through a method bound before the capture,
# ``then = sched.step``, bypasses the capture's wrapper of the class's ``step``: it sees the count change instead)
live: "weakref.WeakSet[LRScheduler]" = weakref.WeakSet()


class LRScheduler:
    """Base class: subclasses set their attributes, call ``super().__init__(optimizer, last_epoch)`` and
    implement ``get_lr()`` (the rates for ``self.last_epoch``)."""

    _get_lr_called_within_step = False
    _is_initial = False

    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls)
        _note_born(self)
        live.add(self)   # (here: SequentialLR, ChainedScheduler and ReduceLROnPlateau do not call __init__ below)
        return self

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1, verbose="deprecated"):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                initial_lr = group["lr"]
                group.setdefault("initial_lr", initial_lr.clone() if isinstance(initial_lr, Tensor) else initial_lr)
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                                   "scheduler with last_epoch >= 0.\nThis typically happens when:\n1. You're trying "
                                   "to resume training from a checkpoint but haven't properly loaded the optimizer "
                                   "state\n2. You're using last_epoch >= 0 for a fresh training run (not recommended)")
        self.base_lrs = _param_groups_val_list(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        _check_verbose_deprecated_warning(verbose)
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        with _initial_mode(self):
            self.step()

    def state_dict(self) -> dict:
        """Every attribute except the optimizer."""
        _python_state_read(f"{type(self).__name__}.state_dict()")
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore the scheduler from a :meth:`state_dict` (counters, last rates)."""
        self.__dict__.update(_load_compat(state_dict))

    def get_last_lr(self) -> list:
        """The learning rates the last ``step()`` set."""
        return self._last_lr

    def get_lr(self) -> list:
        """The learning rates of the current step, one per parameter group (the schedule's formula; what ``step()``
        writes into the optimizer). Read the applied rates with ``get_last_lr()``.
        """
        raise NotImplementedError

    def step(self, epoch=None) -> None:
        """Advance the schedule by one step (an epoch, or an iteration for per-batch schedules) and update the
        optimizer's learning rates. Call it after ``optimizer.step()``.
        """
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and "
                          "later, you should call them in the opposite order: `optimizer.step()` before "
                          "`lr_scheduler.step()`.  Failure to do this will result in PyTorch skipping the first "
                          "value of the learning rate schedule. See more details at "
                          "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate", UserWarning,
                          stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning)
        self._update_lr(epoch)

    def _update_lr(self, epoch=None) -> None:
        with _enable_get_lr_call(self):
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                if hasattr(self, "_get_closed_form_lr"):
                    values = self._get_closed_form_lr()
                else:
                    values = self.get_lr()
        for param_group, lr in zip(self.optimizer.param_groups, values, strict=True):
            _update_param_group_val(param_group, "lr", lr)
        self._last_lr = _param_groups_val_list(self.optimizer, "lr")


for _o in (_check_verbose_deprecated_warning, _python_state_read, _load_compat, _format_param, _param_groups_val_list,
           _update_param_group_val,
           _warn_get_lr_called_within_step, _enable_get_lr_call, _initial_mode, LRScheduler):
    _o.__module__ = "coretorch.optim.lr_scheduler"  # public there, as before
del _o
