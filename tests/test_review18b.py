"""Review 18b: training-loop patterns around compiled steps and models (GAN steps with two optimizers and the
freezing idiom, layers frozen and unfrozen, ``add_param_group``, checkpoints reloaded, EMA/teacher copies, evaluation
interleaved with training, autocast and GradScaler, gradient accumulation and clipping, chained schedulers).  Each
compiled loop matches eager (bitwise on cpu)."""
import functools

import numpy as np
import pytest

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


def _clip_loop(device, compiled, steps=4):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)

    def step(x, y):
        opt.zero_grad()
        out = m(x)
        loss = F.cross_entropy(out, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
        opt.step()
        scores = out.detach() * 2
        scores.add_(1)
        return loss.detach(), scores, scores[:2]

    f = torch.compile(step) if compiled else step
    versions = []
    for _ in range(steps):
        x, y = torch.randn(6, 4, device=device), torch.randint(0, 3, (6,), device=device)
        _, scores, head = f(x, y)
        versions.append(([p.grad._version for p in m.parameters()], scores._version, head._version))
    return versions, f


def test_version_counters_of_tensors_the_step_makes_and_modifies(device):
    """A new ``.grad`` that ``clip_grad_norm_`` scales in place and a returned tensor modified in place by the step:
    eager's version counters are 1 (``p.grad._version``, as PyTorch's compiled step too) and a view shares its
    base's.  Before: a replay made them fresh, at version 0."""
    ref, _ = _clip_loop(device, False)
    got, f = _clip_loop(device, True)
    assert got == ref and f.replays >= 2


class _Noisy(nn.Module):
    """A module with a host generator of its own (random label smoothing / augmentation strength)."""

    def __init__(self, make):
        super().__init__()
        self.lin = nn.Linear(4, 3)
        self.rng = make()

    def forward(self, x):
        return self.lin(x) * (2.0 if self.rng.random() < 0.5 else 1.0)


_MAKERS = {"random.Random": lambda: __import__("random").Random(0), "default_rng": lambda: np.random.default_rng(0),
           "RandomState": lambda: np.random.RandomState(0)}


def _augmenter(rng):
    def augment(x):
        return x * (2.0 if rng.random() < 0.5 else 1.0)
    return augment


@pytest.mark.parametrize("gen", sorted(_MAKERS))
@pytest.mark.parametrize("where", ["closure", "bound", "data", "helper", "default", "partial"])
def test_a_draw_from_a_host_generator_of_its_own(device, gen, where):
    """A step that draws from a generator of its own (``rng = np.random.default_rng(0)``, ``random.Random(0)``, a
    bound ``draw = rng.random``, one in a helper's closure, defaults or partial arguments), to branch or to make data
    with ``torch.from_numpy``: eager draws a new number at each call.  Before: only Python's and numpy's global
    generators were watched, so every replay took the capture's branch (or its data) while the generator never
    advanced.  Now a graph break.  (A module's ``self.rng`` read by a compiled function was already a graph break:
    the module's attributes are keyed.)"""
    def run(compiled):
        torch.manual_seed(0)
        rng = _MAKERS[gen]()
        draw = rng.random
        helper = _augmenter(_MAKERS[gen]())  # (a helper made by a factory: the generator in its closure)

        def with_default(x, r=_MAKERS[gen]()):
            return x * (2.0 if r.random() < 0.5 else 1.0)

        part = functools.partial(lambda x, r: x * (2.0 if r.random() < 0.5 else 1.0), r=_MAKERS[gen]())

        def step(x):
            if where == "closure":
                return x * (2.0 if rng.random() < 0.5 else 1.0)
            if where == "bound":
                return x * (2.0 if draw() < 0.5 else 1.0)
            if where in ("helper", "default", "partial"):
                return {"helper": helper, "default": with_default, "partial": part}[where](x)
            noise = np.array([rng.random() for _ in range(4)], dtype=np.float32)
            return x + torch.from_numpy(noise).to(device)

        f = torch.compile(step) if compiled else step
        return [f(torch.ones(2, 4, device=device)) for _ in range(8)]

    for a, b in zip(run(False), run(True)):
        _same(a, b, device)


def test_a_compiled_module_drawing_from_its_own_generator(device):
    """``torch.compile(module)`` whose forward draws from ``self.rng``: eager's factor changes from call to call.
    Before: the module capture replayed the capture's factor."""
    def run(compiled):
        torch.manual_seed(0)
        m = _Noisy(lambda: np.random.default_rng(1)).to(device)
        f = torch.compile(m) if compiled else m
        return [f(torch.ones(2, 4, device=device)) for _ in range(8)]

    for a, b in zip(run(False), run(True)):
        _same(a, b, device)


def test_a_system_random_generator_the_step_reaches(device):
    """A ``random.SystemRandom`` among the objects the step reaches has no state to compare: the capture does not
    fail on it (its draws are not seen, as before)."""
    sr = __import__("random").SystemRandom()

    def step(x):
        return x * (2.0 if sr.random() < 2 else 1.0)

    f = torch.compile(step)
    for _ in range(3):
        _same(f(torch.ones(2, device=device)), torch.full((2,), 2.0), device)
