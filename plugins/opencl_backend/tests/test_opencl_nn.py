"""End to end on 'opencl': the small MLP and CNN of tests/test_training.py (the UCI digits, nn layers,
F.cross_entropy, optim.SGD with momentum) trained on opencl reach the accuracy the same network reaches on cpu
(same seed, the cpu initialisation copied across, same batches); ``Module.to("opencl")``; the optimizer's
momentum buffers live on the device; a state dict saved from opencl loads on cpu and back."""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

import coretorch
import coretorch.nn as nn
import coretorch.nn.functional as F
from coretorch.optim import SGD
from coretorch_opencl import STATS

_BE = coretorch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")

DATA = Path(__file__).resolve().parents[3] / "tests" / "data" / "digits.npz"


@pytest.fixture(scope="module")
def digits():
    d = np.load(DATA)
    x = d["images"].astype(np.float32) / 16.0
    y = d["labels"].astype(np.int64)
    perm = np.random.default_rng(0).permutation(len(y))   # the split of tests/test_training.py
    x, y = x[perm], y[perm]
    return (x[:1347], y[:1347]), (x[1347:], y[1347:])


def _mlp():
    return nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))


def _cnn():
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),   # 8 x 4 x 4
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),                     # 16 x 2 x 2
        nn.Flatten(), nn.Linear(64, 10))


def _train(model, opt, train, shape, epochs, device, batch=64):
    x, y = train
    rng = np.random.default_rng(1)
    losses = []
    model.train()
    for _ in range(epochs):
        perm = rng.permutation(len(y))
        total = coretorch.zeros((), device=device)
        for i in range(0, len(y), batch):
            idx = perm[i:i + batch]
            xb = coretorch.tensor(x[idx].reshape((len(idx),) + shape), device=device)
            yb = coretorch.tensor(y[idx], device=device)
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            total = total + loss.detach() * len(idx)   # summed on the device: no sync per step
        losses.append(total.item() / len(y))
    return losses


def _predict(model, test, shape, device):
    x, y = test
    model.eval()
    with coretorch.no_grad():
        logits = model(coretorch.tensor(x.reshape((len(y),) + shape), device=device))
    return logits.argmax(1).cpu().numpy(), logits.cpu().numpy()


def _both(make, digits, shape, epochs, lr):
    """Train the same initialisation on cpu and on opencl; -> per device (losses, predictions, logits, model)."""
    coretorch.manual_seed(0)
    ref = make()
    out = {}
    for dev in ("cpu", "opencl"):
        model = make()
        model.load_state_dict(ref.state_dict())      # the cpu initialisation, copied
        model.to(dev)
        params = list(model.parameters())
        assert all(p.device.type == dev for p in params)
        opt = SGD(params, lr=lr, momentum=0.9)
        losses = _train(model, opt, digits[0], shape, epochs, dev)
        pred, logits = _predict(model, digits[1], shape, dev)
        out[dev] = (losses, pred, logits, model, opt)
    return out


def _check_same_training(out, test_y, min_acc):
    (lc, pc, gc, _, _), (lo, po, go, model, opt) = out["cpu"], out["opencl"]
    acc_c, acc_o = float((pc == test_y).mean()), float((po == test_y).mean())
    assert acc_c >= min_acc and acc_o >= min_acc, (acc_c, acc_o)
    assert abs(acc_c - acc_o) <= 2 / len(test_y), (acc_c, acc_o)   # at most 2 of 450 predictions differ
    assert lo[-1] < lo[0] / 3, lo
    np.testing.assert_allclose(lo, lc, rtol=2e-3, atol=2e-4)         # float32 paths differ only by rounding
    np.testing.assert_allclose(go, gc, rtol=5e-2, atol=5e-2)
    # the optimizer's momentum buffers (and every parameter) live on the device
    bufs = [opt.state[p]["momentum_buffer"] for p in model.parameters()]
    assert bufs and all(b.device.type == "opencl" for b in bufs)
    assert all(p.device.type == "opencl" for p in model.parameters())


def test_mlp_trains_on_opencl_like_cpu(digits):
    out = _both(_mlp, digits, (64,), epochs=6, lr=0.05)
    _check_same_training(out, digits[1][1], 0.94)


def test_cnn_trains_on_opencl_like_cpu(digits):
    out = _both(_cnn, digits, (1, 8, 8), epochs=4, lr=0.05)
    _check_same_training(out, digits[1][1], 0.9)
    model = out["opencl"][3]
    bn = model[1]
    assert bn.running_mean.device.type == "opencl" and bn.num_batches_tracked.device.type == "opencl"
    np.testing.assert_allclose(bn.running_var.cpu().numpy(), out["cpu"][3][1].running_var.numpy(), rtol=1e-3,
                               atol=1e-5)


