"""``torch.__future__``: the opt-in conversion behaviours of ``nn.Module`` (PyTorch's flags, same defaults).

* ``set_overwrite_module_params_on_conversion(True)``: ``module.to()``/``double()``/``cpu()``... assign new
  Parameter objects (sharing the converted storage) instead of changing the existing ones' ``.data``.
* ``set_swap_module_params_on_conversion(True)``: conversions and ``load_state_dict`` keep each Parameter object
  and give it the new values (PyTorch swaps the tensors; coretorch sets the parameter's data, which an existing
  reference sees the same way); ``load_state_dict`` then loads through ``param.module_load(value, assign)``.
"""
from __future__ import annotations

_overwrite_module_params_on_conversion: bool = False
_swap_module_params_on_conversion: bool = False


def set_overwrite_module_params_on_conversion(value: bool) -> None:
    """Whether converting an ``nn.Module`` assigns new parameters instead of changing the existing ones in place."""
    global _overwrite_module_params_on_conversion
    _overwrite_module_params_on_conversion = value


def get_overwrite_module_params_on_conversion() -> bool:
    """See :func:`set_overwrite_module_params_on_conversion` (default False)."""
    return _overwrite_module_params_on_conversion


def set_swap_module_params_on_conversion(value: bool) -> None:
    """Whether converting an ``nn.Module`` (and ``load_state_dict``) keeps the parameter objects and gives them
    the new values; takes precedence over :func:`set_overwrite_module_params_on_conversion`."""
    global _swap_module_params_on_conversion
    _swap_module_params_on_conversion = value


def get_swap_module_params_on_conversion() -> bool:
    """See :func:`set_swap_module_params_on_conversion` (default False)."""
    return _swap_module_params_on_conversion
