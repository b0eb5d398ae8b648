"""coretorch.save's encoder: an object (tensors, numpy arrays and scalars, containers, numbers, strings, dtypes,
layouts, devices) as the JSON structure stored in the safetensors metadata and its arrays by name; and the tables
of what the format holds, which coretorch.load's decoder (coretorch.serialization) shares."""
from __future__ import annotations

import json
import math
import zlib
from collections import Counter, OrderedDict, defaultdict
from typing import Any

import numpy as np

_MAX_DEPTH = 100           # containers inside containers (save refuses deeper objects; load calls it corrupted)
_DTYPE_NAMES = ("float16", "float32", "float64", "uint8", "int8", "int16", "int32", "int64", "bool", "bfloat16")
# safetensors dtype names -> numpy dtypes (safetensors.numpy itself does not read BF16, which ml_dtypes provides)
_ST_TYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64,
             "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}
# unsigned types coretorch tensors lack: numpy arrays of them (``np.random.get_state()``'s uint32 key) are saved
# and loaded in coretorch's own files; a tensor of them, or one in another tool's file, is refused
_ST_ARRAY_ONLY = {"U16": np.uint16, "U32": np.uint32, "U64": np.uint64}
# the default_factory of a defaultdict that save stores (by name: nothing is pickled)
_FACTORIES: dict[str, Any] = {"None": None, "list": list, "dict": dict, "set": set, "int": int, "float": float,
                              "str": str, "tuple": tuple, "bool": bool, "OrderedDict": OrderedDict,
                              "Counter": Counter}
# numpy scalar types save restores as themselves (others are stored as their Python value)
_NP_SCALARS = frozenset(("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
                         "float32", "float64"))
# the containers stored as the format's own kinds: these exact types (subclasses, named tuples included, are saved
# through the reduce protocol as pickle saves them, so that they load as themselves)
_SEQUENCES: dict[type, str] = {list: "list", tuple: "tuple", set: "set", frozenset: "frozenset"}
_MAPPINGS: dict[type, str] = {dict: "dict", OrderedDict: "OrderedDict", Counter: "Counter",
                              defaultdict: "defaultdict"}
_ST_NAMES = {np.dtype(v): k for k, v in (*_ST_TYPES.items(), *_ST_ARRAY_ONLY.items())}


