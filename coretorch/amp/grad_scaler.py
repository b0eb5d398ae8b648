"""torch.amp.GradScaler: dynamic loss scaling for float16 training (PyTorch's algorithm and state_dict)."""
from __future__ import annotations

import math
import warnings
from collections import abc, defaultdict
from enum import Enum
from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..autograd.grad_mode import no_grad

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class _MultiDeviceReplicator:
    """Lazily serves copies of a tensor to the devices that ask (cached per device)."""

    def __init__(self, master) -> None:
        self.master = master
        self._per_device_tensors: dict = {}

    def get(self, device):
        t = self._per_device_tensors.get(device)
        if t is None:
            t = self._per_device_tensors[device] = self.master.to(device=device, copy=True)
        return t


def _non_finite_check_and_unscale_(grads, found_inf, inv_scale) -> None:
    """torch._amp_foreach_non_finite_check_and_unscale_: found_inf becomes 1 if any gradient holds an inf or a
    NaN; every gradient is multiplied by inv_scale in place.  All on the gradients' device (no host read)."""
    for g in grads:
        # |g| <= max is false exactly for inf and NaN (a comparison: no floating point exception on the way)
        bad = g.abs().le(_dt.finfo(g.dtype).max).logical_not().any()
        found_inf.copy_(found_inf.maximum(bad.to(_dt.float32)))
        g.mul_(inv_scale)


def _update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval) -> None:
    """torch._amp_update_scale_ (read back to the host: one scalar per iteration).  As PyTorch's kernel, the new
    scale is the float32 scale times the factor in double, rounded to float32; a growth that overflows float32
    leaves the scale as it is."""
    if found_inf.item():
        scale.fill_(_to_float32(scale.item() * backoff_factor))
        growth_tracker.fill_(0)
        return
    successful = int(growth_tracker.item()) + 1
    if successful == growth_interval:
        new = _to_float32(scale.item() * growth_factor)
        if math.isfinite(new):
            scale.fill_(new)
        growth_tracker.fill_(0)
    else:
        growth_tracker.fill_(successful)


def _to_float32(x: float) -> float:
    """``x`` rounded to float32 (inf past its range, as a C++ static_cast<float>)."""
    with np.errstate(over="ignore"):
        return float(np.float32(x))


