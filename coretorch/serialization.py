"""coretorch.save / coretorch.load: state dicts as a safetensors file, never pickle.

The file is a plain safetensors file.  Each tensor (and each numpy array or bytes object, stored as an array
too) is named by the path of keys and indices that reaches it: ``fc1.weight`` in a state dict,
``model.fc1.weight`` in a dict of state dicts, ``tensor`` for a lone tensor; a name already taken gets ``#2``.
The object's structure (nested dicts, lists, tuples, sets, numbers, strings, ``None`` and references to those
arrays) is JSON stored in the safetensors ``__metadata__`` under ``"coretorch.structure"``, next to a format
marker (``"format": "coretorch"``) and a version (``"coretorch.version"``).  Each tensor entry of the structure
records its dtype, shape, device, ``requires_grad`` and a CRC-32 of its bytes.  Files written before the
tensors had names (``"0"``, ``"1"``, ...) load as before: the structure says which array is which.

A safetensors file without coretorch's metadata (written by another tool) loads as a dict of its tensors, in
the file's order, after the same header and layout checks.

Format version 2 (version 1 files still load) also checks the header itself: it is written by coretorch
(sorted keys, no whitespace, so identical content gives identical bytes) and opens with
``{"__metadata__":{"coretorch.header_crc32":"<8 hex digits>",...``: the CRC-32 of the 8-byte length and the
header with those digits read as ``00000000``.  Any change to the header, a single flipped bit included, is
detected before anything is decoded.

``save`` writes to a temporary file ``.<name>.<pid>.<random>.tmp`` in the target's directory, flushes and
fsyncs it, then renames it over the target (``os.replace``): a crash mid-save leaves the previous file
intact, and the next save to the same path removes temporary files whose process is gone.  ``load`` checks
the header before reading the data, reads only the bytes the header describes, refuses anything but a regular
file, bounds nesting, and only parses JSON and raw tensor bytes: it never executes code from the file.  Every
damaged file raises ``RuntimeError("coretorch.load: ... corrupted ...")`` (or "truncated"/"not a coretorch
checkpoint" where that is what it is).
"""
from __future__ import annotations

import json
import math
import mmap as _mmap
import os
import random
import re
import stat
import struct
import time
import zlib
from collections import Counter, OrderedDict, defaultdict
from typing import Any

import numpy as np

from . import _serialization_errors as _errors
from . import _serialization_objects as _objects
from ._serialization_args import (add_safe_globals, check_load_args as _check_load_args,
                                  resolve_weights_only as _resolve_weights_only,
                                  check_save_args as _check_save_args, clear_safe_globals, get_safe_globals,
                                  safe_globals)
from . import dtypes as _dtypes
from ._serialization_encode import (_DTYPE_NAMES, _FACTORIES, _INTERNAL_ATTRS, _MAX_DEPTH, _NP_SCALARS,
                                    _ST_ARRAY_ONLY, _ST_NAMES, _ST_TYPES, _crc32, _Encoder, _nn)

__all__ = ["save", "load", "FORMAT", "VERSION"]

FORMAT = "coretorch"
VERSION = 2
_MAX_HEADER = 100_000_000  # the limit the safetensors library itself enforces
_MAX_NDIM = 64             # numpy's limit
_CRC_KEY = "coretorch.header_crc32"
_PREFIX = b'{"__metadata__":{"' + _CRC_KEY.encode() + b'":"'
_STALE_TMP_S = 24 * 3600   # a temporary file this old is removed even if a process with its pid runs

# ---- writing ---------------------------------------------------------------------------------------
def _write_bytes(f, data: bytes) -> None:
    """Write everything (a separate function so that tests can simulate a crash in the middle)."""
    view = memoryview(data)
    while view:
        n = f.write(view)
        if n is None:  # some raw file objects write all or raise
            break
        view = view[n:]


_TMP_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_"  # (tempfile's: _remove_stale_temps knows such names)


