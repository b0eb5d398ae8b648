"""End to end on 'opencl': the small MLP and CNN of tests/test_training.py (the UCI digits, nn layers,
F.cross_entropy, optim.SGD with momentum) trained on opencl reach the accuracy the same network reaches on cpu
(same seed, the cpu initialisation copied across, same batches); ``Module.to("opencl")``; the optimizer's
momentum buffers live on the device; a state dict saved from opencl loads on cpu and back."""
from __future__ import annotations

import io

import numpy as np
import pytest

import coretorch
import coretorch.nn as nn
import coretorch.nn.functional as F
from coretorch import demo
from coretorch.optim import SGD
import coretorch_opencl
from coretorch_opencl import STATS

_BE = coretorch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")

DATA = demo.DATA  # the UCI digits shipped inside coretorch (the same file as tests/data/digits.npz)


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
    """A whole nn + optim step (conv, batch norm, pooling, cross entropy, SGD with momentum) stays on the device:
    no read and no write of its own.  F.nll_loss's target range check is a device-side check of the fused
    nll_loss kernel, read in the same synchronisation as the next host read the user asks for (the loss.item())."""
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
    assert STATS["to_host"] == before[0], "a device-to-host read happened inside an nn training step"
    assert loss.item() < first
    assert STATS["to_host"] == before[0] + 1, "loss.item() (with the pending target check) is more than one read"


# ---------------------------------------------------------------------------------------------
# the fused nn kernels against the cpu's, on shapes beyond the shared cases (both softmax paths, the
# register-blocked matmul under conv, groups + dilation + stride, NaN in pooling, the backward kernels)
# ---------------------------------------------------------------------------------------------
def test_fused_kernels_are_registered():
    t = coretorch.ones(1, device="opencl")._be
    for name in ("conv2d", "conv2d_backward_input", "conv2d_backward_weight", "max_pool2d", "max_pool2d_backward",
                 "softmax", "log_softmax", "nll_loss", "erf", "axpy_"):
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


# ---------------------------------------------------------------------------------------------
# nll_loss: the fused kernel (one launch, strided operands, float32/float64) and its device-side target check
# ---------------------------------------------------------------------------------------------
_TARGET_MSG = "(nll_loss on opencl: reported at the first host read after the op, as a device-side check)"


def _fp64() -> bool:
    return _BE.device(0).fp64


