"""coretorch.save / coretorch.load: safetensors + JSON metadata, atomic writes, no pickle, clear errors."""
from __future__ import annotations

import io
import json
import math
import os
import pathlib
import pickle
import struct
import zlib
from collections import Counter, OrderedDict

import numpy as np
import pytest
from safetensors.numpy import save as st_save

import coretorch as torch
from coretorch.testing import cpu_kernels_as
from coretorch import serialization

DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"]


def arr(dtype: str, shape, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return np.asarray(rng.random(shape) > 0.5)
    if dtype.startswith("float"):
        return np.asarray(rng.normal(size=shape).astype(dtype))
    info = np.iinfo(dtype)
    return np.asarray(rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True))


def roundtrip(obj, **load_kw):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, **load_kw)


def assert_same(a, b):
    """Deep equality with types (tuples stay tuples, OrderedDict stays OrderedDict, tensors compared exactly)."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, torch.Tensor):
        assert a.dtype is b.dtype and tuple(a.shape) == tuple(b.shape) and str(a.device) == str(b.device)
        assert a.requires_grad == b.requires_grad
        np.testing.assert_array_equal(a.detach()._host(), b.detach()._host())
    elif isinstance(a, dict):
        assert list(a.keys()) == list(b.keys())
        for k in a:
            assert_same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b)
    else:
        assert a == b


def test_nested_structure_round_trip():
    t = torch.randn(3, 4)
    obj = {
        "model": OrderedDict([("linear.weight", torch.randn(2, 4)), ("linear.bias", torch.zeros(2))]),
        "optimizer": {"state": {0: {"momentum_buffer": torch.ones(2, 4), "step": 7}},
                      "param_groups": [{"lr": 0.1, "momentum": 0.9, "nesterov": False, "foreach": None,
                                        "params": [0, 1], "betas": (0.9, 0.999)}]},
        "epoch": 12, "big": 2 ** 70, "neg": -3, "pi": 3.141592653589793, "tiny": 5e-324, "negzero": -0.0,
        "inf": math.inf, "ninf": -math.inf, "nan": math.nan, "yes": True, "no": False, "none": None,
        "name": "résumé ✓ \"quoted\" \n", "empty": {}, "empty_list": [], "empty_tuple": (),
        "nested": [[1, [2.5, (t, "x")]], {"k": [None]}],
        (1, "a"): "tuple key", 3: "int key", 2.5: "float key", None: "none key", True: "bool key",
        "milestones": Counter({3: 2, 6: 1}), "tags": {"a", "b"}, "frozen": frozenset({1}),
        "dtype": torch.float16, "device": torch.device("cpu"), "size": torch.Size([2, 3]),
    }
    back = roundtrip(obj)
    expected = dict(obj)
    assert type(back["size"]) is torch.Size  # PyTorch loads a torch.Size back as one
    assert_same(back, expected)
    assert back["milestones"][3] == 2 and isinstance(back["milestones"], Counter)
    assert math.copysign(1.0, back["negzero"]) == -1.0
    assert back["dtype"] is torch.float16 and back["tags"] == {"a", "b"}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 0, 3), (3, 4, 2)])
def test_dtypes_and_shapes_round_trip(dtype, shape):
    a = arr(dtype, shape)
    t = torch.from_numpy(a.copy())
    back = roundtrip({"t": t})["t"]
    assert back.dtype is getattr(torch, dtype) and tuple(back.shape) == shape
    np.testing.assert_array_equal(back.numpy(), a)


def test_loaded_tensors_are_independent_writable_and_views_are_materialised():
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    view = base.t()[1:]  # non-contiguous view
    back = roundtrip({"v": view, "b": base})
    np.testing.assert_array_equal(back["v"].numpy(), view.numpy())
    back["b"].add_(1)  # writable, and not sharing memory with the saved tensor
    assert base[0, 0].item() == 0 and back["b"][0, 0].item() == 1


def test_shared_tensors_stay_shared_and_requires_grad_survives():
    t = torch.randn(4, requires_grad=True)
    u = torch.randn(2)
    back = roundtrip({"a": t, "b": [t, u], "c": (u,)})
    assert back["a"] is back["b"][0] and back["b"][1] is back["c"][0]
    assert back["a"].requires_grad and back["a"].is_leaf and not back["b"][1].requires_grad
    np.testing.assert_array_equal(back["a"].detach().numpy(), t.detach().numpy())


def test_paths_file_objects_and_pathlib(tmp_path):
    obj = {"w": torch.randn(3), "step": 1}
    p = tmp_path / "ck.pt"
    torch.save(obj, p)
    assert_same(torch.load(p), obj)
    torch.save(obj, str(p))
    assert_same(torch.load(str(p)), obj)
    with open(p, "wb") as f:
        torch.save(obj, f)
    with open(p, "rb") as f:
        assert_same(torch.load(f), obj)
    assert_same(torch.load(p, weights_only=False), obj)


def test_file_is_a_plain_safetensors_file_with_coretorch_metadata(tmp_path):
    from safetensors import safe_open
    p = tmp_path / "ck.safetensors"
    w = torch.randn(2, 3)
    torch.save({"w": w, "lr": 0.1}, p)
    with safe_open(str(p), framework="np") as f:
        meta = f.metadata()
        assert meta["format"] == "coretorch" and meta["coretorch.version"] == str(serialization.VERSION)
        assert list(f.keys()) == ["w"]
        np.testing.assert_array_equal(f.get_tensor("w"), w.numpy())
    structure = json.loads(meta["coretorch.structure"])
    assert structure["dict"][1] == ["lr", 0.1]


def test_module_and_optimizer_state_dicts_round_trip(tmp_path):
    from coretorch.optim import SGD
    w = torch.randn(3, 2, requires_grad=True)
    b = torch.zeros(2, requires_grad=True)
    opt = SGD([w, b], lr=0.1, momentum=0.9)
    ((torch.ones(4, 3) @ w + b) ** 2).sum().backward()
    opt.step()
    sd = OrderedDict([("weight", w.detach()), ("bias", b.detach())])
    sd._metadata = OrderedDict([("", {"version": 1})])  # what nn.Module.state_dict() attaches
    p = tmp_path / "ck.pt"
    torch.save({"model": sd, "optim": opt.state_dict()}, p)
    back = torch.load(p)
    assert_same(back["model"], sd)
    assert back["model"]._metadata == {"": {"version": 1}}
    assert_same(back["optim"], opt.state_dict())


# ---- devices and map_location ---------------------------------------------------------------------------
def test_map_location(tmp_path):
    with cpu_kernels_as("savedev"):
        p = _map_location_checks(tmp_path)
    # the device is gone now: loading says so, and map_location still works
    with pytest.raises(RuntimeError, match="saved on device 'savedev:0'.*map_location='cpu'"):
        torch.load(p)
    assert str(torch.load(p, map_location="cpu")["x"].device) == "cpu"


def _map_location_checks(tmp_path):
    p = tmp_path / "dev.pt"
    x = torch.arange(4, dtype=torch.float32, device="savedev")
    y = torch.ones(2)
    torch.save({"x": x, "y": y}, p)
    back = torch.load(p)
    assert str(back["x"].device) == "savedev:0" and str(back["y"].device) == "cpu"
    np.testing.assert_array_equal(back["x"].cpu().numpy(), [0, 1, 2, 3])
    for ml in ("cpu", torch.device("cpu"), {"savedev:0": "cpu"}, lambda t, loc: t):
        back = torch.load(p, map_location=ml)
        assert str(back["x"].device) == "cpu" and str(back["y"].device) == "cpu"
        np.testing.assert_array_equal(back["x"].numpy(), [0, 1, 2, 3])
    back = torch.load(p, map_location="savedev")
    assert str(back["y"].device) == "savedev:0"
    back = torch.load(p, map_location={"cpu": "savedev:0"})
    assert str(back["x"].device) == "savedev:0" and str(back["y"].device) == "savedev:0"
    locations = []
    back = torch.load(p, map_location=lambda t, loc: locations.append(loc))  # None: default placement
    assert sorted(locations) == ["cpu", "savedev:0"] and str(back["x"].device) == "savedev:0"
    return p


# ---- damaged, tampered and foreign files ------------------------------------------------------------------
@pytest.fixture
def good(tmp_path):
    p = tmp_path / "good.pt"
    torch.save({"w": torch.arange(64, dtype=torch.float32).reshape(8, 8), "b": torch.zeros(8), "epoch": 3}, p)
    return p


def header_of(data: bytes):
    (n,) = struct.unpack("<Q", data[:8])
    return n, json.loads(data[8:8 + n])


def with_header(header: dict, rest: bytes) -> bytes:
    """A file with this (tampered) header and a valid header checksum (format 2), so that the later checks run."""
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    length, at = struct.pack("<Q", len(raw)), len(serialization._PREFIX)
    raw = raw[:at] + b"00000000" + raw[at + 8:]
    return length + raw[:at] + b"%08x" % zlib.crc32(length + raw) + raw[at + 8:] + rest


@pytest.mark.parametrize("keep", [0, 3, 8, 20, "half_header", "header_only", "half_data", "minus_one"])
def test_truncated_file_raises_clearly(good, keep):
    data = good.read_bytes()
    n, _ = header_of(data)
    cut = {"half_header": 8 + n // 2, "header_only": 8 + n, "half_data": 8 + n + (len(data) - 8 - n) // 2,
           "minus_one": len(data) - 1}.get(keep, keep)
    good.write_bytes(data[:cut])
    with pytest.raises(RuntimeError, match=r"coretorch\.load: .*(truncated|corrupted|not a coretorch checkpoint)"):
        torch.load(good)


def test_tampered_header_dtype_raises(good):
    data = good.read_bytes()
    assert b'"F32"' in data
    bad = data.replace(b'"F32"', b'"I32"', 1)  # same length: offsets still consistent
    good.write_bytes(bad)
    with pytest.raises(RuntimeError, match="tampered with"):
        torch.load(good)


def test_tampered_header_shape_and_offsets_raise(good):
    data = good.read_bytes()
    n, header = header_of(data)
    for name, entry in header.items():
        if name != "__metadata__" and entry["shape"] == [8, 8]:
            entry["shape"] = [4, 16]  # same byte count, consistent offsets: only the structure check sees it
    good.write_bytes(with_header(header, data[8 + n:]))
    with pytest.raises(RuntimeError, match="tampered with.*saved as float32\\[8, 8\\]"):
        torch.load(good)
    # offsets pointing outside the data
    n, header = header_of(data)
    for name, entry in header.items():
        if name != "__metadata__":
            entry["data_offsets"][1] += 4
    raw = json.dumps(header).encode()
    good.write_bytes(struct.pack("<Q", len(raw)) + raw + data[8 + n:])
    with pytest.raises(RuntimeError, match="truncated|tampered with"):
        torch.load(good)


def test_tampered_structure_and_corrupted_data_raise(good):
    data = good.read_bytes()
    n, header = header_of(data)
    structure = json.loads(header["__metadata__"]["coretorch.structure"])
    structure["dict"][0][1]["tensor"] = "7"  # refers to a tensor that is not there
    header["__metadata__"]["coretorch.structure"] = json.dumps(structure)
    good.write_bytes(with_header(header, data[8 + n:]))
    with pytest.raises(RuntimeError, match="refers to a tensor '7' that the file does not hold"):
        torch.load(good)
    flipped = bytearray(data)
    flipped[-5] ^= 0xFF  # a bit flip in the tensor data
    good.write_bytes(bytes(flipped))
    with pytest.raises(RuntimeError, match="checksum mismatch"):
        torch.load(good)
    garbage_json = data[:8] + b"{" + b"x" * (n - 1) + data[8 + n:]
    good.write_bytes(garbage_json)
    with pytest.raises(RuntimeError, match="header is not valid JSON"):
        torch.load(good)


@pytest.mark.parametrize("seed", range(4))
def test_random_bytes_raise(tmp_path, seed):
    p = tmp_path / "random.bin"
    p.write_bytes(np.random.default_rng(seed).bytes(4096))
    with pytest.raises(RuntimeError, match="not a coretorch checkpoint|truncated|corrupted"):
        torch.load(p)


def test_empty_file_and_text_file_raise(tmp_path):
    p = tmp_path / "empty.pt"
    p.write_bytes(b"")
    with pytest.raises(RuntimeError, match="truncated or empty"):
        torch.load(p)
    p.write_text("name,value\nlr,0.1\n")
    with pytest.raises(RuntimeError, match="not a coretorch checkpoint"):
        torch.load(p)


class _Boom:
    """Unpickling this would create a marker file: coretorch.load must never run it."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_pickle_file_is_refused_and_never_executed(tmp_path):
    marker = tmp_path / "pwned"
    p = tmp_path / "evil.pt"
    p.write_bytes(pickle.dumps({"x": _Boom(str(marker))}))
    with pytest.raises(RuntimeError, match="not a coretorch checkpoint.*pickle"):
        torch.load(p)
    assert not marker.exists()
    p.write_bytes(b"PK\x03\x04" + b"\x00" * 100)  # PyTorch's zip format
    with pytest.raises(RuntimeError, match="not a coretorch checkpoint"):
        torch.load(p)
    with pytest.raises(RuntimeError, match="not a coretorch checkpoint"):
        torch.load(io.BytesIO(pickle.dumps([1, 2, 3], protocol=0)))


