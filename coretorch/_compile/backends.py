"""``torch.compile``'s ``backend``, ``mode`` and ``options`` resolved to what a capture does.

coretorch has one compiler (capture and replay, :mod:`coretorch._compile`), so PyTorch's backend names select how
far a replay departs from the recorded kernels:

* ``"inductor"`` (the default): fused elementwise kernels on devices that fuse (opencl, within float32 rounding)
  and, with ``mode="max-autotune"``, host fusion on cpu (:mod:`.hostfuse`);
* ``"eager"``, ``"aot_eager"`` (PyTorch's debug backends, which run the captured graph with eager's kernels) and
  ``"cudagraphs"`` (a recording replayed as it was recorded): the recorded kernels only, no fusion, no host fusion,
  so every replay is bitwise eager's on every device.

Any other name raises ``InvalidBackend`` at the ``compile`` call, as PyTorch's.  A callable backend (a function
that receives a ``torch.fx.GraphModule``) raises ``NotImplementedError``: coretorch records kernel launches, not FX
graphs, so it has nothing to call such a function with.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator, NamedTuple

from .config import config
from .exc import InvalidBackend

# name -> (tags, fused): PyTorch's tags (list_backends leaves out "debug" and "experimental" by default)
_BACKENDS: dict[str, tuple[tuple[str, ...], bool]] = {
    "inductor": ((), True), "cudagraphs": ((), False), "eager": (("debug",), False),
    "aot_eager": (("debug",), False)}
_default = ["inductor"]
# PyTorch's modes in its order (the error lists them so; ``torch._inductor.list_mode_options`` holds their options)
_MODES = (None, "default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
_local = threading.local()  # the backend of the capture running in this thread (see capture_settings)


class Choice(NamedTuple):
    """What a compile call asks of its captures: ``fused`` (False: the recorded kernels only) and ``host_fusion``
    (None: ``config.host_fusion``)."""
    fused: bool
    host_fusion: bool | None


def list_backends(exclude_tags: Any = ("debug", "experimental")) -> list[str]:
    """``torch.compiler.list_backends``: the backend names ``compile`` accepts, sorted, without those tagged
    ``exclude_tags`` (``exclude_tags=()``: all of them)."""
    ex = set(exclude_tags or ())
    return sorted(n for n, (tags, _) in _BACKENDS.items() if not ex.intersection(tags))


def get_default_backend() -> str:
    """The backend ``compile`` uses when given ``backend=None``."""
    return _default[0]


def set_default_backend(backend: str | None) -> None:
    """Set the backend ``compile(backend=None)`` uses (None: back to ``"inductor"``)."""
    if backend is not None:
        _check_backend(backend)
    _default[0] = backend or "inductor"


def _check_backend(backend: Any) -> bool:
    """Whether ``backend`` fuses; raises for a name coretorch does not have or a callable."""
    if callable(backend):
        raise NotImplementedError(
            f"torch.compile: a custom backend ({getattr(backend, '__name__', type(backend).__name__)}) receives a "
            f"torch.fx.GraphModule, and coretorch captures kernel launches, not FX graphs: it has nothing to call it "
            f"with. Use one of {list_backends(())}")
    if not isinstance(backend, str) or backend not in _BACKENDS:
        raise InvalidBackend(f"Invalid backend: {backend!r}, see `torch._dynamo.list_backends()` for available "
                             f"backends.")
    return _BACKENDS[backend][1]


def check_dynamic(dynamic: Any) -> None:
    """PyTorch's check of ``compile(dynamic=...)``, made where it compiles (a decorator's only once given the
    function; not under ``disable=True``): True, False or None."""
    if dynamic is not None and type(dynamic) is not bool:
        raise AssertionError(f"Expected enable to be a bool, got {type(dynamic)}")


def resolve(backend: Any = "inductor", mode: Any = None, options: Any = None) -> Choice:
    """A compile call's choice, checked as PyTorch checks it: ``mode`` and ``options`` not both, a known mode, known
    option names (``torch._inductor.config``'s, and coretorch's ``host_fusion``), a known backend."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(m for m in _MODES if m)}")
    host: bool | None = None
    if options is not None:
        from .._inductor import config as inductor_config
        for k in options:
            try:
                if k != "host_fusion":
                    inductor_config._get(k)  # (dotted names too: "triton.cudagraphs")
            except AttributeError:
                raise RuntimeError(f"Unexpected optimization option {k}, known options are "
                                   f"{sorted([*inductor_config.get_config_copy(), 'host_fusion'])}") from None
        for k in ("max_autotune", "host_fusion"):
            if k in options:
                host = bool(options[k])
    elif mode in ("max-autotune", "max-autotune-no-cudagraphs"):
        host = True  # PyTorch's "spend compile time for faster kernels": coretorch's host fusion (hostfuse.py)
    fused = _check_backend(get_default_backend() if backend is None else backend)
    return Choice(fused, host if fused else False)


@contextlib.contextmanager
def capture_settings(fused: bool) -> Iterator[None]:
    """The capture running in this thread builds its replay with fusion only if ``fused`` (a compile call's backend;
    thread-local, so a capture in another thread is not affected)."""
    old = getattr(_local, "fused", True)
    _local.fused = fused
    try:
        yield
    finally:
        _local.fused = old


def fusing() -> bool:
    """Whether the capture running in this thread fuses elementwise chains (``config.fusion`` and its backend)."""
    return config.fusion and getattr(_local, "fused", True)