def _np_nll_parts(x, t, w, ignore):
    """numpy's reference of the primitive: (losses, weights, index)."""
    m, c = x.shape
    ok = (t != ignore) & (t >= 0) & (t < c)
    safe = np.where(ok, t, 0)
    wt = (np.ones(c, x.dtype) if w is None else w)[safe] * ok
    return -wt * x[np.arange(m), safe], wt.astype(x.dtype), safe.astype(np.int64)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_nll_loss_kernel_matches_numpy(dt):
    if dt == np.float64 and not _fp64():
        pytest.skip("the OpenCL device has no fp64")
    rng = np.random.default_rng(3)
    table = coretorch.ones(1, device="opencl")._be
    x = rng.standard_normal((37, 11)).astype(dt)
    t = rng.integers(0, 11, 37)
    t[[2, 5, 30]] = 4                                         # ignore_index inside the class range
    w = rng.random(11).astype(dt) + 0.5
    xt, tt, wt = table.from_numpy(x), table.from_numpy(t), table.from_numpy(w)
    for weight, ignore in ((None, -100), (w, -100), (None, 4), (w, 4)):
        before = STATS["launches"]
        got = table.nll_loss(xt, tt, None if weight is None else wt, ignore)
        assert STATS["launches"] == before + 1, "nll_loss is one launch"
        want = _np_nll_parts(x, t, weight, ignore)
        for g, r in zip(got, want):
            assert table.to_numpy(g).dtype == r.dtype
            np.testing.assert_allclose(table.to_numpy(g), r, rtol=1e-6 if dt == np.float32 else 1e-14)
    # strided x (a transposed copy read back transposed, every other row), target and weight
    xs = table.permute(table.from_numpy(np.ascontiguousarray(x.T)), (1, 0))
    xs = table.basic_index(xs, (slice(None, None, 2),))
    ts = table.basic_index(tt, (slice(None, None, 2),))
    w2 = np.repeat(w, 2)
    ws = table.basic_index(table.from_numpy(w2), (slice(None, None, 2),))
    assert not table.is_contiguous(xs)
    got = table.nll_loss(xs, ts, ws, 4)
    for g, r in zip(got, _np_nll_parts(x[::2], t[::2], w, 4)):
        np.testing.assert_allclose(table.to_numpy(g), r, rtol=1e-6 if dt == np.float32 else 1e-14)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_and_cross_entropy_match_cpu(reduction):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((9, 6))
    t = rng.integers(0, 6, 9)
    t[3] = -100
    w = rng.random(6) + 0.5
    dts = [(np.float32, 1e-5)] + ([(np.float64, 1e-12)] if _fp64() else [])
    for dt, tol in dts:
        for weight in (None, w):
            res = {}
            for dev in ("cpu", "opencl"):
                x = coretorch.tensor(a.astype(dt), device=dev, requires_grad=True)
                tw = None if weight is None else coretorch.tensor(weight.astype(dt), device=dev)
                tt = coretorch.tensor(t, device=dev)
                xv = x.t().contiguous().t()                        # a strided (column-major) input to the kernel
                loss = F.cross_entropy(xv, tt, tw, reduction=reduction) + \
                    F.nll_loss(xv * 0.5, tt, tw, reduction=reduction)
                loss.sum().backward()
                res[dev] = (loss.detach().cpu().numpy(), x.grad.cpu().numpy())
            np.testing.assert_allclose(res["opencl"][0], res["cpu"][0], rtol=tol, atol=tol)
            np.testing.assert_allclose(res["opencl"][1], res["cpu"][1], rtol=tol, atol=tol)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_nll_loss_backward_kernel_matches_numpy(dt):
    """The backward of nll_loss as one launch: -w_i g_i / -w_i g / -w_i (g / total) at (i, index_i), zeros elsewhere
    and in the rows of ignored targets (whose gradient would be NaN for an all-ignored batch otherwise; a row of
    weight 0 that is not ignored gets -(0 * g), a signed zero, as PyTorch's), a strided per-sample gradient for
    reduction 'none'."""
    if dt == np.float64 and not _fp64():
        pytest.skip("the OpenCL device has no fp64")
    rng = np.random.default_rng(6)
    table = coretorch.ones(1, device="opencl")._be
    m, c = 13, 70                                             # (c wider than one work-group row)
    idx = rng.integers(0, c, m)
    w = (rng.random(m) + 0.5).astype(dt)
    w[[1, 7, 9]] = 0
    raw = idx.copy()
    raw[[1, 7]] = -100                                        # rows 1 and 7 ignored (their index 0 as nll_loss's)
    idx[[1, 7]] = 0
    total = np.asarray(w.sum(), dt)
    g2 = rng.standard_normal(2 * m).astype(dt)
    for red in ("none", "sum", "mean"):
        g = g2[::2] if red == "none" else np.asarray(g2[0])
        gt = table.basic_index(table.from_numpy(g2), (slice(None, None, 2),)) if red == "none" \
            else table.from_numpy(np.array(g))
        before = STATS["launches"]
        got = table.to_numpy(table.nll_loss_backward(gt, table.from_numpy(w), table.from_numpy(total),
                                                     table.from_numpy(idx), table.from_numpy(raw), -100, c, red))
        assert STATS["launches"] == before + 1, "nll_loss_backward is one launch"
        coef = w * g if red != "mean" else w * (g / total)      # (PyTorch's order)
        want = np.zeros((m, c), dt)
        want[np.arange(m), idx] = np.where(raw == -100, 0, -coef)
        assert got.dtype == dt and got.shape == (m, c)
        np.testing.assert_array_equal(got, want)
        assert not np.signbit(got[[1, 7]]).any()              # ignored rows: +0
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))   # a row of weight 0: -(0 * g)


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("shape,dim", [((6, 10), 1), ((3, 4, 5), 1), ((3, 4, 5), 0), ((2, 9000), -1)])
def test_log_softmax_backward_kernel_matches_numpy(dt, shape, dim):
    """g - exp(y) * sum(g) in one launch (any dim, long rows with their sums compensated); half in float32,
    rounded once, as the cpu kernel."""
    if dt == np.float64 and not _fp64():
        pytest.skip("the OpenCL device has no fp64")
    rng = np.random.default_rng(7)
    table = coretorch.ones(1, device="opencl")._be
    x = rng.standard_normal(shape)
    y = x - np.log(np.exp(x).sum(dim, keepdims=True))
    g = rng.standard_normal(shape)
    yd, gd = y.astype(dt), g.astype(dt)
    before = STATS["launches"]
    got = table.to_numpy(table.log_softmax_backward(table.from_numpy(gd), table.from_numpy(yd), dim))
    if dt != np.float16:
        assert STATS["launches"] == before + 1, "log_softmax_backward is one launch"
    yf, gf = yd.astype(np.float64), gd.astype(np.float64)
    want = gf - np.exp(yf) * gf.sum(dim, keepdims=True)
    assert got.dtype == dt and got.shape == shape
    tol = {np.float16: 2e-3, np.float32: 2e-6, np.float64: 1e-13}[dt]
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)
    if dt == np.float16:   # rounded once from the float32 result
        f32 = table.to_numpy(table.log_softmax_backward(table.from_numpy(gd.astype(np.float32)),
                                                        table.from_numpy(yd.astype(np.float32)), dim))
        np.testing.assert_array_equal(got, f32.astype(np.float16))


