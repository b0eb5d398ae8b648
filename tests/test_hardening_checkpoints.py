"""Hostile and damaged checkpoint files (issue 15): every bit of the header checked, non-regular files refused,
decoding limits, fuzzing, leftover temporary files, identical bytes; version-1 files still load; the demo's
Ctrl-C at start-up."""
from __future__ import annotations

import io
import json
import math
import os
import re
import signal
import struct
import subprocess
import sys
import time
import tracemalloc
import zlib
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file as st_load_file

import coretorch as torch
from coretorch import cli, demo, serialization
from coretorch.testing import available_devices

DATA = Path(__file__).resolve().parent / "data"
CORRUPT = r"^coretorch\.load: .* corrupted"
ANY_LOAD_ERROR = r"^coretorch\.load: "


def _small():
    return {"model": {"w": torch.arange(6, dtype=torch.float32).reshape(2, 3), "b": torch.tensor([1, 2, 3])},
            "lr": 0.1, "epoch": 3, "name": "run", "betas": (0.9, 0.999), "tags": {"a", "b", "c"}}


def _header_len(data: bytes) -> int:
    return struct.unpack("<Q", data[:8])[0]


def _load_bytes(data: bytes, tmp_path, **kw):
    p = tmp_path / "x.pt"
    p.write_bytes(data)
    return torch.load(p, **kw)


# ---- backward compatibility --------------------------------------------------------------------------------
def test_version_1_file_still_loads():
    """tests/data/checkpoint_v1.pt was written by coretorch.save before format version 2 (see tests/data/README.md)."""
    data = (DATA / "checkpoint_v1.pt").read_bytes()
    n = _header_len(data)
    assert json.loads(data[8:8 + n])["__metadata__"]["coretorch.version"] == "1"
    obj = torch.load(DATA / "checkpoint_v1.pt")
    assert set(obj) == {"model", "lr", "epoch", "name", "betas", "nan", "dtype", "half"}
    np.testing.assert_array_equal(obj["model"]["w"].numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))
    assert obj["model"]["w"].dtype is torch.float32 and obj["model"]["b"].dtype is torch.int64
    assert obj["model"]["b"].tolist() == [1, 2, 3] and obj["model"]["mask"].tolist() == [True, False]
    assert obj["lr"] == 0.1 and obj["epoch"] == 3 and obj["name"] == "v1" and obj["betas"] == (0.9, 0.999)
    assert math.isnan(obj["nan"]) and obj["dtype"] is torch.float16
    assert obj["half"].dtype is torch.float16 and obj["half"].tolist() == [0.5, -2.0]


def test_new_files_are_version_2_and_plain_safetensors(tmp_path):
    p = tmp_path / "x.pt"
    torch.save(_small(), p)
    data = p.read_bytes()
    n = _header_len(data)
    assert n % 8 == 0
    meta = json.loads(data[8:8 + n])["__metadata__"]
    assert meta["coretorch.version"] == "2" and meta["format"] == "coretorch"
    assert len(meta["coretorch.header_crc32"]) == 8
    arrays = st_load_file(str(p))  # any safetensors reader still reads it
    assert sorted(str(a.tolist()) for a in arrays.values()) == ["[1, 2, 3]", "[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]"]


# ---- integrity: every single bit of the header, and the data ---------------------------------------------
def test_every_single_bit_flip_of_the_header_is_detected():
    data = _save_bytes({"w": torch.arange(3, dtype=torch.float32), "lr": 0.1, "epoch": 3, "name": "run",
                        "betas": (0.9, 0.999)}).getvalue()
    assert torch.load(io.BytesIO(data))["lr"] == 0.1
    n = _header_len(data)
    failures = []
    for i in range(8 + n):  # the length and the JSON header, exhaustively
        for bit in range(8):
            bad = bytearray(data)
            bad[i] ^= 1 << bit
            try:
                torch.load(io.BytesIO(bad))
            except RuntimeError as e:
                if not re.search(CORRUPT, str(e)):
                    failures.append((i, bit, str(e)[:120]))
            else:
                failures.append((i, bit, "loaded"))
    assert not failures, failures[:10]


def test_single_bit_flips_of_the_data_are_detected(tmp_path):
    p = tmp_path / "x.pt"
    torch.save(_small(), p)
    data = p.read_bytes()
    start = 8 + _header_len(data)
    for i in range(start, len(data)):
        bad = bytearray(data)
        bad[i] ^= 1 << (i % 8)
        p.write_bytes(bytes(bad))
        with pytest.raises(RuntimeError, match=CORRUPT + r".*checksum mismatch"):
            torch.load(p)


