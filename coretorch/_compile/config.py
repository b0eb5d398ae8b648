"""``coretorch._compile.config`` (also ``torch._dynamo.config``), ``torch._inductor.config``, and the registries
``reset()`` clears.

Scripts set PyTorch's compiler knobs on their first lines (``torch._dynamo.config.cache_size_limit = 64``,
``torch._inductor.config.coordinate_descent_tuning = True``); each config here knows PyTorch's common names, so such
a script runs, and rejects an unknown name with PyTorch's ``AttributeError`` (a typo is not silently ignored).  A
knob either drives coretorch's capture (its docstring below says how) or names a stage coretorch does not have
(Triton kernels, FX graph caches, symbolic shapes): it is kept and read back, and changes nothing.
"""
from __future__ import annotations

import contextlib
import functools
import weakref
from typing import Any, Iterator


class ConfigObject:
    """A config of known names: ``KNOBS`` maps each name to its default; setting any other name raises
    ``AttributeError`` as PyTorch's config modules do; ``patch`` changes names for a ``with`` block or a decorated
    function."""

    _NAME = "config"
    KNOBS: dict = {}

    def __init__(self) -> None:
        for k, v in self.KNOBS.items():
            object.__setattr__(self, k, _Group(f"{self._NAME}.{k}", v) if isinstance(v, dict) else v)

    def __getattr__(self, name: str) -> Any:  # (only for names not set: an unknown one)
        raise AttributeError(f"{self._NAME}.{name} does not exist")

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self.KNOBS and not isinstance(getattr(type(self), name, None), property):
            raise AttributeError(f"{self._NAME}.{name} does not exist")
        object.__setattr__(self, name, value)

    def _get(self, dotted: str) -> Any:
        obj: Any = self
        for part in dotted.split("."):
            obj = getattr(obj, part)
        return obj

    def _set(self, dotted: str, value: Any) -> None:
        *head, last = dotted.split(".")
        obj: Any = self
        for part in head:
            if not isinstance(getattr(obj, part, None), _Group):
                raise AttributeError(f"{self._NAME}.{dotted} does not exist")
            obj = getattr(obj, part)
        setattr(obj, last, value)

    @contextlib.contextmanager
    def _patched(self, changes: dict) -> Iterator[None]:
        old = {k: self._get(k) for k in changes}  # (an unknown name raises before anything changes)
        for k, v in changes.items():
            self._set(k, v)
        try:
            yield
        finally:
            for k, v in old.items():
                self._set(k, v)

    def patch(self, arg1: Any = None, arg2: Any = None, **changes: Any) -> "_Patch":
        """``config.patch(name=value, ...)``, ``config.patch("name", value)`` or ``config.patch({...})``: the
        names changed inside a ``with`` block or a decorated function, restored after."""
        if isinstance(arg1, str):
            changes[arg1] = arg2
        elif isinstance(arg1, dict):
            changes.update(arg1)
        for k in changes:
            self._get(k)  # AttributeError now, naming the knob
        return _Patch(self, changes)

    def get_config_copy(self) -> dict:
        """Every knob's current value (dotted names for the nested groups)."""
        out = {}
        for k in self.KNOBS:
            v = getattr(self, k)
            if isinstance(v, _Group):
                out.update({f"{k}.{n}": getattr(v, n) for n in v._knobs})
            else:
                out[k] = v
        return out


class _Group:
    """A nested group of knobs (``torch._inductor.config.triton.cudagraphs``)."""

    _name: str
    _knobs: dict

    def __init__(self, name: str, knobs: dict):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_knobs", dict(knobs))
        for k, v in knobs.items():
            object.__setattr__(self, k, v)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._knobs:
            raise AttributeError(f"{self._name}.{name} does not exist")
        object.__setattr__(self, name, value)