def test_newer_version_and_unreferenced_tensors_raise(tmp_path):
    p = tmp_path / "foreign.safetensors"
    p.write_bytes(st_save({}, metadata={"format": "coretorch", "coretorch.version": "99",
                                         "coretorch.structure": "1"}))
    with pytest.raises(RuntimeError, match="newer coretorch"):
        torch.load(p)
    p.write_bytes(st_save({"0": np.ones(2, np.float32)}, metadata={"format": "coretorch", "coretorch.version": "1",
                                                                   "coretorch.structure": "1"}))
    with pytest.raises(RuntimeError, match="not referenced by the structure"):
        torch.load(p)


def test_unsupported_objects_are_rejected_before_writing(tmp_path):
    p = tmp_path / "x.pt"
    with pytest.raises(AttributeError, match=r"Can't pickle local object .*<lambda>.*coretorch.save: obj\['f'\]"):
        torch.save({"f": lambda: 0}, p)
    assert not p.exists() and os.listdir(tmp_path) == []


# ---- atomic writes --------------------------------------------------------------------------------------
def test_crash_mid_save_leaves_previous_file_intact(tmp_path, monkeypatch):
    p = tmp_path / "ck.pt"
    old = {"w": torch.arange(1000, dtype=torch.float64), "epoch": 1}
    torch.save(old, p)
    before = p.read_bytes()

    def crashing_write(f, data):
        f.write(data[: len(data) // 2])
        f.flush()
        raise OSError("simulated crash: disk full")

    monkeypatch.setattr(serialization, "_write_bytes", crashing_write)
    with pytest.raises(OSError, match="simulated crash"):
        torch.save({"w": torch.zeros(1000, dtype=torch.float64), "epoch": 2}, p)
    assert p.read_bytes() == before
    assert_same(torch.load(p), old)
    assert sorted(os.listdir(tmp_path)) == ["ck.pt"]  # no temporary file left behind
    monkeypatch.undo()
    torch.save({"epoch": 3}, p)
    assert torch.load(p) == {"epoch": 3}


def test_crash_during_rename_keeps_old_file(tmp_path, monkeypatch):
    p = tmp_path / "ck.pt"
    torch.save({"v": 1}, p)

    def failing_replace(src, dst):
        raise OSError("simulated crash before rename")

    monkeypatch.setattr(serialization.os, "replace", failing_replace)
    with pytest.raises(OSError):
        torch.save({"v": 2}, p)
    monkeypatch.undo()
    assert torch.load(p) == {"v": 1} and sorted(os.listdir(tmp_path)) == ["ck.pt"]


def test_save_keeps_mode_and_writes_through_symlink(tmp_path):
    target = tmp_path / "real.pt"
    torch.save({"v": 1}, target)
    os.chmod(target, 0o640)
    link = tmp_path / "link.pt"
    link.symlink_to(target)
    torch.save({"v": 2}, link)
    assert link.is_symlink() and torch.load(target) == {"v": 2}
    assert (os.stat(target).st_mode & 0o777) == 0o640
    with pytest.raises(FileNotFoundError):
        torch.save({"v": 3}, tmp_path / "missing-dir" / "x.pt")
    assert isinstance(pathlib.Path(target), pathlib.Path)


def test_header_length_starting_with_pickle_byte_still_loads(tmp_path):
    """A safetensors header of length 128 mod 256 makes the file start with 0x80, a pickle's PROTO byte:
    it must still load (and a real pickle must still be refused)."""
    import coretorch as torch
    path = tmp_path / "x.ct"
    for n in range(0, 600):
        obj = {"w": torch.ones(2), "note": "x" * n}
        torch.save(obj, path)
        if path.read_bytes()[:1] == b"\x80":
            break
    else:
        raise AssertionError("no padding length produced a header starting with 0x80")
    back = torch.load(path)
    assert back["note"] == "x" * n and back["w"].tolist() == [1.0, 1.0]
    import pickle
    bad = tmp_path / "p.pkl"
    bad.write_bytes(pickle.dumps({"a": 1}))
    import pytest
    with pytest.raises(RuntimeError, match="pickle"):
        torch.load(bad)
