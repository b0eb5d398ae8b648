"""The typed face of Tensor's installed methods (coretorch/_tensor_api.pyi) matches what coretorch installs."""
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(__file__), os.pardir)


def test_tensor_api_stub_is_up_to_date():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_tensor_api.py"), "--check"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr + r.stdout


def test_tensor_methods_are_declared_for_type_checkers():
    text = open(os.path.join(ROOT, "coretorch", "_tensor_api.pyi")).read()
    for name in ("reshape", "to", "sum", "softmax", "__add__", "__matmul__", "tril", "topk"):
        assert f"    def {name}(" in text, name
