"""The namespaces a script touches on its first lines: torch.cuda, mps, xpu, backends, accelerator, compile, jit,
onnx, the determinism/precision/thread switches, PyTorch's submodule layout, torch.types, safe globals."""
from __future__ import annotations

import importlib
import math
import typing
import warnings

import numpy as np
import pytest

import coretorch as torch
import coretorch._compat as _compat
import coretorch.nn.functional as F
from coretorch.testing import available_devices

DEVICES = available_devices()


# ---- torch.cuda / mps / xpu ---------------------------------------------------------------------------------
def test_first_line_of_a_script():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    assert device == torch.device("cpu")
    x = torch.ones(2).to(device)
    assert x.device.type == "cpu"


def test_cuda_answers_as_pytorch_without_cuda():
    c = torch.cuda
    assert c.is_available() is False and c.device_count() == 0 and c.is_initialized() is False
    assert c.is_bf16_supported() is False
    for f in (c.manual_seed, c.manual_seed_all):
        assert f(123) is None
    assert c.seed() is None and c.seed_all() is None and c.empty_cache() is None
    assert c.memory_allocated() == 0 and c.max_memory_allocated() == 0 and c.memory_reserved() == 0
    assert c.max_memory_reserved() == 0 and c.memory_stats() == {} and c.reset_peak_memory_stats() is None
    for f in (c.current_device, c.get_device_name, c.get_device_properties, c.get_device_capability,
              c.synchronize, c.init, lambda: c.set_device(0)):
        with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled.*'opencl'"):
            f()
    with pytest.raises(RuntimeError, match="PyTorch was compiled without CUDA support"):
        with c.device(0):
            pass
    with c.device(None):  # no device: a no-op, as in PyTorch
        pass
    with pytest.raises(AttributeError, match="no CUDA backend"):
        c.not_a_function  # noqa: B018
    with pytest.raises(ValueError):
        c.manual_seed("x")


def test_cuda_amp_is_imported_lazily():
    c = torch.cuda
    try:
        amp = c.amp
    except ModuleNotFoundError as e:  # coretorch/cuda/amp.py is another family's (GradScaler, autocast)
        assert "coretorch.cuda.amp" in str(e)
    else:
        assert amp.__name__ == "coretorch.cuda.amp"


def test_mps_xpu_and_backends_mps():
    assert torch.mps.is_available() is False and torch.mps.device_count() == 0
    assert torch.backends.mps.is_available() is False and torch.backends.mps.is_built() is False
    assert torch.xpu.is_available() is False and torch.xpu.device_count() == 0


# ---- torch.backends --------------------------------------------------------------------------------------------
def test_backends_flags_are_settable_and_persist():
    cudnn, cuda = torch.backends.cudnn, torch.backends.cuda
    assert cudnn.enabled is True and cudnn.benchmark is False and cudnn.deterministic is False
    assert cudnn.allow_tf32 is True and cudnn.is_available() is False and cudnn.version() is None
    assert cuda.matmul.allow_tf32 is False and cuda.is_built() is False
    old = (cudnn.benchmark, cudnn.deterministic, cuda.matmul.allow_tf32, cudnn.allow_tf32)
    try:
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.deterministic = True
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = False
        b = importlib.import_module("coretorch.backends")
        assert b.cudnn.benchmark is True and b.cudnn.deterministic is True
        assert b.cuda.matmul.allow_tf32 is True and b.cudnn.allow_tf32 is False
        with cudnn.flags(enabled=False, benchmark=False):
            assert cudnn.enabled is False and cudnn.benchmark is False
        assert cudnn.enabled is True and cudnn.benchmark is True
    finally:
        cudnn.benchmark, cudnn.deterministic, cuda.matmul.allow_tf32, cudnn.allow_tf32 = old
    cuda.enable_flash_sdp(False)
    assert cuda.flash_sdp_enabled() is False
    cuda.enable_flash_sdp(True)
    assert cuda.flash_sdp_enabled() is True


def test_backends_opt_einsum():
    oe = torch.backends.opt_einsum
    assert oe.is_available() is True and oe.enabled is True and oe.strategy == "auto"
    assert oe.get_opt_einsum().__name__ == "opt_einsum"
    try:
        oe.strategy = "greedy"
        assert torch.backends.opt_einsum.strategy == "greedy"
        with pytest.raises(ValueError):
            oe.strategy = "fastest"
        oe.enabled = False
        assert oe.strategy is None
        with pytest.raises(ValueError):
            oe.strategy = "auto"
    finally:
        oe.enabled = True
        oe.strategy = "auto"


