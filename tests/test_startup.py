"""Start-up cost: ``import coretorch`` loads no heavy optional module that only some programs need."""
import subprocess
import sys


def test_import_loads_neither_ml_dtypes_nor_scipy():
    # ml_dtypes 0.7 costs about a second to import: it loads on bfloat16's first use; scipy.special (~0.3 s) on a
    # special kernel's; scipy.linalg's BLAS (~0.2 s) on the first float parameter update (coretorch_cpu/blas1.py)
    code = ("import sys, coretorch as torch\n"
            "x = torch.ones(3) * 2\n"
            "assert float(x.sum()) == 6.0\n"
            "assert repr(torch.tensor([1.5])) == 'tensor([1.5000])'\n"
            "m = torch.nn.Linear(3, 2)\n"
            "loss = torch.nn.functional.cross_entropy(m(torch.randn(4, 3)), torch.tensor([0, 1, 1, 0]))\n"
            "loss.backward(); str(loss); str(m.weight)\n"
            "heavy = [m for m in ('ml_dtypes', 'scipy') if m in sys.modules]\n"
            "torch.optim.AdamW(m.parameters()).step()\n"
            "heavy += [m for m in ('ml_dtypes', 'scipy.special') if m in sys.modules]\n"
            "assert 'scipy.linalg' in sys.modules  # the update's BLAS axpy, loaded by the step itself\n"
            "print(','.join(heavy))\n"
            "y = torch.ones(2, dtype=torch.bfloat16) * 3.3\n"
            "assert 'ml_dtypes' in sys.modules and y.dtype is torch.bfloat16\n"
            "assert abs(float(y[0]) - 3.296875) < 1e-6\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"import coretorch loaded {out.stdout.strip()}"


def test_bfloat16_array_made_before_first_use_is_recognised():
    code = ("import ml_dtypes, numpy as np, coretorch as torch\n"
            "t = torch.from_numpy(np.array([1.5, -2], dtype=ml_dtypes.bfloat16))\n"
            "assert t.dtype is torch.bfloat16, t.dtype\n"
            "assert t.tolist() == [1.5, -2.0]\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def test_bfloat16_loaded_after_other_kernels_were_built_on_every_device():
    # kernels built before bfloat16's first use list no bfloat16 casts: its loading must not leave them stale
    from coretorch.testing import available_devices
    for device in available_devices():
        code = (f"import coretorch as torch\n"
                f"x = torch.ones(4, device='{device}') * 3 + 1\n"  # builds the float32 programs first
                f"y = x.to(torch.bfloat16) * 2\n"
                f"assert y.dtype is torch.bfloat16 and y.float().tolist() == [8.0] * 4, y\n")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, (device, out.stderr[-2000:])