def test_nll_loss_gradcheck_float64():
    if not _fp64():
        pytest.skip("the OpenCL device has no fp64")
    from coretorch.autograd import gradcheck
    rng = np.random.default_rng(5)
    x = coretorch.tensor(rng.standard_normal((5, 4)), device="opencl", requires_grad=True)
    w = coretorch.tensor(rng.random(4) + 0.5, device="opencl")
    t = coretorch.tensor([0, 3, -100, 1, 3], device="opencl")
    for red in ("mean", "sum", "none"):
        assert gradcheck(lambda a, r=red: F.nll_loss(a, t, w, reduction=r), (x,))


def test_nll_loss_target_check_at_next_host_read():
    """An out-of-range target raises IndexError naming it at the next host read (not at the call), in that
    read's own synchronisation (one transfer), and the device works normally afterwards."""
    x = coretorch.randn(4, 10, device="opencl")
    good = coretorch.tensor([1, 2, 3, 9], device="opencl")
    want = -float(np.mean(x.cpu().numpy()[np.arange(4), [1, 2, 3, 9]]))
    before = STATS["to_host"]
    loss = F.nll_loss(x, coretorch.tensor([1, 12, 3, 0], device="opencl"))   # no exception at the call
    assert STATS["to_host"] == before, "nll_loss read the host"
    with pytest.raises(IndexError, match=r"^Target 12 is out of bounds\. ") as info:
        loss.item()
    assert _TARGET_MSG in str(info.value)
    assert STATS["to_host"] == before + 1, "the check took a read of its own"
    # reported once: the device is usable again, valid targets give the right loss, reads do not raise
    assert F.nll_loss(x, good).item() == pytest.approx(want, rel=1e-6)
    assert (x * 2).sum().item() == pytest.approx(float(x.cpu().numpy().sum()) * 2, rel=1e-5, abs=1e-5)
    # the first failure of several is the one reported, at any host read (here of another tensor)
    F.nll_loss(x, coretorch.tensor([-3, 0, 0, 0], device="opencl"))
    F.cross_entropy(x, coretorch.tensor([0, 0, 10, 0], device="opencl"))
    with pytest.raises(IndexError, match=r"Target -3 is out of bounds"):
        good.tolist()
    assert good.tolist() == [1, 2, 3, 9]
    # an ignored target is never checked, even out of range
    assert np.isfinite(F.nll_loss(x, coretorch.tensor([-100, 1, 2, 3], device="opencl")).item())
    assert F.nll_loss(x, coretorch.tensor([7, 1, 2, 3], device="opencl"), ignore_index=7).item() == pytest.approx(
        -float(np.mean(x.cpu().numpy()[[1, 2, 3], [1, 2, 3]])), rel=1e-6)
    # no classes at all: every target that is not ignored fails the check, and x (no buffer) is never read
    table = x._be
    out = table.nll_loss(table.from_numpy(np.zeros((3, 0), np.float32)), table.from_numpy(np.array([-100, 0, 2])),
                         None, -100)
    with pytest.raises(IndexError, match=r"Target 0 is out of bounds"):
        table.to_numpy(out[0])
    assert table.to_numpy(out[0]).tolist() == [0, 0, 0] and table.to_numpy(out[2]).tolist() == [0, 0, 0]


