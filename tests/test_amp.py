"""torch.autocast / torch.amp (op dtype policies, nesting, decorator, thread-locality, PyTorch's warnings) and
torch.amp.GradScaler (disabled path exactly as PyTorch; enabled path: inf/NaN skipping, backoff, growth, state)."""
import pathlib
import pickle
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F
from coretorch import nn


def low(device):
    """The lower precision dtype the tests use per device: PyTorch's CPU default, float16 on opencl (as CUDA)."""
    return torch.bfloat16 if device == "cpu" else torch.float16


class TestAutocastPolicies:
    def test_defaults(self):
        assert torch.get_autocast_dtype("cpu") is torch.bfloat16
        assert torch.get_autocast_dtype("cuda") is torch.float16
        assert torch.get_autocast_dtype("opencl") is torch.float16
        assert not torch.is_autocast_enabled() and not torch.is_autocast_enabled("cpu")
        assert torch.amp.autocast is torch.autocast

    def test_lower_precision_ops(self, device):
        d = low(device)
        x = torch.randn(4, 3, device=device)
        w = torch.randn(5, 3, device=device)
        b = torch.randn(5, device=device)
        with torch.autocast(device, dtype=d):
            assert torch.is_autocast_enabled(device) and torch.get_autocast_dtype(device) is d
            assert F.linear(x, w, b).dtype is d
            assert F.linear(x, w).dtype is d
            assert (x @ w.t()).dtype is d and torch.matmul(x, w.t()).dtype is d
            assert torch.mm(x, w.t()).dtype is d
            assert torch.bmm(x[None], w.t()[None]).dtype is d
            assert torch.addmm(b, x, w.t()).dtype is d
            img = torch.randn(1, 2, 5, 5, device=device)
            assert F.conv2d(img, torch.randn(3, 2, 3, 3, device=device)).dtype is d
            assert F.conv1d(img[:, :, 0], torch.randn(3, 2, 3, device=device)).dtype is d
            # ops outside the lists keep their inputs' dtypes
            assert (x + 1).dtype is torch.float32 and x.relu().dtype is torch.float32
        assert F.linear(x, w, b).dtype is torch.float32
        assert not torch.is_autocast_enabled(device)

    def test_values_are_the_low_precision_product(self, device):
        d = low(device)
        x = torch.randn(6, 5, device=device)
        w = torch.randn(4, 5, device=device)
        with torch.autocast(device, dtype=d):
            y = F.linear(x, w)
        ref = F.linear(x.to(d), w.to(d))
        assert y.dtype is d and (y.float() - ref.float()).abs().max().item() == 0

    def test_float32_ops(self, device):
        d = low(device)
        y = torch.randn(4, 5, device=device).to(d)
        t = torch.tensor([0, 1, 2, 3], device=device)
        with torch.autocast(device, dtype=d):
            assert F.cross_entropy(y, t).dtype is torch.float32
            assert F.nll_loss(F.log_softmax(y.float(), -1), t).dtype is torch.float32
            assert F.mse_loss(y, torch.zeros(4, 5, device=device)).dtype is torch.float32
            assert F.l1_loss(y, y).dtype is torch.float32
            assert F.binary_cross_entropy_with_logits(y, torch.ones(4, 5, device=device)).dtype is torch.float32
            soft = F.softmax(y, -1).dtype
            norm = F.layer_norm(y, (5,)).dtype
        if device == "cpu":  # PyTorch's CPU lists keep softmax and layer_norm in the input dtype
            assert soft is d and norm is d
        else:                # its CUDA lists (which opencl follows) run them in float32
            assert soft is torch.float32 and norm is torch.float32
        p = torch.rand(4, 5, device=device)
        with torch.autocast(device, dtype=d):
            if device == "cpu":  # on CPU's float32 list
                assert F.binary_cross_entropy(p, p).dtype is torch.float32
            else:                # CUDA's autocast refuses it (float16 is unsafe there)
                with pytest.raises(RuntimeError, match="binary_cross_entropy and torch.nn.BCELoss are unsafe"):
                    F.binary_cross_entropy(p, p)
            mv = torch.mv(x := torch.randn(3, 4, device=device), torch.randn(4, device=device))
            assert mv.dtype is (torch.float32 if device == "cpu" else d)  # mv: on CUDA's list, not CPU's
        assert torch.mv(x, torch.randn(4, device=device)).dtype is torch.float32

    def test_float64_not_cast(self):
        x = torch.randn(3, 3, dtype=torch.float64)
        with torch.autocast("cpu"):
            assert (x @ x).dtype is torch.float64
            assert F.mse_loss(x, x).dtype is torch.float64

    def test_grads_flow_back_in_parameter_dtype(self, device):
        w = torch.randn(5, 3, device=device, requires_grad=True)
        b = torch.randn(5, device=device, requires_grad=True)
        x = torch.randn(4, 3, device=device)
        with torch.autocast(device, dtype=low(device)):
            loss = F.cross_entropy(F.linear(x, w, b), torch.tensor([0, 1, 2, 3], device=device))
        loss.backward()
        assert w.grad.dtype is torch.float32 and b.grad.dtype is torch.float32
        assert np.isfinite(w.grad.cpu().numpy()).all()

    def test_nesting_and_disable(self, device):
        x = torch.randn(2, 2, device=device)
        with torch.autocast(device, dtype=torch.bfloat16):
            assert (x @ x).dtype is torch.bfloat16
            with torch.autocast(device, enabled=False):
                assert not torch.is_autocast_enabled(device)
                assert (x @ x).dtype is torch.float32
            assert (x @ x).dtype is torch.bfloat16
            with torch.autocast(device, dtype=torch.float16):
                assert (x @ x).dtype is torch.float16
            assert torch.get_autocast_dtype(device) is torch.bfloat16
        assert torch.get_autocast_dtype(device) is low(device)
        with torch.autocast(device, enabled=False):
            assert (x @ x).dtype is torch.float32

    def test_state_functions(self):
        x = torch.ones(2, 2)
        torch.set_autocast_dtype("cpu", torch.float16)
        try:
            assert torch.get_autocast_dtype("cpu") is torch.float16
            with torch.autocast("cpu"):  # dtype=None: the dtype set for the device type
                assert (x @ x).dtype is torch.float16
            torch.set_autocast_enabled("cpu", True)
            assert torch.is_autocast_enabled("cpu") and (x @ x).dtype is torch.float16
        finally:
            torch.set_autocast_enabled("cpu", False)
            torch.set_autocast_dtype("cpu", torch.bfloat16)
        assert (x @ x).dtype is torch.float32 and not torch.is_autocast_enabled("cpu")
        assert torch.is_autocast_cache_enabled()
        with torch.autocast("cpu", cache_enabled=False):
            assert not torch.is_autocast_cache_enabled()
        assert torch.is_autocast_cache_enabled()
        torch.clear_autocast_cache()

    def test_exception_restores_state(self):
        with pytest.raises(ValueError):
            with torch.autocast("cpu"):
                raise ValueError("boom")
        assert not torch.is_autocast_enabled("cpu")

    def test_decorator(self, device):
        d = low(device)

        @torch.autocast(device, dtype=d)
        def f(a, b):
            return a @ b

        x = torch.randn(2, 2, device=device)
        assert f(x, x).dtype is d and (x @ x).dtype is torch.float32

    def test_thread_local(self):
        seen = []
        with torch.autocast("cpu"):
            th = threading.Thread(target=lambda: seen.append((torch.is_autocast_enabled("cpu"),
                                                              (torch.ones(2, 2) @ torch.ones(2, 2)).dtype)))
            th.start()
            th.join()
            assert torch.is_autocast_enabled("cpu")
        assert seen == [(False, torch.float32)]