def _create_tmp(directory: str, prefix: str) -> tuple[int, str]:
    """A new empty ``<prefix><8 random chars>.tmp`` in ``directory``, open for writing: created with mode 0o666,
    which the kernel reduces by the process umask as PyTorch's ``open(f, "wb")`` does.  (Reading the umask means
    setting it: ``os.umask(0)`` and back was a process-wide change, so a file another thread created meanwhile
    was world-writable, and two saves at once left the process's umask at 0 for good.)"""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    rng = random.SystemRandom()
    for _ in range(100):
        name = os.path.join(directory, prefix + "".join(rng.choices(_TMP_CHARS, k=8)) + ".tmp")
        try:
            return os.open(name, flags, 0o666), name
        except FileExistsError:
            continue
    raise FileExistsError(f"coretorch.save: no usable temporary file name in {directory}")


def _tmp_prefix(path: str) -> str:
    return "." + os.path.basename(path) + "."


def _pid_alive(pid: int) -> bool:
    if os.name != "posix":  # os.kill(pid, 0) would terminate the process on Windows: rely on the age alone
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return True


def _remove_stale_temps(directory: str, path: str) -> None:
    """Remove temporary files a killed save to ``path`` left behind: ``.<name>.<pid>.<random>.tmp`` whose
    process is gone (or older than a day), and version-1 ``.<name>.<random>.tmp`` older than an hour."""
    prefix = _tmp_prefix(path)
    now = time.time()
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for e in entries:
        if not (e.name.startswith(prefix) and e.name.endswith(".tmp")):
            continue
        middle = e.name[len(prefix):-4]
        m = re.fullmatch(r"(\d+)\.[A-Za-z0-9_]{8}", middle)
        try:
            if not e.is_file(follow_symlinks=False):
                continue
            age = now - e.stat(follow_symlinks=False).st_mtime
            if m:
                pid = int(m.group(1))
                stale = (pid != os.getpid() and not _pid_alive(pid)) or age > _STALE_TMP_S
            else:
                stale = re.fullmatch(r"[A-Za-z0-9_]{8}", middle) is not None and age > 3600
            if stale:
                os.unlink(e.path)
        except OSError:  # raced with another process, or not ours to remove: leave it
            continue


