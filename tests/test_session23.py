"""Session 23's own fixes (the lead's; the reviews' are in test_review23a.py ...)."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch

_OPS = {
    "lerp": lambda x, s: torch.lerp(x, x * 2, s),
    "addcmul": lambda x, s: torch.addcmul(x, s, x),
    "clamp": lambda x, s: x.clamp(min=s),
    "fmod": lambda x, s: torch.fmod(x, s),
    "mul": lambda x, s: x * s,
    "where": lambda x, s: torch.where(x > 0, x, s),
}


@pytest.mark.parametrize("op", list(_OPS))
def test_a_0d_cpu_leaf_beside_a_device_tensor_gets_its_gradient_on_the_cpu(device, op):
    """PyTorch treats a 0-d cpu tensor as a scalar operand of another device's op, and its engine moves the 0-d
    gradient back to the leaf's device (validate_outputs).  coretorch before: ``lerp``/``addcmul``/``clamp``/``fmod``
    with a 0-d cpu parameter beside an opencl tensor raised "attempting to assign a gradient with device type
    'opencl' to a tensor with device type 'cpu'" at the backward, and ``autograd.grad`` returned an opencl one."""
    x0 = np.array([-1.3, 0.2, 0.9, 2.2], np.float32)
    grads = []
    for dev in ("cpu", device):
        x = torch.tensor(x0, device=dev, requires_grad=True)
        s = torch.tensor(0.4, requires_grad=True)
        y = _OPS[op](x, s)
        assert y.device.type == dev
        y.pow(2).sum().backward()
        assert s.grad.device.type == "cpu" and s.grad.shape == ()
        (gs,) = torch.autograd.grad(_OPS[op](x, s).pow(2).sum(), s)  # (autograd.grad's result too)
        assert gs.device.type == "cpu" and gs.item() == s.grad.item()
        grads.append((s.grad.item(), x.grad.cpu().numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-5)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-5)


_MISMATCHES = [
    ((2, 2, 3), (4, 2), "mat1 and mat2 shapes cannot be multiplied (4x3 and 4x2)"),
    ((3,), (2, 4, 2), "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4]."),
    ((2, 5, 2, 3), (2, 5, 4, 2), "Expected size for first two dimensions of batch2 tensor to be: [10, 3] but got: "
                                 "[10, 4]."),
    ((5, 2, 3), (2, 1, 4, 2), "Expected size for first two dimensions of batch2 tensor to be: [10, 3] but got: "
                              "[10, 4]."),
    ((2, 3), (2, 4, 2), "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4]."),
    ((2, 2, 3), (4,), "size mismatch, got input (4), mat (4x3), vec (4)"),
    ((2, 3), (4,), "size mismatch, got input (2), mat (2x3), vec (4)"),
    ((3,), (4, 2), "mat1 and mat2 shapes cannot be multiplied (1x3 and 4x2)"),
    ((2, 2, 3), (2, 4, 2), "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4]."),
]


@pytest.mark.parametrize("sa,sb,msg", _MISMATCHES)
def test_matmul_size_errors_name_the_product_pytorch_runs(device, sa, sb, msg):
    """PyTorch 2.13's matmul folds or broadcasts its operands and runs mv, mm or bmm, whose size error it raises
    (the texts above, taken from PyTorch); coretorch before: "mat1 and mat2 shapes cannot be multiplied" with the
    unfolded shapes for all of them."""
    with pytest.raises(RuntimeError) as e:
        torch.matmul(torch.ones(*sa, device=device), torch.ones(*sb, device=device))
    assert str(e.value) == msg