class TestAutocastWarningsAndErrors:
    def test_cuda_unavailable_disables_with_warning(self):
        x = torch.randn(2, 2)
        with pytest.warns(UserWarning, match="CUDA is not available or torch_xla is imported. Disabling autocast."):
            ctx = torch.autocast("cuda")
        with ctx:
            assert not torch.is_autocast_enabled("cuda") and not torch.is_autocast_enabled()
            assert (x @ x).dtype is torch.float32

    def test_cuda_amp_module(self):
        import coretorch.cuda.amp as cuda_amp
        with pytest.warns(FutureWarning, match=r"torch.cuda.amp.autocast\(args...\)` is deprecated"):
            with pytest.warns(UserWarning, match="CUDA is not available"):
                ctx = cuda_amp.autocast()
        with ctx:
            assert not torch.is_autocast_enabled("cuda")
        with pytest.warns(FutureWarning, match=r"torch.cuda.amp.GradScaler\(args...\)` is deprecated"):
            with pytest.warns(UserWarning, match="GradScaler is enabled, but CUDA is not available"):
                s = cuda_amp.GradScaler()
        assert isinstance(s, torch.amp.GradScaler) and not s.is_enabled()

    def test_cpu_unsupported_dtype(self):
        with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not supported"):
            ctx = torch.autocast("cpu", dtype=torch.float32)
        with ctx:
            assert not torch.is_autocast_enabled("cpu")

    def test_bad_device_type(self):
        # (PyTorch 2.13 parses the name as a device string first: an unknown one raises that error)
        with pytest.raises(RuntimeError, match="device type at start of device string: xyz"):
            torch.autocast("xyz")
        with pytest.raises(RuntimeError):  # (a known device type without autocast)
            torch.autocast("mkldnn")
        with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
            torch.autocast(torch.device("cpu"))
        assert torch.amp.is_autocast_available("cpu") and not torch.amp.is_autocast_available("mkldnn")


