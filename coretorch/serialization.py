"""coretorch.save / coretorch.load: state dicts as a safetensors file, never pickle.

The file is a plain safetensors file.  Its tensors are named ``"0"``, ``"1"``, ...; the object's
structure (nested dicts, lists, tuples, numbers, strings, ``None`` and references to those tensors) is JSON
stored in the safetensors ``__metadata__`` under ``"coretorch.structure"``, next to a format marker
(``"format": "coretorch"``) and a version (``"coretorch.version"``).  Each tensor entry of the structure
records its dtype, shape, device, ``requires_grad`` and a CRC-32 of its bytes, so that a tampered header or
corrupted data is detected on load.

``save`` writes to a temporary file in the target's directory, flushes and fsyncs it, then renames it over
the target (``os.replace``): a crash mid-save leaves the previous file intact.  ``load`` only parses JSON
and raw tensor bytes; it never executes code from the file.
"""
from __future__ import annotations

import json
import math
import os
import struct
import tempfile
import zlib
from collections import Counter, OrderedDict

import numpy as np

from . import dtypes as _dtypes

__all__ = ["save", "load", "FORMAT", "VERSION"]

FORMAT = "coretorch"
VERSION = 1
_MAX_HEADER = 100_000_000  # the limit the safetensors library itself enforces

_DTYPE_NAMES = ("float16", "float32", "float64", "uint8", "int8", "int16", "int32", "int64", "bool", "bfloat16")
# safetensors dtype names -> numpy dtypes (safetensors.numpy itself does not read BF16, which ml_dtypes provides)
_ST_TYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64,
             "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}


# ---- encoding ------------------------------------------------------------------------------------
class _Encoder:
    def __init__(self):
        self.arrays: dict[str, np.ndarray] = {}
        self.ids: dict[int, str] = {}
        self.keep: list = []  # keep encoded tensors alive so that their ids stay unique

    def tensor(self, t) -> dict:
        from .tensor import Tensor
        name = self.ids.get(id(t))
        if name is None:
            name = str(len(self.arrays))
            arr = t.detach()._host()
            if not arr.flags.c_contiguous:  # (np.ascontiguousarray would turn a 0-d array into 1-d)
                arr = arr.copy(order="C")
            self.arrays[name] = arr
            self.ids[id(t)] = name
            self.keep.append(t)
        arr = self.arrays[name]
        out = {"tensor": name, "dtype": str(arr.dtype), "shape": list(arr.shape), "device": str(t.device),
               "crc32": _crc32(arr)}
        if t.requires_grad:
            out["requires_grad"] = True
        nn = _nn()
        if nn is not None and isinstance(t, getattr(nn, "Parameter", ())) and type(t) is not Tensor:
            out["parameter"] = True
        return out

    def encode(self, obj, path: str = "obj"):
        from .tensor import Tensor
        from .dtypes import dtype as _dtype
        from .device import device as _device
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            if math.isfinite(obj):
                return float(obj)
            return {"float": repr(float(obj))}  # 'inf', '-inf', 'nan'
        if isinstance(obj, Tensor):
            return self.tensor(obj)
        if isinstance(obj, (np.bool_, np.integer, np.floating)):
            return self.encode(obj.item(), path)
        if isinstance(obj, _dtype):
            return {"dtype": str(obj).rsplit(".", 1)[-1]}
        if isinstance(obj, _device):
            return {"device": str(obj)}
        if isinstance(obj, (list, tuple, set, frozenset)):
            kind = {list: "list", tuple: "tuple", set: "set", frozenset: "frozenset"}.get(type(obj))
            if kind is None:  # torch.Size, named tuples and other subclasses are stored as their base type
                kind = next(k for c, k in ((list, "list"), (tuple, "tuple"), (frozenset, "frozenset"),
                                           (set, "set")) if isinstance(obj, c))
            return {kind: [self.encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]}
        if isinstance(obj, dict):
            kind = "Counter" if isinstance(obj, Counter) else "OrderedDict" if isinstance(obj, OrderedDict) \
                else "dict"
            out = {kind: [[self.key(k, path), self.encode(v, f"{path}[{k!r}]")] for k, v in obj.items()]}
            meta = getattr(obj, "_metadata", None)  # nn.Module.state_dict() keeps version info here
            if isinstance(meta, dict):
                out["_metadata"] = self.encode(meta, f"{path}._metadata")
            return out
        raise TypeError(f"coretorch.save: cannot save {path} of type {type(obj).__module__}."
                        f"{type(obj).__qualname__}; only tensors, dicts, lists, tuples, sets, numbers, strings, "
                        "None, dtypes and devices are supported (coretorch never pickles)")

    def key(self, k, path):
        from .tensor import Tensor
        if isinstance(k, Tensor):
            raise TypeError(f"coretorch.save: a tensor used as a dict key in {path} cannot be saved; use the "
                            "optimizer's state_dict() (integer parameter ids) instead")
        return self.encode(k, path)


