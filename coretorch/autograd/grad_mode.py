"""no_grad / enable_grad / set_grad_enabled: context managers and decorators, as in PyTorch.

The grad mode is per thread, as PyTorch's: one thread's ``no_grad`` (or ``optimizer.step()``) leaves autograd on in
the others, and a new thread starts with grad mode on (and outside inference mode), whatever its creator had."""
from __future__ import annotations

import functools
import inspect
import sys
import threading


class _State(threading.local):
    """Every thread sees the class defaults until it sets its own value (one attribute read on the hot path)."""
    enabled = True  # operations are recorded: the grad mode, and not inside inference_mode
    inference = False  # inside an enabled inference_mode block (torch.is_inference_mode_enabled)
    grad = True  # the grad mode set by the context managers (enable_grad inside inference_mode: on, recording not)


state = _State()


def is_grad_enabled() -> bool:
    """Whether gradient mode is on (False inside ``no_grad``; True inside ``enable_grad`` within ``inference_mode``,
    where operations are still not recorded, as PyTorch's)."""
    return state.enabled or state.inference and state.grad


def _set_mode(mode: bool) -> tuple:
    """Set the grad mode (recording stays off inside inference mode, as PyTorch's); the state it replaced."""
    prev = state.enabled, state.grad
    state.grad = mode
    state.enabled = mode and not state.inference
    return prev


def _decorate(make_ctx, fn):
    """``fn`` run inside ``make_ctx()`` (a new context manager per call); a generator function's body runs in it at
    each resumption and the caller's mode comes back at each yield, as PyTorch's ``_DecoratorContextManager``."""
    if not inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with make_ctx():
                return fn(*args, **kwargs)
        return wrapper

    @functools.wraps(fn)
    def generator_context(*args, **kwargs):
        gen = fn(*args, **kwargs)
        try:
            with make_ctx():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with make_ctx():
                        gen.close()
                    raise
                except BaseException:
                    with make_ctx():
                        response = gen.throw(*sys.exc_info())
                else:
                    with make_ctx():
                        response = gen.send(request)
        except StopIteration as e:
            return e.value
    return generator_context


class _GradModeBase:
    _target = True

    def __enter__(self):
        self._prev = _set_mode(self._target)

    def __exit__(self, *exc):
        state.enabled, state.grad = self._prev
        return False

    def __call__(self, fn):
        return _decorate(self.__class__, fn)

    def clone(self):
        return self.__class__()


class no_grad(_GradModeBase):
    """Disable gradient recording (context manager or decorator)."""
    _target = False

    def __new__(cls, orig_func=None):
        if callable(orig_func):  # bare ``@no_grad`` (no parentheses), as PyTorch allows
            return cls()(orig_func)
        return super().__new__(cls)

    def __init__(self, orig_func=None):
        pass


class enable_grad(_GradModeBase):
    """Context manager (and decorator) that enables gradient recording, e.g. inside ``no_grad``.

    Example:
        >>> x = torch.ones(2, requires_grad=True)
        >>> with torch.no_grad():
        ...     with torch.enable_grad():
        ...         y = x * 2   # recorded
        >>> y.requires_grad
        True
    """
    _target = True

    def __new__(cls, orig_func=None):
        if callable(orig_func):  # bare ``@enable_grad``
            return cls()(orig_func)
        return super().__new__(cls)

    def __init__(self, orig_func=None):
        pass


class inference_mode(no_grad):
    """Context manager (and decorator) for inference: no gradient recording, like ``no_grad``.

    Args:
        mode (bool): enable inference mode (default True); False makes it a no-op.
    """
    def __init__(self, mode: bool = True):
        self._target = not mode
        self._mode = bool(mode)

    def __enter__(self):
        self._prev_inf = state.inference
        state.inference = self._mode
        super().__enter__()

    def __exit__(self, *exc):
        state.inference = self._prev_inf
        return super().__exit__(*exc)

    def clone(self):
        """A new context manager with the same mode."""
        return self.__class__(self._mode)

    def __call__(self, fn):
        mode = self._mode
        return _decorate(lambda: inference_mode(mode), fn)


def is_inference_mode_enabled() -> bool:
    """True inside ``with torch.inference_mode():`` (and not inside ``inference_mode(False)``)."""
    return state.inference


class set_grad_enabled(_GradModeBase):
    """``set_grad_enabled(False)`` works as a call, a context manager and a decorator."""

    def __init__(self, mode: bool):
        if not isinstance(mode, bool):  # (PyTorch's argument parser: a bool only; numpy's bool_ too)
            import numpy as np
            if not isinstance(mode, np.bool_):
                raise TypeError(f"set_grad_enabled(): argument 'enabled' (position 1) must be bool, not "
                                f"{type(mode).__name__}")
        self._target = bool(mode)
        self._prev = _set_mode(self._target)

    def __enter__(self):
        pass

    def __call__(self, fn):
        state.enabled, state.grad = self._prev
        mode = self._target
        return _decorate(lambda: set_grad_enabled(mode), fn)