# ---- determinism, matmul precision, threads ---------------------------------------------------------------
def test_use_deterministic_algorithms():
    try:
        assert torch.are_deterministic_algorithms_enabled() is False
        torch.use_deterministic_algorithms(True)
        assert torch.are_deterministic_algorithms_enabled() is True
        assert torch.is_deterministic_algorithms_warn_only_enabled() is False
        assert torch.get_deterministic_debug_mode() == 2
        torch.use_deterministic_algorithms(True, warn_only=True)
        assert torch.is_deterministic_algorithms_warn_only_enabled() is True
        assert torch.get_deterministic_debug_mode() == 1
        torch.set_deterministic_debug_mode("default")
        assert torch.are_deterministic_algorithms_enabled() is False
        with pytest.raises(TypeError):
            torch.use_deterministic_algorithms(1)
        with pytest.raises(RuntimeError):
            torch.set_deterministic_debug_mode("loud")
    finally:
        torch.use_deterministic_algorithms(False)


def test_float32_matmul_precision():
    try:
        assert torch.get_float32_matmul_precision() == "highest"
        for p in ("high", "medium", "highest"):
            torch.set_float32_matmul_precision(p)
            assert torch.get_float32_matmul_precision() == p
        torch.set_float32_matmul_precision("MEDIUM")  # any case, as PyTorch
        assert torch.get_float32_matmul_precision() == "medium"
        with pytest.warns(UserWarning, match="low is not one of 'highest', 'high', or 'medium'; the current "
                                             "setFloat32MatmulPrecision call has no effect"):
            torch.set_float32_matmul_precision("low")
        assert torch.get_float32_matmul_precision() == "medium"
    finally:
        torch.set_float32_matmul_precision("highest")