@pytest.mark.parametrize("seed", range(3))
def test_fuzzed_files_give_the_one_clear_error(tmp_path, seed):
    """Random truncations, byte flips, splices: each either raises coretorch.load's RuntimeError or (never, in
    practice) loads; nothing else escapes.  Bounded to about a second per seed."""
    rng = np.random.default_rng(seed)
    buf = io.BytesIO()
    torch.save({**_small(), "deep": [[[{"x": [1, 2.5, None]}]]]}, buf)
    data = buf.getvalue()
    deadline = time.monotonic() + 1.0
    tried = 0
    while time.monotonic() < deadline or tried < 50:
        tried += 1
        bad = bytearray(data)
        kind = rng.integers(4)
        if kind == 0:
            bad = bad[:rng.integers(len(bad))]
        elif kind == 1:
            for _ in range(rng.integers(1, 8)):
                bad[rng.integers(len(bad))] = rng.integers(256)
        elif kind == 2:
            i = rng.integers(len(bad))
            bad[i:i] = rng.bytes(rng.integers(1, 16))
        else:
            i, j = sorted(rng.integers(len(bad), size=2))
            del bad[i:j + 1]
        try:
            torch.load(io.BytesIO(bytes(bad)))
        except RuntimeError as e:
            assert re.search(ANY_LOAD_ERROR, str(e)), str(e)
        else:
            assert bytes(bad) == data, "a damaged file loaded"


# ---- non-regular files, reading only what the header says, mmap ----------------------------------------------
@pytest.fixture
def alarm():
    """Fail instead of hanging for ever."""
    def boom(*_):
        raise TimeoutError("coretorch.load hung")
    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def test_fifo_and_dev_zero_are_refused_without_hanging(tmp_path, alarm):
    fifo = tmp_path / "ck.pt"
    os.mkfifo(fifo)
    with pytest.raises(RuntimeError, match=r"coretorch\.load: .* is not a coretorch checkpoint \(a FIFO; a "
                                           r"checkpoint is a regular file\)"):
        torch.load(fifo)
    link = tmp_path / "zero.pt"
    link.symlink_to("/dev/zero")
    with pytest.raises(RuntimeError, match=r"\(a device; a checkpoint is a regular file\)"):
        torch.load(link)
    with pytest.raises(RuntimeError, match=r"\(a directory"):
        torch.load(tmp_path)


class _CountingReader(io.BytesIO):
    def __init__(self, data):
        super().__init__(data)
        self.read_bytes = 0

    def read(self, n=-1):
        assert n is not None and n >= 0, "coretorch.load asked for the whole rest of the stream"
        b = super().read(n)
        self.read_bytes += len(b)
        return b

    def readinto(self, b):
        k = super().readinto(b)
        self.read_bytes += k
        return k


def test_load_reads_only_what_the_header_describes():
    buf = io.BytesIO()
    torch.save(_small(), buf)
    data = buf.getvalue()
    f = _CountingReader(data + b"trailing bytes of something else" * 1000)
    assert torch.load(f)["epoch"] == 3
    assert f.read_bytes == len(data) and f.tell() == len(data)


def _rewritten(good: bytes, old: str, new: str) -> bytes:
    """``good`` with ``old`` replaced by ``new`` in its header, and a valid header checksum: only the other checks
    stand between such a file and the loader."""
    n = _header_len(good)
    text = good[8:8 + n].decode()
    assert old in text
    raw = text.replace(old, new).rstrip().encode()
    raw += b" " * (-len(raw) % 8)
    length = struct.pack("<Q", len(raw))
    at = len(serialization._PREFIX)
    raw = raw[:at] + b"00000000" + raw[at + 8:]
    raw = raw[:at] + b"%08x" % zlib.crc32(length + raw) + raw[at + 8:]
    return length + raw + good[8 + n:]


def test_a_header_promising_huge_tensors_fails_before_reading(tmp_path):
    good = _save_bytes(torch.ones(2)).getvalue()
    assert torch.load(io.BytesIO(good)).tolist() == [1.0, 1.0]
    huge = _rewritten(_rewritten(good, '"shape":[2]', f'"shape":[{2 ** 40}]'), '"data_offsets":[0,8]',
                      f'"data_offsets":[0,{4 * 2 ** 40}]')
    t0 = time.perf_counter()
    with pytest.raises(RuntimeError, match=r"coretorch\.load: .* is truncated \(\d+ bytes; the header describes"):
        _load_bytes(huge, tmp_path)
    with pytest.raises(RuntimeError, match=r"coretorch\.load: .* is truncated"):
        torch.load(io.BytesIO(huge))
    assert time.perf_counter() - t0 < 5