class _Mul(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cpu", cast_inputs=torch.float32)
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        ctx.inside = (torch.is_autocast_enabled("cpu"), a.dtype)
        return a @ b

    @staticmethod
    @torch.amp.custom_bwd(device_type="cpu")
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g @ b.t(), a.t() @ g


def test_custom_fwd_bwd():
    a = torch.randn(2, 3, requires_grad=True)
    b = torch.randn(3, 2, requires_grad=True)
    with torch.autocast("cpu"):
        a16 = a.bfloat16()
        out = _Mul.apply(a16, b)
    assert out.dtype is torch.float32  # forward ran with float32 inputs, autocast off
    out.sum().backward()
    assert a.grad is not None and a.grad.dtype is torch.float32 and b.grad.dtype is torch.float32
    out2 = _Mul.apply(a, b)  # outside a region: a no-op
    assert out2.dtype is torch.float32


def _mlp(device, seed=0):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3)).to(device)
    g = np.random.default_rng(seed)
    x = torch.tensor(g.standard_normal((64, 8)).astype(np.float32), device=device)
    y = torch.tensor(np.asarray(x.cpu().numpy()[:, :3].argmax(1)), device=device)  # a learnable target
    return model, x, y


def test_bfloat16_autocast_training_loss_decreases(device):
    model, x, y = _mlp(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        with torch.autocast(device, dtype=torch.bfloat16):
            out = model(x)
            assert out.dtype is torch.bfloat16
            loss = F.cross_entropy(out, y)
            assert loss.dtype is torch.float32
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert all(p.dtype is torch.float32 for p in model.parameters())
    assert losses[-1] < 0.6 * losses[0]


class TestGradScalerDisabled:
    def test_disabled_path(self, device):
        s = torch.amp.GradScaler(device, enabled=False)
        x = torch.ones(2, device=device, requires_grad=True)
        assert s.scale(x) is x
        outs = [x, x]
        assert s.scale(outs) is outs
        calls = []

        class Opt:
            param_groups = []

            def step(self, *a, **k):
                calls.append((a, k))
                return "ret"

        assert s.step(Opt(), 1, closure=None) == "ret" and calls == [((1,), {"closure": None})]
        assert s.step(Opt(), return_found_inf=True) == ("ret", False)
        s.unscale_(Opt())
        s.update()
        s.update(2.0)
        assert s.get_scale() == 1.0 and s.state_dict() == {} and not s.is_enabled()
        s.load_state_dict({})
        assert s._get_growth_tracker() == 0

    def test_cuda_default_warns_and_disables(self):
        with pytest.warns(UserWarning, match=r"torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                                             r"Disabling."):
            s = torch.amp.GradScaler()
        assert not s.is_enabled() and s.get_scale() == 1.0
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            torch.amp.GradScaler(enabled=False)  # disabled explicitly: no warning


def _setup(device, **kw):
    torch.manual_seed(0)
    model = nn.Linear(3, 2).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler(device, **kw)
    x = torch.randn(4, 3, device=device)
    return model, opt, scaler, x


class TestGradScalerEnabled:
    def test_scale_unscale_step(self, device):
        model, opt, scaler, x = _setup(device, init_scale=1024.0)
        loss = model(x).sum()
        scaled = scaler.scale(loss)
        assert abs(scaled.item() - 1024.0 * loss.item()) <= 1e-3 * abs(scaled.item())
        assert scaler.get_scale() == 1024.0 and scaler._scale.device == scaled.device
        scaled.backward()
        ref = [p.grad.cpu().numpy() / 1024.0 for p in model.parameters()]
        before = [p.detach().cpu().numpy().copy() for p in model.parameters()]
        scaler.unscale_(opt)
        for p, r in zip(model.parameters(), ref):
            assert np.allclose(p.grad.cpu().numpy(), r, rtol=1e-6)
        with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
            scaler.unscale_(opt)
        scaler.step(opt)
        for p, b, r in zip(model.parameters(), before, ref):
            assert np.allclose(p.detach().cpu().numpy(), b - 0.1 * r, rtol=1e-5, atol=1e-6)
        with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
            scaler.step(opt)
        scaler.update()
        assert scaler.get_scale() == 1024.0 and scaler._get_growth_tracker() == 1

    @pytest.mark.parametrize("bad", [float("inf"), float("nan")])
    def test_inf_skips_step_and_backs_off(self, device, bad):
        model, opt, scaler, x = _setup(device, init_scale=256.0)
        scaler.scale(model(x).sum()).backward()
        g = model.weight.grad
        g[0, 1] = bad  # one non-finite gradient value
        before = [p.detach().cpu().numpy().copy() for p in model.parameters()]
        ret, found = scaler.step(opt, return_found_inf=True)
        assert ret is None and found
        for p, b in zip(model.parameters(), before):
            assert np.array_equal(p.detach().cpu().numpy(), b)  # the step was skipped
        scaler.update()
        assert scaler.get_scale() == 128.0 and scaler._get_growth_tracker() == 0

    def test_growth_after_interval(self, device):
        model, opt, scaler, x = _setup(device, init_scale=8.0, growth_interval=3, growth_factor=4.0)
        scales = []
        for _ in range(4):
            opt.zero_grad()
            scaler.scale(model(x).sum()).backward()
            scaler.step(opt)
            scaler.update()
            scales.append(scaler.get_scale())
        assert scales == [8.0, 8.0, 32.0, 32.0]
        assert scaler._get_growth_tracker() == 1

    def test_new_scale(self, device):
        model, opt, scaler, x = _setup(device)
        scaler.scale(model(x).sum()).backward()
        scaler.step(opt)
        scaler.update(new_scale=3.0)
        assert scaler.get_scale() == 3.0

    def test_state_dict_round_trip(self, device):
        model, opt, scaler, x = _setup(device, init_scale=512.0, growth_interval=5)
        scaler.scale(model(x).sum()).backward()
        scaler.step(opt)
        scaler.update()
        sd = scaler.state_dict()
        assert sd == {"scale": 512.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 5,
                      "_growth_tracker": 1}
        other = torch.amp.GradScaler(device)
        other.load_state_dict(sd)
        assert other.state_dict() == sd and other.get_scale() == 512.0
        other.scale(torch.ones((), device=device))
        assert other._get_growth_tracker() == 1
        with pytest.raises(RuntimeError, match="The source state dict is empty"):
            other.load_state_dict({})

    def test_pickle_between_iterations(self, device):
        model, opt, scaler, x = _setup(device, init_scale=64.0)
        scaler.scale(model(x).sum()).backward()
        scaler.step(opt)
        scaler.update()
        other = pickle.loads(pickle.dumps(scaler))
        assert other.state_dict() == scaler.state_dict() and other.is_enabled()
        other.scale(model(x).sum()).backward()  # usable: its scale is recreated lazily
        other.step(opt)
        other.update()
        assert other._get_growth_tracker() == 2

    def test_fp16_grads_refused(self, device):
        p = torch.zeros(2, dtype=torch.float16, device=device, requires_grad=True)
        opt = torch.optim.SGD([p], lr=0.1)
        scaler = torch.amp.GradScaler(device)
        scaler.scale((p.float() * 2).sum()).backward()
        with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
            scaler.step(opt)

    @pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # numpy's float16 kernels
    @pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
    def test_float16_autocast_training_with_scaler(self, device):
        model, x, y = _mlp(device, seed=1)
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        scaler = torch.amp.GradScaler(device, init_scale=2.0 ** 24, growth_interval=4)
        losses = []
        for _ in range(30):
            opt.zero_grad()
            with torch.autocast(device, dtype=torch.float16):
                out = model(x)
                assert out.dtype is torch.float16
                loss = F.cross_entropy(out, y)
            scaler.scale(loss).backward()  # 2**24 overflows float16 gradients at first: steps skipped, scale backs off
            scaler.step(opt)
            scaler.update()
            losses.append(loss.item())
        assert scaler.get_scale() < 2.0 ** 24
        assert all(np.isfinite(p.detach().cpu().numpy()).all() for p in model.parameters())
        assert losses[-1] < 0.6 * losses[0]


@pytest.mark.parametrize("fp16", [False, True], ids=["bf16", "fp16-scaler"])
def test_example_program(device, fp16):
    """examples/amp_bf16_training.py runs as shipped and learns (bfloat16 autocast; float16 with a GradScaler)."""
    script = pathlib.Path(__file__).resolve().parents[1] / "examples" / "amp_bf16_training.py"
    cmd = [sys.executable, str(script), "--device", device, "--steps", "60"] + (["--fp16"] if fp16 else [])
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    last = r.stdout.strip().splitlines()[-1]
    first, final = (float(last.split(k)[1].split(";")[0]) for k in ("first loss ", "final loss "))
    assert final < 0.3 * first and float(last.split("accuracy ")[1].split(";")[0]) > 0.9
    assert last.endswith("parameters coretorch.float32")


def test_the_product_family_follows_the_op_lists(device):
    """baddbmm/addbmm are lower precision everywhere; addmv/addr only on GPU-like devices (CUDA's list, which opencl
    follows); cdist and dist run in float32 (dist on GPU-like devices only), as PyTorch's lists say."""
    low = torch.bfloat16 if device == "cpu" else torch.float16
    gpu = device != "cpu"
    a, b, c = (torch.randn(*s, device=device) for s in ((2, 3, 4), (2, 4, 5), (3, 5)))
    v3, v5 = torch.randn(3, device=device), torch.randn(5, device=device)
    with torch.autocast(device, dtype=low):
        assert torch.baddbmm(c, a, b).dtype is low and torch.addbmm(c, a, b).dtype is low
        assert torch.addmv(v3, c, v5).dtype is (low if gpu else torch.float32)
        assert torch.addr(c, v3, v5).dtype is (low if gpu else torch.float32)
        c_low = c.to(low)
        assert torch.cdist(c_low, c_low).dtype is torch.float32
        assert torch.dist(c_low, c_low).dtype is (torch.float32 if gpu else low)
    assert torch.baddbmm(c, a, b).dtype is torch.float32  # outside the region: as given


def test_reductions_and_multi_dot_follow_the_op_lists(device):
    """prod and trace run in float32 everywhere; cumsum and cumprod in float32 on GPU-like devices only (CUDA's list);
    multi_dot is lower precision on GPU-like devices and, through its matmuls, on cpu too (as PyTorch's dispatcher
    autocasts a composite op's matmuls)."""
    low = torch.bfloat16 if device == "cpu" else torch.float16
    gpu = device != "cpu"
    x = torch.randn(3, 3, device=device)
    xl = x.to(low)
    with torch.autocast(device, dtype=low):
        assert torch.prod(xl).dtype is torch.float32 and torch.trace(xl).dtype is torch.float32
        assert torch.cumsum(xl, 0).dtype is (torch.float32 if gpu else low)
        assert torch.cumprod(xl, 0).dtype is (torch.float32 if gpu else low)
        assert torch.linalg.multi_dot([x, x, x]).dtype is low
    assert torch.prod(xl).dtype is low and torch.linalg.multi_dot([x, x, x]).dtype is torch.float32


# PyTorch 2.13's dtypes of the recurrent layers under autocast: CPU lowers lstm (its mkldnn kernel) and runs the
# others as composites (RNN and RNNCell stay in the lower precision, GRU and the LSTM/GRU cells come out float32:
# their state update adds the float32 state); CUDA's list lowers every recurrent op and cell (opencl follows CUDA)
_RNN_CPU = {"LSTM": "low", "GRU": "f32", "RNN": "low", "LSTMCell": "f32", "GRUCell": "f32", "RNNCell": "low"}


@pytest.mark.parametrize("cls", sorted(_RNN_CPU))
def test_recurrent_layers_follow_the_autocast_lists(device, cls):
    """Before, every recurrent layer and cell came out float32 under autocast (their linear layers added a float32
    bias), where PyTorch's LSTM, RNN and RNNCell give the lower precision on CPU and all of them on CUDA."""
    low = torch.bfloat16 if device == "cpu" else torch.float16
    torch.manual_seed(0)
    m = getattr(nn, cls)(4, 5).to(device)
    x = (torch.randn(3, 4) if "Cell" in cls else torch.randn(2, 3, 4)).to(device)
    ref = m(x)
    with torch.autocast(torch.device(device).type, dtype=low):
        out = m(x)
    o, r = (out[0], ref[0]) if isinstance(out, tuple) else (out, ref)
    want = low if device != "cpu" or _RNN_CPU[cls] == "low" else torch.float32
    assert o.dtype is want
    if isinstance(out, tuple):
        state = out[1][0] if isinstance(out[1], tuple) else out[1]
        assert state.dtype is (want if cls != "LSTMCell" else o.dtype)
    np.testing.assert_allclose(o.float().detach().cpu().numpy(), r.detach().cpu().numpy(), atol=0.05)
    o.float().sum().backward()  # (the casts are differentiable: float32 gradients reach the parameters)
    assert all(p.grad is not None and p.grad.dtype is torch.float32 for p in m.parameters())
