"""Lazy modules on every device: UninitializedParameter / UninitializedBuffer placeholders, materialisation on the
first forward (the same Parameter objects, so an optimizer built before trains them), cls_to_become, state_dict
and load_state_dict with placeholders, reprs and errors, as PyTorch's torch.nn.modules.lazy."""
import copy
import math

import numpy as np
import pytest

import coretorch as torch
from coretorch import nn
from coretorch.nn.modules.lazy import LazyModuleMixin
from coretorch.nn.parameter import UninitializedBuffer, UninitializedParameter, is_lazy

F = nn.functional


def test_uninitialized_parameter_and_buffer(device):
    p = UninitializedParameter(device=device, dtype=torch.float64)
    assert repr(p) == "<UninitializedParameter>" and p.requires_grad and is_lazy(p)
    assert isinstance(p, nn.Parameter) and p.dtype == torch.float64 and p.device.type == device
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized parameter or buffer"):
        p.shape
    for op in (lambda: p + 1, lambda: p.sum(), lambda: p.numel(), lambda: p.reshape(2)):
        with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter in"):
            op()
    q = p.float()  # conversions keep the placeholder
    assert isinstance(q, UninitializedParameter) and q.dtype == torch.float32
    p.materialize((2, 3))
    assert type(p) is nn.Parameter and p.shape == (2, 3) and p.dtype == torch.float64 and not is_lazy(p)
    assert (p + 1).shape == (2, 3)
    b = UninitializedBuffer(device=device)
    assert repr(b) == "<UninitializedBuffer>" and not b.requires_grad and is_lazy(b)
    assert isinstance(b.double(), UninitializedBuffer)
    b.materialize((4,), dtype=torch.float64)
    assert type(b) is torch.Tensor and b.shape == (4,) and b.dtype == torch.float64
    assert not is_lazy(torch.zeros(2))


def test_lazy_linear_materialises_in_place_and_trains(device):
    torch.manual_seed(0)
    m = nn.LazyLinear(3).to(device)
    assert repr(m) == "LazyLinear(in_features=0, out_features=3, bias=True)"
    assert isinstance(m, LazyModuleMixin) and m.has_uninitialized_params()
    sd = m.state_dict()
    assert list(sd) == ["weight", "bias"] and all(isinstance(v, UninitializedParameter) for v in sd.values())
    w0, b0 = m.weight, m.bias
    opt = torch.optim.SGD(m.parameters(), lr=0.1)  # built before the shapes are known
    x = torch.randn(4, 5, device=device)
    y = m(x)
    assert type(m) is nn.Linear and repr(m) == "Linear(in_features=5, out_features=3, bias=True)"
    assert m.weight is w0 and m.bias is b0 and type(m.weight) is nn.Parameter
    assert m.weight.shape == (3, 5) and m.bias.shape == (3,) and m.weight.device.type == device
    bound = 1 / math.sqrt(5)  # Linear's init for in_features=5
    assert float(m.weight.abs().max()) <= bound and float(m.bias.abs().max()) <= bound
    np.testing.assert_allclose(y.detach().cpu().numpy(),
                               x.cpu().numpy() @ m.weight.detach().cpu().numpy().T + m.bias.detach().cpu().numpy(),
                               rtol=1e-5, atol=1e-6)
    target = torch.randn(4, 3, device=device)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = F.mse_loss(m(x), target)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < losses[0]
    assert not hasattr(m, "_initialize_hook") and not m._forward_pre_hooks


def test_lazy_linear_options_and_nesting(device):
    m = nn.LazyLinear(2, bias=False, dtype=torch.float64).to(device)
    assert repr(m) == "LazyLinear(in_features=0, out_features=2, bias=False)" and m.bias is None
    assert m(torch.randn(3, 4, dtype=torch.float64, device=device)).dtype == torch.float64
    assert m.weight.dtype == torch.float64
    d = nn.LazyLinear(3).double()  # conversions before the first forward apply to the placeholders
    assert isinstance(d.weight, UninitializedParameter) and d.weight.dtype == torch.float64
    c = copy.deepcopy(nn.LazyLinear(3))
    assert isinstance(c.weight, UninitializedParameter) and c.has_uninitialized_params()
    seq = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(2)).to(device)
    assert seq(torch.randn(3, 7, device=device)).shape == (3, 2)
    assert [type(s).__name__ for s in seq] == ["Linear", "ReLU", "Linear"]
    assert seq[0].in_features == 7 and seq[2].in_features == 4
    assert nn.LazyLinear(3)(torch.randn(5)).shape == (3,)  # unbatched


def test_lazy_load_state_dict(device):
    src = nn.Linear(5, 3).to(device)
    m = nn.LazyLinear(3).to(device)
    m.load_state_dict(src.state_dict())
    assert type(m) is nn.LazyLinear  # loading materialises the placeholders; the class changes on forward
    assert not m.has_uninitialized_params() and m.weight.shape == (3, 5)
    np.testing.assert_array_equal(m.weight.detach().cpu().numpy(), src.weight.detach().cpu().numpy())
    x = torch.randn(2, 5, device=device)
    np.testing.assert_allclose(m(x).detach().cpu().numpy(), src(x).detach().cpu().numpy(), rtol=1e-6)
    assert type(m) is nn.Linear
    part = nn.LazyLinear(3)
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "bias"'):
        part.load_state_dict({"weight": torch.randn(3, 5)})
    assert type(part.weight) is nn.Parameter and isinstance(part.bias, UninitializedParameter)
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized parameter"):
        nn.Linear(5, 3).load_state_dict(nn.LazyLinear(3).state_dict())


