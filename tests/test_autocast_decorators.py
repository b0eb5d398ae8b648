"""The autocast decorators of nn.functional (``amp.autocast_mode.policy`` / ``below``): the tensor arguments are cast
whether given by position or by name, and a composite below autocast keeps its input's dtype either way."""
import inspect

import coretorch as torch
import coretorch.nn.functional as F


def low(device):
    return torch.bfloat16 if device == "cpu" else torch.float16


def test_conv_policy_casts_positional_and_keyword_arguments(device):
    d = low(device)
    x, w = torch.randn(1, 2, 5, 5, device=device), torch.randn(3, 2, 3, 3, device=device)
    b = torch.randn(3, device=device)
    ref = F.conv2d(x, w, b, padding=1)
    with torch.autocast(device, dtype=d):
        outs = [F.conv2d(x, w, b, padding=1), F.conv2d(input=x, weight=w, bias=b, padding=1),
                F.conv2d(x, weight=w, bias=b, padding=1), F.conv2d(x, w, bias=b, padding=1)]
        assert F.conv1d(input=x[0, :, 0], weight=w[:, :, 0]).dtype is d
        assert F.conv3d(x[:, :, None], weight=w[:, :, None], bias=b).dtype is d
    for out in outs:
        assert out.dtype is d and out.shape == ref.shape
        assert torch.allclose(out.float(), ref, atol=0.1, rtol=0.05)  # computed in the low dtype, not garbage
    assert x.dtype is torch.float32 and w.dtype is torch.float32 and b.dtype is torch.float32  # inputs untouched


def test_below_keeps_the_input_dtype_by_position_and_by_name(device):
    h = torch.tensor([-2.0, -0.5, 0.0, 1.5], device=device).half()
    with torch.autocast(device, dtype=low(device)):
        for fn in (F.elu, F.selu, F.celu, F.mish, F.logsigmoid):
            a, k = fn(h), fn(input=h)
            assert a.dtype is torch.float16 and k.dtype is torch.float16
            assert torch.equal(a, k)
    assert torch.allclose(F.elu(input=h).float(), F.elu(h.float()), atol=1e-3)


def test_decorated_functions_keep_their_signature_and_doc():
    # PyTorch's parameter names (keyword calls depend on them) and the docstrings the reference renders
    assert list(inspect.signature(F.conv2d).parameters) == ["input", "weight", "bias", "stride", "padding",
                                                            "dilation", "groups"]
    assert list(inspect.signature(F.elu).parameters) == ["input", "alpha", "inplace"]
    assert list(inspect.signature(F.softplus).parameters) == ["input", "beta", "threshold"]
    for fn in (F.conv2d, F.conv_transpose3d, F.elu, F.logsigmoid, F.softplus):
        assert fn.__doc__ and fn.__module__.startswith("coretorch.nn.functional")