def test_module_to_moves_parameters_buffers_and_grads():
    coretorch.manual_seed(0)
    m = _cnn()
    want = {k: v.numpy().copy() for k, v in m.state_dict().items()}
    assert m.to("opencl") is m
    sd = m.state_dict()
    assert set(sd) == set(want)
    for k, v in sd.items():
        assert v.device.type == "opencl", k
        np.testing.assert_array_equal(v.cpu().numpy(), want[k], err_msg=k)
    x = coretorch.randn(2, 1, 8, 8, device="opencl")
    m(x).sum().backward()
    assert all(p.grad is not None and p.grad.device.type == "opencl" for p in m.parameters())
    m.to("cpu")
    assert all(p.device.type == "cpu" and p.grad.device.type == "cpu" for p in m.parameters())


def test_state_dict_round_trip_opencl_cpu_opencl(tmp_path):
    coretorch.manual_seed(0)
    m = _mlp().to("opencl")
    opt = SGD(m.parameters(), lr=0.1, momentum=0.9)
    x = coretorch.randn(8, 64, device="opencl")
    y = coretorch.tensor([0, 1, 2, 3, 4, 5, 6, 7], device="opencl")
    for _ in range(2):
        opt.zero_grad()
        F.cross_entropy(m(x), y).backward()
        opt.step()
    path = tmp_path / "ckpt.safetensors"
    coretorch.save({"model": m.state_dict(), "optim": opt.state_dict()}, path)
    want = {k: v.cpu().numpy() for k, v in m.state_dict().items()}
    want_bufs = [opt.state[p]["momentum_buffer"].cpu().numpy() for p in m.parameters()]

    # default placement: back to the device it was saved from
    same = coretorch.load(path)
    assert all(v.device.type == "opencl" for v in same["model"].values())

    # opencl -> cpu
    ck = coretorch.load(path, map_location="cpu")
    cpu_model = _mlp()
    cpu_model.load_state_dict(ck["model"])
    for k, v in cpu_model.state_dict().items():
        assert v.device.type == "cpu"
        np.testing.assert_array_equal(v.numpy(), want[k], err_msg=k)
    cpu_opt = SGD(cpu_model.parameters(), lr=0.1, momentum=0.9)
    cpu_opt.load_state_dict(ck["optim"])
    for p, w in zip(cpu_model.parameters(), want_bufs):
        b = cpu_opt.state[p]["momentum_buffer"]
        assert b.device.type == "cpu"
        np.testing.assert_array_equal(b.numpy(), w)
    with coretorch.no_grad():
        ref = m(x).cpu().numpy()
        np.testing.assert_allclose(cpu_model(x.cpu()).numpy(), ref, rtol=1e-5, atol=1e-5)

    # cpu -> file -> opencl (through a file object and a map_location dict)
    buf = io.BytesIO()
    coretorch.save({"model": cpu_model.state_dict(), "optim": cpu_opt.state_dict()}, buf)
    buf.seek(0)
    back = coretorch.load(buf, map_location={"cpu": "opencl"})
    m2 = _mlp().to("opencl")
    m2.load_state_dict(back["model"])
    opt2 = SGD(m2.parameters(), lr=0.1, momentum=0.9)
    opt2.load_state_dict(back["optim"])
    for k, v in m2.state_dict().items():
        assert v.device.type == "opencl"
        np.testing.assert_array_equal(v.cpu().numpy(), want[k], err_msg=k)
    for p, w in zip(m2.parameters(), want_bufs):
        b = opt2.state[p]["momentum_buffer"]
        assert b.device.type == "opencl"
        np.testing.assert_array_equal(b.cpu().numpy(), w)
    # the restored model and optimizer keep training identically on both devices
    for model, o, dev in ((m2, opt2, "opencl"), (cpu_model, cpu_opt, "cpu")):
        o.zero_grad()
        F.cross_entropy(model(x.to(dev)), y.to(dev)).backward()
        o.step()
    for (k, a), b in zip(m2.state_dict().items(), cpu_model.state_dict().values()):
        np.testing.assert_allclose(a.cpu().numpy(), b.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)


def test_nn_training_step_host_transfers():
    """A whole nn + optim step (conv, batch norm, pooling, cross entropy, SGD with momentum) stays on the device
    except for one read per step: the core's target range check in F.nll_loss (``_nll_2d`` reads one bool to
    raise IndexError for an out-of-range class index); nothing is sent to the device."""
    coretorch.manual_seed(0)
    m = _cnn().to("opencl")
    opt = SGD(m.parameters(), lr=0.05, momentum=0.9)
    x = coretorch.randn(16, 1, 8, 8, device="opencl")
    y = coretorch.randint(0, 10, (16,), device="opencl")

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss
    first = step().item()
    before = (STATS["to_host"], STATS["to_device"])
    for _ in range(4):
        loss = step()
    assert STATS["to_device"] == before[1], "a host-to-device transfer happened inside an nn training step"
    assert STATS["to_host"] == before[0] + 4, "a device-to-host read beyond nll_loss's target check in a step"
    assert loss.item() < first