def test_bmm_checks_the_inner_size_and_dtype_names_are_cpp_names(device):
    """``bmm`` of (1, 3, 4) and (1, 3, 4): PyTorch's "Expected size for first two dimensions of batch2 tensor to be:
    [1, 4] but got: [1, 3]." (coretorch before: the mm text); the dtype mismatch of a product names the C++ types
    ("long int != float", "float != double")."""
    with pytest.raises(RuntimeError, match=r"^Expected size for first two dimensions of batch2 tensor to be: \[1, 4\] "
                                           r"but got: \[1, 3\]\.$"):
        torch.bmm(torch.ones(1, 3, 4, device=device), torch.ones(1, 3, 4, device=device))
    for a, b, names in [(torch.int64, torch.float32, "long int != float"), (torch.float32, torch.float64,
                                                                            "float != double"),
                        (torch.int64, torch.float16, "long int != c10::Half")]:
        with pytest.raises(RuntimeError, match=f"^expected m1 and m2 to have the same dtype, but got: {names}$"):
            torch.ones(2, 3, dtype=a, device=device) @ torch.ones(3, 2, dtype=b, device=device)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_threshold_of_half_types_compares_in_float(device, dtype):
    """PyTorch's threshold kernels compare a half-type input with the threshold in float (opmath): a bfloat16
    0.10009765625 is above 0.1 and kept, as is its gradient.  coretorch before: 0.1 was rounded to bfloat16 first
    (0.10009765625), so the value was replaced by ``value`` and its gradient zeroed.  float16 rounds 0.1 below 0.1:
    replaced in both."""
    x = torch.tensor([0.1, -1.0, 5.0], device=device).to(dtype).requires_grad_(True)
    y = torch.nn.functional.threshold(x, 0.1, 7.0)
    y.sum().backward()
    kept = dtype == torch.bfloat16
    assert y.float().tolist() == [float(x[0]) if kept else 7.0, 7.0, 5.0]
    assert x.grad.float().tolist() == [1.0 if kept else 0.0, 0.0, 1.0]


def test_a_thread_calling_a_compiled_function_after_autocast_was_used_elsewhere_replays(device):
    """Autocast's process-wide "some thread has it on" flag stays set after a thread that died inside an autocast
    region; the guard key then held each thread's whole autocast table, so a fresh thread (no entries) missed the
    guards of a capture made by a thread that had entered and left autocast (``{'cpu': False}``), and captured again
    or ran eagerly.  Now the key holds the device types autocast is enabled for, with their dtypes."""
    import threading

    from coretorch.amp import autocast_mode as am
    before = (am.state.on, am.state.threads)

    def die_inside():
        torch.set_autocast_enabled("cpu", True)  # (never disabled: the thread ends with it on)
    t = threading.Thread(target=die_inside)
    t.start()
    t.join()
    try:
        assert am.state.on
        with torch.autocast("cpu"):
            pass  # (this thread's table now says cpu: False)
        w = torch.ones(3, device=device, requires_grad=True)

        @torch.compile
        def f(x):
            return (x * w).sum().detach()
        x = torch.arange(3.0, device=device)
        for _ in range(2):
            f(x)
        replays = f.replays
        out = []
        th = threading.Thread(target=lambda: out.append(f(x)))
        th.start()
        th.join()
        assert f.replays == replays + 1 and out[0].item() == 3.0
    finally:
        with am._lock:
            am.state.threads, am.state.on = before[1], before[0]
        torch.compiler.reset()


def test_a_default_device_restored_to_cpu_leaves_other_threads_replaying(device):
    """``before = torch.get_default_device(); ...; torch.set_default_device(before)`` leaves an explicit cpu
    default in this thread; a new thread has none.  The guard key holds the default device, so a fresh thread's
    call of a compiled function captured here missed its guards (and ran eagerly or captured again): found as
    test_review22c's two-thread replay failing after test_hardening15h ran in the same worker.  An explicit cpu
    default is now the default itself."""
    import threading
    torch.set_default_device(torch.get_default_device())
    try:
        w = torch.ones(3, device=device, requires_grad=True)

        @torch.compile
        def f(x):
            return (x * w).sum().detach()
        x = torch.arange(3.0, device=device)
        for _ in range(2):
            f(x)
        replays = f.replays
        th = threading.Thread(target=lambda: f(x))
        th.start()
        th.join()
        assert f.replays == replays + 1
    finally:
        torch.set_default_device(None)
        torch.compiler.reset()
