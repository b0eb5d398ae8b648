"""Every ```python block of the README runs as written (each in a fresh namespace)."""
from __future__ import annotations

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_readme_has_examples():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_readme_block_runs(i):
    code = BLOCKS[i]
    if code.lstrip().startswith("# myops/plugin.py"):
        assert "CORETORCH_PLUGIN_API = 1" in code  # a file fragment, not a program
        return
    exec(compile(code, f"README.md block {i}", "exec"), {"__name__": f"readme_block_{i}"})
