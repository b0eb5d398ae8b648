"""``torch.utils.data._utils.collate``: PyTorch's ``collate(batch, *, collate_fn_map)`` and its
``default_collate_fn_map`` (tensors and numpy arrays stacked, numpy scalars, floats, ints, strings and bytes), which
``default_collate`` uses: a script extends it by adding a type to the map (or a map of its own), as PyTorch
documents.  Containers (mappings in their own type, named tuples, sequences) are collated per field."""
from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, MutableMapping, MutableSequence, Sequence

import numpy as np

from ..tensor import Tensor

__all__ = ["collate", "default_collate", "default_convert", "default_collate_fn_map", "collate_tensor_fn",
           "collate_numpy_array_fn", "collate_numpy_scalar_fn", "collate_float_fn", "collate_int_fn",
           "collate_str_fn", "default_collate_err_msg_format"]

_STR_OBJ_KINDS = "SaUO"  # numpy dtype kinds of strings and objects (PyTorch's np_str_obj_array_pattern)
default_collate_err_msg_format = _COLLATE_ERR = ("default_collate: batch must contain tensors, numpy arrays, "
                                                 "numbers, dicts or lists; found {}")


def _is_np_number(data) -> bool:
    """A numpy array or scalar PyTorch converts: numpy's own types, its str_/bytes_ scalars excepted."""
    return type(data).__module__ == "numpy" and not isinstance(data, (str, bytes))


def _rebuild_mapping(data, values: dict):
    """``values`` in ``data``'s mapping type, as PyTorch: a copy updated in place for a mutable mapping (an
    OrderedDict or a defaultdict stays one), else the type called on a dict; a plain dict where that fails."""
    try:
        if isinstance(data, MutableMapping):
            clone = copy.copy(data)
            clone.update(values)
            return clone
        return type(data)(values)
    except TypeError:
        return values


def _rebuild_sequence(data, values: list):
    """``values`` in ``data``'s sequence type, as PyTorch (a list where the type cannot be rebuilt)."""
    try:
        if isinstance(data, MutableSequence):
            clone = copy.copy(data)
            for i, v in enumerate(values):
                clone[i] = v
            return clone
        return type(data)(values)
    except TypeError:
        return values


def default_convert(data):
    """numpy arrays and scalars become tensors (recursively); everything else is returned as it is."""
    from ..ops.creation import as_tensor
    if isinstance(data, Tensor):
        return data
    if _is_np_number(data):
        if isinstance(data, np.ndarray) and data.dtype.kind in _STR_OBJ_KINDS:
            return data
        return as_tensor(data)
    if isinstance(data, Mapping):
        return _rebuild_mapping(data, {k: default_convert(data[k]) for k in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):  # (a tuple becomes a list, as PyTorch's "backwards compatibility")
        return [default_convert(d) for d in data]
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data


def collate(batch, *, collate_fn_map: dict | None = None):
    """PyTorch's general collate: the function of ``collate_fn_map`` for the first sample's type (or the first key
    it is an instance of, in the map's order); else mappings, named tuples and sequences collated per field."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, Mapping):
        return _rebuild_mapping(elem, {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                                       for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a named tuple
        return elem_type(*(collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)))
    if isinstance(elem, Sequence):
        if any(len(e) != len(elem) for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        fields = [collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)]
        # (a tuple's fields come back as a list, as PyTorch's "backwards compatibility": ``batch[0] = x.to(d)``)
        return fields if isinstance(elem, tuple) else _rebuild_sequence(elem, fields)
    raise TypeError(_COLLATE_ERR.format(elem_type))


def collate_tensor_fn(batch, *, collate_fn_map: dict | None = None):
    """Tensors stacked along a new dimension 0 (sparse ones refused, as PyTorch: stacking would densify them)."""
    from ..ops.shape import stack
    if batch[0].is_sparse:
        raise RuntimeError("Batches of sparse tensors are not currently supported by the default collate_fn; "
                           "please provide a custom collate_fn to handle them appropriately.")
    return stack(list(batch), 0)


def collate_numpy_array_fn(batch, *, collate_fn_map: dict | None = None):
    """numpy arrays stacked into one tensor (string and object arrays refused, as PyTorch)."""
    from ..ops.creation import as_tensor
    elem = batch[0]
    if elem.dtype.kind in _STR_OBJ_KINDS:
        raise TypeError(_COLLATE_ERR.format(elem.dtype))
    if all(isinstance(b, np.ndarray) and b.shape == elem.shape and b.dtype == elem.dtype for b in batch):
        return as_tensor(np.stack(batch))  # (one copy: what stacking each as a tensor gives)
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map: dict | None = None):
    """numpy scalars: ``as_tensor(batch)``."""
    from ..ops.creation import as_tensor
    return as_tensor(batch)


def collate_float_fn(batch, *, collate_fn_map: dict | None = None):
    """Python floats: a float64 tensor."""
    from .. import dtypes as _dt
    from ..ops.creation import tensor
    return tensor(batch, dtype=_dt.float64)


def collate_int_fn(batch, *, collate_fn_map: dict | None = None):
    """Python ints (and bools): ``tensor(batch)`` (int64, bool, or float32 when a float follows)."""
    from ..ops.creation import tensor
    return tensor(batch)


def collate_str_fn(batch, *, collate_fn_map: dict | None = None):
    """Strings and bytes stay as given."""
    return batch


#: PyTorch's default map, in its order; a script extends it in place (``default_collate_fn_map[MyType] = fn``)
default_collate_fn_map: dict[type | tuple[type, ...], Callable] = {
    Tensor: collate_tensor_fn, np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn, float: collate_float_fn, int: collate_int_fn,
    str: collate_str_fn, bytes: collate_str_fn}


def default_collate(batch):
    """Stack a list of samples into a batch, as PyTorch's ``default_collate``: tensors and numpy arrays
    are stacked along a new dimension 0, numpy scalars make a tensor (``as_tensor``), Python floats a float64
    tensor, ints (and bools) ``tensor(batch)`` (int64, bool, or float32 when a float follows), strings stay as
    given (a list, a tuple inside a nested sample); named tuples, dicts (in their own mapping type), lists
    (in their own sequence type) and tuples (as lists) are collated per field; types added to
    ``default_collate_fn_map`` by their functions."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