# ---- encoding ------------------------------------------------------------------------------------
class _Encoder:
    """The structure of a saved object as JSON, and its arrays by name.  Each array is named by the path of
    keys and indices that reaches it (``fc1.weight`` in a state dict, ``model.fc1.weight`` in a dict of state
    dicts), so that other safetensors readers see meaningful names; a name already taken gets ``#2``, ``#3``."""

    max_depth = _MAX_DEPTH  # (for ._serialization_objects, which does not import this module)

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self.ids: dict[int, str] = {}
        self.views: dict[tuple, list] = {}  # (device, data_ptr, dtype, shape, strides) -> [(tensor, name)]
        self.keep: list = []  # keep encoded objects alive so that their ids stay unique
        self.names: list[str] = []  # the path of keys leading to the object being encoded ("": none)
        self.memo: dict[int, int] = {}  # id -> number of the objects saved through their reduce protocol
        self.mutable: dict[int, dict] = {}  # id -> node of the lists, sets and dicts saved (see _shared)

    def _new_name(self, obj, arr: np.ndarray) -> str:
        base = ".".join([n for n in self.names if n]) or "tensor"
        name, k = base, 1
        while name in self.arrays or name == "__metadata__":  # (the safetensors header's own key)
            k += 1
            name = f"{base}#{k}"
        if not arr.flags.c_contiguous:  # (np.ascontiguousarray would turn a 0-d array into 1-d)
            arr = arr.copy(order="C")
        self.arrays[name] = arr
        self.ids[id(obj)] = name
        self.keep.append(obj)
        return name

    def tensor(self, t, path: str = "obj", depth: int = 0) -> dict:
        from .tensor import Tensor
        name = self.ids.get(id(t))
        first = name is None
        if name is None:
            key, name = self._same_view(t)
            if name is None:
                name = self._new_name(t, t.detach()._host())
                if key is not None:
                    self.views.setdefault(key, []).append((t, name))
        arr = self.arrays[name]
        out = {"tensor": name, "dtype": str(arr.dtype), "shape": list(arr.shape), "device": str(t.device),
               "crc32": _crc32(arr)}
        if t.requires_grad:
            out["requires_grad"] = True
        nn = _nn()
        if nn is not None and isinstance(t, getattr(nn, "Parameter", ())) and type(t) is not Tensor:
            out["parameter"] = True
        cls = type(t)
        if first and cls is not Tensor and "parameter" not in out and not cls.__module__.startswith("coretorch"):
            # a user's tensor subclass loads as itself, as PyTorch's (its class named, allowed as any global);
            # PyTorch loads a Parameter subclass as a Parameter, and coretorch's own subclasses are internal
            from ._serialization_objects import encode_object
            out["class"] = encode_object(self, cls, path, depth)
        attrs = tensor_attrs(t) if first else None
        if attrs:  # PyTorch keeps a tensor's Python attributes (``p.tag = 3``), as the tensor's state
            out["attrs"] = self.item(attrs, "", f"{path}.__dict__", depth)
        return out

    def _same_view(self, t) -> tuple[tuple | None, str | None]:
        """(key, name): the name of an already saved tensor object viewing the same memory as ``t`` the same way
        (tied weights in a state_dict(), whose entries are distinct detached tensors), stored once; None if
        there is none, or the backend cannot tell (then key is None too)."""
        table = t._be
        if not (table.has("data_ptr") and table.has("same_storage")):
            return None, None
        key = (str(t.device), t.data_ptr(), t.dtype, tuple(t.shape), t.stride())
        for other, name in self.views.get(key, ()):  # (an opencl data_ptr is a buffer handle plus an offset)
            if table.same_storage(t._data, other._data):
                return key, name
        return key, None

    def ndarray(self, orig: np.ndarray, path: str) -> dict:
        a = orig if orig.dtype.isnative else orig.astype(orig.dtype.newbyteorder("="))  # (a big-endian array)
        if a.dtype.name != "bfloat16" and a.dtype not in _ST_NAMES:
            raise TypeError(f"coretorch.save: cannot save {path[:200]}, a numpy array of dtype {a.dtype}; numpy "
                            f"arrays of {', '.join(sorted(str(np.dtype(d)) for d in _ST_NAMES))} and "
                            "bfloat16 are supported")
        name = self.ids.get(id(orig)) or self._new_name(orig, a)
        arr = self.arrays[name]
        return {"ndarray": name, "dtype": str(arr.dtype), "shape": list(arr.shape), "crc32": _crc32(arr)}

    def bytes_(self, b) -> dict:
        kind = "bytes" if isinstance(b, bytes) else "bytearray"
        name = self._new_name(b, np.frombuffer(bytes(b), np.uint8))
        return {kind: name, "crc32": _crc32(self.arrays[name])}

    def encode(self, obj, path: str = "obj", depth: int = 0):
        from .tensor import Size, Tensor
        from .dtypes import dtype as _dtype
        from .device import device as _device
        from ._compat import layout as _layout, strided as _strided
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, (np.bool_, np.integer, np.floating)):  # (before float: np.float64 is a float)
            value = self.encode(obj.item(), path, depth)
            return {"npscalar": obj.dtype.name, "value": value} if obj.dtype.name in _NP_SCALARS else value
        if isinstance(obj, complex):
            return {"complex": [self.encode(obj.real, path, depth), self.encode(obj.imag, path, depth)]}
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            if math.isfinite(obj):
                return float(obj)
            return {"float": repr(float(obj))}  # 'inf', '-inf', 'nan'
        if isinstance(obj, Tensor):
            if obj.layout is not _strided:  # a sparse COO tensor: its indices and values, as PyTorch saves it
                coo = obj.detach()
                return {"sparse_coo": [self.item(coo._indices(), "indices", path, depth),
                                       self.item(coo._values(), "values", path, depth)],
                        "size": list(coo.shape), "coalesced": bool(coo.is_coalesced())}
            return self.tensor(obj, path, depth)
        if isinstance(obj, np.ndarray):
            return self.ndarray(obj, path)
        if isinstance(obj, (bytes, bytearray)):
            return self.bytes_(obj)
        if isinstance(obj, _dtype):
            return {"dtype": str(obj).rsplit(".", 1)[-1]}
        if isinstance(obj, _device):
            return {"device": str(obj)}
        if isinstance(obj, _layout):  # (PyTorch's weights_only load accepts layouts too)
            return {"layout": obj._name}
        if isinstance(obj, (list, tuple, set, frozenset, dict)) and depth >= _MAX_DEPTH:
            raise ValueError(f"coretorch.save: {path[:200]} nests containers more than {_MAX_DEPTH} levels deep, "
                             "more than coretorch.load accepts")
        kind = _SEQUENCES.get(type(obj))
        if kind is None and isinstance(obj, Size):
            kind = "Size"
        if kind is not None:
            node = self._shared(obj, kind) if kind in ("list", "set") else {}
            if "ref" in node:
                return node
            items = [self.item(v, str(i), f"{path}[{i}]", depth) for i, v in enumerate(obj)]
            if kind in ("set", "frozenset"):  # a set's order depends on string hashing: sort for identical bytes,
                keys = [json.dumps(v, sort_keys=True) for v in items]  # unless an item refers to an object saved in
                if not any('"ref":' in k for k in keys):  # another one: load reads them in order, definition first
                    items = [v for _, v in sorted(zip(keys, items), key=lambda kv: kv[0])]
            node[kind] = items
            return node
        kind = _MAPPINGS.get(type(obj))
        if kind is not None:
            node = self._shared(obj, kind)
            if "ref" in node:
                return node
            factory = None
            if kind == "defaultdict":
                factory = next((n for n, f in _FACTORIES.items() if obj.default_factory is f), None)
                if factory is None:
                    raise TypeError(f"coretorch.save: cannot save {path[:200]}, a defaultdict whose default_factory "
                                    f"is {obj.default_factory!r}; supported are {', '.join(_FACTORIES)} (coretorch "
                                    "never pickles)")
            node[kind] = [[self.key(k, path, depth), self.item(v, str(k), f"{path}[{k!r}]", depth)]
                          for k, v in obj.items()]
            if factory is not None:
                node["factory"] = factory
            meta = getattr(obj, "_metadata", None)  # nn.Module.state_dict() keeps version info here
            if isinstance(meta, dict):
                node["_metadata"] = self.item(meta, "_metadata", f"{path}._metadata", depth)
            return node
        # a class, a function, a module, a user object; and a named tuple, a dict or list subclass, which keep their
        # type (and attributes) as pickle keeps them
        from ._serialization_objects import encode_object
        return encode_object(self, obj, path, depth)

    def _shared(self, obj, kind: str) -> dict:
        """The node to fill for the list, set or dict ``obj`` (its kind key first, as the decoder reads it); or, if
        ``obj`` was already reached, ``{"ref": k}``, its first node then marked ``"memo": k``: a list or dict
        reached twice loads as one object, and one that contains itself loads as a cycle, as pickle's memo keeps
        them (PyTorch: ``a = []; torch.save({"x": a, "y": a})`` loads with ``x is y``)."""
        first = self.mutable.get(id(obj))
        if first is not None:
            if "memo" not in first:
                first["memo"] = self.memo[id(obj)] = len(self.memo)
            return {"ref": first["memo"]}
        node: dict[str, Any] = {kind: None}
        self.mutable[id(obj)] = node
        self.keep.append(obj)  # (a transient container, a reduce's dict of items, must not lend its id to another)
        return node

    def item(self, v, name: str, path: str, depth: int):
        self.names.append(name)
        try:
            return self.encode(v, path, depth + 1)
        finally:
            self.names.pop()

    def key(self, k, path, depth: int = 0):
        from .tensor import Tensor
        if isinstance(k, Tensor):  # (an optimizer's own ``state``, keyed by its parameters: the same tensor objects
            return self.encode(k, path, depth + 1)  # as its param_groups' once loaded, as pickle's memo keeps them)
        if isinstance(k, (np.ndarray, bytearray, list, dict, set)):
            raise TypeError(f"coretorch.save: a {type(k).__name__} used as a dict key in {path[:200]} cannot be "
                            "saved (keys are numbers, strings, bytes, None or tuples of them)")
        return self.encode(k, path, depth + 1)


def tensor_attrs(t) -> dict:
    """The Python attributes a user set on tensor ``t``: its ``__dict__`` less coretorch's own bookkeeping
    (``_grad``, ``_vbase``, ...: each has a class-level default on the tensor's type)."""
    d = getattr(t, "__dict__", None)
    if not d:
        return {}
    cls = type(t)
    return {k: v for k, v in d.items() if k not in _INTERNAL_ATTRS and not hasattr(cls, k)}


# coretorch's own bookkeeping in a tensor's __dict__ without a class-level default: a sparse tensor's COO form
_INTERNAL_ATTRS = frozenset(("_coo",))


def _crc32(arr: np.ndarray) -> int:
    return zlib.crc32(arr.reshape(-1).view(np.uint8).data) if arr.size else 0


def _nn():
    try:
        from . import nn
    except Exception:  # pragma: no cover - nn is part of the package
        return None
    return nn