def _atomic_write(path: str, data: bytes) -> None:
    path = os.path.realpath(path)
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        raise _errors.MissingDirectoryError(f"coretorch.save: parent directory {directory} does not exist.")
    if os.path.isdir(path):  # (os.replace's IsADirectoryError names the temporary file; PyTorch: RuntimeError)
        raise _errors.DirectoryError(f"coretorch.save: {path} is a directory; save needs a file path")
    try:
        mode: int | None = os.stat(path).st_mode & 0o7777  # (a file replaced keeps its mode, as open(path, "wb"))
    except FileNotFoundError:
        mode = None  # (a new file: the mode _create_tmp's open gave it)
    # the pid in the name lets a later save tell a killed writer's file from one still being written
    fd, tmp = _create_tmp(directory, f"{_tmp_prefix(path)}{os.getpid()}.")
    try:
        with os.fdopen(fd, "wb") as f:
            _write_bytes(f, data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _remove_stale_temps(directory, path)
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


def _serialize(arrays: dict, structure: str) -> bytes:
    """The safetensors file, written by coretorch: sorted keys, no whitespace, tensors ordered by alignment
    then number, and the header checksum (see the module docstring)."""
    order = {k: i for i, k in enumerate(arrays)}
    names = sorted(arrays, key=lambda k: (-arrays[k].dtype.itemsize, order[k]))
    entries, chunks, offset = [], [], 0
    for k in names:
        a = arrays[k]
        if a.dtype.byteorder == ">":  # safetensors is little-endian
            a = a.astype(a.dtype.newbyteorder("<"))
        raw = a.tobytes()
        entries.append(json.dumps(k) + ":" + json.dumps({"data_offsets": [offset, offset + len(raw)],
                                                         "dtype": _st_name(a.dtype), "shape": list(a.shape)},
                                                        sort_keys=True, separators=(",", ":")))
        chunks.append(raw)
        offset += len(raw)
    meta = {_CRC_KEY: "00000000", "coretorch.structure": structure, "coretorch.version": str(VERSION),
            "format": FORMAT}
    header = ('{"__metadata__":' + json.dumps(meta, sort_keys=True, separators=(",", ":"))
              + "".join("," + e for e in entries) + "}").encode("ascii")
    header += b" " * (-len(header) % 8)  # as safetensors does: the data start 8-byte aligned
    assert header.startswith(_PREFIX)
    length = struct.pack("<Q", len(header))
    crc = b"%08x" % zlib.crc32(length + header)
    at = len(_PREFIX)
    return b"".join([length, header[:at], crc, header[at + 8:]] + chunks)


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True) -> None:
    """Save ``obj`` (a state dict: nested dicts/lists/tuples of tensors, numbers, strings, None) to ``f``
    (a path, written atomically, or a binary file object).  The pickle arguments exist only for PyTorch
    compatibility and are ignored: nothing is ever pickled.  Identical content gives identical bytes."""
    _check_save_args(pickle_protocol)
    enc = _Encoder()
    structure = enc.encode(obj)
    data = _serialize(enc.arrays, json.dumps(structure, separators=(",", ":"), allow_nan=False))
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
    def __init__(self, name: str, arrays: dict, map_location, checksums: bool = True, weights_only: bool = True):
        self.name = name
        self.weights_only = weights_only  # whole objects: only allow-listed globals (._serialization_objects)
        self.allowed: dict | None = None
        self.memo: dict[int, Any] = {}
        self.checksums = checksums  # a plain safetensors file has no structure to check the tensors against
        self.arrays = arrays
        self.map_location = map_location
        self.cache: dict = {}
        self.used: set = set()

    def bad(self, why: str) -> RuntimeError:
        return RuntimeError(f"coretorch.load: {self.name} is corrupted or was tampered with ({why})")

    def decode(self, node, depth: int = 0):
        if depth > _MAX_DEPTH + 1:
            raise self.bad(f"the structure nests more than {_MAX_DEPTH} levels deep")
        if node is None or isinstance(node, (bool, str)):
            return node
        if isinstance(node, int):
            return node
        if isinstance(node, float):
            return node
        if not isinstance(node, dict) or not node:
            raise self.bad(f"unexpected structure element {type(node).__name__}")
        if "tensor" in node:
            return self.tensor(node, depth)
        if "ndarray" in node:
            name = node["ndarray"]
            if name in self.cache:
                return self.cache[name]
            arr = self.checked(name, node)
            self.cache[name] = arr
            return arr
        for kind in ("bytes", "bytearray"):
            if kind in node:
                arr = self.checked(node[kind], node)
                if arr.dtype != np.uint8 or arr.ndim != 1:
                    raise self.bad(f"{kind} {node[kind]!r} is not stored as bytes")
                return (bytes if kind == "bytes" else bytearray)(arr.tobytes())
        kind = next(iter(node))
        val = node[kind]
        if kind == "float":
            if val not in ("inf", "-inf", "nan"):
                raise self.bad(f"bad float {val!r}")
            return float(val)
        if kind == "complex":
            parts = [self.decode(v, depth + 1) for v in val] if isinstance(val, list) and len(val) == 2 else None
            if parts is None or any(type(v) is not float for v in parts):
                raise self.bad(f"bad complex {val!r}")
            return complex(*parts)
        if kind == "npscalar":
            value = self.decode(node.get("value"), depth + 1)
            if val not in _NP_SCALARS or type(value) not in (bool, int, float):
                raise self.bad(f"bad numpy scalar {val!r}")
            try:
                return np.dtype(val).type(value)
            except (OverflowError, ValueError) as e:
                raise self.bad(f"bad numpy scalar {val!r}: {e}") from None
        if kind in ("list", "tuple", "set", "frozenset", "Size"):
            if not isinstance(val, list):
                raise self.bad(f"{kind} payload is not a list")
            if "memo" in node and kind in ("list", "set"):  # reached more than once, or inside itself
                made = self.remember(node["memo"], [] if kind == "list" else set())
                try:
                    (made.extend if kind == "list" else made.update)(self.decode(v, depth + 1) for v in val)
                except TypeError as e:
                    raise self.bad(str(e)) from None
                return made
            items = [self.decode(v, depth + 1) for v in val]
            try:
                from .tensor import Size
                return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset, "Size": Size}[kind](items)
            except TypeError as e:
                raise self.bad(str(e)) from None
        if kind in ("dict", "OrderedDict", "Counter", "defaultdict"):
            if not isinstance(val, list) or any(not isinstance(kv, list) or len(kv) != 2 for kv in val):
                raise self.bad(f"{kind} payload is not a list of key/value pairs")
            out: Any
            if kind == "defaultdict":
                if node.get("factory") not in _FACTORIES:
                    raise self.bad(f"bad defaultdict factory {node.get('factory')!r}")
                out = defaultdict(_FACTORIES[node["factory"]])
            else:
                out = {"dict": dict, "OrderedDict": OrderedDict, "Counter": Counter}[kind]()
            if "memo" in node:
                self.remember(node["memo"], out)
            for k, v in val:
                key = self.decode(k, depth + 1)
                try:
                    out[key] = self.decode(v, depth + 1)
                except TypeError as e:
                    raise self.bad(f"unhashable key: {e}") from None
            if "_metadata" in node:
                out._metadata = self.decode(node["_metadata"], depth + 1)
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
        if kind == "layout":
            import coretorch
            if val not in ("strided", "sparse_coo"):
                raise self.bad(f"unknown layout {val!r}")
            return getattr(coretorch, val)
        if kind == "sparse_coo":  # (requires_grad is not restored: PyTorch's _rebuild_sparse_tensor does not either)
            parts = [self.decode(v, depth + 1) for v in val] if isinstance(val, list) and len(val) == 2 else None
            size = node.get("size")
            import coretorch
            if parts is None or not all(isinstance(v, coretorch.Tensor) for v in parts) or not (
                    isinstance(size, list) and all(type(d) is int and d >= 0 for d in size)):
                raise self.bad(f"bad sparse tensor {val!r:.200}")
            try:
                return coretorch.sparse_coo_tensor(parts[0].detach(), parts[1].detach(), size,
                                                   is_coalesced=node.get("coalesced") is True)
            except (RuntimeError, ValueError, TypeError, IndexError, MemoryError) as e:
                # (coretorch keeps a sparse tensor's dense value too: a crafted size asks for too much memory)
                raise self.bad(f"bad sparse tensor: {type(e).__name__}: {e}") from None
        if kind in ("global", "object", "ref"):
            return _objects.decode_object(self, node, kind, depth)
        raise self.bad(f"unknown element {kind!r}")

    def remember(self, k, obj):
        """Register ``obj`` as object ``k`` (a list or dict saved once and reached again through ``{"ref": k}``)."""
        if type(k) is not int or k in self.memo:
            raise self.bad(f"bad object number {k!r}")
        self.memo[k] = obj
        return obj

    def checked(self, name, node) -> np.ndarray:
        """The array ``name`` of the file, checked against the structure's record of it."""
        if not isinstance(name, str) or name not in self.arrays:
            raise self.bad(f"the structure refers to a tensor {name!r} that the file does not hold")
        arr = self.arrays[name]
        if ("dtype" in node or "shape" in node) and (node.get("dtype") != str(arr.dtype)
                                                     or node.get("shape") != list(arr.shape)):
            raise self.bad(f"tensor {name!r} is {arr.dtype}{list(arr.shape)} in the safetensors header but was "
                           f"saved as {node.get('dtype')}{node.get('shape')}")
        if self.checksums and node.get("crc32") != _crc32(arr):
            raise self.bad(f"checksum mismatch in the data of tensor {name!r}")
        if name in self.used and "tensor" not in node:
            raise self.bad(f"tensor {name!r} is referenced twice")
        self.used.add(name)
        return arr

    def tensor(self, node, depth: int = 0):
        t = self._tensor(node)
        if "attrs" in node:
            self.set_attrs(t, node["attrs"], depth)
        return t

    def set_attrs(self, t, attrs_node, depth: int) -> None:
        """Restore the Python attributes saved with a tensor (PyTorch's tensor state); names of coretorch's own
        bookkeeping or dunders are refused: a crafted file must not rewrite a tensor's internals."""
        attrs = self.decode(attrs_node, depth + 1)
        if type(attrs) is not dict or not all(isinstance(k, str) and not k.startswith("__") and k not in
                                              _INTERNAL_ATTRS and not hasattr(type(t), k) for k in attrs):
            raise self.bad("bad tensor attributes")
        t.__dict__.update(attrs)

    def _tensor(self, node):
        name = node.get("tensor")
        if name in self.cache:
            t = self.cache[name]
            is_param = isinstance(t, _nn().Parameter)
            if t.requires_grad == bool(node.get("requires_grad")) and is_param == bool(node.get("parameter")):
                return t  # the same tensor object reached twice
            return self.alias(t.detach(), node)  # the same memory, saved as a differently flagged tensor
        if self.checksums and ("dtype" not in node or "shape" not in node):
            raise self.bad(f"tensor {name!r} has no dtype or shape in the structure")
        arr = self.checked(name, node)
        if _ST_NAMES.get(arr.dtype) in _ST_ARRAY_ONLY:
            raise self.bad(f"tensor {name!r} has dtype {arr.dtype}, which coretorch tensors do not have")
        t = self.alias(self.place(arr, str(node.get("device", "cpu"))), node)
        if "class" in node:  # a user's tensor subclass (PyTorch's _rebuild_from_type_v2: as_subclass)
            cls = _objects.decode_object(self, node["class"], "global", 0)
            if not (isinstance(cls, type) and issubclass(cls, _tensor_class())
                    and not issubclass(cls, _nn().Parameter)):
                raise self.bad(f"tensor {name!r} is saved as a {cls!r}, which is not a tensor class")
            sub = t.as_subclass(cls)
            t = sub.requires_grad_(True) if t.requires_grad and not sub.requires_grad else sub
        self.cache[name] = t
        return t

    @staticmethod
    def alias(t, node):
        """``t`` with the node's ``requires_grad`` and Parameter flags."""
        if node.get("requires_grad"):
            t.requires_grad_(True)
        if node.get("parameter"):
            nn = _nn()
            param = getattr(nn, "Parameter", None) if nn is not None else None
            if param is not None:
                t = param(t, requires_grad=bool(node.get("requires_grad")))
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
        elif ml is not None:  # PyTorch calls anything else: TypeError("'int' object is not callable")
            target = str(ml) if isinstance(ml, (str, _device)) else ml(t, location)
        if target == "cpu":
            return t
        try:
            dev = _device(target)
            return t.to(dev)
        except Exception as e:
            raise RuntimeError(f"coretorch.load: the file holds a tensor saved on device {location!r}, which "
                               f"cannot be restored to {target!r} here ({e}). Use map_location='cpu' (or "
                               "another available device) to load it.") from None


