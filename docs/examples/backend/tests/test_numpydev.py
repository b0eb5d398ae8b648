"""The backend passes coretorch's conformance suite, and a model trains on its device."""
import numpy as np

import coretorch
from coretorch.testing import run_conformance


def test_conformance():
    report = run_conformance("numpydev")  # raises AssertionError listing every failing check
    assert report.ok and report.cases > 0


def test_the_plugin_is_loaded_from_its_entry_point():
    row = next(r for r in coretorch.plugins.report() if r["name"] == "numpydev")
    assert row["status"] == "loaded" and row["distribution"] == "coretorch-numpydev"
    assert row["provides"] == ["backend:numpydev"]


def test_a_linear_model_trains_on_numpydev():
    coretorch.manual_seed(0)
    model = coretorch.nn.Linear(3, 1).to("numpydev")
    opt = coretorch.optim.SGD(model.parameters(), lr=0.1)
    x = coretorch.randn(64, 3, device="numpydev")
    y = x @ coretorch.tensor([[1.0], [-2.0], [0.5]], device="numpydev") + 0.3
    for _ in range(200):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
    assert loss.device.type == "numpydev" and loss.item() < 1e-4
    np.testing.assert_allclose(model.weight.detach().cpu().numpy(), [[1.0, -2.0, 0.5]], atol=1e-2)