def _crc32(arr: np.ndarray) -> int:
    return zlib.crc32(arr.reshape(-1).view(np.uint8)) if arr.size else 0


def _nn():
    try:
        from . import nn
    except Exception:  # pragma: no cover - nn is part of the package
        return None
    return nn


# ---- writing ---------------------------------------------------------------------------------------
def _write_bytes(f, data: bytes) -> None:
    """Write everything (a separate function so that tests can simulate a crash in the middle)."""
    view = memoryview(data)
    while view:
        n = f.write(view)
        if n is None:  # some raw file objects write all or raise
            break
        view = view[n:]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _atomic_write(path: str, data: bytes) -> None:
    path = os.path.realpath(path)
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"coretorch.save: directory {directory!r} does not exist")
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            _write_bytes(f, data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:  # make the rename itself durable
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True) -> None:
    """Save ``obj`` (a state dict: nested dicts/lists/tuples of tensors, numbers, strings, None) to ``f``
    (a path, written atomically, or a binary file object).  The pickle arguments exist only for PyTorch
    compatibility and are ignored: nothing is ever pickled."""
    from safetensors.numpy import save as st_save
    enc = _Encoder()
    structure = enc.encode(obj)
    metadata = {"format": FORMAT, "coretorch.version": str(VERSION),
                "coretorch.structure": json.dumps(structure, separators=(",", ":"), allow_nan=False)}
    data = st_save(enc.arrays, metadata=metadata)
    if isinstance(f, (str, bytes, os.PathLike)):
        _atomic_write(os.fsdecode(f), data)
    elif hasattr(f, "write"):
        _write_bytes(f, data)
        if hasattr(f, "flush"):
            f.flush()
    else:
        raise TypeError(f"coretorch.save: f must be a path or a writable binary file object, not "
                        f"{type(f).__name__}")