class _Source:
    """A checkpoint to read: a regular file (by path) or a binary file object, read piece by piece."""

    def __init__(self, f, use_mmap: bool):
        self.size = None  # known for paths: every length is checked against it before anything is read
        self.fd = None
        if isinstance(f, (str, bytes, os.PathLike)):
            path = os.fsdecode(f)
            self.name = repr(path)
            self._check_regular(os.stat(path))  # before opening: opening a FIFO would block
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
            try:
                st = os.fstat(fd)
                self._check_regular(st)  # the file may have been swapped since the stat
            except BaseException:
                os.close(fd)
                raise
            self.fd, self.size = fd, st.st_size
            self.fh = os.fdopen(fd, "rb")
        elif hasattr(f, "read"):
            if use_mmap:
                raise ValueError("coretorch.load: mmap=True needs a file path, not a file object")
            self.name, self.fh = "the file object", f
            try:  # a seekable stream says how much it holds, so that no length is trusted beyond that
                if f.seekable():
                    pos = f.tell()
                    self.size = f.seek(0, os.SEEK_END) - pos
                    f.seek(pos)
            except (AttributeError, OSError, ValueError):
                self.size = None
        else:
            raise TypeError(f"coretorch.load: f must be a path or a readable binary file object, not "
                            f"{type(f).__name__}")

    def _check_regular(self, st) -> None:
        if not stat.S_ISREG(st.st_mode):
            kind = ("a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
                    else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                    else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
            err = _errors.DirectoryError if stat.S_ISDIR(st.st_mode) else RuntimeError
            raise err(f"coretorch.load: {self.name} is not a coretorch checkpoint ({kind}; a checkpoint is a "
                      "regular file)")

    def read(self, n: int) -> bytes:
        """Up to ``n`` bytes (fewer only at the end of the file)."""
        parts, left = [], n
        while left > 0:
            b = self.fh.read(left)
            if not isinstance(b, (bytes, bytearray, memoryview)):
                raise TypeError("coretorch.load: the file object must be opened in binary mode")
            if not b:
                break
            parts.append(bytes(b))
            left -= len(b)
        return b"".join(parts)

    def read_into(self, buf: bytearray) -> int:
        view, got = memoryview(buf), 0
        readinto = getattr(self.fh, "readinto", None)
        while got < len(buf):
            if readinto is not None:
                k = readinto(view[got:])
            else:
                b = self.read(len(buf) - got)
                view[got:got + len(b)] = b
                k = len(b)
            if not k:
                break
            got += k
        return got

    def read_data(self, total: int) -> bytearray:
        """Exactly ``total`` bytes, or fewer at the end of the file (a stream of unknown length is read in
        pieces, so that a header promising terabytes fails at the end of the stream, not in an allocation)."""
        if self.size is not None:
            buf = bytearray(total)  # writable: tensors share it, each its own non-overlapping slice
            got = self.read_into(buf)
            return buf if got == total else buf[:got]
        buf = bytearray()
        while len(buf) < total:
            chunk = self.read(min(1 << 26, total - len(buf)))
            if not chunk:
                break
            buf += chunk
        return buf

    def close(self) -> None:
        if self.fd is not None:
            self.fh.close()


def _foreign(name: str, what: str) -> RuntimeError:
    return RuntimeError(f"coretorch.load: {name} is not a coretorch checkpoint ({what}). coretorch.load reads "
                        "only files written by coretorch.save (safetensors with coretorch metadata) and never "
                        "unpickles.")


def _corrupted(name: str, why: str) -> RuntimeError:
    return RuntimeError(f"coretorch.load: {name} is corrupted or was tampered with ({why})")


def _ours(raw: bytes) -> bool:
    """Whether damaged bytes are still recognisably a coretorch checkpoint (its header names "coretorch."
    several times: no single flipped bit removes them all)."""
    return b"coretorch." in raw


def _read_header(src: _Source) -> tuple[int, dict, dict | None]:
    """Read and validate the header: (its length, the tensor entries, the coretorch metadata or None for a
    plain safetensors file written by another tool)."""
    name = src.name
    head = src.read(8)
    if head[:2] == b"PK":
        raise _foreign(name, "it looks like a PyTorch zip file, which may execute code when loaded")
    if len(head) < 8:
        raise RuntimeError(f"coretorch.load: {name} is truncated or empty ({len(head)} bytes, a coretorch "
                           "checkpoint has at least a 8-byte header length)")
    (n,) = struct.unpack("<Q", head)
    avail = None if src.size is None else src.size - 8
    if n > _MAX_HEADER or n < 2 or (avail is not None and n > avail):
        sniff = src.read(4096)
        if head[:1] == b"\x80" and sniff[:1] != b"{":
            raise _foreign(name, "it looks like a PyTorch pickle file, which may execute code when loaded")
        if not _ours(sniff):
            raise _foreign(name, f"its first 8 bytes give a header length of {n}, not a safetensors header")
        raise RuntimeError(f"coretorch.load: {name} is truncated or corrupted (its first 8 bytes give a header "
                           f"length of {n}; {'?' if avail is None else avail} bytes follow)")
    raw = src.read(n)
    if len(raw) < n:
        raise RuntimeError(f"coretorch.load: {name} is truncated or corrupted (the header says {n} bytes, the file "
                           f"holds {len(raw)} after the length)")
    # a pickle starts with \x80 (PROTO); so does a safetensors file whose header length is 128 mod 256,
    # but its JSON header then opens at byte 8
    if raw[:1] != b"{" and not _ours(raw):
        if head[:1] == b"\x80":
            raise _foreign(name, "it looks like a PyTorch pickle file, which may execute code when loaded")
        raise _foreign(name, "no safetensors JSON header")
    checked = False
    at = len(_PREFIX)
    if raw.startswith(_PREFIX) and len(raw) >= at + 9:
        digits = raw[at:at + 8]
        if re.fullmatch(rb"[0-9a-f]{8}", digits) is None or \
                zlib.crc32(head + raw[:at] + b"00000000" + raw[at + 8:]) != int(digits, 16):
            raise _corrupted(name, "header checksum mismatch")
        checked = True
    try:
        header = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise _corrupted(name, f"the safetensors header is not valid JSON: {type(e).__name__}: {e}") from None
    if not isinstance(header, dict):
        if _ours(raw):
            raise _corrupted(name, "the safetensors header is not a JSON object")
        raise _foreign(name, "the safetensors header is not a JSON object")
    meta = header.pop("__metadata__", None)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        if checked or _ours(raw):
            raise _corrupted(name, "no coretorch format marker")
        if meta is not None and not (isinstance(meta, dict) and all(isinstance(k, str) and isinstance(x, str)
                                                                    for k, x in meta.items())):
            raise _foreign(name, "its safetensors __metadata__ is not a map of strings")
        return n, header, None  # a plain safetensors file written by another tool: a dict of its tensors
    v = meta.get("coretorch.version")
    if not (isinstance(v, str) and re.fullmatch(r"[1-9][0-9]{0,5}", v)):
        raise _corrupted(name, f"bad version {v!r}")
    version = int(v)
    if version > VERSION:
        raise RuntimeError(f"coretorch.load: {name} was written by a newer coretorch (format version {version}; "
                           f"this one reads up to {VERSION}); upgrade coretorch")
    if version >= 2 and not checked:
        raise _corrupted(name, "the header checksum is missing")
    if not all(isinstance(k, str) and isinstance(x, str) for k, x in meta.items()):
        raise _corrupted(name, "metadata values must be strings")
    return n, header, meta


def _tensor_class() -> type:
    from .tensor import Tensor
    return Tensor


def _no_constant(c: str):
    raise ValueError(f"{c} is not JSON")


def _layout(name: str, entries: dict, foreign: bool = False) -> tuple[int, dict]:
    """Check the tensor entries (dtypes, shapes, offsets that tile the data exactly): (data size, entries)."""
    spans, out = [], {}
    for key, info in entries.items():
        if not (isinstance(info, dict) and set(info) == {"dtype", "shape", "data_offsets"}):
            raise _corrupted(name, f"bad header entry {key!r}")
        dt, shape, offs = info["dtype"], info["shape"], info["data_offsets"]
        if dt not in _ST_TYPES and dt != "BF16" and (foreign or dt not in _ST_ARRAY_ONLY):
            if foreign and isinstance(dt, str) and re.fullmatch(r"[A-Z0-9_]{1,16}", dt):
                raise RuntimeError(f"coretorch.load: tensor {key!r} of {name} has the safetensors dtype {dt}, "
                                   "which coretorch does not support (it reads "
                                   f"{', '.join(sorted(_ST_TYPES) + ['BF16'])})")
            raise _corrupted(name, f"tensor {key!r} has unknown dtype {dt!r}")
        if not (isinstance(shape, list) and len(shape) <= _MAX_NDIM
                and all(type(d) is int and 0 <= d < 2 ** 62 for d in shape)):
            raise _corrupted(name, f"tensor {key!r} has a bad shape")
        if not (isinstance(offs, list) and len(offs) == 2 and all(type(o) is int and o >= 0 for o in offs)):
            raise _corrupted(name, f"tensor {key!r} has bad data offsets")
        numel = math.prod(shape)
        if numel * _st_type(dt).itemsize != offs[1] - offs[0]:
            raise _corrupted(name, f"tensor {key!r} is {dt}{shape} but its data offsets span {offs[1] - offs[0]} "
                                   "bytes")
        spans.append((offs[0], offs[1], key))
        out[key] = (_st_type(dt).newbyteorder("<"), shape, offs[0], numel)
    end = 0
    for start, stop, key in sorted(spans):
        if start != end:
            raise _corrupted(name, f"the data offsets of tensor {key!r} do not follow on from the previous tensor")
        end = stop
    return end, out


def load(f, map_location=None, pickle_module=None, *, weights_only: bool | None = None, mmap=None,
         **pickle_load_args):
    """Load an object saved with ``coretorch.save``.

    ``map_location``: None (each tensor goes back to the device it was saved from), a device or device
    string (every tensor goes there), a dict mapping saved locations to new ones (``{"opencl:1": "cpu"}``),
    or a callable ``(cpu_tensor, location) -> tensor or None`` (None: the default placement).
    ``mmap=True`` (a path only) maps the file instead of reading it: cpu tensors are copy-on-write views of
    the mapping, so writes to them never reach the file.
    Raises ``RuntimeError`` for a truncated, corrupted, tampered-with or foreign file, and refuses anything
    but a regular file (a FIFO, a device).  ``weights_only`` is accepted for PyTorch compatibility (this loader
    only ever reads data), and the arguments PyTorch's unpickler would refuse raise its errors."""
    weights_only = _resolve_weights_only(weights_only, pickle_module)
    _check_load_args(weights_only, pickle_module, pickle_load_args)
    src = _Source(f, bool(mmap))
    try:
        n, entries, meta = _read_header(src)
        name = src.name
        total, layout = _layout(name, entries, foreign=meta is None)
        if meta is None:  # a plain safetensors file: {name: tensor} in the file's order
            structure = {"dict": [[k, {"tensor": k}] for k in sorted(layout, key=lambda k: layout[k][2])]}
        else:
            try:
                structure = json.loads(meta.get("coretorch.structure", ""), parse_constant=_no_constant)
            except (ValueError, RecursionError) as e:
                raise _corrupted(name, f"the coretorch structure is not valid JSON: {type(e).__name__}: {e}") \
                    from None
        if src.size is not None and (src.size - 8 - n < total or (src.fd is not None and src.size - 8 - n > total)):
            # (a file must end where the header says; a stream may go on with something else)
            raise RuntimeError(f"coretorch.load: {name} is {'truncated' if src.size - 8 - n < total else 'corrupted'}"
                               f" ({src.size} bytes; the header describes {8 + n + total})")
        buf: Any
        if total == 0:
            buf = b""
        elif mmap and src.fd is not None:
            buf = memoryview(_mmap.mmap(src.fd, 8 + n + total, access=_mmap.ACCESS_COPY))[8 + n:]
        else:
            buf = src.read_data(total)
            if len(buf) < total:
                raise RuntimeError(f"coretorch.load: {name} is truncated (the header describes {total} bytes of "
                                   f"tensor data, {len(buf)} follow)")
    finally:
        src.close()
    try:
        arrays = {k: np.frombuffer(buf, dtype=dt, count=numel, offset=off).reshape(shape) if numel
                  else np.zeros(shape, dt) for k, (dt, shape, off, numel) in layout.items()}
    except (ValueError, MemoryError) as e:
        raise _corrupted(name, f"{type(e).__name__}: {e}") from None
    dec = _Decoder(name, arrays, map_location, checksums=meta is not None,
                   weights_only=weights_only)
    obj = dec.decode(structure)
    extra = set(arrays) - dec.used
    if extra:
        raise dec.bad(f"tensors {sorted(extra)[:5]} are not referenced by the structure")
    return obj


def get_unsafe_globals_in_checkpoint(f) -> list[str]:
    """The classes and functions (``"module.qualname"`` strings) a checkpoint names that ``load`` with
    ``weights_only=True`` would refuse: neither allowed by default nor by ``add_safe_globals``/``safe_globals``.
    Only the header is read; nothing is imported or built.  A plain safetensors file names none."""
    src = _Source(f, False)
    try:
        _n, _entries, meta = _read_header(src)
        name = src.name
    finally:
        src.close()
    if meta is None:
        return []
    try:
        structure = json.loads(meta.get("coretorch.structure", ""), parse_constant=_no_constant)
    except (ValueError, RecursionError) as e:
        raise _corrupted(name, f"the coretorch structure is not valid JSON: {type(e).__name__}: {e}") from None
    return _objects.unsafe_globals(structure)


# PyTorch's weights_only switches (._serialization_args): accepted and checked, though coretorch never unpickles
__all__ += ["add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
            "get_unsafe_globals_in_checkpoint"]


def _st_type(name: str) -> np.dtype:
    """The numpy dtype of a safetensors dtype name (bfloat16's ml_dtypes dtype is loaded on first use)."""
    return _dtypes.bfloat16.np if name == "BF16" else np.dtype(_ST_TYPES.get(name) or _ST_ARRAY_ONLY[name])


def _st_name(dt: np.dtype) -> str:
    return "BF16" if dt.name == "bfloat16" else _ST_NAMES[dt]