def test_num_threads_reach_the_blas_pool():
    import threadpoolctl
    n0 = torch.get_num_threads()
    assert isinstance(n0, int) and n0 >= 1
    try:
        torch.set_num_threads(1)
        assert torch.get_num_threads() == 1
        blas = [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
        assert all(n == 1 for n in blas)
        with pytest.raises(RuntimeError, match="positive"):
            torch.set_num_threads(0)
        with pytest.raises(TypeError):
            torch.set_num_threads(1.5)
    finally:
        torch.set_num_threads(n0)
    assert torch.get_num_threads() == n0


def test_num_interop_threads_set_once():
    saved = _compat._threads["interop"]
    try:
        _compat._threads["interop"] = None
        assert torch.get_num_interop_threads() >= 1
        torch.set_num_interop_threads(2)
        assert torch.get_num_interop_threads() == 2
        with pytest.raises(RuntimeError, match="cannot set number of interop threads"):
            torch.set_num_interop_threads(3)
    finally:
        _compat._threads["interop"] = saved


# ---- compile / jit / onnx / compiler ----------------------------------------------------------------------
def test_compile_returns_compiled_callables_without_warning():
    model = torch.nn.Linear(2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = torch.compile(model, mode="max-autotune", fullgraph=True, dynamic=False)
        assert compiled._orig_mod is model and compiled.weight is model.weight
        assert list(compiled.state_dict()) == ["_orig_mod.weight", "_orig_mod.bias"]  # PyTorch's keys

        @torch.compile
        def f(x):
            return x * 2

        @torch.compile(backend="eager", mode="reduce-overhead")
        def g(x):
            return x + 1

        assert f(torch.ones(1)).item() == 2.0 and g(torch.ones(1)).item() == 2.0
        assert model.compile() is None  # in place, as PyTorch's Module.compile
        assert model(torch.ones(1, 2)).shape == (1, 2)
    with pytest.raises(RuntimeError, match="Either mode or options"):
        torch.compile(model, mode="default", options={"x": 1})
    with pytest.raises(RuntimeError, match="Unrecognized mode"):
        torch.compile(model, mode="fast")


def test_compile_disable_returns_the_callable():
    fn = torch.compile(lambda x: x, disable=True)
    assert fn(3) == 3


def test_jit():
    with pytest.raises(NotImplementedError, match="run the model eagerly"):
        torch.jit.script(torch.nn.Linear(2, 2))
    with pytest.raises(NotImplementedError, match="torch.jit.trace"):
        torch.jit.trace(torch.nn.Linear(2, 2), torch.ones(1, 2))
    with pytest.raises(NotImplementedError):
        torch.jit.load("model.pt")

    class M(torch.nn.Module):
        @torch.jit.ignore
        def helper(self, x):
            return x + 1

        @torch.jit.ignore(drop=True)
        def dropped(self, x):
            return x - 1

        @torch.jit.unused
        def unused(self, x):
            return x * 3

        @torch.jit.export
        def exported(self, x):
            return x * 2

    m = M()
    assert m.helper(1) == 2 and m.dropped(1) == 0 and m.unused(1) == 3 and m.exported(1) == 2
    assert torch.jit.is_scripting() is False and torch.jit.is_tracing() is False
    assert torch.jit.annotate(typing.List[int], []) == []


def test_onnx_and_compiler():
    onnx = importlib.import_module("coretorch.onnx")
    with pytest.raises(NotImplementedError, match="not supported"):
        onnx.export(torch.nn.Linear(2, 2), (torch.ones(1, 2),), "m.onnx")
    assert onnx.is_in_onnx_export() is False
    assert torch.compiler.is_compiling() is False

    @torch.compiler.disable
    def f(x):
        return x

    assert f(4) == 4 and torch.compiler.disable(recursive=False)(f)(5) == 5  # (a graph break inside a capture)


# ---- torch.accelerator -------------------------------------------------------------------------------------------
def test_accelerator_is_the_opencl_device_when_available():
    acc = torch.accelerator
    has_opencl = "opencl" in DEVICES
    assert acc.is_available() is has_opencl
    if has_opencl:
        assert acc.current_accelerator() == torch.device("opencl")
        assert acc.current_accelerator(check_available=True) == torch.device("opencl")
        assert acc.device_count() >= 1 and acc.current_device_index() == 0
        acc.set_device_index(0)
        with acc.device_index(0):
            assert acc.current_device_index() == 0
        with pytest.raises(RuntimeError, match="invalid device index"):
            acc.set_device_index(acc.device_count())
        x = torch.ones(3, device=acc.current_accelerator())
        acc.synchronize()
        assert x.device.type == "opencl" and x.sum().item() == 3.0
        assert acc.empty_cache() is None
    else:
        assert acc.current_accelerator(check_available=True) is None and acc.device_count() == 0
        for f in (acc.current_device_index, acc.synchronize, acc.empty_cache, lambda: acc.set_device_index(0)):
            with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available"):
                f()


def test_accelerator_device_selection_idiom():
    dev = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
    assert dev in DEVICES
    model = torch.nn.Linear(3, 1).to(dev)
    assert model(torch.ones(2, 3, device=dev)).shape == (2, 1)


# ---- PyTorch's submodule layout -------------------------------------------------------------------------
@pytest.mark.parametrize("path,names", [
    ("utils.data.dataloader", ["DataLoader", "default_collate", "get_worker_info"]),
    ("utils.data.dataset", ["Dataset", "TensorDataset", "Subset", "ConcatDataset", "IterableDataset",
                            "random_split"]),
    ("utils.data.sampler", ["Sampler", "SequentialSampler", "RandomSampler", "BatchSampler",
                            "SubsetRandomSampler"]),
    ("utils.data", ["get_worker_info", "DataLoader"]),
    ("nn.modules", ["Module", "Linear", "Conv2d", "ReLU", "MSELoss", "Sequential", "BatchNorm1d", "Dropout",
                    "LSTM", "LayerNorm", "Embedding", "MaxPool2d"]),
    ("nn.modules.module", ["Module"]),
    ("nn.modules.linear", ["Linear", "Identity"]),
    ("nn.modules.conv", ["Conv2d"]),
    ("nn.modules.activation", ["ReLU", "GELU", "Softmax"]),
    ("nn.modules.loss", ["MSELoss", "CrossEntropyLoss"]),
    ("nn.modules.container", ["Sequential", "ModuleList", "ModuleDict"]),
    ("nn.modules.batchnorm", ["BatchNorm1d", "BatchNorm2d"]),
    ("nn.modules.dropout", ["Dropout"]),
    ("nn.modules.rnn", ["LSTM", "GRU", "RNN"]),
    ("nn.modules.normalization", ["LayerNorm", "GroupNorm"]),
    ("nn.modules.sparse", ["Embedding"]),
    ("nn.modules.pooling", ["MaxPool2d"]),
    ("nn.parameter", ["Parameter", "Buffer"]),
    ("optim.optimizer", ["Optimizer"]),
    ("autograd.function", ["Function", "FunctionCtx", "once_differentiable"]),
    ("autograd.variable", ["Variable"]),
    ("nn.modules.utils", ["_pair", "_single"]),
    ("nn.init", ["xavier_uniform_", "kaiming_normal_", "zeros_"]),
])
def test_submodule_layout(path, names):
    mod = importlib.import_module(f"coretorch.{path}")
    parent = torch
    for part in path.split("."):
        parent = getattr(parent, part)  # reachable as attributes too (torch.utils.data.dataloader...)
    assert parent is mod
    canonical = {"utils": torch.utils.data, "nn": torch.nn, "optim": torch.optim, "autograd": torch.autograd}
    canonical = canonical[path.split(".")[0]] if path != "nn.init" else torch.nn.init
    for n in names:
        obj = getattr(mod, n)
        if not n.startswith("_"):
            assert getattr(canonical, n) is obj, n  # the same objects as the package's, not copies


def test_get_worker_info_is_none_in_the_main_process():
    from coretorch.utils.data import get_worker_info
    assert get_worker_info() is None


def test_torch_types():
    types = importlib.import_module("coretorch.types")
    assert types._int is int and types._float is float and types._bool is bool and types._complex is complex
    assert set(typing.get_args(types.Number)) == {int, float, bool}
    assert torch.device in typing.get_args(typing.get_args(types.Device)[0]) or \
        torch.device in typing.get_args(types.Device)
    assert types._dtype is torch.dtype and types._device is torch.device

    def f(x: types.Number, d: types.Device = None) -> types._int:
        return int(x)
    assert f(2.5) == 2


# ---- serialization safe globals ---------------------------------------------------------------------------
def test_safe_globals(tmp_path):
    ser = torch.serialization

    class Config:
        pass

    ser.clear_safe_globals()
    ser.add_safe_globals([Config, np.dtype])
    assert ser.get_safe_globals() == [Config, np.dtype]
    with ser.safe_globals([(math.sqrt, "math.sqrt")]):
        assert (math.sqrt, "math.sqrt") in ser.get_safe_globals()
    assert ser.get_safe_globals() == [Config, np.dtype]
    with pytest.raises(TypeError):
        ser.add_safe_globals(Config)
    ser.clear_safe_globals()
    assert ser.get_safe_globals() == []
    path = tmp_path / "w.pt"
    torch.save({"w": torch.ones(2)}, path)
    for wo in (True, False):
        assert torch.load(path, weights_only=wo)["w"].tolist() == [1.0, 1.0]


# ---- top-level softmax / log_softmax / dropout, grad mode -------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_top_level_softmax_log_softmax_dropout(device):
    a = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    x = torch.tensor(a, device=device)
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(torch.softmax(x, 1).cpu().numpy(), e / e.sum(1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(torch.softmax(x, -1, torch.float64).cpu().numpy(), e / e.sum(1, keepdims=True),
                               rtol=1e-5)
    assert torch.softmax(x, 0, dtype=torch.float64).dtype == torch.float64
    ls = a - a.max(1, keepdims=True) - np.log(e.sum(1, keepdims=True))
    np.testing.assert_allclose(torch.log_softmax(x, dim=1).cpu().numpy(), ls, rtol=1e-5, atol=1e-6)
    assert torch.dropout(x, 0.5, False) is x
    torch.manual_seed(0)
    d = torch.dropout(torch.ones(1000, device=device), 0.25, True).cpu().numpy()
    assert np.all((d == 0) | np.isclose(d, 1 / 0.75))
    assert 0.15 < (d == 0).mean() < 0.35
    xg = torch.tensor(a.astype(np.float64), device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: torch.softmax(t, 1), (xg,))
    assert torch.autograd.gradcheck(lambda t: torch.log_softmax(t, 0), (xg,))


def test_grad_mode_functions_and_inference_mode():
    assert torch.is_grad_enabled() is True and torch.is_inference_mode_enabled() is False
    with torch.inference_mode():
        assert torch.is_inference_mode_enabled() is True and torch.is_grad_enabled() is False
        with torch.inference_mode(False):
            assert torch.is_inference_mode_enabled() is False and torch.is_grad_enabled() is True
        assert torch.is_inference_mode_enabled() is True
    assert torch.is_inference_mode_enabled() is False

    @torch.inference_mode()
    def f():
        return torch.is_inference_mode_enabled(), torch.is_grad_enabled()

    @torch.inference_mode
    def g():
        return torch.is_inference_mode_enabled()

    @torch.inference_mode(False)
    def h():
        return torch.is_inference_mode_enabled()

    assert f() == (True, False) and g() is True
    with torch.inference_mode():
        assert h() is False
    torch.set_grad_enabled(False)
    assert torch.is_grad_enabled() is False
    torch.set_grad_enabled(True)
    with torch.set_grad_enabled(False):
        y = torch.ones(1, requires_grad=True) * 2
    assert y.grad_fn is None and torch.is_grad_enabled()


def test_memory_formats_and_layout():
    assert repr(torch.preserve_format) == "torch.preserve_format"
    assert repr(torch.channels_last) == "torch.channels_last" and repr(torch.strided) == "torch.strided"
    assert isinstance(torch.contiguous_format, torch.memory_format) and isinstance(torch.strided, torch.layout)
    x = torch.ones(2, 3)
    assert x.clone(memory_format=torch.preserve_format).shape == (2, 3)


def test_functional_dropout_unchanged():
    x = torch.ones(4)
    assert F.dropout(x, 0.5, training=False) is x


def test_cuda_legacy_classes_rng_state_and_version():
    T = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor
    assert T is torch.FloatTensor and T(2).dtype == torch.float32
    assert not isinstance(torch.ones(1), torch.cuda.FloatTensor)
    with pytest.raises(TypeError, match="type torch.cuda.LongTensor not available"):
        torch.cuda.LongTensor([1])
    with pytest.raises(AssertionError):
        torch.cuda.get_rng_state()
    assert torch.cuda.set_rng_state(None) is None and torch.cuda.get_arch_list() == []
    assert torch.version.cuda is None and torch.version.hip is None
    assert torch.version.__version__ == torch.__version__


def test_backends_fp32_precision_flags():
    b = torch.backends
    assert b.fp32_precision == "ieee" and b.cuda.matmul.fp32_precision == "ieee"
    assert b.cudnn.conv.fp32_precision == "ieee" and b.cudnn.rnn.fp32_precision == "ieee"
    old = b.cuda.matmul.fp32_precision, b.cudnn.conv.fp32_precision
    try:
        b.cuda.matmul.fp32_precision = "tf32"
        b.cudnn.conv.fp32_precision = "tf32"
        assert torch.backends.cuda.matmul.fp32_precision == "tf32"
        assert torch.backends.cudnn.conv.fp32_precision == "tf32"
    finally:
        b.cuda.matmul.fp32_precision, b.cudnn.conv.fp32_precision = old


# ---- anomaly detection ------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_set_detect_anomaly_names_the_nan_node(device):
    x = torch.tensor([0.0, 1.0], device=device, requires_grad=True)
    try:
        torch.autograd.set_detect_anomaly(True)
        assert torch.autograd.is_anomaly_enabled() and torch.autograd.is_anomaly_check_nan_enabled()
        y = (x.sqrt() * 0).sum()
        with pytest.raises(RuntimeError, match=r"Function 'SqrtBackward0' returned nan values in its 0th output\."):
            y.backward()
        with pytest.raises(RuntimeError, match="Function 'DivBackward0' returned nan values in its 1th output"):
            torch.autograd.grad((x / x).sum(), x)
        x.grad = None
        (x * x).sum().backward()  # a clean backward passes
        np.testing.assert_allclose(x.grad.cpu().numpy(), [0.0, 2.0])
        y = x * 3
        y.sum().backward(retain_graph=True)
        assert not y.grad_fn._hooks  # the checks are removed after each backward
    finally:
        torch.autograd.set_detect_anomaly(False)
    assert not torch.autograd.is_anomaly_enabled()
    x.grad = None
    (x.sqrt() * 0).sum().backward()  # off: NaN gradients pass silently, as PyTorch
    assert np.isnan(x.grad.cpu().numpy()[0])


def test_detect_anomaly_context_and_decorator():
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        with torch.autograd.detect_anomaly():
            assert torch.autograd.is_anomaly_enabled()
            with torch.autograd.set_detect_anomaly(False):
                assert not torch.autograd.is_anomaly_enabled()
            assert torch.autograd.is_anomaly_enabled()
    assert not torch.autograd.is_anomaly_enabled()
    with pytest.warns(UserWarning):
        @torch.autograd.detect_anomaly(check_nan=False)
        def f(t):
            assert torch.autograd.is_anomaly_enabled() and not torch.autograd.is_anomaly_check_nan_enabled()
            (t.sqrt() * 0).sum().backward()  # check_nan=False: no error
            return t.grad
    g = f(torch.tensor([0.0], requires_grad=True))
    assert np.isnan(g.numpy()[0]) and not torch.autograd.is_anomaly_enabled()


def test_utils_checkpoint_gives_the_plain_results_and_gradients():
    from coretorch.utils.checkpoint import checkpoint, checkpoint_sequential
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    x = torch.randn(5, 3, requires_grad=True)
    ref = net(x).sum()
    gref = torch.autograd.grad(ref, [x, *net.parameters()])
    out = checkpoint(net, x, use_reentrant=False).sum()
    g = torch.autograd.grad(out, [x, *net.parameters()])
    assert out.item() == ref.item()
    for a, b in zip(g, gref):
        np.testing.assert_allclose(a.numpy(), b.numpy())
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(net, x)
    with pytest.raises(ValueError, match="Unexpected keyword"):
        checkpoint(lambda a, scale=1: a * scale, x, use_reentrant=True, scale=2)
    assert checkpoint(lambda a, scale=1: a * scale, x, use_reentrant=False, scale=2).shape == x.shape
    s = checkpoint_sequential(net, 2, x, use_reentrant=False)
    np.testing.assert_allclose(s.detach().numpy(), net(x).detach().numpy())


def test_device_from_an_ordinal_is_the_accelerator():
    if not torch.accelerator.is_available():
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available"):
            torch.device(0)
    else:
        d = torch.device(0)
        assert d == torch.device("opencl", 0)
        assert torch.ones(1, device=d).device == d
        with pytest.raises(RuntimeError, match="must not be negative"):
            torch.device(-1)
    with pytest.raises(TypeError):
        torch.device(True)


def test_accelerator_without_one(monkeypatch):
    """As PyTorch on a machine without an accelerator (the opencl backend hidden here)."""
    acc = torch.accelerator
    monkeypatch.setattr(acc, "_backend", lambda: None)
    assert acc.is_available() is False and acc.device_count() == 0
    assert acc.current_accelerator(check_available=True) is None
    for f in (acc.current_device_index, acc.synchronize, acc.empty_cache, lambda: acc.set_device_index(0),
              lambda: torch.device(0), lambda: torch.ones(2).pin_memory()):
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available"):
            f()
    dev = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
    assert dev == "cpu"


def test_multiprocessing_namespace_and_spawn(tmp_path):
    import sys
    mp = importlib.import_module("coretorch.multiprocessing")
    assert mp.Process is __import__("multiprocessing").Process and mp.cpu_count() >= 1
    assert mp.get_sharing_strategy() == "file_descriptor"
    mp.set_sharing_strategy("file_system")
    assert mp.get_sharing_strategy() == "file_system" and "file_system" in mp.get_all_sharing_strategies()
    mp.set_sharing_strategy("file_descriptor")
    with pytest.raises(AssertionError):
        mp.set_sharing_strategy("shm")
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    try:
        worker = importlib.import_module("_compat_mp_worker")
        mp.spawn(worker.write_square, args=(str(tmp_path),), nprocs=2)
        for i in range(2):
            np.testing.assert_allclose(np.load(tmp_path / f"{i}.npy"), (np.arange(3.0) * i) ** 2)
        with pytest.raises(mp.ProcessRaisedException, match="worker one failed"):
            mp.spawn(worker.fail_on_one, nprocs=2)
    finally:
        sys.path.remove(str(__import__("pathlib").Path(__file__).parent))