# ---- reading ---------------------------------------------------------------------------------------
class _Decoder:
    def __init__(self, name: str, arrays: dict, map_location):
        self.name = name
        self.arrays = arrays
        self.map_location = map_location
        self.cache: dict = {}
        self.used: set = set()

    def bad(self, why: str) -> RuntimeError:
        return RuntimeError(f"coretorch.load: {self.name} is corrupted or was tampered with ({why})")

    def decode(self, node):
        if node is None or isinstance(node, (bool, str)):
            return node
        if isinstance(node, int):
            return node
        if isinstance(node, float):
            return node
        if not isinstance(node, dict) or not node:
            raise self.bad(f"unexpected structure element {type(node).__name__}")
        if "tensor" in node:
            return self.tensor(node)
        kind = next(iter(node))
        val = node[kind]
        if kind == "float":
            if val not in ("inf", "-inf", "nan"):
                raise self.bad(f"bad float {val!r}")
            return float(val)
        if kind in ("list", "tuple", "set", "frozenset"):
            if not isinstance(val, list):
                raise self.bad(f"{kind} payload is not a list")
            items = [self.decode(v) for v in val]
            try:
                return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[kind](items)
            except TypeError as e:
                raise self.bad(str(e)) from None
        if kind in ("dict", "OrderedDict", "Counter"):
            if not isinstance(val, list) or any(not isinstance(kv, list) or len(kv) != 2 for kv in val):
                raise self.bad(f"{kind} payload is not a list of key/value pairs")
            out = {"dict": dict, "OrderedDict": OrderedDict, "Counter": Counter}[kind]()
            for k, v in val:
                key = self.decode(k)
                try:
                    out[key] = self.decode(v)
                except TypeError as e:
                    raise self.bad(f"unhashable key: {e}") from None
            if "_metadata" in node:
                out._metadata = self.decode(node["_metadata"])
            return out
        if kind == "dtype":
            import coretorch
            if val not in _DTYPE_NAMES:
                raise self.bad(f"unknown dtype {val!r}")
            return getattr(coretorch, "bool" if val == "bool" else val)
        if kind == "device":
            from .device import device
            try:
                return device(val)
            except Exception as e:
                raise self.bad(f"bad device {val!r}: {e}") from None
        raise self.bad(f"unknown element {kind!r}")

    def tensor(self, node):
        name = node.get("tensor")
        if name in self.cache:
            return self.cache[name]
        if not isinstance(name, str) or name not in self.arrays:
            raise self.bad(f"the structure refers to a tensor {name!r} that the file does not hold")
        arr = self.arrays[name]
        if node.get("dtype") != str(arr.dtype) or node.get("shape") != list(arr.shape):
            raise self.bad(f"tensor {name!r} is {arr.dtype}{list(arr.shape)} in the safetensors header but was "
                           f"saved as {node.get('dtype')}{node.get('shape')}")
        if node.get("crc32") != _crc32(arr):
            raise self.bad(f"checksum mismatch in the data of tensor {name!r}")
        self.used.add(name)
        t = self.place(arr, str(node.get("device", "cpu")))
        if node.get("requires_grad"):
            t.requires_grad_(True)
        if node.get("parameter"):
            nn = _nn()
            param = getattr(nn, "Parameter", None) if nn is not None else None
            if param is not None:
                t = param(t, requires_grad=bool(node.get("requires_grad")))
        self.cache[name] = t
        return t

    def place(self, arr: np.ndarray, location: str):
        import coretorch
        from .device import device as _device
        t = coretorch.from_numpy(arr)
        ml = self.map_location
        target = location
        if callable(ml) and not isinstance(ml, (str, _device)):
            result = ml(t, location)
            if result is not None:
                if not isinstance(result, coretorch.Tensor):
                    raise TypeError(f"coretorch.load: map_location returned {type(result).__name__}, expected a "
                                    "Tensor or None")
                return result
        elif isinstance(ml, dict):
            target = str(ml.get(location, location))
        elif ml is not None:
            target = str(ml)
        if target == "cpu":
            return t
        try:
            dev = _device(target)
            return t.to(dev)
        except Exception as e:
            raise RuntimeError(f"coretorch.load: the file holds a tensor saved on device {location!r}, which "
                               f"cannot be restored to {target!r} here ({e}). Use map_location='cpu' (or "
                               "another available device) to load it.") from None


def _read_all(f) -> tuple[bytes, str]:
    if isinstance(f, (str, bytes, os.PathLike)):
        path = os.fsdecode(f)
        with open(path, "rb") as fh:
            return fh.read(), repr(path)
    if hasattr(f, "read"):
        data = f.read()
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError("coretorch.load: the file object must be opened in binary mode")
        return bytes(data), "the file object"
    raise TypeError(f"coretorch.load: f must be a path or a readable binary file object, not {type(f).__name__}")


def _foreign(name: str, what: str) -> RuntimeError:
    return RuntimeError(f"coretorch.load: {name} is not a coretorch checkpoint ({what}). coretorch.load reads "
                        "only files written by coretorch.save (safetensors with coretorch metadata) and never "
                        "unpickles.")


