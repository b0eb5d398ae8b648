"""Importing a plugin package (or one of its modules) before coretorch must not break the plugin: that import starts
`import coretorch`, which loads the same plugin through its entry point while the package is half-initialised."""
import os
import subprocess
import sys

import pytest

import coretorch

OPENCL = "opencl" in [d["type"] for d in coretorch.devices() if d["available"]]

PROGRAM = """
import warnings
warnings.simplefilter("error")  # a PluginWarning (plugin skipped) fails the program
import {module}
import coretorch
{check}
print("ok")
"""


@pytest.mark.parametrize("module, check", [
    ("coretorch_cpu.memory", "assert coretorch.zeros(3).add(1).sum().item() == 3.0"),
    pytest.param("coretorch_opencl", "assert coretorch.ones(2, device='opencl').sum().item() == 2.0",
                 marks=pytest.mark.skipif(not OPENCL, reason="needs an available OpenCL device (an OpenCL platform)")),
    ("coretorch_extra_ops.optimizers", "assert coretorch.optim.AdamW is coretorch_extra_ops.optimizers.AdamW"),
])
def test_plugin_imported_before_core(module, check):
    program = PROGRAM.format(module=module, check=check)
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "CORETORCH_STRICT_PLUGINS": "1"})
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]
