"""out= on the basic top-level functions (torch.add(a, b, out=c), torch.sum(x, 0, out=s), ...) on every device:
the result lands in ``out``, which is returned; PyTorch's rules for dtypes, resizing and autograd."""
import warnings

import numpy as np
import pytest

import coretorch as torch
from coretorch.testing import available_devices

DEVICES = available_devices()

A = np.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]])
CASES = {  # name -> (args builder, numpy reference)
    "add": (lambda a: (a, a), lambda x: x + x), "sub": (lambda a: (a, 1.0), lambda x: x - 1),
    "mul": (lambda a: (a, a), lambda x: x * x), "div": (lambda a: (a, 2.0), lambda x: x / 2),
    "maximum": (lambda a: (a, a * 0), lambda x: np.maximum(x, 0)), "pow": (lambda a: (a, 2), lambda x: x ** 2),
    "exp": (lambda a: (a,), np.exp), "abs": (lambda a: (a,), np.abs), "neg": (lambda a: (a,), np.negative),
    "sigmoid": (lambda a: (a,), lambda x: 1 / (1 + np.exp(-x))), "tanh": (lambda a: (a,), np.tanh),
    "clamp": (lambda a: (a, -1.0, 1.0), lambda x: np.clip(x, -1, 1)), "floor": (lambda a: (a,), np.floor),
    "sum": (lambda a: (a, 0), lambda x: x.sum(0)), "mean": (lambda a: (a, 1), lambda x: x.mean(1)),
    "amax": (lambda a: (a, 0), lambda x: x.max(0)),
    "where": (lambda a: (a > 0, a, a * 0), lambda x: np.where(x > 0, x, 0)),
    "cat": (lambda a: ([a, a],), lambda x: np.concatenate([x, x])),
    "sqrt": (lambda a: (a.abs(),), lambda x: np.sqrt(abs(x))),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_out_receives_the_result(device, name):
    build, ref = CASES[name]
    a = torch.tensor(A, device=device)
    out = torch.empty(0, dtype=torch.float64, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an empty out is resized without the deprecation warning
        r = getattr(torch, name)(*build(a), out=out)
    assert r is out
    np.testing.assert_allclose(out.cpu().numpy(), ref(A), rtol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_out_rules(device):
    a = torch.tensor(A, device=device)
    with pytest.raises(RuntimeError, match="result type Double can't be cast to the desired output type Long"):
        torch.add(a, a, out=torch.empty(2, 3, dtype=torch.int64, device=device))
    f32 = torch.empty(2, 3, dtype=torch.float32, device=device)
    torch.mul(a, 2.0, out=f32)  # a float result into a float out of another width: cast
    np.testing.assert_allclose(f32.cpu().numpy(), A * 2, rtol=1e-6)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        torch.exp(a.clone().requires_grad_(), out=torch.empty(2, 3, dtype=torch.float64, device=device))
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        torch.sum(a, 0, out=torch.empty(5, dtype=torch.float64, device=device))
    v, i = torch.empty(0, dtype=torch.float64, device=device), torch.empty(0, dtype=torch.int64, device=device)
    r = torch.max(a, 1, out=(v, i))
    assert r.values is v and r.indices is i and i.cpu().tolist() == [2, 1]
