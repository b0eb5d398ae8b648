"""torch.cpu as PyTorch's: the CPU as a device module for device-agnostic code (`getattr(torch, "cpu")`), streams
and events that order nothing, capabilities read from numpy's CPU dispatch, and the deprecated torch.cpu.amp spellings
with PyTorch's FutureWarning."""
from __future__ import annotations

import pytest

import coretorch as torch


def test_device_module():
    m = getattr(torch, "cpu")
    assert m.is_available() and m.is_initialized() and m.device_count() == 1 and m.current_device() == "cpu"
    assert m.set_device("cpu") is None and m.synchronize() is None
    caps = m.get_capabilities()
    assert isinstance(caps["avx2"], bool) and caps["num_logical_cores"] >= 1 and caps["architecture"]


def test_streams_and_events():
    s = torch.cpu.Stream()
    assert torch.cpu.current_stream() is torch.cpu.current_stream()
    with torch.cpu.stream(s):
        assert torch.cpu.current_stream() is s
    assert torch.cpu.current_stream() is not s
    e = s.record_event()
    assert e.query() and e.synchronize() is None and s.wait_event(e) is None and s.wait_stream(s) is None


def test_amp_spellings_warn_and_work():
    with pytest.warns(FutureWarning, match=r"torch\.cpu\.amp\.autocast\(args\.\.\.\)` is deprecated"):
        ctx = torch.cpu.amp.autocast()
    with ctx:
        assert torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16
        y = torch.nn.functional.linear(torch.ones(2, 3), torch.ones(4, 3))
        assert y.dtype == torch.bfloat16
    assert not torch.is_autocast_enabled("cpu")
    with pytest.warns(FutureWarning, match=r"torch\.cpu\.amp\.GradScaler\(args\.\.\.\)` is deprecated"):
        scaler = torch.cpu.amp.GradScaler(init_scale=4.0)
    assert scaler.get_scale() == 4.0
