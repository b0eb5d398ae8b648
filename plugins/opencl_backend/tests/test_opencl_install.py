"""Without a usable OpenCL device, coretorch-opencl says why (no ICD loader, no platform, a platform or device
that refuses) and what to install, in the backend's unavailable_reason, coretorch.devices(), `coretorch info`,
the error of creating a tensor there, and `coretorch demo --device opencl`."""
from __future__ import annotations

import argparse

import pytest

import coretorch
from coretorch import _backend, cli, demo
from coretorch_opencl import OpenCLBackend
from coretorch_opencl import device as cldevice

POCL = 'pip install "coretorch-opencl[pocl]"'


class _Platform:
    name = "Fake Platform "

    def __init__(self, error: Exception | None = None):
        self.error = error

    def get_devices(self):
        if self.error is not None:
            raise self.error
        return []


@pytest.fixture
def discovery(monkeypatch):
    """Discovery with a patched pyopencl entry point; the real discovery comes back after the test."""
    cldevice.reset_discovery()
    yield monkeypatch
    cldevice.reset_discovery()  # refilled on the next use, after monkeypatch has restored pyopencl


def _raise(e):
    def f(*a, **k):
        raise e
    return f


def test_no_icd_loader_names_the_loader_to_install():
    msg = cldevice.diagnose_import_error(OSError("libOpenCL.so.1: cannot open shared object file"))
    assert msg.startswith("no OpenCL ICD loader") and "ocl-icd-libopencl1" in msg and POCL in msg
    other = cldevice.diagnose_import_error(ImportError("cannot import name '_cl'"))
    assert "pyopencl cannot be imported" in other and "pip install --force-reinstall pyopencl" in other


def test_no_platform_is_said_everywhere(discovery):
    discovery.setattr(cldevice.cl, "get_platforms", _raise(RuntimeError("clGetPlatformIDs failed: "
                                                                         "PLATFORM_NOT_FOUND_KHR")))
    be = OpenCLBackend()
    assert not be.is_available() and be.device_count() == 0
    why = be.unavailable_reason()
    assert why.startswith("no OpenCL platform found") and "PLATFORM_NOT_FOUND_KHR" in why and POCL in why
    # the registered backend reads the same discovery: devices(), `coretorch info` and the tensor error say it
    entry = next(d for d in coretorch.devices() if d["type"] == "opencl")
    assert not entry["available"] and entry["reason"] == why
    assert f"opencl is not available: {why}" in cli.info()
    fresh = coretorch.device("opencl", 7)  # not in the kernel-table cache: availability is checked
    with pytest.raises(RuntimeError, match="installed but not available on this machine: no OpenCL platform"):
        _backend.get_table(fresh)
    args = argparse.Namespace(device="opencl")
    with pytest.raises(demo.DemoError, match="no OpenCL platform found"):
        demo.check_device(args.device)


def test_empty_platform_list_is_no_platform(discovery):
    discovery.setattr(cldevice.cl, "get_platforms", lambda: [])
    assert OpenCLBackend().unavailable_reason().startswith("no OpenCL platform found")


def test_platform_that_refuses_to_list_devices(discovery):
    discovery.setattr(cldevice.cl, "get_platforms",
                      lambda: [_Platform(RuntimeError("clGetDeviceIDs failed: DEVICE_NOT_FOUND")), _Platform()])
    why = OpenCLBackend().unavailable_reason()
    assert "Fake Platform, Fake Platform refused to list their devices" in why and "DEVICE_NOT_FOUND" in why
    assert "render" in why and POCL in why


def test_platform_without_devices(discovery):
    discovery.setattr(cldevice.cl, "get_platforms", lambda: [_Platform()])
    why = OpenCLBackend().unavailable_reason()
    assert why.startswith("OpenCL platform(s) Fake Platform expose no device") and POCL in why


def test_device_that_refuses_a_context(monkeypatch):
    found = cldevice.discover()[0]
    assert found, "the test machine has PoCL"
    cldev = found[0][2]
    monkeypatch.setattr(cldevice.cl, "Context", _raise(cldevice.cl.Error("clCreateContext failed: "
                                                                          "DEVICE_NOT_AVAILABLE")))
    with pytest.raises(RuntimeError, match="refused a context") as e:
        cldevice.Device(cldev, 0)
    assert cldev.name.strip() in str(e.value) and "CORETORCH_OPENCL_DEVICE" in str(e.value) and POCL in str(e.value)


def test_unmatched_device_selection_says_how_to_fix_it(discovery):
    discovery.setenv("CORETORCH_OPENCL_DEVICE", "no-such-device-xyz")
    why = OpenCLBackend().unavailable_reason()
    assert "matches no OpenCL device" in why and "unset it" in why


def test_info_says_when_a_listed_device_refuses_a_context(monkeypatch):
    be = _backend.backends()["opencl"]
    monkeypatch.setattr(be, "_devices", {})  # nothing opened yet: the next use creates the context
    monkeypatch.setattr(be, "_tables", {})
    monkeypatch.setattr(_backend, "_tables", {})
    monkeypatch.setattr(cldevice.cl, "Context", _raise(cldevice.cl.Error("clCreateContext failed: "
                                                                          "DEVICE_NOT_AVAILABLE")))
    text = cli.info()
    assert "opencl cannot be opened: RuntimeError: the OpenCL device" in text and "refused a context" in text
    with pytest.raises(RuntimeError, match="refused a context"):
        coretorch.ones(1, device="opencl")