@pytest.mark.parametrize("device", available_devices())
def test_mmap_true_loads_copy_on_write_views(tmp_path, device):
    p = tmp_path / "m.pt"
    w = torch.arange(12, dtype=torch.float64, device=device).reshape(3, 4)
    torch.save({"w": w, "step": 7}, p)
    before = p.read_bytes()
    back = torch.load(p, mmap=True)
    assert back["step"] == 7 and str(back["w"].device) == str(w.device)
    np.testing.assert_array_equal(back["w"].cpu().numpy(), w.cpu().numpy())
    back["w"].add_(1.0)  # writable, and the file does not change
    np.testing.assert_array_equal(back["w"].cpu().numpy(), w.cpu().numpy() + 1)
    assert p.read_bytes() == before
    cpu = torch.load(p, mmap=True, map_location="cpu")
    np.testing.assert_array_equal(cpu["w"].numpy(), w.cpu().numpy())
    with pytest.raises(ValueError, match="mmap=True needs a file path"):
        torch.load(io.BytesIO(before), mmap=True)


# ---- decoding limits -------------------------------------------------------------------------------------------
def _nested(depth: int):
    obj = 0
    for _ in range(depth):
        obj = [obj]
    return obj


def test_deep_nesting_is_refused_on_save_and_a_corrupted_error_on_load(tmp_path):
    assert torch.load(_save_bytes(_nested(serialization._MAX_DEPTH - 1))) == _nested(serialization._MAX_DEPTH - 1)
    with pytest.raises(ValueError, match="more than 100 levels deep"):
        torch.save(_nested(serialization._MAX_DEPTH + 1), tmp_path / "deep.pt")
    for depth in (serialization._MAX_DEPTH + 5, 5000, 200_000):  # crafted with a valid header checksum
        structure = '{"list":[' * depth + "0" + "]}" * depth
        data = serialization._serialize({}, structure)
        with pytest.raises(RuntimeError, match=CORRUPT + r".*(nests more than|RecursionError)"):
            _load_bytes(data, tmp_path)


def _save_bytes(obj) -> io.BytesIO:
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return buf


def test_a_small_file_decodes_into_a_bounded_amount_of_memory():
    """Decoding is linear in the header, which cannot exceed the file: the worst case (many empty containers,
    about 25 bytes of Python objects per byte) stays far from gigabytes."""
    k = 256 * 1024 // 12
    data = serialization._serialize({}, '{"list":[' + ",".join(['{"list":[]}'] * k) + "]}")
    tracemalloc.start()
    try:
        assert len(torch.load(io.BytesIO(data))) == k
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40 * len(data), (peak, len(data))


@pytest.mark.parametrize("structure", ['{"list":[1,2', '{"float":"1e999"}', '{"list":[NaN]}', '{"x":1}', "[]",
                                       '{"tensor":"0"}', '{"dict":[[1]]}', '{"set":[{"list":[]}]}',
                                       '{"list":[' + "9" * 5000 + "]}"])
def test_malformed_structures_give_the_corrupted_error(tmp_path, structure):
    data = serialization._serialize({}, structure)
    with pytest.raises(RuntimeError, match=CORRUPT):
        _load_bytes(data, tmp_path)


def test_bad_tensor_entries_give_the_corrupted_error(tmp_path):
    good = _save_bytes(torch.ones(2)).getvalue()
    for old, new in (('"shape":[2]', '"shape":[2' + ",1" * 64 + "]"), ('"shape":[2]', '"shape":[-2]'),
                     ('"shape":[2]', '"shape":[true,2]'), ('"data_offsets":[0,8]', '"data_offsets":[4,12]'),
                     ('"dtype":"F32"', '"dtype":"Q99"'), ('"shape":[2]', '"shape":[2],"extra":1'),
                     ('"shape":[2]', '"shape":[1,2]')):
        with pytest.raises(RuntimeError, match=r"coretorch\.load: .*(corrupted|truncated)"):
            _load_bytes(_rewritten(good, old, new), tmp_path)