class GradScaler:
    """torch.amp.GradScaler(device='cuda', init_scale=65536.0, growth_factor=2.0, backoff_factor=0.5,
    growth_interval=2000, enabled=True).  Disabled (the default on 'cuda', which coretorch lacks, with PyTorch's
    warning), ``scale`` returns its argument, ``step`` calls ``optimizer.step()`` and the rest does nothing."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled:
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          stacklevel=2)
            self._enabled = False
        if self._enabled:
            assert growth_factor > 1.0, "The growth factor must be > 1.0."
            assert backoff_factor < 1.0, "The backoff factor must be < 1.0."
            self._init_scale = init_scale
            self._scale: Any = None  # created on the first scale(), on the outputs' device
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker: Any = None
            self._per_optimizer_states: dict = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname: str):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        assert self._scale is not None, f"Attempted {funcname} but _scale is None.  " + fix
        assert self._growth_tracker is not None, f"Attempted {funcname} but _growth_tracker is None.  " + fix
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev) -> None:
        from ..ops.creation import full
        self._scale = full((), self._init_scale, dtype=_dt.float32, device=dev)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=_dt.int32, device=dev)

    def scale(self, outputs: Any) -> Any:
        """outputs (a tensor or an iterable of tensors) multiplied by the current scale."""
        from ..tensor import Tensor
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device)
        stash: list = []

        def apply_scale(val):
            if isinstance(val, Tensor):
                if not stash:
                    if self._scale is None:
                        self._lazy_init_scale_growth_tracker(val.device)
                    stash.append(_MultiDeviceReplicator(self._scale))
                return val * stash[0].get(val.device)
            if isinstance(val, abc.Iterable):
                it = map(apply_scale, val)
                return type(val)(it) if isinstance(val, (list, tuple)) else it
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16: bool) -> dict:
        per_device_inv_scale = _MultiDeviceReplicator(inv_scale)
        per_device_found_inf = _MultiDeviceReplicator(found_inf)
        grads: dict = defaultdict(lambda: defaultdict(list))
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if param.grad is None:
                        continue
                    if not allow_fp16 and param.grad.dtype is _dt.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    grads[param.grad.device][param.grad.dtype].append(param.grad)
            for device, per_dtype in grads.items():
                for gs in per_dtype.values():
                    _non_finite_check_and_unscale_(gs, per_device_found_inf.get(device),
                                                   per_device_inv_scale.get(device))
        return per_device_found_inf._per_device_tensors

    def unscale_(self, optimizer) -> None:
        """Divide the optimizer's gradients by the scale (once per step), recording infs/NaNs per device."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        st = self._per_optimizer_states[id(optimizer)]
        if st["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if st["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        from ..ops.creation import full
        from .._compile.capture import varying_read  # (imported on use: compile imports amp)
        varying_read("GradScaler reads its scale and found_inf on the host, which change between steps")
        # the reciprocal in double, rounded to float32 (as PyTorch, which avoids an imprecise float32 division)
        inv_scale = full((), 1.0 / self._scale.item(), dtype=_dt.float32, device=self._scale.device)
        found_inf = full((), 0.0, dtype=_dt.float32, device=self._scale.device)
        st["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        st["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, optimizer_state, *args, **kwargs):
        found_inf = any(v.item() for v in optimizer_state["found_inf_per_device"].values())
        retval = None if found_inf else optimizer.step(*args, **kwargs)
        return retval, found_inf

    def step(self, optimizer, *args, return_found_inf: bool = False, **kwargs):
        """unscale_ (unless done) and ``optimizer.step()`` unless a gradient held an inf or a NaN."""
        if not self._enabled:
            retval = optimizer.step(*args, **kwargs)
            return (retval, False) if return_found_inf else retval
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        st = self._per_optimizer_states[id(optimizer)]
        if st["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if st["stage"] is OptState.READY:
            self.unscale_(optimizer)
        assert len(st["found_inf_per_device"]) > 0, "No inf checks were recorded for this optimizer."
        retval, found_inf = self._maybe_opt_step(optimizer, st, *args, **kwargs)
        st["stage"] = OptState.STEPPED
        return (retval, found_inf) if return_found_inf else retval

    def update(self, new_scale=None) -> None:
        """Back the scale off after a skipped step, grow it after ``growth_interval`` clean ones (or set it)."""
        from ..tensor import Tensor
        if not self._enabled:
            return
        _scale, _growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, Tensor):
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or torch.FloatTensor with "
                          "requires_grad=False.")  # (PyTorch 2.13's words)
                assert new_scale.device.type == _scale.device.type, reason  # (copied silently across devices)
                assert new_scale.numel() == 1, reason
                assert new_scale.requires_grad is False, reason
                self._scale.copy_(new_scale.reshape(()))
            else:
                self._scale.fill_(new_scale)
        else:
            found_infs = [f.to(device=_scale.device) for s in self._per_optimizer_states.values()
                          for f in s["found_inf_per_device"].values()]
            assert len(found_infs) > 0, "No inf checks were recorded prior to update."
            combined = found_infs[0]
            for f in found_infs[1:]:
                combined = combined + f
            _update_scale_(_scale, _growth_tracker, combined, self._growth_factor, self._backoff_factor,
                           self._growth_interval)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _get_scale_async(self):
        return self._scale

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if self._enabled:
            return self._init_scale if self._scale is None else float(self._scale.item())
        return 1.0

    def get_growth_factor(self) -> float:
        """The factor the scale is multiplied by after ``growth_interval`` clean steps."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Set the factor the scale is multiplied by after ``growth_interval`` clean steps."""
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        """The factor the scale is multiplied by after a step with inf/NaN gradients."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Set the factor the scale is multiplied by after a step with inf/NaN gradients."""
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        """The number of consecutive clean steps before the scale grows."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Set the number of consecutive clean steps before the scale grows."""
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())
        return 0

    def is_enabled(self) -> bool:
        """Whether this scaler scales (False makes every method a pass-through)."""
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """scale, growth_factor, backoff_factor, growth_interval, _growth_tracker ({} when disabled)."""
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the scale and growth tracking from a :meth:`state_dict`."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict[str, Any]:
        st = self.__dict__.copy()
        if self._enabled:
            assert len(self._per_optimizer_states) == 0, ("A GradScaler instance may only be pickled at the "
                                                          "beginning of an iteration, or at the end after "
                                                          "scaler.update().")
            st["_init_scale"] = self.get_scale()
            st["_init_growth_tracker"] = self._get_growth_tracker()
            st["_scale"] = None
            st["_growth_tracker"] = None
            st["_per_optimizer_states"] = None
        return st

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self._enabled:
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)