CONVS = [(nn.LazyConv1d, nn.Conv1d, (2, 6, 9), F.conv1d), (nn.LazyConv2d, nn.Conv2d, (2, 6, 7, 5), F.conv2d),
         (nn.LazyConv3d, nn.Conv3d, (1, 6, 4, 5, 4), F.conv3d),
         (nn.LazyConvTranspose1d, nn.ConvTranspose1d, (2, 6, 5), F.conv_transpose1d),
         (nn.LazyConvTranspose2d, nn.ConvTranspose2d, (2, 6, 4, 3), F.conv_transpose2d),
         (nn.LazyConvTranspose3d, nn.ConvTranspose3d, (1, 6, 3, 2, 3), F.conv_transpose3d)]


@pytest.mark.parametrize("lazy_cls,cls,shape,fn", CONVS, ids=[c[0].__name__ for c in CONVS])
def test_lazy_conv_family(device, lazy_cls, cls, shape, fn):
    torch.manual_seed(0)
    nsp = len(shape) - 2
    m = lazy_cls(4, 2, groups=2).to(device)
    ks = "(" + ", ".join(["2"] * nsp) + ("," if nsp == 1 else "") + ")"
    st = "(" + ", ".join(["1"] * nsp) + ("," if nsp == 1 else "") + ")"
    assert repr(m) == f"{lazy_cls.__name__}(0, 4, kernel_size={ks}, stride={st}, groups=2)"
    x = torch.randn(*shape, device=device)
    y = m(x)
    assert type(m) is cls and m.in_channels == 6
    assert repr(m) == f"{cls.__name__}(6, 4, kernel_size={ks}, stride={st}, groups=2)"
    transposed = "Transpose" in cls.__name__
    assert m.weight.shape == ((6, 2) if transposed else (4, 3)) + (2,) * nsp and m.bias.shape == (4,)
    want = fn(x, m.weight, m.bias, groups=2)
    np.testing.assert_allclose(y.detach().cpu().numpy(), want.detach().cpu().numpy(), rtol=1e-5, atol=1e-6)
    u = lazy_cls(4, 2).to(device)  # unbatched: channels from dim 0
    assert u(x[0]).shape[0] == 4 and u.in_channels == 6
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        lazy_cls(4, 2, groups=4)(x)
    with pytest.raises(RuntimeError, match=f"Expected {nsp + 1}D \\(unbatched\\) or {nsp + 2}D \\(batched\\) input "
                                           f"to {lazy_cls.__name__}, but got input of size"):
        lazy_cls(4, 2)(torch.randn(5, device=device))


NORMS = [(nn.LazyBatchNorm1d, nn.BatchNorm1d, (4, 3, 5)), (nn.LazyBatchNorm2d, nn.BatchNorm2d, (2, 3, 4, 4)),
         (nn.LazyBatchNorm3d, nn.BatchNorm3d, (2, 3, 2, 3, 2)),
         (nn.LazyInstanceNorm1d, nn.InstanceNorm1d, (2, 3, 6)),
         (nn.LazyInstanceNorm2d, nn.InstanceNorm2d, (2, 3, 4, 4)),
         (nn.LazyInstanceNorm3d, nn.InstanceNorm3d, (2, 3, 2, 3, 2))]


@pytest.mark.filterwarnings("ignore:input's size at dim=1 does not match num_features")  # InstanceNorm, as PyTorch
@pytest.mark.parametrize("lazy_cls,cls,shape", NORMS, ids=[c[0].__name__ for c in NORMS])
def test_lazy_norms(device, lazy_cls, cls, shape):
    m = lazy_cls().to(device)
    assert repr(m) == f"{lazy_cls.__name__}(0, eps=1e-05, momentum=0.1, affine=True, bias=True, " \
                      "track_running_stats=True)"
    sd = m.state_dict()
    assert list(sd) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    assert isinstance(sd["running_mean"], UninitializedBuffer) and int(sd["num_batches_tracked"]) == 0
    x = torch.randn(*shape, device=device)
    y = m(x)
    assert type(m) is cls and m.num_features == 3 and y.shape == x.shape
    assert m.weight.shape == (3,) and m.running_mean.shape == (3,) and type(m.running_var) is torch.Tensor
    assert int(m.num_batches_tracked) == (1 if "Batch" in cls.__name__ else 0)  # InstanceNorm does not count
    dims = tuple(d for d in range(x.ndim) if d != 1)
    np.testing.assert_allclose(m.running_mean.cpu().numpy(), 0.1 * x.cpu().numpy().mean(axis=dims), rtol=1e-4,
                               atol=1e-6)
    plain = lazy_cls(affine=False, track_running_stats=False).to(device)
    assert plain.weight is None and plain.running_mean is None
    # nothing to infer: the module becomes the plain class with num_features left at 0, as in PyTorch
    assert plain(x).shape == x.shape and type(plain) is cls and plain.num_features == 0


def test_batchnorm3d_checks_rank(device):
    bn = nn.BatchNorm3d(2).to(device)
    assert bn(torch.randn(2, 2, 2, 2, 2, device=device)).shape == (2, 2, 2, 2, 2)
    with pytest.raises(ValueError, match="expected 5D input \\(got 4D input\\)"):
        bn(torch.randn(2, 2, 2, 2, device=device))