def load(f, map_location=None, pickle_module=None, *, weights_only: bool = True, mmap=None, **pickle_load_args):
    """Load an object saved with ``coretorch.save``.

    ``map_location``: None (each tensor goes back to the device it was saved from), a device or device
    string (every tensor goes there), a dict mapping saved locations to new ones (``{"opencl:1": "cpu"}``),
    or a callable ``(cpu_tensor, location) -> tensor or None`` (None: the default placement).
    Raises ``RuntimeError`` for a truncated, corrupted, tampered-with or foreign file.  ``weights_only`` is
    accepted for PyTorch compatibility: this loader only ever reads data."""
    data, name = _read_all(f)
    # a pickle starts with \x80 (PROTO); so does a safetensors file whose header length is 128 mod 256,
    # but its JSON header then opens at byte 8
    if data[:2] == b"PK" or (data[:1] == b"\x80" and data[8:9] != b"{"):
        raise _foreign(name, "it looks like a PyTorch zip/pickle file, which may execute code when loaded")
    if len(data) < 8:
        raise RuntimeError(f"coretorch.load: {name} is truncated or empty ({len(data)} bytes, a coretorch "
                           "checkpoint has at least a 8-byte header length)")
    (n,) = struct.unpack("<Q", data[:8])
    if n > _MAX_HEADER or n < 2:
        raise _foreign(name, f"its first 8 bytes give a header length of {n}, not a safetensors header")
    if 8 + n > len(data):
        raise RuntimeError(f"coretorch.load: {name} is truncated (the header says {n} bytes, the file holds "
                           f"{len(data) - 8} after the length)")
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        if data[8:9] != b"{":
            raise _foreign(name, "no safetensors JSON header") from None
        raise RuntimeError(f"coretorch.load: {name} is corrupted or was tampered with (the safetensors header is "
                           f"not valid JSON: {e})") from None
    if not isinstance(header, dict):
        raise _foreign(name, "the safetensors header is not a JSON object")
    meta = header.get("__metadata__")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise _foreign(name, "a safetensors file without the coretorch format marker")
    try:
        version = int(meta.get("coretorch.version", ""))
    except ValueError:
        raise RuntimeError(f"coretorch.load: {name} is corrupted or was tampered with (bad version "
                           f"{meta.get('coretorch.version')!r})") from None
    if version > VERSION:
        raise RuntimeError(f"coretorch.load: {name} was written by a newer coretorch (format version {version}; "
                           f"this one reads up to {VERSION}); upgrade coretorch")
    # data offsets must tile the data section exactly (the safetensors library also checks this)
    end = 0
    for key, info in header.items():
        if key == "__metadata__":
            continue
        try:
            end = max(end, int(info["data_offsets"][1]))
        except Exception:
            raise RuntimeError(f"coretorch.load: {name} is corrupted or was tampered with (bad header entry "
                               f"{key!r})") from None
    if 8 + n + end > len(data):
        raise RuntimeError(f"coretorch.load: {name} is truncated ({len(data)} bytes; the header describes "
                           f"{8 + n + end})")
    try:
        arrays = _st_load(data)
    except Exception as e:
        raise RuntimeError(f"coretorch.load: {name} is corrupted or was tampered with (safetensors: "
                           f"{type(e).__name__}: {e})") from None
    dec = _Decoder(name, arrays, map_location)
    try:
        structure = json.loads(meta.get("coretorch.structure", ""))
    except ValueError as e:
        raise dec.bad(f"the coretorch structure is not valid JSON: {e}") from None
    obj = dec.decode(structure)
    extra = set(arrays) - dec.used
    if extra:
        raise dec.bad(f"tensors {sorted(extra)[:5]} are not referenced by the structure")
    return obj



# ---- PyTorch's allow-list for weights_only unpickling: accepted, and kept, though coretorch never unpickles ----
_safe_globals: list = []


def add_safe_globals(safe_globals: list) -> None:
    """Accepted as in PyTorch (the classes ``torch.load(weights_only=True)`` may rebuild); coretorch's format
    holds only tensors and plain containers and is never unpickled, so nothing else needs allowing."""
    if not isinstance(safe_globals, (list, tuple)):
        raise TypeError(f"add_safe_globals expects a list, got {type(safe_globals).__name__}")
    for g in safe_globals:
        if not (callable(g) or (isinstance(g, tuple) and len(g) == 2 and isinstance(g[1], str))):
            raise TypeError(f"safe globals must be classes/functions or (object, 'name') pairs, got {g!r}")
        if g not in _safe_globals:
            _safe_globals.append(g)


def get_safe_globals() -> list:
    return list(_safe_globals)


def clear_safe_globals() -> None:
    _safe_globals.clear()


class safe_globals:
    """``with torch.serialization.safe_globals([...]):`` adds the globals for the block only."""

    def __init__(self, safe_globals: list) -> None:
        self.safe_globals = safe_globals

    def __enter__(self):
        self._saved = list(_safe_globals)
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc):
        _safe_globals[:] = self._saved
        return False


__all__ += ["add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals"]


def _st_load(data: bytes) -> dict:
    """safetensors.numpy.load, with BF16 (read as ml_dtypes' bfloat16)."""
    from safetensors import deserialize
    return {k: np.frombuffer(v["data"], dtype=_st_type(v["dtype"])).reshape(v["shape"]) for k, v in deserialize(data)}


def _st_type(name: str) -> np.dtype:
    return _dtypes.bfloat16.np if name == "BF16" else _ST_TYPES[name]  # (bfloat16's ml_dtypes loads on first use)