# ---- temporary files and identical bytes ------------------------------------------------------------------------
def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_leftover_temp_files_of_killed_saves_are_removed_by_the_next_save(tmp_path):
    target = tmp_path / "ck.pt"
    torch.save({"v": 1}, target)
    dead = tmp_path / f".ck.pt.{_dead_pid()}.k3j_x9ab.tmp"        # a save killed mid-write
    live = tmp_path / f".ck.pt.{os.getppid()}.zzzzzzzz.tmp"        # a save still running in another process
    old_v1 = tmp_path / ".ck.pt.abcd1234.tmp"                       # version 1's name, left an hour ago
    recent_v1 = tmp_path / ".ck.pt.efgh5678.tmp"
    other = tmp_path / ".other.pt.1.abcdefgh.tmp"                   # another checkpoint's: not ours to touch
    for f in (dead, live, old_v1, recent_v1, other):
        f.write_bytes(b"half a checkpoint")
    os.utime(old_v1, (time.time() - 7200, time.time() - 7200))
    torch.save({"v": 2}, target)
    assert torch.load(target) == {"v": 2}
    left = sorted(x.name for x in tmp_path.iterdir())
    assert left == sorted(["ck.pt", live.name, recent_v1.name, other.name])


def test_identical_content_gives_identical_bytes(tmp_path):
    def obj():
        return {"z": torch.ones(3, dtype=torch.float16), "a": torch.arange(4), "tags": {"x", "yy", "zzz", "w"},
                "frozen": frozenset({"p", "q", "r"}), "lr": 0.01, "b": torch.zeros(2, dtype=torch.bool)}
    first, second = tmp_path / "1.pt", tmp_path / "2.pt"
    torch.save(obj(), first)
    torch.save(obj(), second)
    assert first.read_bytes() == second.read_bytes()
    code = ("import sys, coretorch as torch\n"
            "torch.save({'z': torch.ones(3, dtype=torch.float16), 'a': torch.arange(4), "
            "'tags': {'x', 'yy', 'zzz', 'w'}, 'frozen': frozenset({'p', 'q', 'r'}), 'lr': 0.01, "
            "'b': torch.zeros(2, dtype=torch.bool)}, sys.argv[1])\n")
    third = tmp_path / "3.pt"  # another process, another string hash seed: the same bytes
    subprocess.run([sys.executable, "-c", code, str(third)], check=True, timeout=120,
                   env={**os.environ, "PYTHONHASHSEED": "12345", "CORETORCH_PLUGINS": "cpu"})
    assert third.read_bytes() == first.read_bytes()


@pytest.mark.parametrize("device", available_devices())
def test_round_trip_on_every_device(tmp_path, device):
    obj = {"w": torch.randn(4, 5, device=device, dtype=torch.float32), "i": torch.arange(3, device=device),
           "nested": [{"t": (1, 2)}, {"s": {3, 4}}], "nan": float("nan")}
    p = tmp_path / "d.pt"
    torch.save(obj, p)
    back = torch.load(p)
    assert str(back["w"].device) == str(obj["w"].device)
    np.testing.assert_array_equal(back["w"].cpu().numpy(), obj["w"].cpu().numpy())
    assert back["i"].tolist() == [0, 1, 2] and back["nested"] == [{"t": (1, 2)}, {"s": {3, 4}}]
    assert math.isnan(back["nan"])


# ---- coretorch demo: Ctrl-C during start-up -------------------------------------------------------------------
@pytest.mark.parametrize("step", ["load_digits", "build_model", "check_device"])
def test_demo_ctrl_c_during_start_up_prints_the_short_message(tmp_path, capsys, monkeypatch, step):
    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(demo, step, interrupted)
    assert cli.main(["demo", "--epochs", "1", "--out", str(tmp_path)]) == 130
    err = capsys.readouterr().err
    assert err.strip() == "interrupted after 0 complete epoch(s): no epoch was completed, nothing was saved"
    assert "Traceback" not in err


def test_demo_ctrl_c_while_resuming_names_the_intact_checkpoint(tmp_path, capsys, monkeypatch):
    assert cli.main(["demo", "--epochs", "1", "--train-subset", "32", "--out", str(tmp_path)]) == 0
    capsys.readouterr()

    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(demo, "_evaluate", interrupted)
    assert cli.main(["demo", "--epochs", "2", "--train-subset", "32", "--out", str(tmp_path), "--resume"]) == 130
    err = capsys.readouterr().err
    assert f"interrupted after 1 complete epoch(s): the last complete checkpoint ({tmp_path / 'checkpoint.pt'}, " \
           "epoch 1) is intact; run again with --resume to continue" in err
    assert "Traceback" not in err and torch.load(tmp_path / "checkpoint.pt")["epoch"] == 1