class _Patch:
    def __init__(self, cfg: ConfigObject, changes: dict):
        self._cfg, self._changes = cfg, changes
        self._cm: Any = None

    def __enter__(self) -> None:
        self._cm = self._cfg._patched(self._changes)
        self._cm.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._cm.__exit__(*exc)

    def __call__(self, fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self._cfg._patched(self._changes):
                return fn(*args, **kwargs)
        return wrapper


def _alias(name: str, doc: str) -> property:
    """A knob under another name (PyTorch's older spelling): reading and setting it read and set ``name``."""
    return property(lambda self: getattr(self, name), lambda self, value: setattr(self, name, value), doc=doc)


class _Config(ConfigObject):
    """``coretorch._compile.config``, which is also ``torch._dynamo.config``.

    coretorch's own knobs:

    * ``recompile_limit`` (8; ``cache_size_limit`` is the same knob under PyTorch's older name): captures per
      compiled function before calls with new guards run eagerly (with one warning);
    * ``error_on_recompile`` (False): a capture for a function that already has one raises
      ``torch._dynamo.exc.RecompileError`` (as PyTorch's);
    * ``fusion`` (True): fuse elementwise chains on devices with a compile_fused hook (opencl); see fusion.py;
    * ``pool`` (True): temporaries into buffers planned once per capture on devices with a compile_out hook; plan.py;
    * ``host_fusion`` (False; also ``torch._inductor.config.max_autotune``): cpu replays run GELU/layer norm/softmax
      as another plugin's kernels on the same memory (PoCL through the opencl plugin), within float32 rounding of
      eager, not bitwise; per compile call: ``mode="max-autotune"`` or ``options={"host_fusion": True}``; hostfuse.py;
    * ``lower`` (True): replays lowered to the launches their kernel-table calls make, after two observed replays, on
      devices with a compile_lower hook (opencl); bitwise the table calls; lower.py.

    * ``capture_scalar_outputs`` (False): with ``fullgraph=True``, a ``.item()``/``.tolist()`` at the return is
      replayed instead of raising (as PyTorch's knob lets such a graph hold the read; without ``fullgraph`` it is
      replayed anyway: tailreads.py).
    * ``specialize_float`` (False): True keeps a compiled function's float arguments guarded by value; False (as
      PyTorch's default) makes them inputs of the replay once they change (dynfloat.py).

    PyTorch's other common knobs are kept and change nothing: ``suppress_errors`` (coretorch has no backend compile
    stage to fail: a call it cannot replay runs eagerly already), ``verbose``, and
    ``capture_dynamic_output_shape_ops`` (``nonzero`` is a graph break), ``automatic_dynamic_shapes``,
    ``assume_static_by_default``, ``specialize_int``, ``force_parameter_static_shapes`` (a
    capture is specialised to its shapes and scalars; a new one captures again), ``optimize_ddp`` (DDP steps are
    graph breaks), ``inline_inbuilt_nn_modules``, ``guard_nn_modules`` (modules are always guarded),
    ``compiled_autograd``, ``accumulated_recompile_limit`` / ``accumulated_cache_size_limit``,
    ``replay_record_enabled``, and the rest of the ``KNOBS`` below (debugging, numpy tracing, repro dumps)."""

    _NAME = "torch._dynamo.config"
    KNOBS = {"recompile_limit": 8, "error_on_recompile": False, "fusion": True, "pool": True, "host_fusion": False,
             "lower": True,
             # PyTorch's, kept (see the docstring)
             "suppress_errors": False, "verbose": False, "capture_scalar_outputs": False,
             "capture_dynamic_output_shape_ops": False, "automatic_dynamic_shapes": True,
             "assume_static_by_default": True, "specialize_int": False, "specialize_float": False,
             "force_parameter_static_shapes": True, "optimize_ddp": True, "inline_inbuilt_nn_modules": True,
             "guard_nn_modules": True, "compiled_autograd": False, "accumulated_recompile_limit": 256,
             "replay_record_enabled": False, "dynamic_shapes": True, "skip_nnmodule_hook_guards": True,
             "allow_unspec_int_on_nn_module": False, "raise_on_ctx_manager_usage": True,
             "prefer_deferred_runtime_asserts_over_guards": False, "allow_rnn": False, "trace_numpy": True,
             "numpy_default_float": "float64", "use_numpy_random_stream": False, "optimize_ddp_lazy_compile": False,
             "do_not_emit_runtime_asserts": False, "allow_ignore_mark_dynamic": False, "cprofile": False,
             "debug_dir_root": "/tmp/torch_compile_debug", "repro_after": None, "repro_level": 2}

    recompile_limit: int
    error_on_recompile: bool
    fusion: bool
    pool: bool
    host_fusion: bool
    lower: bool

    cache_size_limit = _alias("recompile_limit", "PyTorch's older name of ``recompile_limit`` (the same knob).")
    accumulated_cache_size_limit = _alias("accumulated_recompile_limit",
                                          "PyTorch's older name of ``accumulated_recompile_limit`` (kept, no effect).")


config = _Config()


def recompile_limit_of(own: int | None) -> int:
    """A compile call's recompile_limit: its own, else the config's."""
    return config.recompile_limit if own is None else own


live_functions: weakref.WeakSet = weakref.WeakSet()  # every CompiledFunction (reset() clears them)
live_modules: weakref.WeakSet = weakref.WeakSet()  # every ModuleCapture