# ---------------------------------------------------------------------------------------------
# the fused nn kernels against the cpu's, on shapes beyond the shared cases (both softmax paths, the
# register-blocked matmul under conv, groups + dilation + stride, NaN in pooling, the backward kernels)
# ---------------------------------------------------------------------------------------------
def test_fused_kernels_are_registered():
    t = coretorch.ones(1, device="opencl")._be
    for name in ("conv2d", "conv2d_backward_input", "conv2d_backward_weight", "max_pool2d", "max_pool2d_backward",
                 "softmax", "log_softmax"):
        assert t.has(name), name


def _pair(a, dtype=np.float32, grad=True):
    a = np.asarray(a, dtype)
    return (coretorch.tensor(a, requires_grad=grad), coretorch.tensor(a, device="opencl", requires_grad=grad))


@pytest.mark.parametrize("shape,dim", [((3, 1000), 1), ((5, 300, 2), 1), ((2, 3, 7), 0), ((2, 3, 4, 600), -1)])
def test_softmax_kernels_match_cpu(shape, dim):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape) * 5
    a.flat[3] = np.inf if a.ndim == 2 else a.flat[3]
    for f in (F.softmax, F.log_softmax):
        for dt, tol in ((np.float32, 2e-6), (np.float64, 1e-13)):
            c, o = _pair(a, dt)
            yc, yo = f(c, dim), f(o, dim)
            np.testing.assert_allclose(yo.detach().cpu().numpy(), yc.detach().numpy(), rtol=tol * 10, atol=tol)
            g = np.asarray(rng.standard_normal(shape), dt)
            yc.backward(coretorch.tensor(g))
            yo.backward(coretorch.tensor(g, device="opencl"))
            np.testing.assert_allclose(o.grad.cpu().numpy(), c.grad.numpy(), rtol=tol * 100, atol=tol * 10)
    # a transposed (strided) input and a row of -inf (NaN out, as on cpu)
    x = np.array([[-np.inf] * 5, [0.0, 1.0, -np.inf, 2.0, 3.0]], np.float32)
    got = F.softmax(coretorch.tensor(x.T.copy(), device="opencl").t(), 1).cpu().numpy()
    want = F.softmax(coretorch.tensor(x), 1).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)


@pytest.mark.parametrize("xs,ws,kw", [((4, 3, 13, 11), (16, 3, 3, 3), dict(stride=1, padding=1)),
                                      ((2, 4, 9, 10), (8, 2, 3, 2), dict(stride=(2, 1), padding=(1, 0), dilation=2,
                                                                         groups=2)),
                                      ((3, 8, 16, 16), (8, 8, 5, 5), dict(padding=2))])
def test_conv2d_kernels_match_cpu(xs, ws, kw):
    rng = np.random.default_rng(1)
    xc, xo = _pair(rng.standard_normal(xs))
    wc, wo = _pair(rng.standard_normal(ws) * 0.3)
    yc, yo = F.conv2d(xc, wc, **kw), F.conv2d(xo, wo, **kw)
    np.testing.assert_allclose(yo.detach().cpu().numpy(), yc.detach().numpy(), rtol=1e-4, atol=1e-4)
    g = rng.standard_normal(tuple(yc.shape)).astype(np.float32)
    yc.backward(coretorch.tensor(g))
    yo.backward(coretorch.tensor(g, device="opencl"))
    np.testing.assert_allclose(xo.grad.cpu().numpy(), xc.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(wo.grad.cpu().numpy(), wc.grad.numpy(), rtol=1e-4, atol=2e-4)


def test_max_pool2d_kernels_match_cpu():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    a[0, 0, 0, 1] = np.nan
    a[1, 2, 4, 4] = a[1, 2, 4, 5]            # a tie: the first maximum wins
    for kw in (dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
               dict(kernel_size=(2, 3), stride=(1, 2), dilation=2)):
        c, o = _pair(a)
        (vc, ic), (vo, io_) = F.max_pool2d(c, return_indices=True, **kw), F.max_pool2d(o, return_indices=True, **kw)
        np.testing.assert_array_equal(vo.detach().cpu().numpy(), vc.detach().numpy())
        np.testing.assert_array_equal(io_.cpu().numpy(), ic.numpy())
        vc.sum().backward()                     # an expanded (zero-stride) gradient reaches the backward kernel
        vo.sum().backward()
        np.testing.assert_array_equal(o.grad.cpu().numpy(), c.grad.numpy())
