"""Review 18b: training-loop patterns around compiled steps and models (GAN steps with two optimizers and the
freezing idiom, layers frozen and unfrozen, ``add_param_group``, checkpoints reloaded, EMA/teacher copies, evaluation
interleaved with training, autocast and GradScaler, gradient accumulation and clipping, chained schedulers).  Each
compiled loop matches eager (bitwise on cpu)."""
import numpy as np

import coretorch as torch
import coretorch.nn as nn
import coretorch.nn.functional as F


def _same(a, b, device):
    a, b = a.detach().cpu().numpy(), b.detach().cpu().numpy()
    if device == "cpu":
        assert a.tobytes() == b.tobytes()
    else:
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _train_eval_loop(device, compiled, steps=5):
    """A training step that calls ``model.train()`` and an evaluation function that calls ``model.eval()`` (the
    usual way to write them), alternating."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Dropout(0.3), nn.ReLU(), nn.Linear(8, 3)).to(device)
    opt = torch.optim.Adam(m.parameters(), lr=1e-2)

    def train_step(x, y):
        m.train()
        opt.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    def evaluate(x):
        m.eval()
        with torch.no_grad():
            return m(x)

    if compiled:
        train_step, evaluate = torch.compile(train_step), torch.compile(evaluate)
    out = []
    for _ in range(steps):
        x, y = torch.randn(6, 4, device=device), torch.randint(0, 3, (6,), device=device)
        out.append(train_step(x, y))
        out.append(torch.tensor(float(m.training)))
        out.append(evaluate(x))
        out.append(torch.tensor(float(m.training) + 2 * float(m[1].training)))
    return out, [*m.parameters(), *m.buffers()], (train_step, evaluate)


def test_model_train_and_eval_called_inside_the_compiled_functions(device):
    """``model.train()`` in a compiled training step and ``model.eval()`` in a compiled evaluation function: eager
    leaves the flags as the last call set them; the replays set them too.  Before: each call that flipped a flag was
    a graph break (a module attribute assigned), so neither function ever replayed while they alternated."""
    ref, ref_state, _ = _train_eval_loop(device, False)
    got, got_state, fns = _train_eval_loop(device, True)
    for a, b in zip(ref + ref_state, got + got_state):
        _same(a, b, device)
    assert fns[0].replays >= 3 and fns[1].replays >= 3
