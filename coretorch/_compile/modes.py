"""The process-wide modes and settings a replay is specialised to (part of every guard key)."""
from __future__ import annotations

from typing import Any

from .. import _compat, dtypes as _dtypes
from .._determinism import state as _det
from ..amp.autocast_mode import state as _ac_state, tls as _ac_tls
from ..autograd.anomaly_mode import state as _anomaly
from ..autograd.grad_mode import state as _grad_state
from ..backends import mha as _mha
from ..backends import opt_einsum as _oe
from ..ops import creation as _creation

_threads = _compat._threads
_einsum: Any = type(_oe)  # (its settings are class attributes behind the module's properties)


def modes() -> tuple:
    """Grad, inference and anomaly modes, autocast, ``use_deterministic_algorithms``, the default dtype and device
    (each changes which kernels eager launches, or whether it raises: ``put_`` in deterministic mode), and the
    settings a step can read through a getter (``torch.get_float32_matmul_precision()``, ``get_num_threads()``:
    the replay would reuse the number it read at the capture), ``torch.backends.opt_einsum``'s (einsum's
    contraction order: another order rounds otherwise) and ``torch.backends.mha``'s fast-path switch (whether a
    TransformerEncoder in inference zeroes padded positions)."""
    # autocast: the device types it is enabled for in this thread, with their dtypes (a thread that never used it
    # and one that left it have the same key: ``state.on`` is process-wide, and stays on after a thread that died
    # inside an autocast region, which made every other thread's call of a compiled function miss its guards)
    ac = tuple(sorted((k, str(_ac_tls.dtype.get(k))) for k, v in _ac_tls.enabled.items() if v)) if _ac_state.on else ()
    return (_grad_state.enabled, _grad_state.inference, _anomaly.enabled, ac, _det["mode"], _det["warn_only"],
            _dtypes.default, _creation._default.device, _compat._precision[0], _threads["intra"],
            _threads["interop"], _einsum._enabled, _einsum._strategy, _mha._is_fastpath_enabled)
