"""Run with the distribution installed: the optimizer is found through its entry point."""
import numpy as np

import coretorch


def test_signsgd_through_the_entry_point():
    report = {p["name"]: p for p in coretorch.plugins.report()}
    assert report["signsgd"]["distribution"] == "coretorch-signsgd" and report["signsgd"]["status"] == "loaded"
    w = coretorch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    opt = coretorch.optim.SignSGD([w], lr=0.1, momentum=0.5)
    want, m = np.array([1.0, -2.0, 3.0]), np.zeros(3)
    for _ in range(3):
        opt.zero_grad()
        ((w - 1.5) ** 2).sum().backward()
        opt.step()
        m = 0.5 * m + 0.5 * 2 * (want - 1.5)
        want = want - 0.1 * np.sign(m)
    np.testing.assert_allclose(w.detach().numpy(), want, rtol=1e-6)