def test_nll_loss_target_check_forced_by_synchronize():
    x = coretorch.randn(3, 5, device="opencl")
    F.nll_loss(x, coretorch.tensor([0, 5, 1], device="opencl"))
    with pytest.raises(IndexError, match=r"Target 5 is out of bounds"):
        _BE.synchronize()
    _BE.synchronize()                                        # nothing pending: no error, no read
    F.nll_loss(x, coretorch.tensor([-1, 0, 0], device="opencl"))
    with pytest.raises(IndexError, match=r"Target -1 is out of bounds"):
        coretorch_opencl.synchronize(0)                      # the module-level form
    before = STATS["to_host"]
    F.nll_loss(x, coretorch.tensor([0, 4, 1], device="opencl"))
    _BE.synchronize()                                        # a pending check that passed
    assert STATS["to_host"] == before
    assert x.sum().item() == pytest.approx(float(x.cpu().numpy().sum()), rel=1e-5, abs=1e-5)


# ---------------------------------------------------------------------------------------------
# erf: OpenCL C's builtin against the cpu's values, and its gradient
# ---------------------------------------------------------------------------------------------
def test_erf_kernel_matches_cpu():
    import math
    t = coretorch.ones(1, device="opencl")._be
    assert t.has("erf")
    a = np.concatenate([np.linspace(-6, 6, 241), [0.0, -0.0, 1e-8, 2.5, -2.5, 30.0, np.inf, -np.inf, np.nan]])
    exact = np.array([math.erf(v) if not np.isnan(v) else np.nan for v in a])
    dts = [(np.float32, 2e-7)] + ([(np.float64, 1e-15)] if _fp64() else [])
    for dt, tol in dts:
        got = F.erf(coretorch.tensor(a.astype(dt), device="opencl"))
        ref = F.erf(coretorch.tensor(a.astype(dt)))
        assert got.dtype == ref.dtype and got.device.type == "opencl"
        g = got.cpu().numpy()
        np.testing.assert_allclose(g, ref.numpy(), rtol=4 * tol, atol=4 * tol)
        np.testing.assert_allclose(g, exact.astype(dt), rtol=4 * tol, atol=4 * tol)
        assert np.isnan(g[-1]) and g[-3] == 1 and g[-2] == -1
    # a strided view and an int input (computed in the default float dtype, as on cpu)
    m = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    v = coretorch.tensor(m, device="opencl").t()[::2]
    np.testing.assert_allclose(F.erf(v).cpu().numpy(), F.erf(coretorch.tensor(m).t()[::2]).numpy(), rtol=1e-6,
                               atol=1e-7)
    gi = F.erf(coretorch.tensor([-1, 0, 2], device="opencl"))
    assert gi.dtype is coretorch.float32
    np.testing.assert_allclose(gi.cpu().numpy(), [math.erf(-1), 0, math.erf(2)], rtol=1e-6)


def test_erf_gradcheck_float64():
    if not _fp64():
        pytest.skip("the OpenCL device has no fp64")
    from coretorch.autograd import gradcheck, gradgradcheck
    x = coretorch.tensor(np.linspace(-2.5, 2.5, 7), device="opencl", requires_grad=True)
    assert gradcheck(F.erf, (x,))
    assert gradgradcheck(F.erf, (x,))
    y = F.erf(x * 2)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 4 / np.sqrt(np.pi) * np.exp(-4 * np.linspace(-2.5, 2.5, 7) ** 2),
                               rtol=1e-13)
    # gelu (erf inside) backward on opencl against cpu
    a = np.linspace(-3, 3, 9)
    xs = [coretorch.tensor(a, device=d, requires_grad=True) for d in ("cpu", "opencl")]
    for xx in xs:
        F.gelu(xx).sum().backward()
    np.testing.assert_allclose(xs[1].grad.cpu().numpy(), xs[0].grad.numpy(), rtol=1e-13, atol=1e-15)
