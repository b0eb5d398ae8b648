"""coretorch.save / coretorch.load as a good citizen of safetensors (issue 16): tensors named by their state-dict
keys, numpy arrays and bytes saved without pickle, and plain safetensors files from other tools loaded."""
from __future__ import annotations

import collections

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

import coretorch as torch
from coretorch.testing import available_devices


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))


def test_tensors_are_named_by_their_state_dict_keys(tmp_path):
    m = _model()
    p = tmp_path / "m.safetensors"
    torch.save(m.state_dict(), p)
    plain = load_file(str(p))  # another safetensors reader sees the model's names and values
    assert sorted(plain) == sorted(m.state_dict())
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(plain[k], v.numpy())


def test_nested_checkpoint_names_are_paths_and_round_trip(tmp_path):
    m = _model()
    opt = torch.optim.Adam(m.parameters(), lr=0.01)
    m(torch.randn(5, 3)).sum().backward()
    opt.step()
    ck = {"model": m.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}
    p = tmp_path / "ck.safetensors"
    torch.save(ck, p)
    names = set(load_file(str(p)))
    assert {"model.0.weight", "model.2.bias", "optimizer.state.0.exp_avg", "optimizer.state.3.step"} <= names
    back = torch.load(p)
    assert back["epoch"] == 3
    m2 = _model()
    m2.load_state_dict(back["model"])
    for a, b in zip(m.parameters(), m2.parameters()):
        assert torch.equal(a, b)
    torch.testing.assert_close(back["optimizer"]["state"][0]["exp_avg"], opt.state_dict()["state"][0]["exp_avg"])


def test_shared_tensors_are_stored_once_and_name_clashes_get_a_suffix(tmp_path):
    w = torch.arange(4.0)
    obj = {"a": w, "b": w, "c.d": torch.ones(2), "c": {"d": torch.zeros(2)}}
    p = tmp_path / "x.safetensors"
    torch.save(obj, p)
    assert sorted(load_file(str(p))) == ["a", "c.d", "c.d#2"]
    back = torch.load(p)
    assert back["a"] is back["b"]  # one tensor, as saved
    assert torch.equal(back["c.d"], torch.ones(2)) and torch.equal(back["c"]["d"], torch.zeros(2))


def test_a_lone_tensor_and_lists_have_names(tmp_path):
    p = tmp_path / "t.safetensors"
    torch.save(torch.ones(3), p)
    assert list(load_file(str(p))) == ["tensor"]
    torch.save([torch.ones(1), {"x": torch.zeros(1)}], p)
    assert sorted(load_file(str(p))) == ["0", "1.x"]
    back = torch.load(p)
    assert isinstance(back, list) and torch.equal(back[1]["x"], torch.zeros(1))


def test_identical_content_gives_identical_bytes(tmp_path):
    m = _model()
    a, b = tmp_path / "a", tmp_path / "b"
    torch.save({"m": m.state_dict(), "np": np.arange(3)}, a)
    torch.save({"m": m.state_dict(), "np": np.arange(3)}, b)
    assert a.read_bytes() == b.read_bytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64, np.int32, np.int16, np.int8,
                                   np.uint8, np.bool_])
def test_numpy_arrays_come_back_as_numpy_arrays(tmp_path, dtype):
    a = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    nc = a.T  # non-contiguous
    p = tmp_path / "n.safetensors"
    torch.save({"a": a, "nc": nc, "z": np.zeros((0, 2), dtype), "s": np.array(5, dtype)}, p)
    back = torch.load(p)
    for k, v in {"a": a, "nc": nc, "z": np.zeros((0, 2), dtype), "s": np.array(5, dtype)}.items():
        assert type(back[k]) is np.ndarray and back[k].dtype == v.dtype and back[k].shape == v.shape
        np.testing.assert_array_equal(back[k], v)
    back["a"][0, 0] = 1  # writable, like the array that was saved


def test_bytes_containers_and_keys(tmp_path):
    obj = collections.OrderedDict([("raw", b"\x00\xffabc"), ("buf", bytearray(b"xy")), (1, "int key"),
                                   (2.5, "float key"), ("nested", {"t": (1, [b"", None])})])
    p = tmp_path / "b.safetensors"
    torch.save(obj, p)
    back = torch.load(p)
    assert type(back) is collections.OrderedDict and list(back) == list(obj)
    assert back["raw"] == b"\x00\xffabc" and type(back["buf"]) is bytearray and back["buf"] == bytearray(b"xy")
    assert back[1] == "int key" and back[2.5] == "float key" and back["nested"] == {"t": (1, [b"", None])}


def test_unsupported_objects_name_their_type_and_the_supported_ones(tmp_path):
    p = tmp_path / "u.safetensors"
    with pytest.raises(TypeError, match="cannot pickle 'generator' object"):  # (what pickle cannot save: PyTorch's)
        torch.save({"x": (i for i in range(2))}, p)
    with pytest.raises(TypeError, match="numpy array of dtype <U1"):
        torch.save({"x": np.array(["a"])}, p)
    with pytest.raises(TypeError, match="complex128"):
        torch.save({"x": np.ones(2, np.complex128)}, p)
    assert not p.exists()


@pytest.mark.parametrize("device", available_devices())
def test_plain_safetensors_files_from_other_tools_load_as_a_dict(tmp_path, device):
    p = tmp_path / "hf.safetensors"
    w, b = np.random.default_rng(0).standard_normal((3, 2)).astype(np.float32), np.arange(3, dtype=np.int64)
    save_file({"layer.weight": w, "layer.bias": b}, str(p), metadata={"format": "pt"})
    for mmap in (False, True):
        back = torch.load(p, map_location=device, mmap=mmap)
        assert sorted(back) == ["layer.bias", "layer.weight"]
        assert back["layer.weight"].device.type == torch.device(device).type
        np.testing.assert_array_equal(back["layer.weight"].cpu().numpy(), w)
        assert back["layer.bias"].dtype == torch.int64
    with open(p, "rb") as f:  # a file object works too
        assert sorted(torch.load(f)) == ["layer.bias", "layer.weight"]
    lin = torch.nn.Linear(2, 3)
    save_file({"weight": w, "bias": np.ones(3, np.float32)}, str(p))
    lin.load_state_dict(torch.load(p))
    np.testing.assert_array_equal(lin.weight.detach().numpy(), w)


def test_plain_safetensors_file_with_an_unsupported_dtype_says_so(tmp_path):
    p = tmp_path / "u32.safetensors"
    save_file({"x": np.ones(2, np.uint32)}, str(p))
    with pytest.raises(RuntimeError, match="tensor 'x' of .* has the safetensors dtype U32, which coretorch does not"):
        torch.load(p)


def test_plain_safetensors_file_that_is_damaged_is_refused(tmp_path):
    p = tmp_path / "bad.safetensors"
    save_file({"x": np.ones(4, np.float32)}, str(p))
    p.write_bytes(p.read_bytes()[:-3])  # truncated data
    with pytest.raises(RuntimeError, match="truncated"):
        torch.load(p)
